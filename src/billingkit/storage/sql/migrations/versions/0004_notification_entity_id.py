"""notification entity ids as long as event ids

A rejected usage event records ``event.rejected`` with the event id as ``entity_id``; event ids
are up to 255 characters, so the column must hold them (PostgreSQL refused longer ids with an
error; SQLite does not enforce VARCHAR lengths and needs no change).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 21:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column(
            "notification_events", "entity_id", type_=sa.String(length=255), existing_nullable=False
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column(
            "notification_events", "entity_id", type_=sa.String(length=64), existing_nullable=False
        )
