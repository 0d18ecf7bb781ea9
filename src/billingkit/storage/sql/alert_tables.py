"""The tables of alerts (issue 17): alert settings with their state, and the log of state
changes. Each is registered in :data:`billingkit.storage.sql.tables.TABLES`."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, Integer, String, Table

from billingkit.storage.sql.columns import (
    common_columns,
    instant_column,
    json_column,
    metadata,
    scoped_indexes,
)

__all__ = ["alert_logs", "alert_settings"]

alert_settings = Table(
    "alert_settings",
    metadata,
    *common_columns(),
    Column("entity_type", String(32), nullable=False),
    Column("entity_id", String(64), nullable=False),
    Column("parent_entity_type", String(32)),
    Column("parent_entity_id", String(64)),
    Column("customer_id", String(64), nullable=False),
    json_column("config", nullable=False),
    Column("enabled", Boolean(), nullable=False),
    Column("alert_state", String(16), nullable=False),
    Column("version", Integer(), nullable=False),
    instant_column("next_check_at"),
    *scoped_indexes("alert_settings", "entity_id", "parent_entity_id", "customer_id"),
    # Serves the worker's claim of alerts due for evaluation across all scopes.
    Index("ix_alert_settings_next_check_at", "next_check_at"),
)

alert_logs = Table(
    "alert_logs",
    metadata,
    *common_columns(),
    Column("alert_key", String(200), nullable=False),
    Column("sequence", Integer(), nullable=False),
    Column("alert_type", String(32), nullable=False),
    Column("alert_status", String(16), nullable=False),
    Column("entity_type", String(32), nullable=False),
    Column("entity_id", String(64), nullable=False),
    Column("parent_entity_type", String(32)),
    Column("parent_entity_id", String(64)),
    Column("customer_id", String(64)),
    json_column("alert_info", nullable=False),
    *scoped_indexes("alert_logs", "entity_id", "customer_id"),
    # One row per (alert, sequence): the conditional write of a state change.
    Index(
        "uq_alert_logs_alert_key_sequence",
        "tenant_id",
        "environment_id",
        "alert_key",
        "sequence",
        unique=True,
    ),
)
