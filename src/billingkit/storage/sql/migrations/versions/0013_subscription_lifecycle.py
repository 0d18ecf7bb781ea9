"""the subscription lifecycle: line item owners, pauses, schedules, add-on associations, phases

Line items stay inside their subscription; ``line_item_owners`` indexes them by id, backfilled here
from the subscriptions already stored.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 09:37:24.602621
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import billingkit.storage.sql.types

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "addon_associations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("entity_id", sa.String(length=64), nullable=False),
        sa.Column("entity_type", sa.String(length=16), nullable=False),
        sa.Column("addon_id", sa.String(length=64), nullable=False),
        sa.Column("addon_status", sa.String(length=16), nullable=False),
        sa.Column("cadence", sa.String(length=16), nullable=False),
        sa.Column("start_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("end_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("cancelled_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("cancellation_reason", sa.Text(), nullable=True),
        sa.Column("metadata", billingkit.storage.sql.types.JsonDocument(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_addon_associations")),
    )
    with op.batch_alter_table("addon_associations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_addon_associations_addon_id", ["tenant_id", "environment_id", "addon_id"], unique=False
        )
        batch_op.create_index(
            "ix_addon_associations_entity_id", ["tenant_id", "environment_id", "entity_id"], unique=False
        )
        batch_op.create_index(
            "ix_addon_associations_scope_created", ["tenant_id", "environment_id", "created_at"], unique=False
        )

    op.create_table(
        "line_item_owners",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("subscription_id", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_line_item_owners")),
    )
    with op.batch_alter_table("line_item_owners", schema=None) as batch_op:
        batch_op.create_index(
            "ix_line_item_owners_scope_created", ["tenant_id", "environment_id", "created_at"], unique=False
        )
        batch_op.create_index(
            "ix_line_item_owners_subscription_id",
            ["tenant_id", "environment_id", "subscription_id"],
            unique=False,
        )

    op.create_table(
        "subscription_pauses",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("subscription_id", sa.String(length=64), nullable=False),
        sa.Column("pause_status", sa.String(length=16), nullable=False),
        sa.Column("pause_mode", sa.String(length=16), nullable=False),
        sa.Column("resume_mode", sa.String(length=16), nullable=True),
        sa.Column("pause_start", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("pause_end", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("resumed_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column(
            "original_period_start", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "original_period_end", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False
        ),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("metadata", billingkit.storage.sql.types.JsonDocument(), nullable=False),
        sa.Column("run_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscription_pauses")),
    )
    with op.batch_alter_table("subscription_pauses", schema=None) as batch_op:
        batch_op.create_index("ix_subscription_pauses_run_at", ["run_at"], unique=False)
        batch_op.create_index(
            "ix_subscription_pauses_scope_created",
            ["tenant_id", "environment_id", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_subscription_pauses_subscription_id",
            ["tenant_id", "environment_id", "subscription_id"],
            unique=False,
        )

    op.create_table(
        "subscription_phases",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("subscription_id", sa.String(length=64), nullable=False),
        sa.Column("start_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("end_date", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("metadata", billingkit.storage.sql.types.JsonDocument(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscription_phases")),
    )
    with op.batch_alter_table("subscription_phases", schema=None) as batch_op:
        batch_op.create_index(
            "ix_subscription_phases_scope_created",
            ["tenant_id", "environment_id", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_subscription_phases_subscription_id",
            ["tenant_id", "environment_id", "subscription_id"],
            unique=False,
        )

    op.create_table(
        "subscription_schedules",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("subscription_id", sa.String(length=64), nullable=False),
        sa.Column("schedule_type", sa.String(length=32), nullable=False),
        sa.Column("schedule_status", sa.String(length=16), nullable=False),
        sa.Column("scheduled_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("executed_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("cancelled_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("configuration", billingkit.storage.sql.types.JsonDocument(), nullable=False),
        sa.Column("execution_result", billingkit.storage.sql.types.JsonDocument(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("metadata", billingkit.storage.sql.types.JsonDocument(), nullable=False),
        sa.Column("run_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscription_schedules")),
    )
    with op.batch_alter_table("subscription_schedules", schema=None) as batch_op:
        batch_op.create_index("ix_subscription_schedules_run_at", ["run_at"], unique=False)
        batch_op.create_index(
            "ix_subscription_schedules_scope_created",
            ["tenant_id", "environment_id", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_subscription_schedules_subscription_id",
            ["tenant_id", "environment_id", "subscription_id"],
            unique=False,
        )
    _backfill_line_item_owners()


def _backfill_line_item_owners() -> None:
    """One owner row per line item of every subscription stored before this revision."""
    subscriptions = sa.table(
        "subscriptions",
        sa.column("id", sa.String()),
        sa.column("tenant_id", sa.String()),
        sa.column("environment_id", sa.String()),
        sa.column("created_at", billingkit.storage.sql.types.UtcDateTime()),
        sa.column("created_by", sa.String()),
        sa.column("line_items", billingkit.storage.sql.types.JsonDocument()),
    )
    owners = sa.table(
        "line_item_owners",
        *(
            sa.column(name)
            for name in ("id", "tenant_id", "environment_id", "status", "created_by", "updated_by")
        ),
        sa.column("created_at", billingkit.storage.sql.types.UtcDateTime()),
        sa.column("updated_at", billingkit.storage.sql.types.UtcDateTime()),
        sa.column("subscription_id"),
    )
    connection = op.get_bind()
    rows = [
        {
            "id": line["id"],
            "tenant_id": sub.tenant_id,
            "environment_id": sub.environment_id,
            "status": "published",
            "created_at": sub.created_at,
            "updated_at": sub.created_at,
            "created_by": sub.created_by,
            "updated_by": sub.created_by,
            "subscription_id": sub.id,
        }
        for sub in connection.execute(sa.select(subscriptions))
        for line in sub.line_items or ()
    ]
    if rows:
        connection.execute(owners.insert(), rows)


def downgrade() -> None:
    with op.batch_alter_table("subscription_schedules", schema=None) as batch_op:
        batch_op.drop_index("ix_subscription_schedules_subscription_id")
        batch_op.drop_index("ix_subscription_schedules_scope_created")
        batch_op.drop_index("ix_subscription_schedules_run_at")

    op.drop_table("subscription_schedules")
    with op.batch_alter_table("subscription_phases", schema=None) as batch_op:
        batch_op.drop_index("ix_subscription_phases_subscription_id")
        batch_op.drop_index("ix_subscription_phases_scope_created")

    op.drop_table("subscription_phases")
    with op.batch_alter_table("subscription_pauses", schema=None) as batch_op:
        batch_op.drop_index("ix_subscription_pauses_subscription_id")
        batch_op.drop_index("ix_subscription_pauses_scope_created")
        batch_op.drop_index("ix_subscription_pauses_run_at")

    op.drop_table("subscription_pauses")
    with op.batch_alter_table("line_item_owners", schema=None) as batch_op:
        batch_op.drop_index("ix_line_item_owners_subscription_id")
        batch_op.drop_index("ix_line_item_owners_scope_created")

    op.drop_table("line_item_owners")
    with op.batch_alter_table("addon_associations", schema=None) as batch_op:
        batch_op.drop_index("ix_addon_associations_scope_created")
        batch_op.drop_index("ix_addon_associations_entity_id")
        batch_op.drop_index("ix_addon_associations_addon_id")

    op.drop_table("addon_associations")
