"""subscriptions remember a requested billing anchor

``subscriptions.billing_anchor_requested`` is true when the creator gave ``billing_anchor``
(anniversary cycle): activating a draft at a new start keeps such an anchor and moves a derived
one to the new start. Before, activation guessed "requested" from ``billing_anchor != start_date``,
which lost a requested anchor equal to the start.

Existing rows get false, then drafts on the anniversary cycle whose anchor differs from their start
are marked requested, so each stored draft activates as it did before (a requested anchor equal to
the start cannot be told from a derived one in old rows). The flag is only read when a draft is
activated, so other rows keep false.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 17:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("billing_anchor_requested", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    subscriptions = sa.table(
        "subscriptions",
        sa.column("subscription_status", sa.String()),
        sa.column("billing_cycle", sa.String()),
        sa.column("billing_anchor", sa.String()),
        sa.column("start_date", sa.String()),
        sa.column("billing_anchor_requested", sa.Boolean()),
    )
    # Both instants are stored in one canonical form per dialect (timestamptz on PostgreSQL,
    # fixed-width UTC text on SQLite), so comparing them as stored is comparing the instants.
    op.execute(
        subscriptions.update()
        .where(
            subscriptions.c.subscription_status == "draft",
            subscriptions.c.billing_cycle == "anniversary",
            subscriptions.c.billing_anchor != subscriptions.c.start_date,
        )
        .values(billing_anchor_requested=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.drop_column("billing_anchor_requested")
