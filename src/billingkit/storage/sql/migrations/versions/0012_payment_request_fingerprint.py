"""payments: the request fingerprint of an idempotency key

``payments.request_fingerprint`` is the digest of the request a payment was created with, so the
same ``idempotency_key`` named again with another request is a conflict rather than a retry.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("payments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("request_fingerprint", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("payments", schema=None) as batch_op:
        batch_op.drop_column("request_fingerprint")
