"""initial schema: access, customers, notifications

Revision ID: 0001
Revises:
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import billingkit.storage.sql.types

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=True),
        sa.Column("password_hash", sa.String(length=255), nullable=True),
        sa.Column(
            "roles",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
    )
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.create_index("ix_accounts_email", ["email"], unique=False)
        batch_op.create_index(
            "uq_accounts_email_live",
            ["tenant_id", "email"],
            unique=True,
            sqlite_where=sa.text("status = 'published'"),
            postgresql_where=sa.text("status = 'published'"),
        )

    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("display_id", sa.String(length=16), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("account_type", sa.String(length=32), nullable=False),
        sa.Column(
            "roles",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("expires_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(
            "ix_api_keys_scope", ["tenant_id", "environment_id", "created_at"], unique=False
        )
        batch_op.create_index("uq_api_keys_key_hash", ["key_hash"], unique=True)

    op.create_table(
        "customers",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("external_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=True),
        sa.Column("contact", sa.String(length=255), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("address_line1", sa.String(length=255), nullable=True),
        sa.Column("address_line2", sa.String(length=255), nullable=True),
        sa.Column("address_city", sa.String(length=255), nullable=True),
        sa.Column("address_state", sa.String(length=255), nullable=True),
        sa.Column("address_postal_code", sa.String(length=32), nullable=True),
        sa.Column("address_country", sa.String(length=2), nullable=True),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_customers")),
    )
    with op.batch_alter_table("customers", schema=None) as batch_op:
        batch_op.create_index(
            "ix_customers_scope_created", ["tenant_id", "environment_id", "created_at"], unique=False
        )
        batch_op.create_index(
            "uq_customers_external_id_live",
            ["tenant_id", "environment_id", "external_id"],
            unique=True,
            sqlite_where=sa.text("status = 'published'"),
            postgresql_where=sa.text("status = 'published'"),
        )

    op.create_table(
        "environments",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_environments")),
    )
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.create_index("ix_environments_tenant", ["tenant_id", "created_at"], unique=False)

    op.create_table(
        "notification_events",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("environment_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("event_type", sa.String(length=128), nullable=False),
        sa.Column("entity_type", sa.String(length=64), nullable=False),
        sa.Column("entity_id", sa.String(length=64), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_events")),
    )
    with op.batch_alter_table("notification_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_notification_events_scope_created",
            ["tenant_id", "environment_id", "created_at"],
            unique=False,
        )

    op.create_table(
        "tenants",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("updated_by", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
    )


def downgrade() -> None:
    op.drop_table("tenants")
    with op.batch_alter_table("notification_events", schema=None) as batch_op:
        batch_op.drop_index("ix_notification_events_scope_created")

    op.drop_table("notification_events")
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.drop_index("ix_environments_tenant")

    op.drop_table("environments")
    with op.batch_alter_table("customers", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_customers_external_id_live",
            sqlite_where=sa.text("status = 'published'"),
            postgresql_where=sa.text("status = 'published'"),
        )
        batch_op.drop_index("ix_customers_scope_created")

    op.drop_table("customers")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index("uq_api_keys_key_hash")
        batch_op.drop_index("ix_api_keys_scope")

    op.drop_table("api_keys")
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_accounts_email_live",
            sqlite_where=sa.text("status = 'published'"),
            postgresql_where=sa.text("status = 'published'"),
        )
        batch_op.drop_index("ix_accounts_email")

    op.drop_table("accounts")
