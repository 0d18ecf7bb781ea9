"""wallet transactions: the first append-only ledger

One row per movement of a wallet's credits (credit or debit, positive amounts), never updated: a
balance is the sum of the rows. ``idempotency_key`` names what caused the movement and is unique
per environment over every row, so one cause is applied once whoever retries it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 01:47:52
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import billingkit.storage.sql.types

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "wallet_transactions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("wallet_id", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("credit_amount", billingkit.storage.sql.types.ExactDecimal(), nullable=False),
        sa.Column("amount", billingkit.storage.sql.types.ExactDecimal(), nullable=False),
        sa.Column("transaction_reason", sa.String(length=32), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("reference_type", sa.String(length=16), nullable=True),
        sa.Column("reference_id", sa.String(length=255), nullable=True),
        sa.Column("parent_transaction_id", sa.String(length=64), nullable=True),
        sa.Column("expiry_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wallet_transactions")),
    )
    with op.batch_alter_table("wallet_transactions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_wallet_transactions_customer_id", ["tenant_id", "environment_id", "customer_id"], unique=False
        )
        batch_op.create_index(
            "ix_wallet_transactions_scope_created",
            ["tenant_id", "environment_id", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_wallet_transactions_wallet",
            ["tenant_id", "environment_id", "wallet_id", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            "uq_wallet_transactions_idempotency_key",
            ["tenant_id", "environment_id", "idempotency_key"],
            unique=True,
        )


def downgrade() -> None:
    with op.batch_alter_table("wallet_transactions", schema=None) as batch_op:
        batch_op.drop_index("uq_wallet_transactions_idempotency_key")
        batch_op.drop_index("ix_wallet_transactions_wallet")
        batch_op.drop_index("ix_wallet_transactions_scope_created")
        batch_op.drop_index("ix_wallet_transactions_customer_id")

    op.drop_table("wallet_transactions")
