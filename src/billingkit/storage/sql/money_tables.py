"""The tables of money that moves: wallets and their ledger, payments, credit notes and credit grant
applications (issue 16). Each is registered in :data:`billingkit.storage.sql.tables.TABLES`."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, Integer, String, Table, Text

from billingkit.storage.sql.columns import (
    common_columns,
    instant_column,
    json_column,
    metadata,
    money_column,
    scoped_indexes,
    text_column,
)

__all__ = ["credit_grant_applications", "credit_notes", "payments", "wallet_transactions", "wallets"]

# A customer's account of prepaid credits; credit_balance caches the sum of its ledger rows.
wallets = Table(
    "wallets",
    metadata,
    *common_columns(),
    Column("customer_id", String(64), nullable=False),
    Column("currency", String(3), nullable=False),
    text_column("name"),
    Column("description", Text()),
    Column("wallet_type", String(16), nullable=False),
    Column("wallet_status", String(16), nullable=False),
    money_column("conversion_rate"),
    money_column("topup_conversion_rate"),
    json_column("config", nullable=False),
    json_column("auto_topup"),
    json_column("alert_settings"),
    Column("alert_state", String(16), nullable=False),
    money_column("credit_balance"),
    json_column("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    instant_column("next_expiry_at"),
    *scoped_indexes("wallets", "customer_id"),
    # Serves the worker's claim of wallets with credits due to expire, across all scopes.
    Index("ix_wallets_next_expiry_at", "next_expiry_at"),
)

payments = Table(
    "payments",
    metadata,
    *common_columns(),
    Column("idempotency_key", String(255), nullable=False),
    Column("destination_type", String(16), nullable=False),
    Column("destination_id", String(64), nullable=False),
    text_column("invoice_number"),
    Column("customer_id", String(64)),
    Column("payment_method_type", String(16), nullable=False),
    text_column("payment_method_id"),
    Column("payment_gateway", String(32)),
    text_column("gateway_payment_id"),
    text_column("gateway_tracking_id"),
    json_column("gateway_metadata", nullable=False),
    Column("payment_url", Text()),
    money_column("amount"),
    Column("currency", String(3), nullable=False),
    Column("payment_status", String(32), nullable=False),
    Column("track_attempts", Boolean(), nullable=False),
    Column("save_card_and_make_default", Boolean(), nullable=False),
    Column("error_message", Text()),
    instant_column("succeeded_at"),
    instant_column("failed_at"),
    instant_column("refunded_at"),
    instant_column("voided_at"),
    json_column("attempts", nullable=False),
    json_column("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    Column("request_fingerprint", String(64)),
    *scoped_indexes("payments", "destination_id", "customer_id"),
    Index("uq_payments_idempotency_key", "tenant_id", "environment_id", "idempotency_key", unique=True),
)

credit_notes = Table(
    "credit_notes",
    metadata,
    *common_columns(),
    text_column("credit_note_number"),
    Column("invoice_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("subscription_id", String(64)),
    Column("credit_note_type", String(16), nullable=False),
    Column("credit_note_status", String(16), nullable=False),
    Column("reason", String(32), nullable=False),
    Column("memo", Text()),
    Column("currency", String(3), nullable=False),
    money_column("total_amount"),
    Column("idempotency_key", String(255), nullable=False),
    Column("refund_status", String(32)),
    instant_column("finalized_at"),
    instant_column("voided_at"),
    json_column("line_items", nullable=False),
    json_column("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("credit_notes", "invoice_id", "customer_id"),
    Index("uq_credit_notes_idempotency_key", "tenant_id", "environment_id", "idempotency_key", unique=True),
    Index(
        "uq_credit_notes_credit_note_number", "tenant_id", "environment_id", "credit_note_number", unique=True
    ),
)

credit_grant_applications = Table(
    "credit_grant_applications",
    metadata,
    *common_columns(),
    Column("credit_grant_id", String(64), nullable=False),
    Column("subscription_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    instant_column("scheduled_for", nullable=False),
    instant_column("run_at"),
    instant_column("period_start", nullable=False),
    instant_column("period_end"),
    instant_column("applied_at"),
    Column("application_status", String(16), nullable=False),
    Column("application_reason", String(64), nullable=False),
    money_column("credits"),
    Column("subscription_status_at_application", String(16)),
    Column("retry_count", Integer(), nullable=False),
    Column("failure_reason", Text()),
    Column("idempotency_key", String(255), nullable=False),
    Column("wallet_transaction_id", String(64)),
    json_column("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("credit_grant_applications", "subscription_id"),
    # Serves the worker's claim of applications due across all scopes.
    Index("ix_credit_grant_applications_run_at", "run_at"),
    # One application per grant, subscription and period, whatever its status.
    Index(
        "uq_credit_grant_applications_grant_period",
        "tenant_id",
        "environment_id",
        "credit_grant_id",
        "subscription_id",
        "period_start",
        unique=True,
    ),
)

# Append-only (see storage.kinds): rows are inserted and summed, never updated. The movement key is
# unique over every row, whatever its status, so one cause is applied once.
wallet_transactions = Table(
    "wallet_transactions",
    metadata,
    *common_columns(),
    Column("wallet_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("type", String(16), nullable=False),
    money_column("credit_amount"),
    money_column("amount"),
    Column("transaction_reason", String(32), nullable=False),
    Column("idempotency_key", String(255), nullable=False),
    Column("reference_type", String(16)),
    text_column("reference_id"),
    Column("parent_transaction_id", String(64)),
    instant_column("expiry_date"),
    Column("priority", Integer()),
    Column("description", Text()),
    json_column("metadata", nullable=False),
    Column("transaction_status", String(16), nullable=False, server_default="completed"),
    Column("source_transaction_id", String(64)),
    Index("ix_wallet_transactions_scope_created", "tenant_id", "environment_id", "created_at"),
    # Serves a wallet's balance (its rows summed) and its history.
    Index("ix_wallet_transactions_wallet", "tenant_id", "environment_id", "wallet_id", "created_at"),
    Index("ix_wallet_transactions_customer_id", "tenant_id", "environment_id", "customer_id"),
    Index(
        "uq_wallet_transactions_idempotency_key",
        "tenant_id",
        "environment_id",
        "idempotency_key",
        unique=True,
    ),
)
