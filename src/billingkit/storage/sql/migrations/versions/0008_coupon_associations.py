"""coupon associations: coupons attached to subscriptions and their line items

One row per attachment of a coupon to a subscription (``subscription_line_item_id`` null) or to
one of its line items, with its ``[start_date, end_date)`` window and the number of invoices it
has discounted (``applications``), which stops ``once`` and ``repeated`` coupons.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import billingkit.storage.sql.types

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "coupon_associations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("coupon_id", sa.String(length=64), nullable=False),
        sa.Column("subscription_id", sa.String(length=64), nullable=False),
        sa.Column("subscription_line_item_id", sa.String(length=64), nullable=True),
        sa.Column("subscription_phase_id", sa.String(length=64), nullable=True),
        sa.Column("start_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("end_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("applications", sa.Integer(), nullable=False),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_coupon_associations")),
    )
    with op.batch_alter_table("coupon_associations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_coupon_associations_coupon_id", ["tenant_id", "environment_id", "coupon_id"], unique=False
        )
        batch_op.create_index(
            "ix_coupon_associations_scope_created",
            ["tenant_id", "environment_id", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_coupon_associations_subscription_id",
            ["tenant_id", "environment_id", "subscription_id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("coupon_associations", schema=None) as batch_op:
        batch_op.drop_index("ix_coupon_associations_subscription_id")
        batch_op.drop_index("ix_coupon_associations_scope_created")
        batch_op.drop_index("ix_coupon_associations_coupon_id")

    op.drop_table("coupon_associations")
