"""The tables of the subscription lifecycle: line item owners, pauses, schedules, add-on
associations, phases (issue 18) and plan and quantity changes (issue 19). Each is registered in
:data:`billingkit.storage.sql.tables.TABLES`."""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, String, Table, Text

from billingkit.storage.sql.columns import (
    common_columns,
    instant_column,
    json_column,
    metadata,
    scoped_indexes,
)

__all__ = [
    "addon_associations",
    "line_item_owners",
    "subscription_changes",
    "subscription_pauses",
    "subscription_phases",
    "subscription_schedules",
]

# Line item id -> its subscription (the line item itself is stored inside the subscription).
line_item_owners = Table(
    "line_item_owners",
    metadata,
    *common_columns(),
    Column("subscription_id", String(64), nullable=False),
    *scoped_indexes("line_item_owners", "subscription_id"),
)

subscription_pauses = Table(
    "subscription_pauses",
    metadata,
    *common_columns(),
    Column("subscription_id", String(64), nullable=False),
    Column("pause_status", String(16), nullable=False),
    Column("pause_mode", String(16), nullable=False),
    Column("resume_mode", String(16)),
    instant_column("pause_start", nullable=False),
    instant_column("pause_end"),
    instant_column("resumed_at"),
    instant_column("original_period_start", nullable=False),
    instant_column("original_period_end", nullable=False),
    Column("reason", Text()),
    json_column("metadata", nullable=False),
    instant_column("run_at"),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("subscription_pauses", "subscription_id"),
    # Serves the worker's claim of pauses due across all scopes.
    Index("ix_subscription_pauses_run_at", "run_at"),
)

subscription_schedules = Table(
    "subscription_schedules",
    metadata,
    *common_columns(),
    Column("subscription_id", String(64), nullable=False),
    Column("schedule_type", String(32), nullable=False),
    Column("schedule_status", String(16), nullable=False),
    instant_column("scheduled_at", nullable=False),
    instant_column("executed_at"),
    instant_column("cancelled_at"),
    json_column("configuration", nullable=False),
    json_column("execution_result"),
    Column("error_message", Text()),
    json_column("metadata", nullable=False),
    instant_column("run_at"),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("subscription_schedules", "subscription_id"),
    Index("ix_subscription_schedules_run_at", "run_at"),
)

addon_associations = Table(
    "addon_associations",
    metadata,
    *common_columns(),
    Column("entity_id", String(64), nullable=False),
    Column("entity_type", String(16), nullable=False),
    Column("addon_id", String(64), nullable=False),
    Column("addon_status", String(16), nullable=False),
    Column("cadence", String(16), nullable=False),
    instant_column("start_date", nullable=False),
    instant_column("end_date"),
    instant_column("cancelled_at"),
    Column("cancellation_reason", Text()),
    json_column("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("addon_associations", "entity_id", "addon_id"),
)

subscription_phases = Table(
    "subscription_phases",
    metadata,
    *common_columns(),
    Column("subscription_id", String(64), nullable=False),
    instant_column("start_date", nullable=False),
    instant_column("end_date"),
    json_column("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("subscription_phases", "subscription_id"),
)

# One row per plan or quantity change carried out; the client's idempotency key is unique per
# environment over every row (NULLs do not collide), so a retried change finds the first.
subscription_changes = Table(
    "subscription_changes",
    metadata,
    *common_columns(),
    Column("subscription_id", String(64), nullable=False),
    Column("change_kind", String(32), nullable=False),
    Column("change_type", String(16)),
    Column("from_plan_id", String(64)),
    Column("to_plan_id", String(64)),
    Column("new_subscription_id", String(64)),
    instant_column("effective_at", nullable=False),
    Column("schedule_id", String(64)),
    Column("invoice_id", String(64)),
    Column("wallet_transaction_id", String(64)),
    Column("idempotency_key", String(255)),
    Column("request_fingerprint", String(128)),
    json_column("result", nullable=False),
    json_column("metadata", nullable=False),
    *scoped_indexes("subscription_changes", "subscription_id"),
    Index(
        "uq_subscription_changes_idempotency_key",
        "tenant_id",
        "environment_id",
        "idempotency_key",
        unique=True,
    ),
)
