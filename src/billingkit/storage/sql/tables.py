"""The schema, as SQLAlchemy Core tables. Alembic migrations are generated from this module."""

from __future__ import annotations

from sqlalchemy import Column, Index, MetaData, String, Table, text

from billingkit.storage.sql.types import JsonDocument, UtcDateTime

__all__ = ["metadata"]

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

LIVE = text("status = 'published'")


def _common(*, tenant: bool = True, environment: bool = True) -> list[Column[object]]:
    columns: list[Column[object]] = [Column("id", String(64), primary_key=True)]
    if tenant:
        columns.append(Column("tenant_id", String(64), nullable=False))
    if environment:
        columns.append(Column("environment_id", String(64), nullable=False))
    columns += [
        Column("status", String(16), nullable=False),
        Column("created_at", UtcDateTime(), nullable=False),
        Column("updated_at", UtcDateTime(), nullable=False),
        Column("created_by", String(64), nullable=False),
        Column("updated_by", String(64), nullable=False),
    ]
    return columns


tenants = Table(
    "tenants",
    metadata,
    *_common(tenant=False, environment=False),
    Column("name", String(255), nullable=False),
    Column("metadata", JsonDocument, nullable=False),
)

environments = Table(
    "environments",
    metadata,
    *_common(environment=False),
    Column("name", String(255), nullable=False),
    Column("type", String(32), nullable=False),
    Index("ix_environments_tenant", "tenant_id", "created_at"),
)

accounts = Table(
    "accounts",
    metadata,
    *_common(environment=False),
    Column("type", String(32), nullable=False),
    Column("name", String(255), nullable=False),
    Column("email", String(254)),
    Column("password_hash", String(255)),
    Column("roles", JsonDocument, nullable=False),
    Column("metadata", JsonDocument, nullable=False),
    Index(
        "uq_accounts_email_live",
        "tenant_id",
        "email",
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    ),
    Index("ix_accounts_email", "email"),
)

api_keys = Table(
    "api_keys",
    metadata,
    *_common(),
    Column("name", String(255), nullable=False),
    Column("type", String(32), nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("display_id", String(16), nullable=False),
    Column("account_id", String(64), nullable=False),
    Column("account_type", String(32), nullable=False),
    Column("roles", JsonDocument, nullable=False),
    Column("expires_at", UtcDateTime()),
    Index("uq_api_keys_key_hash", "key_hash", unique=True),
    Index("ix_api_keys_scope", "tenant_id", "environment_id", "created_at"),
)

customers = Table(
    "customers",
    metadata,
    *_common(),
    Column("external_id", String(255), nullable=False),
    Column("name", String(255), nullable=False),
    Column("email", String(254)),
    Column("contact", String(255)),
    Column("timezone", String(64), nullable=False),
    Column("address_line1", String(255)),
    Column("address_line2", String(255)),
    Column("address_city", String(255)),
    Column("address_state", String(255)),
    Column("address_postal_code", String(32)),
    Column("address_country", String(2)),
    Column("metadata", JsonDocument, nullable=False),
    Index(
        "uq_customers_external_id_live",
        "tenant_id",
        "environment_id",
        "external_id",
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    ),
    Index("ix_customers_scope_created", "tenant_id", "environment_id", "created_at"),
)

notifications = Table(
    "notification_events",
    metadata,
    *_common(),
    Column("event_type", String(128), nullable=False),
    Column("entity_type", String(64), nullable=False),
    Column("entity_id", String(64), nullable=False),
    Column("payload", JsonDocument, nullable=False),
    Index("ix_notification_events_scope_created", "tenant_id", "environment_id", "created_at"),
)

# kind name (see billingkit.storage.kinds) -> table
TABLES: dict[str, Table] = {
    "tenants": tenants,
    "environments": environments,
    "accounts": accounts,
    "api_keys": api_keys,
    "customers": customers,
    "notifications": notifications,
}
