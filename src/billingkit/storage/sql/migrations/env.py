"""Alembic environment. billingkit runs migrations itself (``billingkit migrate`` or
:meth:`SqlStorage.migrate`), handing over an open connection; batch mode keeps SQLite's
ALTER TABLE limits out of the way."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from billingkit.storage.sql.tables import metadata

config = context.config
connection = config.attributes.get("connection")


def _run(conn: Connection) -> None:
    context.configure(
        connection=conn,
        target_metadata=metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    _run(connection)
else:  # plain `alembic -x url=...` use, for developers generating revisions
    url = context.get_x_argument(as_dictionary=True)["url"]
    engine = create_engine(url)
    with engine.begin() as conn:
        _run(conn)
