"""access management: tenant billing details and suspension, API keys' last use

``tenants.billing_details`` (JSON) and ``tenants.suspended_at`` (set while the operator has
suspended the tenant: its callers may read, not write); ``api_keys.last_used_at``, written at most
once per key per ``Settings.api_key_last_used_interval``. Existing rows get NULL: no billing
details, not suspended, last use unknown.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-24 18:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import billingkit.storage.sql.types

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("billing_details", billingkit.storage.sql.types.JsonDocument(), nullable=True)
        )
        batch_op.add_column(
            sa.Column("suspended_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True)
        )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("last_used_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_column("last_used_at")
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.drop_column("suspended_at")
        batch_op.drop_column("billing_details")
