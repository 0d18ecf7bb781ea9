"""webhooks: endpoints, deliveries, and the notifications' dispatch marker

Notifications recorded before this revision have no ``dispatch_at``: they predate every endpoint
and are never handed to one (an endpoint receives what is recorded from its creation on).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24 15:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import billingkit.storage.sql.types

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _common() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
    ]


def upgrade() -> None:
    with op.batch_alter_table("notification_events", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("dispatch_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True)
        )
        batch_op.create_index("ix_notification_events_dispatch_at", ["dispatch_at"], unique=False)

    op.create_table(
        "webhook_endpoints",
        *_common(),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("event_types", billingkit.storage.sql.types.JsonDocument(), nullable=False),
        sa.Column("headers", billingkit.storage.sql.types.JsonDocument(), nullable=False),
        sa.Column("secret_ciphertext", sa.Text(), nullable=False),
        sa.Column("failure_streak", sa.Integer(), nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_endpoints")),
    )
    with op.batch_alter_table("webhook_endpoints", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_endpoints_scope_created", ["tenant_id", "environment_id", "created_at"], unique=False
        )

    op.create_table(
        "webhook_deliveries",
        *_common(),
        sa.Column("endpoint_id", sa.String(length=64), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("event_type", sa.String(length=128), nullable=False),
        sa.Column("entity_type", sa.String(length=64), nullable=False),
        sa.Column("entity_id", sa.String(length=255), nullable=False),
        sa.Column("delivery_status", sa.String(length=16), nullable=False),
        sa.Column("next_attempt_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("response_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("delivered_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("attempts", billingkit.storage.sql.types.JsonDocument(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_deliveries_scope_created", ["tenant_id", "environment_id", "created_at"], unique=False
        )
        batch_op.create_index(
            "ix_webhook_deliveries_endpoint_id", ["tenant_id", "environment_id", "endpoint_id"], unique=False
        )
        batch_op.create_index(
            "ix_webhook_deliveries_event_id", ["tenant_id", "environment_id", "event_id"], unique=False
        )
        batch_op.create_index(
            "ix_webhook_deliveries_entity",
            ["tenant_id", "environment_id", "entity_id", "delivery_status"],
            unique=False,
        )
        batch_op.create_index("ix_webhook_deliveries_next_attempt_at", ["next_attempt_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_next_attempt_at")
        batch_op.drop_index("ix_webhook_deliveries_entity")
        batch_op.drop_index("ix_webhook_deliveries_event_id")
        batch_op.drop_index("ix_webhook_deliveries_endpoint_id")
        batch_op.drop_index("ix_webhook_deliveries_scope_created")
    op.drop_table("webhook_deliveries")
    with op.batch_alter_table("webhook_endpoints", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_endpoints_scope_created")
    op.drop_table("webhook_endpoints")
    with op.batch_alter_table("notification_events", schema=None) as batch_op:
        batch_op.drop_index("ix_notification_events_dispatch_at")
        batch_op.drop_column("dispatch_at")
