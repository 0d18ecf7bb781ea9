"""cost sheets: a seller's cost prices per meter

``lookup_key`` is unique per environment among live rows. The sheet's prices are rows of
``prices`` with ``entity_type = 'COSTSHEET'`` (a text column: no schema change there).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-24 18:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import billingkit.storage.sql.types

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INSTANT = billingkit.storage.sql.types.UtcDateTime(timezone=True)
_JSON = billingkit.storage.sql.types.JsonDocument()
_LIVE = sa.text("status = 'published'")


def upgrade() -> None:
    op.create_table(
        "costsheets",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", _INSTANT, nullable=False),
        sa.Column("updated_at", _INSTANT, nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("lookup_key", sa.String(length=255), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("metadata", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_costsheets")),
    )
    with op.batch_alter_table("costsheets", schema=None) as batch_op:
        batch_op.create_index(
            "ix_costsheets_scope_created", ["tenant_id", "environment_id", "created_at"], unique=False
        )
        batch_op.create_index(
            "uq_costsheets_lookup_key_live",
            ["tenant_id", "environment_id", "lookup_key"],
            unique=True,
            sqlite_where=_LIVE,
            postgresql_where=_LIVE,
        )


def downgrade() -> None:
    with op.batch_alter_table("costsheets", schema=None) as batch_op:
        batch_op.drop_index("uq_costsheets_lookup_key_live")
        batch_op.drop_index("ix_costsheets_scope_created")
    op.drop_table("costsheets")
