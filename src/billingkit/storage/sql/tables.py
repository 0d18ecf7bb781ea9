"""The schema, as SQLAlchemy Core tables. Alembic migrations are generated from this module."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, Integer, String, Table, Text, false

from billingkit.storage.sql.alert_tables import alert_logs, alert_settings
from billingkit.storage.sql.checkout_tables import checkout_sessions
from billingkit.storage.sql.columns import (
    LIVE,
    common_columns,
    instant_column,
    json_column,
    metadata,
    money_column,
    name_column,
    scoped_indexes,
    text_column,
)
from billingkit.storage.sql.costsheet_tables import costsheets
from billingkit.storage.sql.lifecycle_tables import (
    addon_associations,
    line_item_owners,
    subscription_changes,
    subscription_pauses,
    subscription_phases,
    subscription_schedules,
)
from billingkit.storage.sql.money_tables import (
    credit_grant_applications,
    credit_notes,
    payments,
    wallet_transactions,
    wallets,
)
from billingkit.storage.sql.task_tables import export_parts, scheduled_tasks, tasks
from billingkit.storage.sql.types import ExactDecimal, JsonDocument, UtcDateTime
from billingkit.storage.sql.webhook_tables import webhook_deliveries, webhook_endpoints

__all__ = ["TABLES", "events", "metadata"]


tenants = Table(
    "tenants",
    metadata,
    *common_columns(tenant=False, environment=False),
    Column("name", String(255), nullable=False),
    Column("metadata", JsonDocument(), nullable=False),
    Column("billing_details", JsonDocument()),
    Column("suspended_at", UtcDateTime()),
)

environments = Table(
    "environments",
    metadata,
    *common_columns(environment=False),
    Column("name", String(255), nullable=False),
    Column("type", String(32), nullable=False),
    Index("ix_environments_tenant", "tenant_id", "created_at"),
)

accounts = Table(
    "accounts",
    metadata,
    *common_columns(environment=False),
    Column("type", String(32), nullable=False),
    Column("name", String(255), nullable=False),
    Column("email", String(254)),
    Column("password_hash", String(255)),
    Column("roles", JsonDocument(), nullable=False),
    Column("metadata", JsonDocument(), nullable=False),
    Index(
        "uq_accounts_email_live",
        "tenant_id",
        "email",
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    ),
    Index("ix_accounts_email", "email"),
)

api_keys = Table(
    "api_keys",
    metadata,
    *common_columns(),
    Column("name", String(255), nullable=False),
    Column("type", String(32), nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("display_id", String(16), nullable=False),
    Column("account_id", String(64), nullable=False),
    Column("account_type", String(32), nullable=False),
    Column("roles", JsonDocument(), nullable=False),
    Column("expires_at", UtcDateTime()),
    Column("last_used_at", UtcDateTime()),
    Index("uq_api_keys_key_hash", "key_hash", unique=True),
    Index("ix_api_keys_scope", "tenant_id", "environment_id", "created_at"),
)

customers = Table(
    "customers",
    metadata,
    *common_columns(),
    Column("external_id", String(255), nullable=False),
    Column("name", String(255), nullable=False),
    Column("email", String(254)),
    Column("contact", String(255)),
    Column("timezone", String(64), nullable=False),
    Column("address_line1", String(255)),
    Column("address_line2", String(255)),
    Column("address_city", String(255)),
    Column("address_state", String(255)),
    Column("address_postal_code", String(32)),
    Column("address_country", String(2)),
    Column("metadata", JsonDocument(), nullable=False),
    Index(
        "uq_customers_external_id_live",
        "tenant_id",
        "environment_id",
        "external_id",
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    ),
    Index("ix_customers_scope_created", "tenant_id", "environment_id", "created_at"),
)

notifications = Table(
    "notification_events",
    metadata,
    *common_columns(),
    Column("event_type", String(128), nullable=False),
    Column("entity_type", String(64), nullable=False),
    Column("entity_id", String(255), nullable=False),  # event ids are up to 255
    Column("payload", JsonDocument(), nullable=False),
    instant_column("dispatch_at"),
    Index("ix_notification_events_scope_created", "tenant_id", "environment_id", "created_at"),
    # Serves the webhook dispatcher's claim of notifications not yet handed to endpoints.
    Index("ix_notification_events_dispatch_at", "dispatch_at"),
)


plans = Table(
    "plans",
    metadata,
    *common_columns(),
    name_column(),
    Column("description", Text()),
    text_column("lookup_key"),
    Column("display_order", Integer(), nullable=False),
    json_column("metadata", nullable=False),
    *scoped_indexes("plans", unique_live=("lookup_key",)),
)

addons = Table(
    "addons",
    metadata,
    *common_columns(),
    name_column(),
    Column("lookup_key", String(255), nullable=False),
    Column("description", Text()),
    json_column("metadata", nullable=False),
    *scoped_indexes("addons", unique_live=("lookup_key",)),
)

prices = Table(
    "prices",
    metadata,
    *common_columns(),
    Column("entity_type", String(32), nullable=False),
    Column("entity_id", String(64), nullable=False),
    Column("type", String(16), nullable=False),
    Column("billing_model", String(16), nullable=False),
    Column("billing_cadence", String(16), nullable=False),
    Column("billing_period", String(16), nullable=False),
    Column("billing_period_count", Integer(), nullable=False),
    Column("invoice_cadence", String(16), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("amount", ExactDecimal(), nullable=False),
    Column("tier_mode", String(16)),
    json_column("tiers"),
    json_column("transform_quantity"),
    Column("meter_id", String(64)),
    Column("min_quantity", ExactDecimal()),
    Column("trial_period_days", Integer(), nullable=False),
    text_column("display_name"),
    Column("description", Text()),
    text_column("lookup_key"),
    Column("group_id", String(64)),
    Column("parent_price_id", String(64)),
    Column("sequence", Integer(), nullable=False),
    Column("start_date", UtcDateTime()),
    Column("end_date", UtcDateTime()),
    Column("price_unit_type", String(16), nullable=False),
    Column("price_unit_id", String(64)),
    text_column("price_unit", 32),
    Column("price_unit_amount", ExactDecimal()),
    json_column("price_unit_tiers"),
    Column("conversion_rate", ExactDecimal()),
    json_column("metadata", nullable=False),
    *scoped_indexes("prices", "entity_id", "meter_id", "group_id", unique_live=("lookup_key",)),
)

price_units = Table(
    "price_units",
    metadata,
    *common_columns(),
    Column("code", String(32), nullable=False),
    name_column(),
    Column("symbol", String(16), nullable=False),
    Column("base_currency", String(3), nullable=False),
    Column("conversion_rate", ExactDecimal(), nullable=False),
    json_column("metadata", nullable=False),
    *scoped_indexes("price_units", unique_live=("code",)),
)

groups = Table(
    "catalog_groups",
    metadata,
    *common_columns(),
    name_column(),
    Column("lookup_key", String(255), nullable=False),
    Column("entity_type", String(16), nullable=False),
    json_column("metadata", nullable=False),
    *scoped_indexes("catalog_groups", unique_live=("lookup_key",)),
)

meters = Table(
    "meters",
    metadata,
    *common_columns(),
    name_column(),
    Column("event_name", String(255), nullable=False),
    json_column("aggregation", nullable=False),
    json_column("filters", nullable=False),
    Column("reset_usage", String(16), nullable=False),
    *scoped_indexes("meters", "event_name"),
)

features = Table(
    "features",
    metadata,
    *common_columns(),
    name_column(),
    Column("type", String(16), nullable=False),
    Column("description", Text()),
    text_column("lookup_key"),
    Column("meter_id", String(64)),
    Column("group_id", String(64)),
    text_column("unit_singular"),
    text_column("unit_plural"),
    json_column("reporting_unit"),
    json_column("alert_settings"),
    json_column("metadata", nullable=False),
    *scoped_indexes("features", "meter_id", "group_id", unique_live=("lookup_key",)),
)

entitlements = Table(
    "entitlements",
    metadata,
    *common_columns(),
    Column("entity_type", String(32), nullable=False),
    Column("entity_id", String(64), nullable=False),
    Column("plan_id", String(64)),
    Column("feature_id", String(64), nullable=False),
    Column("feature_type", String(16), nullable=False),
    Column("is_enabled", Boolean(), nullable=False),
    Column("usage_limit", Integer()),
    Column("usage_reset_period", String(16)),
    Column("is_soft_limit", Boolean(), nullable=False),
    Column("static_value", Text()),
    json_column("config_value"),
    Column("aggregation_mode", String(16)),
    Column("grant_measure", String(16)),
    Column("grant_quota", Integer()),
    Column("grant_duration_unit", String(32)),
    Column("grant_duration_value", Integer()),
    Column("grant_allocation_behavior", String(16)),
    Column("parent_entitlement_id", String(64)),
    Column("display_order", Integer(), nullable=False),
    Column("start_date", UtcDateTime()),
    Column("end_date", UtcDateTime()),
    *scoped_indexes("entitlements", "feature_id", unique_live=("entity_type", "entity_id", "feature_id")),
)

credit_grants = Table(
    "credit_grants",
    metadata,
    *common_columns(),
    name_column(),
    Column("scope", String(16), nullable=False),
    Column("plan_id", String(64)),
    Column("addon_id", String(64)),
    Column("subscription_id", String(64)),
    Column("cadence", String(16), nullable=False),
    Column("credits", ExactDecimal(), nullable=False),
    Column("period", String(16)),
    Column("period_count", Integer()),
    Column("expiration_type", String(16), nullable=False),
    Column("expiration_duration", Integer()),
    Column("expiration_duration_unit", String(16)),
    Column("priority", Integer()),
    Column("conversion_rate", ExactDecimal()),
    Column("topup_conversion_rate", ExactDecimal()),
    Column("credit_grant_anchor", UtcDateTime()),
    Column("start_date", UtcDateTime()),
    Column("end_date", UtcDateTime()),
    json_column("metadata", nullable=False),
    *scoped_indexes("credit_grants", "plan_id", "addon_id", "subscription_id"),
)

coupons = Table(
    "coupons",
    metadata,
    *common_columns(),
    name_column(),
    Column("type", String(16), nullable=False),
    Column("cadence", String(16), nullable=False),
    text_column("coupon_code"),
    Column("amount_off", ExactDecimal()),
    Column("percentage_off", ExactDecimal()),
    Column("currency", String(3)),
    Column("duration_in_periods", Integer()),
    Column("max_redemptions", Integer()),
    Column("total_redemptions", Integer(), nullable=False),
    Column("redeem_after", UtcDateTime()),
    Column("redeem_before", UtcDateTime()),
    json_column("rules"),
    json_column("metadata", nullable=False),
    *scoped_indexes("coupons", unique_live=("coupon_code",)),
)

coupon_associations = Table(
    "coupon_associations",
    metadata,
    *common_columns(),
    Column("coupon_id", String(64), nullable=False),
    Column("subscription_id", String(64), nullable=False),
    Column("subscription_line_item_id", String(64)),
    Column("subscription_phase_id", String(64)),
    Column("start_date", UtcDateTime(), nullable=False),
    Column("end_date", UtcDateTime()),
    Column("applications", Integer(), nullable=False),
    json_column("metadata", nullable=False),
    *scoped_indexes("coupon_associations", "subscription_id", "coupon_id"),
)

tax_rates = Table(
    "tax_rates",
    metadata,
    *common_columns(),
    name_column(),
    Column("code", String(64), nullable=False),
    Column("tax_rate_type", String(16), nullable=False),
    Column("percentage_value", ExactDecimal()),
    Column("fixed_value", ExactDecimal()),
    Column("description", Text()),
    Column("scope", String(16), nullable=False),
    Column("tax_rate_status", String(16), nullable=False),
    json_column("metadata", nullable=False),
    *scoped_indexes("tax_rates", unique_live=("code",)),
)

tax_associations = Table(
    "tax_associations",
    metadata,
    *common_columns(),
    Column("tax_rate_id", String(64), nullable=False),
    Column("entity_type", String(16), nullable=False),
    Column("entity_id", String(255), nullable=False),
    Column("priority", Integer(), nullable=False),
    Column("auto_apply", Boolean(), nullable=False),
    Column("currency", String(3)),
    Column("start_date", UtcDateTime(), nullable=False),
    Column("end_date", UtcDateTime()),
    json_column("metadata", nullable=False),
    # Billing reads a batch's associations by entity; the list route filters by rate.
    *scoped_indexes("tax_associations", "tax_rate_id"),
    Index("ix_tax_associations_entity", "tenant_id", "environment_id", "entity_id", "entity_type"),
)


subscriptions = Table(
    "subscriptions",
    metadata,
    *common_columns(),
    text_column("lookup_key"),
    Column("plan_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("invoicing_customer_id", String(64)),
    Column("parent_subscription_id", String(64)),
    text_column("gateway_payment_method_id"),
    Column("subscription_status", String(16), nullable=False),
    Column("subscription_type", String(32), nullable=False),
    Column("pause_status", String(16), nullable=False),
    Column("active_pause_id", String(64)),
    Column("billing_cadence", String(16), nullable=False),
    Column("billing_cycle", String(16), nullable=False),
    Column("billing_period", String(16), nullable=False),
    Column("billing_period_count", Integer(), nullable=False),
    instant_column("billing_anchor", nullable=False),
    Column("currency", String(3), nullable=False),
    Column("timezone", String(64), nullable=False),
    instant_column("start_date", nullable=False),
    instant_column("end_date"),
    instant_column("trial_start"),
    instant_column("trial_end"),
    instant_column("current_period_start", nullable=False),
    instant_column("current_period_end", nullable=False),
    instant_column("cancel_at"),
    instant_column("cancelled_at"),
    Column("cancel_at_period_end", Boolean(), nullable=False),
    Column("collection_method", String(32), nullable=False),
    Column("payment_behavior", String(32), nullable=False),
    Column("payment_terms", String(16)),
    Column("proration_behavior", String(32), nullable=False),
    money_column("commitment_amount", nullable=True),
    Column("commitment_duration", String(16)),
    money_column("overage_factor", nullable=True),
    money_column("auto_invoice_threshold", nullable=True),
    Column("enable_true_up", Boolean(), nullable=False),
    json_column("metadata", nullable=False),
    json_column("line_items", nullable=False),
    Column("synced_price_sequence", Integer(), nullable=False),
    Column("version", Integer(), nullable=False),
    Column("billing_sequence", Integer(), nullable=False),
    instant_column("renewal_notice_for"),
    instant_column("next_run_at"),
    # The server default lets migration 0006 add the column to rows already stored.
    Column("billing_anchor_requested", Boolean(), nullable=False, server_default=false()),
    # parent_subscription_id: a billing run reads its parents' children with one IN list.
    *scoped_indexes("subscriptions", "customer_id", "plan_id", "parent_subscription_id"),
    # Serves the billing run's claim of due subscriptions across all scopes.
    Index("ix_subscriptions_next_run_at", "next_run_at"),
)

invoices = Table(
    "invoices",
    metadata,
    *common_columns(),
    Column("invoice_number", String(64)),
    Column("invoice_type", String(16), nullable=False),
    Column("invoice_status", String(16), nullable=False),
    Column("payment_status", String(32), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("subscription_id", String(64)),
    Column("subscription_customer_id", String(64)),
    Column("currency", String(3), nullable=False),
    Column("description", Text()),
    Column("billing_reason", String(32), nullable=False),
    Column("billing_period", String(16)),
    Column("billing_sequence", Integer()),
    money_column("subtotal"),
    money_column("total"),
    money_column("total_discount"),
    money_column("total_tax"),
    money_column("total_prepaid_credits_applied"),
    money_column("adjustment_amount"),
    money_column("amount_due"),
    money_column("amount_paid"),
    money_column("amount_remaining"),
    money_column("overpaid_amount"),
    money_column("refunded_amount"),
    instant_column("issue_date"),
    instant_column("due_date"),
    instant_column("finalized_at"),
    instant_column("paid_at"),
    instant_column("voided_at"),
    instant_column("period_start"),
    instant_column("period_end"),
    instant_column("last_computed_at"),
    Column("is_manually_edited", Boolean(), nullable=False),
    text_column("idempotency_key"),
    Column("invoice_pdf_url", Text()),
    Column("recalculated_invoice_id", String(64)),
    json_column("coupon_applications", nullable=False),
    json_column("taxes", nullable=False),
    json_column("line_items", nullable=False),
    json_column("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    instant_column("finalize_at"),
    instant_column("overdue_notified_at"),
    Column("request_fingerprint", String(64)),
    json_column("adjustment_sources"),
    *scoped_indexes("invoices", "customer_id", "subscription_customer_id", unique_live=("invoice_number",)),
    # A direct invoice's idempotency key names one invoice, whatever its status (NULLs never collide).
    Index("uq_invoices_idempotency_key", "tenant_id", "environment_id", "idempotency_key", unique=True),
    # Serves the worker's claim of drafts due for finalization across all scopes.
    Index("ix_invoices_finalize_at", "finalize_at"),
    # One invoice per subscription, period and billing reason: a repeated or concurrent billing run
    # fails here instead of billing twice (NULL subscription ids never collide).
    Index(
        "uq_invoices_subscription_period_live",
        "tenant_id",
        "environment_id",
        "subscription_id",
        "period_start",
        "period_end",
        "billing_reason",
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    ),
)

# Named counters per scope (invoice numbers). Incremented with an upsert inside the caller's
# transaction, so numbers are gap-free and concurrent writers queue on the row.
counters = Table(
    "counters",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("environment_id", String(64), primary_key=True),
    Column("name", String(128), primary_key=True),
    Column("value", Integer(), nullable=False),
)

# Usage events are not catalogue-style resources (no status, no authorship): they are written in
# batches and aggregated, so they have their own port (billingkit.ports.EventStore).
events = Table(
    "events",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("environment_id", String(64), primary_key=True),
    Column("id", String(255), primary_key=True),
    Column("event_name", String(255), nullable=False),
    Column("external_customer_id", String(255), nullable=False),
    Column("customer_id", String(64)),
    Column("timestamp", UtcDateTime(), nullable=False),
    Column("source", String(255)),
    json_column("properties", nullable=False),
    Column("ingested_at", UtcDateTime(), nullable=False),
    # Serves usage: one customer's events of one name in a time window.
    Index(
        "ix_events_usage", "tenant_id", "environment_id", "external_customer_id", "event_name", "timestamp"
    ),
    # Serves event queries in time order (keyset on timestamp, id).
    Index("ix_events_time", "tenant_id", "environment_id", "timestamp", "id"),
)

# kind name (see billingkit.storage.kinds) -> table
TABLES: dict[str, Table] = {
    "tenants": tenants,
    "environments": environments,
    "accounts": accounts,
    "api_keys": api_keys,
    "customers": customers,
    "notifications": notifications,
    "plans": plans,
    "addons": addons,
    "prices": prices,
    "price_units": price_units,
    "groups": groups,
    "meters": meters,
    "features": features,
    "entitlements": entitlements,
    "credit_grants": credit_grants,
    "coupons": coupons,
    "coupon_associations": coupon_associations,
    "tax_rates": tax_rates,
    "tax_associations": tax_associations,
    "subscriptions": subscriptions,
    "invoices": invoices,
    "wallets": wallets,
    "wallet_transactions": wallet_transactions,
    "payments": payments,
    "credit_notes": credit_notes,
    "credit_grant_applications": credit_grant_applications,
    "line_item_owners": line_item_owners,
    "subscription_pauses": subscription_pauses,
    "subscription_schedules": subscription_schedules,
    "subscription_changes": subscription_changes,
    "addon_associations": addon_associations,
    "subscription_phases": subscription_phases,
    "alert_settings": alert_settings,
    "alert_logs": alert_logs,
    "webhook_endpoints": webhook_endpoints,
    "webhook_deliveries": webhook_deliveries,
    "checkout_sessions": checkout_sessions,
    "costsheets": costsheets,
    "tasks": tasks,
    "export_parts": export_parts,
    "scheduled_tasks": scheduled_tasks,
}
