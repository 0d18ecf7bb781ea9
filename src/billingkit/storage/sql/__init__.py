"""The SQLAlchemy store: SQLite files and PostgreSQL. Rows never leave this package."""

from billingkit.storage.sql.storage import SqlStorage, SqlUnitOfWork

__all__ = ["SqlStorage", "SqlUnitOfWork"]
