"""The table of checkout sessions (issue 21). Registered in
:data:`billingkit.storage.sql.tables.TABLES`."""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, String, Table, Text

from billingkit.storage.sql.columns import (
    LIVE,
    common_columns,
    instant_column,
    json_column,
    metadata,
    scoped_indexes,
    text_column,
)

__all__ = ["checkout_sessions"]


def _open_unique(column: str) -> Index:
    """Unique per environment among live rows; a closed session holds NULL there, so NULLs (and
    closed sessions) never collide."""
    return Index(
        f"uq_checkout_sessions_{column}_live",
        "tenant_id",
        "environment_id",
        column,
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )


# A payment-gated action; open_key and open_wallet_id are set only while it is open.
checkout_sessions = Table(
    "checkout_sessions",
    metadata,
    *common_columns(),
    Column("customer_id", String(64), nullable=False),
    Column("action", String(32), nullable=False),
    Column("checkout_status", String(16), nullable=False),
    instant_column("expires_at", nullable=False),
    text_column("idempotency_key"),
    Column("failure_reason", Text()),
    Column("success_url", Text()),
    Column("cancel_url", Text()),
    Column("failure_url", Text()),
    instant_column("completed_at"),
    instant_column("cancelled_at"),
    Column("checkout_invoice_id", String(64)),
    Column("checkout_payment_id", String(64)),
    Column("payment_provider", String(32), nullable=False),
    json_column("payment_provider_config", nullable=False),
    json_column("payment_action"),
    json_column("provider_result", nullable=False),
    json_column("configuration", nullable=False),
    json_column("result", nullable=False),
    json_column("metadata", nullable=False),
    text_column("open_key"),
    Column("open_wallet_id", String(64)),
    instant_column("run_at"),
    text_column("provider_session_id"),
    Column("subscription_id", String(64)),
    Column("invoice_id", String(64)),
    Column("payment_id", String(64)),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("checkout_sessions", "customer_id", "provider_session_id", "subscription_id"),
    _open_unique("open_key"),
    _open_unique("open_wallet_id"),
    Index("ix_checkout_sessions_run_at", "run_at"),
)
