"""Authentication's lookup in SQL: an API key and whether its account is live, in one statement."""

from __future__ import annotations

from sqlalchemy import Connection

from billingkit.domain.access import ApiKey
from billingkit.domain.resources import Status
from billingkit.storage.sql.mapping import placeholder, row_decoder
from billingkit.storage.sql.tables import api_keys

__all__ = ["find_api_key_with_account"]

# Statement texts per kind of dialect (quoting and placeholders differ).
_STATEMENTS: dict[tuple[str, str, str], str] = {}


def _statement(conn: Connection) -> str:
    dialect = conn.dialect
    key = (dialect.name, dialect.driver, dialect.paramstyle)
    sql = _STATEMENTS.get(key)
    if sql is None:
        quote = dialect.identifier_preparer.quote
        columns = ", ".join(f"k.{quote(c.name)}" for c in api_keys.columns)
        mark = placeholder(dialect)
        # The account's status rides along (NULL when the account row is gone): one round trip
        # instead of a second query for the account.
        sql = _STATEMENTS[key] = (
            f"SELECT {columns}, a.status FROM api_keys k LEFT JOIN accounts a "
            f"ON a.id = k.account_id AND a.tenant_id = k.tenant_id WHERE k.key_hash = {mark}"
        )
    return sql


def find_api_key_with_account(conn: Connection, key_hash: str) -> tuple[ApiKey, bool] | None:
    """The key with ``key_hash`` (any scope) and whether its account exists and is published."""
    row = conn.exec_driver_sql(_statement(conn), (key_hash,)).fetchone()
    if row is None:
        return None
    decoder = row_decoder(ApiKey, api_keys, conn.dialect)
    (key,) = decoder.models([tuple(row)[:-1]])
    return key, row[-1] == Status.PUBLISHED.value
