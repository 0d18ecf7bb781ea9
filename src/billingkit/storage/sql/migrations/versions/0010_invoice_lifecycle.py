"""invoices: finalization delay, direct-invoice idempotency and adjustment sources

``invoices.finalize_at`` is when the worker finalizes a renewal draft kept open by the
finalization delay (indexed for the due-work claim). ``idempotency_key`` becomes unique per
environment over every row, whatever its status (existing rows have none, and NULLs never
collide); ``request_fingerprint`` is the digest of the request a key was first used with.
``adjustment_sources`` keeps the coupons and tax rates a direct invoice was created with.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import billingkit.storage.sql.types

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("finalize_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("request_fingerprint", sa.String(length=64), nullable=True))
        batch_op.add_column(
            sa.Column(
                "adjustment_sources",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )
        batch_op.create_index("ix_invoices_finalize_at", ["finalize_at"], unique=False)
        batch_op.create_index(
            "uq_invoices_idempotency_key", ["tenant_id", "environment_id", "idempotency_key"], unique=True
        )


def downgrade() -> None:
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.drop_index("uq_invoices_idempotency_key")
        batch_op.drop_index("ix_invoices_finalize_at")
        batch_op.drop_column("adjustment_sources")
        batch_op.drop_column("request_fingerprint")
        batch_op.drop_column("finalize_at")
