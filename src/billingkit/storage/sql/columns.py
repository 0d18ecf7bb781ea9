"""The building blocks of the schema's tables: the one ``MetaData`` every table belongs to (Alembic
generates migrations from it) and the column and index helpers the table modules share."""

from __future__ import annotations

from sqlalchemy import Column, Index, MetaData, String, text

from billingkit.storage.sql.types import ExactDecimal, JsonDocument, UtcDateTime

__all__ = [
    "LIVE",
    "common_columns",
    "instant_column",
    "json_column",
    "metadata",
    "money_column",
    "name_column",
    "scoped_indexes",
    "text_column",
]

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

LIVE = text("status = 'published'")


def common_columns(*, tenant: bool = True, environment: bool = True) -> list[Column[object]]:
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


def scoped_indexes(name: str, *lookups: str, unique_live: tuple[str, ...] = ()) -> list[Index]:
    """The usual indexes of an environment-owned catalogue table: newest first within a scope, one
    per lookup column, and a partial unique index over ``unique_live`` among published rows."""
    indexes = [Index(f"ix_{name}_scope_created", "tenant_id", "environment_id", "created_at")]
    indexes += [Index(f"ix_{name}_{column}", "tenant_id", "environment_id", column) for column in lookups]
    if unique_live:
        indexes.append(
            Index(
                f"uq_{name}_{'_'.join(unique_live)}_live",
                "tenant_id",
                "environment_id",
                *unique_live,
                unique=True,
                sqlite_where=LIVE,
                postgresql_where=LIVE,
            )
        )
    return indexes


def name_column() -> Column[object]:
    return Column("name", String(255), nullable=False)


def text_column(name: str, length: int = 255) -> Column[object]:
    return Column(name, String(length))


def json_column(name: str, *, nullable: bool = True) -> Column[object]:
    return Column(name, JsonDocument(), nullable=nullable)


def money_column(name: str, *, nullable: bool = False) -> Column[object]:
    return Column(name, ExactDecimal(), nullable=nullable)


def instant_column(name: str, *, nullable: bool = True) -> Column[object]:
    return Column(name, UtcDateTime(), nullable=nullable)
