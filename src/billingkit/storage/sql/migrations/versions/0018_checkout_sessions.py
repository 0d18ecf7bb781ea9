"""checkout sessions: payment-gated actions

``open_key`` (the idempotency key while the session is open) and ``open_wallet_id`` (one open
top-up per wallet) are unique per environment among live rows; a closed session holds NULL in
both, so its key can be used again.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-24 15:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import billingkit.storage.sql.types

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INSTANT = billingkit.storage.sql.types.UtcDateTime(timezone=True)
_JSON = billingkit.storage.sql.types.JsonDocument()
_LIVE = sa.text("status = 'published'")


def upgrade() -> None:
    op.create_table(
        "checkout_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", _INSTANT, nullable=False),
        sa.Column("updated_at", _INSTANT, nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("checkout_status", sa.String(length=16), nullable=False),
        sa.Column("expires_at", _INSTANT, nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("success_url", sa.Text(), nullable=True),
        sa.Column("cancel_url", sa.Text(), nullable=True),
        sa.Column("failure_url", sa.Text(), nullable=True),
        sa.Column("completed_at", _INSTANT, nullable=True),
        sa.Column("cancelled_at", _INSTANT, nullable=True),
        sa.Column("checkout_invoice_id", sa.String(length=64), nullable=True),
        sa.Column("checkout_payment_id", sa.String(length=64), nullable=True),
        sa.Column("payment_provider", sa.String(length=32), nullable=False),
        sa.Column("payment_provider_config", _JSON, nullable=False),
        sa.Column("payment_action", _JSON, nullable=True),
        sa.Column("provider_result", _JSON, nullable=False),
        sa.Column("configuration", _JSON, nullable=False),
        sa.Column("result", _JSON, nullable=False),
        sa.Column("metadata", _JSON, nullable=False),
        sa.Column("open_key", sa.String(length=255), nullable=True),
        sa.Column("open_wallet_id", sa.String(length=64), nullable=True),
        sa.Column("run_at", _INSTANT, nullable=True),
        sa.Column("provider_session_id", sa.String(length=255), nullable=True),
        sa.Column("subscription_id", sa.String(length=64), nullable=True),
        sa.Column("invoice_id", sa.String(length=64), nullable=True),
        sa.Column("payment_id", sa.String(length=64), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_checkout_sessions")),
    )
    with op.batch_alter_table("checkout_sessions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_checkout_sessions_scope_created", ["tenant_id", "environment_id", "created_at"], unique=False
        )
        for column in ("customer_id", "provider_session_id", "subscription_id"):
            batch_op.create_index(
                f"ix_checkout_sessions_{column}", ["tenant_id", "environment_id", column], unique=False
            )
        for column in ("open_key", "open_wallet_id"):
            batch_op.create_index(
                f"uq_checkout_sessions_{column}_live",
                ["tenant_id", "environment_id", column],
                unique=True,
                sqlite_where=_LIVE,
                postgresql_where=_LIVE,
            )
        batch_op.create_index("ix_checkout_sessions_run_at", ["run_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("checkout_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_checkout_sessions_run_at")
        for column in ("open_wallet_id", "open_key"):
            batch_op.drop_index(f"uq_checkout_sessions_{column}_live")
        for column in ("subscription_id", "provider_session_id", "customer_id"):
            batch_op.drop_index(f"ix_checkout_sessions_{column}")
        batch_op.drop_index("ix_checkout_sessions_scope_created")

    op.drop_table("checkout_sessions")
