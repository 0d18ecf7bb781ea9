"""subscription hierarchies: children by parent, invoices by the subscriber's customer

``subscriptions.parent_subscription_id`` gets an index: a billing run reads the children of the
parents it bills with one IN list. ``invoices.subscription_customer_id`` is the customer of the
subscription an invoice bills, which differs from ``customer_id`` under delegated invoicing; rows
already stored are subscription invoices of their own customer (or of no subscription), so they
are backfilled from ``customer_id``.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.add_column(sa.Column("subscription_customer_id", sa.String(length=64), nullable=True))
        batch_op.create_index(
            "ix_invoices_subscription_customer_id",
            ["tenant_id", "environment_id", "subscription_customer_id"],
            unique=False,
        )
    invoices = sa.table(
        "invoices",
        sa.column("subscription_id", sa.String()),
        sa.column("customer_id", sa.String()),
        sa.column("subscription_customer_id", sa.String()),
    )
    op.execute(
        invoices.update()
        .where(invoices.c.subscription_id.is_not(None))
        .values(subscription_customer_id=invoices.c.customer_id)
    )
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_subscriptions_parent_subscription_id",
            ["tenant_id", "environment_id", "parent_subscription_id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.drop_index("ix_subscriptions_parent_subscription_id")
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.drop_index("ix_invoices_subscription_customer_id")
        batch_op.drop_column("subscription_customer_id")
