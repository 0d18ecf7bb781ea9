"""catalogue

The catalogue tables: plans, add-ons, prices, price units, groups, meters, features,
entitlements, credit grants, coupons and tax rates. Every one is environment-scoped and starts
with the same resource columns, an index on (scope, created_at) and, where a key is unique among
live rows, a partial unique index; the helpers below spell those once. The helpers are part of
this revision (a revision must create the same schema forever, so it shares no code with
``tables.py``, which moves on).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 19:02:43.754622
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import billingkit.storage.sql.types

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SCOPE = ["tenant_id", "environment_id"]
_LIVE = "status = 'published'"


def _string(name: str, length: int, *, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.String(length=length), nullable=nullable)


def _ref(name: str, *, nullable: bool = True) -> sa.Column[Any]:
    """An id of another resource."""
    return _string(name, 64, nullable=nullable)


def _text(name: str) -> sa.Column[Any]:
    return sa.Column(name, sa.Text(), nullable=True)


def _integer(name: str, *, nullable: bool = True) -> sa.Column[Any]:
    return sa.Column(name, sa.Integer(), nullable=nullable)


def _boolean(name: str) -> sa.Column[Any]:
    return sa.Column(name, sa.Boolean(), nullable=False)


def _decimal(name: str, *, nullable: bool = True) -> sa.Column[Any]:
    return sa.Column(name, billingkit.storage.sql.types.ExactDecimal(), nullable=nullable)


def _instant(name: str, *, nullable: bool = True) -> sa.Column[Any]:
    return sa.Column(name, billingkit.storage.sql.types.UtcDateTime(timezone=True), nullable=nullable)


def _json(name: str, *, nullable: bool = True) -> sa.Column[Any]:
    return sa.Column(
        name, sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=nullable
    )


def _resource_columns() -> list[sa.Column[Any]]:
    """The columns every environment-scoped resource starts with."""
    return [
        _ref("id", nullable=False),
        _ref("tenant_id", nullable=False),
        _ref("environment_id", nullable=False),
        _string("status", 16),
        _instant("created_at", nullable=False),
        _instant("updated_at", nullable=False),
        _ref("created_by", nullable=False),
        _ref("updated_by", nullable=False),
    ]


def _indexes(
    table: str, lookups: Sequence[str], unique_live: Sequence[str]
) -> list[tuple[str, list[str], bool]]:
    """(name, columns, unique) of the table's indexes, by name: one per looked-up column and the
    scope's creation order, all led by the scope, and one unique among live rows when asked."""
    found = [(f"ix_{table}_{column}", [*_SCOPE, column], False) for column in lookups]
    found.append((f"ix_{table}_scope_created", [*_SCOPE, "created_at"], False))
    if unique_live:
        found.append((f"uq_{table}_{'_'.join(unique_live)}_live", [*_SCOPE, *unique_live], True))
    return sorted(found)


def _create(
    table: str,
    *columns: sa.Column[Any],
    lookups: Sequence[str] = (),
    unique_live: Sequence[str] = (),
) -> None:
    op.create_table(
        table,
        *_resource_columns(),
        *columns,
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    )
    with op.batch_alter_table(table, schema=None) as batch_op:
        for name, indexed, unique in _indexes(table, lookups, unique_live):
            where = {"sqlite_where": sa.text(_LIVE), "postgresql_where": sa.text(_LIVE)} if unique else {}
            batch_op.create_index(name, indexed, unique=unique, **where)


def _drop(table: str, *, lookups: Sequence[str] = (), unique_live: Sequence[str] = ()) -> None:
    with op.batch_alter_table(table, schema=None) as batch_op:
        for name, _, _ in reversed(_indexes(table, lookups, unique_live)):
            batch_op.drop_index(name)
    op.drop_table(table)


@dataclass(frozen=True)
class _Table:
    """One catalogue table: its own columns (after the resource columns, made anew for each
    upgrade: a column belongs to one table object), the columns it is looked up by, and the
    columns unique among its live rows."""

    name: str
    columns: Callable[[], list[sa.Column[Any]]]
    lookups: tuple[str, ...] = ()
    unique_live: tuple[str, ...] = ()


# In creation order; downgrade drops them in reverse.
_TABLES = (
    _Table(
        "addons",
        lambda: [
            _string("name", 255),
            _string("lookup_key", 255),
            _text("description"),
            _json("metadata", nullable=False),
        ],
        unique_live=("lookup_key",),
    ),
    _Table(
        "catalog_groups",
        lambda: [
            _string("name", 255),
            _string("lookup_key", 255),
            _string("entity_type", 16),
            _json("metadata", nullable=False),
        ],
        unique_live=("lookup_key",),
    ),
    _Table(
        "coupons",
        lambda: [
            _string("name", 255),
            _string("type", 16),
            _string("cadence", 16),
            _string("coupon_code", 255, nullable=True),
            _decimal("amount_off"),
            _decimal("percentage_off"),
            _string("currency", 3, nullable=True),
            _integer("duration_in_periods"),
            _integer("max_redemptions"),
            _integer("total_redemptions", nullable=False),
            _instant("redeem_after"),
            _instant("redeem_before"),
            _json("rules"),
            _json("metadata", nullable=False),
        ],
        unique_live=("coupon_code",),
    ),
    _Table(
        "credit_grants",
        lambda: [
            _string("name", 255),
            _string("scope", 16),
            _ref("plan_id"),
            _ref("addon_id"),
            _ref("subscription_id"),
            _string("cadence", 16),
            _decimal("credits", nullable=False),
            _string("period", 16, nullable=True),
            _integer("period_count"),
            _string("expiration_type", 16),
            _integer("expiration_duration"),
            _string("expiration_duration_unit", 16, nullable=True),
            _integer("priority"),
            _decimal("conversion_rate"),
            _decimal("topup_conversion_rate"),
            _instant("credit_grant_anchor"),
            _instant("start_date"),
            _instant("end_date"),
            _json("metadata", nullable=False),
        ],
        lookups=("addon_id", "plan_id", "subscription_id"),
    ),
    _Table(
        "entitlements",
        lambda: [
            _string("entity_type", 32),
            _ref("entity_id", nullable=False),
            _ref("plan_id"),
            _ref("feature_id", nullable=False),
            _string("feature_type", 16),
            _boolean("is_enabled"),
            _integer("usage_limit"),
            _string("usage_reset_period", 16, nullable=True),
            _boolean("is_soft_limit"),
            _text("static_value"),
            _json("config_value"),
            _string("aggregation_mode", 16, nullable=True),
            _string("grant_measure", 16, nullable=True),
            _integer("grant_quota"),
            _string("grant_duration_unit", 32, nullable=True),
            _integer("grant_duration_value"),
            _string("grant_allocation_behavior", 16, nullable=True),
            _ref("parent_entitlement_id"),
            _integer("display_order", nullable=False),
            _instant("start_date"),
            _instant("end_date"),
        ],
        lookups=("feature_id",),
        unique_live=("entity_type", "entity_id", "feature_id"),
    ),
    _Table(
        "features",
        lambda: [
            _string("name", 255),
            _string("type", 16),
            _text("description"),
            _string("lookup_key", 255, nullable=True),
            _ref("meter_id"),
            _ref("group_id"),
            _string("unit_singular", 255, nullable=True),
            _string("unit_plural", 255, nullable=True),
            _json("reporting_unit"),
            _json("alert_settings"),
            _json("metadata", nullable=False),
        ],
        lookups=("group_id", "meter_id"),
        unique_live=("lookup_key",),
    ),
    _Table(
        "meters",
        lambda: [
            _string("name", 255),
            _string("event_name", 255),
            _json("aggregation", nullable=False),
            _json("filters", nullable=False),
            _string("reset_usage", 16),
        ],
        lookups=("event_name",),
    ),
    _Table(
        "plans",
        lambda: [
            _string("name", 255),
            _text("description"),
            _string("lookup_key", 255, nullable=True),
            _integer("display_order", nullable=False),
            _json("metadata", nullable=False),
        ],
        unique_live=("lookup_key",),
    ),
    _Table(
        "price_units",
        lambda: [
            _string("code", 32),
            _string("name", 255),
            _string("symbol", 16),
            _string("base_currency", 3),
            _decimal("conversion_rate", nullable=False),
            _json("metadata", nullable=False),
        ],
        unique_live=("code",),
    ),
    _Table(
        "prices",
        lambda: [
            _string("entity_type", 32),
            _ref("entity_id", nullable=False),
            _string("type", 16),
            _string("billing_model", 16),
            _string("billing_cadence", 16),
            _string("billing_period", 16),
            _integer("billing_period_count", nullable=False),
            _string("invoice_cadence", 16),
            _string("currency", 3),
            _decimal("amount", nullable=False),
            _string("tier_mode", 16, nullable=True),
            _json("tiers"),
            _json("transform_quantity"),
            _ref("meter_id"),
            _decimal("min_quantity"),
            _integer("trial_period_days", nullable=False),
            _string("display_name", 255, nullable=True),
            _text("description"),
            _string("lookup_key", 255, nullable=True),
            _ref("group_id"),
            _ref("parent_price_id"),
            _integer("sequence", nullable=False),
            _instant("start_date"),
            _instant("end_date"),
            _string("price_unit_type", 16),
            _ref("price_unit_id"),
            _string("price_unit", 32, nullable=True),
            _decimal("price_unit_amount"),
            _json("price_unit_tiers"),
            _decimal("conversion_rate"),
            _json("metadata", nullable=False),
        ],
        lookups=("entity_id", "group_id", "meter_id"),
        unique_live=("lookup_key",),
    ),
    _Table(
        "tax_rates",
        lambda: [
            _string("name", 255),
            _string("code", 64),
            _string("tax_rate_type", 16),
            _decimal("percentage_value"),
            _decimal("fixed_value"),
            _text("description"),
            _string("scope", 16),
            _string("tax_rate_status", 16),
            _json("metadata", nullable=False),
        ],
        unique_live=("code",),
    ),
)


def upgrade() -> None:
    for table in _TABLES:
        _create(table.name, *table.columns(), lookups=table.lookups, unique_live=table.unique_live)


def downgrade() -> None:
    for table in reversed(_TABLES):
        _drop(table.name, lookups=table.lookups, unique_live=table.unique_live)
