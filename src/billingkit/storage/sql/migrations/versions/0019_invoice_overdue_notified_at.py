"""invoices remember when ``invoice.payment.overdue`` was recorded for them

``invoices.overdue_notified_at`` is set by the due-work step that records the notification, so an
invoice is announced overdue once. Existing rows get NULL: an invoice already past its due date
and unpaid is announced by the first run after the upgrade (nothing announced it before).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-24 15:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import billingkit.storage.sql.types

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "overdue_notified_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.drop_column("overdue_notified_at")
