"""The table of cost sheets (issue 23). Registered in :data:`billingkit.storage.sql.tables.TABLES`."""

from __future__ import annotations

from sqlalchemy import Column, Table, Text

from billingkit.storage.sql.columns import (
    common_columns,
    json_column,
    metadata,
    name_column,
    scoped_indexes,
    text_column,
)

__all__ = ["costsheets"]

costsheets = Table(
    "costsheets",
    metadata,
    *common_columns(),
    name_column(),
    text_column("lookup_key"),
    Column("description", Text()),
    json_column("metadata", nullable=False),
    *scoped_indexes("costsheets", unique_live=("lookup_key",)),
)
