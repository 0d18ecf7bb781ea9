"""tax associations: which tax rate applies to a subscription, a customer, the tenant or an invoice

One row per association (rate, entity, priority, auto_apply, optional currency, [start_date,
end_date) window). Billing reads a batch's associations by entity id, the list route by rate.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import billingkit.storage.sql.types

revision: str = "0009"
# 0008 is the coupons revision of the same issue; the chain is fixed at merge if it lands later.
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tax_associations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("tax_rate_id", sa.String(length=64), nullable=False),
        sa.Column("entity_type", sa.String(length=16), nullable=False),
        sa.Column("entity_id", sa.String(length=255), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("auto_apply", sa.Boolean(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=True),
        sa.Column("start_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("end_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tax_associations")),
    )
    with op.batch_alter_table("tax_associations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_tax_associations_entity",
            ["tenant_id", "environment_id", "entity_id", "entity_type"],
            unique=False,
        )
        batch_op.create_index(
            "ix_tax_associations_scope_created",
            ["tenant_id", "environment_id", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_tax_associations_tax_rate_id",
            ["tenant_id", "environment_id", "tax_rate_id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("tax_associations", schema=None) as batch_op:
        batch_op.drop_index("ix_tax_associations_tax_rate_id")
        batch_op.drop_index("ix_tax_associations_scope_created")
        batch_op.drop_index("ix_tax_associations_entity")

    op.drop_table("tax_associations")
