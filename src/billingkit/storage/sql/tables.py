"""The schema, as SQLAlchemy Core tables. Alembic migrations are generated from this module."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, Integer, MetaData, String, Table, Text, false, text

from billingkit.storage.sql.types import ExactDecimal, JsonDocument, UtcDateTime

__all__ = ["metadata"]

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

LIVE = text("status = 'published'")


def _common(*, tenant: bool = True, environment: bool = True) -> list[Column[object]]:
    columns: list[Column[object]] = [Column("id", String(64), primary_key=True)]
    if tenant:
        columns.append(Column("tenant_id", String(64), nullable=False))
    if environment:
        columns.append(Column("environment_id", String(64), nullable=False))
    columns += [
        Column("status", String(16), nullable=False),
        Column("created_at", UtcDateTime(), nullable=False),
        Column("updated_at", UtcDateTime(), nullable=False),
        Column("created_by", String(64), nullable=False),
        Column("updated_by", String(64), nullable=False),
    ]
    return columns


tenants = Table(
    "tenants",
    metadata,
    *_common(tenant=False, environment=False),
    Column("name", String(255), nullable=False),
    Column("metadata", JsonDocument(), nullable=False),
)

environments = Table(
    "environments",
    metadata,
    *_common(environment=False),
    Column("name", String(255), nullable=False),
    Column("type", String(32), nullable=False),
    Index("ix_environments_tenant", "tenant_id", "created_at"),
)

accounts = Table(
    "accounts",
    metadata,
    *_common(environment=False),
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
    *_common(),
    Column("name", String(255), nullable=False),
    Column("type", String(32), nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("display_id", String(16), nullable=False),
    Column("account_id", String(64), nullable=False),
    Column("account_type", String(32), nullable=False),
    Column("roles", JsonDocument(), nullable=False),
    Column("expires_at", UtcDateTime()),
    Index("uq_api_keys_key_hash", "key_hash", unique=True),
    Index("ix_api_keys_scope", "tenant_id", "environment_id", "created_at"),
)

customers = Table(
    "customers",
    metadata,
    *_common(),
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
    *_common(),
    Column("event_type", String(128), nullable=False),
    Column("entity_type", String(64), nullable=False),
    Column("entity_id", String(255), nullable=False),  # event ids are up to 255
    Column("payload", JsonDocument(), nullable=False),
    Index("ix_notification_events_scope_created", "tenant_id", "environment_id", "created_at"),
)


def _scoped_indexes(name: str, *lookups: str, unique_live: tuple[str, ...] = ()) -> list[Index]:
    """The usual indexes of an environment-owned catalogue table: newest first within a scope, one
    per lookup column, and a partial unique index over ``unique_live`` among published rows."""
    indexes = [Index(f"ix_{name}_scope_created", "tenant_id", "environment_id", "created_at")]
    indexes += [Index(f"ix_{name}_{column}", "tenant_id", "environment_id", column) for column in lookups]
    if unique_live:
        indexes.append(
            Index(
                f"uq_{name}_{'_'.join(unique_live)}_live",
                "tenant_id",
                "environment_id",
                *unique_live,
                unique=True,
                sqlite_where=LIVE,
                postgresql_where=LIVE,
            )
        )
    return indexes


def _name() -> Column[object]:
    return Column("name", String(255), nullable=False)


def _text(name: str, length: int = 255) -> Column[object]:
    return Column(name, String(length))


def _json(name: str, *, nullable: bool = True) -> Column[object]:
    return Column(name, JsonDocument(), nullable=nullable)


plans = Table(
    "plans",
    metadata,
    *_common(),
    _name(),
    Column("description", Text()),
    _text("lookup_key"),
    Column("display_order", Integer(), nullable=False),
    _json("metadata", nullable=False),
    *_scoped_indexes("plans", unique_live=("lookup_key",)),
)

addons = Table(
    "addons",
    metadata,
    *_common(),
    _name(),
    Column("lookup_key", String(255), nullable=False),
    Column("description", Text()),
    _json("metadata", nullable=False),
    *_scoped_indexes("addons", unique_live=("lookup_key",)),
)

prices = Table(
    "prices",
    metadata,
    *_common(),
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
    _json("tiers"),
    _json("transform_quantity"),
    Column("meter_id", String(64)),
    Column("min_quantity", ExactDecimal()),
    Column("trial_period_days", Integer(), nullable=False),
    _text("display_name"),
    Column("description", Text()),
    _text("lookup_key"),
    Column("group_id", String(64)),
    Column("parent_price_id", String(64)),
    Column("sequence", Integer(), nullable=False),
    Column("start_date", UtcDateTime()),
    Column("end_date", UtcDateTime()),
    Column("price_unit_type", String(16), nullable=False),
    Column("price_unit_id", String(64)),
    _text("price_unit", 32),
    Column("price_unit_amount", ExactDecimal()),
    _json("price_unit_tiers"),
    Column("conversion_rate", ExactDecimal()),
    _json("metadata", nullable=False),
    *_scoped_indexes("prices", "entity_id", "meter_id", "group_id", unique_live=("lookup_key",)),
)

price_units = Table(
    "price_units",
    metadata,
    *_common(),
    Column("code", String(32), nullable=False),
    _name(),
    Column("symbol", String(16), nullable=False),
    Column("base_currency", String(3), nullable=False),
    Column("conversion_rate", ExactDecimal(), nullable=False),
    _json("metadata", nullable=False),
    *_scoped_indexes("price_units", unique_live=("code",)),
)

groups = Table(
    "catalog_groups",
    metadata,
    *_common(),
    _name(),
    Column("lookup_key", String(255), nullable=False),
    Column("entity_type", String(16), nullable=False),
    _json("metadata", nullable=False),
    *_scoped_indexes("catalog_groups", unique_live=("lookup_key",)),
)

meters = Table(
    "meters",
    metadata,
    *_common(),
    _name(),
    Column("event_name", String(255), nullable=False),
    _json("aggregation", nullable=False),
    _json("filters", nullable=False),
    Column("reset_usage", String(16), nullable=False),
    *_scoped_indexes("meters", "event_name"),
)

features = Table(
    "features",
    metadata,
    *_common(),
    _name(),
    Column("type", String(16), nullable=False),
    Column("description", Text()),
    _text("lookup_key"),
    Column("meter_id", String(64)),
    Column("group_id", String(64)),
    _text("unit_singular"),
    _text("unit_plural"),
    _json("reporting_unit"),
    _json("alert_settings"),
    _json("metadata", nullable=False),
    *_scoped_indexes("features", "meter_id", "group_id", unique_live=("lookup_key",)),
)

entitlements = Table(
    "entitlements",
    metadata,
    *_common(),
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
    _json("config_value"),
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
    *_scoped_indexes("entitlements", "feature_id", unique_live=("entity_type", "entity_id", "feature_id")),
)

credit_grants = Table(
    "credit_grants",
    metadata,
    *_common(),
    _name(),
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
    _json("metadata", nullable=False),
    *_scoped_indexes("credit_grants", "plan_id", "addon_id", "subscription_id"),
)

coupons = Table(
    "coupons",
    metadata,
    *_common(),
    _name(),
    Column("type", String(16), nullable=False),
    Column("cadence", String(16), nullable=False),
    _text("coupon_code"),
    Column("amount_off", ExactDecimal()),
    Column("percentage_off", ExactDecimal()),
    Column("currency", String(3)),
    Column("duration_in_periods", Integer()),
    Column("max_redemptions", Integer()),
    Column("total_redemptions", Integer(), nullable=False),
    Column("redeem_after", UtcDateTime()),
    Column("redeem_before", UtcDateTime()),
    _json("rules"),
    _json("metadata", nullable=False),
    *_scoped_indexes("coupons", unique_live=("coupon_code",)),
)

coupon_associations = Table(
    "coupon_associations",
    metadata,
    *_common(),
    Column("coupon_id", String(64), nullable=False),
    Column("subscription_id", String(64), nullable=False),
    Column("subscription_line_item_id", String(64)),
    Column("subscription_phase_id", String(64)),
    Column("start_date", UtcDateTime(), nullable=False),
    Column("end_date", UtcDateTime()),
    Column("applications", Integer(), nullable=False),
    _json("metadata", nullable=False),
    *_scoped_indexes("coupon_associations", "subscription_id", "coupon_id"),
)

tax_rates = Table(
    "tax_rates",
    metadata,
    *_common(),
    _name(),
    Column("code", String(64), nullable=False),
    Column("tax_rate_type", String(16), nullable=False),
    Column("percentage_value", ExactDecimal()),
    Column("fixed_value", ExactDecimal()),
    Column("description", Text()),
    Column("scope", String(16), nullable=False),
    Column("tax_rate_status", String(16), nullable=False),
    _json("metadata", nullable=False),
    *_scoped_indexes("tax_rates", unique_live=("code",)),
)

tax_associations = Table(
    "tax_associations",
    metadata,
    *_common(),
    Column("tax_rate_id", String(64), nullable=False),
    Column("entity_type", String(16), nullable=False),
    Column("entity_id", String(255), nullable=False),
    Column("priority", Integer(), nullable=False),
    Column("auto_apply", Boolean(), nullable=False),
    Column("currency", String(3)),
    Column("start_date", UtcDateTime(), nullable=False),
    Column("end_date", UtcDateTime()),
    _json("metadata", nullable=False),
    # Billing reads a batch's associations by entity; the list route filters by rate.
    *_scoped_indexes("tax_associations", "tax_rate_id"),
    Index("ix_tax_associations_entity", "tenant_id", "environment_id", "entity_id", "entity_type"),
)


def _money(name: str, *, nullable: bool = False) -> Column[object]:
    return Column(name, ExactDecimal(), nullable=nullable)


def _instant(name: str, *, nullable: bool = True) -> Column[object]:
    return Column(name, UtcDateTime(), nullable=nullable)


subscriptions = Table(
    "subscriptions",
    metadata,
    *_common(),
    _text("lookup_key"),
    Column("plan_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("invoicing_customer_id", String(64)),
    Column("parent_subscription_id", String(64)),
    _text("gateway_payment_method_id"),
    Column("subscription_status", String(16), nullable=False),
    Column("subscription_type", String(32), nullable=False),
    Column("pause_status", String(16), nullable=False),
    Column("active_pause_id", String(64)),
    Column("billing_cadence", String(16), nullable=False),
    Column("billing_cycle", String(16), nullable=False),
    Column("billing_period", String(16), nullable=False),
    Column("billing_period_count", Integer(), nullable=False),
    _instant("billing_anchor", nullable=False),
    Column("currency", String(3), nullable=False),
    Column("timezone", String(64), nullable=False),
    _instant("start_date", nullable=False),
    _instant("end_date"),
    _instant("trial_start"),
    _instant("trial_end"),
    _instant("current_period_start", nullable=False),
    _instant("current_period_end", nullable=False),
    _instant("cancel_at"),
    _instant("cancelled_at"),
    Column("cancel_at_period_end", Boolean(), nullable=False),
    Column("collection_method", String(32), nullable=False),
    Column("payment_behavior", String(32), nullable=False),
    Column("payment_terms", String(16)),
    Column("proration_behavior", String(32), nullable=False),
    _money("commitment_amount", nullable=True),
    Column("commitment_duration", String(16)),
    _money("overage_factor", nullable=True),
    _money("auto_invoice_threshold", nullable=True),
    Column("enable_true_up", Boolean(), nullable=False),
    _json("metadata", nullable=False),
    _json("line_items", nullable=False),
    Column("synced_price_sequence", Integer(), nullable=False),
    Column("version", Integer(), nullable=False),
    Column("billing_sequence", Integer(), nullable=False),
    _instant("renewal_notice_for"),
    _instant("next_run_at"),
    # The server default lets migration 0006 add the column to rows already stored.
    Column("billing_anchor_requested", Boolean(), nullable=False, server_default=false()),
    *_scoped_indexes("subscriptions", "customer_id", "plan_id"),
    # Serves the billing run's claim of due subscriptions across all scopes.
    Index("ix_subscriptions_next_run_at", "next_run_at"),
)

invoices = Table(
    "invoices",
    metadata,
    *_common(),
    Column("invoice_number", String(64)),
    Column("invoice_type", String(16), nullable=False),
    Column("invoice_status", String(16), nullable=False),
    Column("payment_status", String(32), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("subscription_id", String(64)),
    Column("currency", String(3), nullable=False),
    Column("description", Text()),
    Column("billing_reason", String(32), nullable=False),
    Column("billing_period", String(16)),
    Column("billing_sequence", Integer()),
    _money("subtotal"),
    _money("total"),
    _money("total_discount"),
    _money("total_tax"),
    _money("total_prepaid_credits_applied"),
    _money("adjustment_amount"),
    _money("amount_due"),
    _money("amount_paid"),
    _money("amount_remaining"),
    _money("overpaid_amount"),
    _money("refunded_amount"),
    _instant("issue_date"),
    _instant("due_date"),
    _instant("finalized_at"),
    _instant("paid_at"),
    _instant("voided_at"),
    _instant("period_start"),
    _instant("period_end"),
    _instant("last_computed_at"),
    Column("is_manually_edited", Boolean(), nullable=False),
    _text("idempotency_key"),
    Column("invoice_pdf_url", Text()),
    Column("recalculated_invoice_id", String(64)),
    _json("coupon_applications", nullable=False),
    _json("taxes", nullable=False),
    _json("line_items", nullable=False),
    _json("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    _instant("finalize_at"),
    Column("request_fingerprint", String(64)),
    _json("adjustment_sources"),
    *_scoped_indexes("invoices", "customer_id", unique_live=("invoice_number",)),
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

# A customer's account of prepaid credits; credit_balance caches the sum of its ledger rows.
wallets = Table(
    "wallets",
    metadata,
    *_common(),
    Column("customer_id", String(64), nullable=False),
    Column("currency", String(3), nullable=False),
    _text("name"),
    Column("description", Text()),
    Column("wallet_type", String(16), nullable=False),
    Column("wallet_status", String(16), nullable=False),
    _money("conversion_rate"),
    _money("topup_conversion_rate"),
    _json("config", nullable=False),
    _json("auto_topup"),
    _json("alert_settings"),
    Column("alert_state", String(16), nullable=False),
    _money("credit_balance"),
    _json("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    _instant("next_expiry_at"),
    *_scoped_indexes("wallets", "customer_id"),
    # Serves the worker's claim of wallets with credits due to expire, across all scopes.
    Index("ix_wallets_next_expiry_at", "next_expiry_at"),
)

payments = Table(
    "payments",
    metadata,
    *_common(),
    Column("idempotency_key", String(255), nullable=False),
    Column("destination_type", String(16), nullable=False),
    Column("destination_id", String(64), nullable=False),
    _text("invoice_number"),
    Column("customer_id", String(64)),
    Column("payment_method_type", String(16), nullable=False),
    _text("payment_method_id"),
    Column("payment_gateway", String(32)),
    _text("gateway_payment_id"),
    _text("gateway_tracking_id"),
    _json("gateway_metadata", nullable=False),
    Column("payment_url", Text()),
    _money("amount"),
    Column("currency", String(3), nullable=False),
    Column("payment_status", String(32), nullable=False),
    Column("track_attempts", Boolean(), nullable=False),
    Column("save_card_and_make_default", Boolean(), nullable=False),
    Column("error_message", Text()),
    _instant("succeeded_at"),
    _instant("failed_at"),
    _instant("refunded_at"),
    _instant("voided_at"),
    _json("attempts", nullable=False),
    _json("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    Column("request_fingerprint", String(64)),
    *_scoped_indexes("payments", "destination_id", "customer_id"),
    Index("uq_payments_idempotency_key", "tenant_id", "environment_id", "idempotency_key", unique=True),
)

credit_notes = Table(
    "credit_notes",
    metadata,
    *_common(),
    _text("credit_note_number"),
    Column("invoice_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("subscription_id", String(64)),
    Column("credit_note_type", String(16), nullable=False),
    Column("credit_note_status", String(16), nullable=False),
    Column("reason", String(32), nullable=False),
    Column("memo", Text()),
    Column("currency", String(3), nullable=False),
    _money("total_amount"),
    Column("idempotency_key", String(255), nullable=False),
    Column("refund_status", String(32)),
    _instant("finalized_at"),
    _instant("voided_at"),
    _json("line_items", nullable=False),
    _json("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    *_scoped_indexes("credit_notes", "invoice_id", "customer_id"),
    Index("uq_credit_notes_idempotency_key", "tenant_id", "environment_id", "idempotency_key", unique=True),
    Index(
        "uq_credit_notes_credit_note_number", "tenant_id", "environment_id", "credit_note_number", unique=True
    ),
)

credit_grant_applications = Table(
    "credit_grant_applications",
    metadata,
    *_common(),
    Column("credit_grant_id", String(64), nullable=False),
    Column("subscription_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    _instant("scheduled_for", nullable=False),
    _instant("run_at"),
    _instant("period_start", nullable=False),
    _instant("period_end"),
    _instant("applied_at"),
    Column("application_status", String(16), nullable=False),
    Column("application_reason", String(64), nullable=False),
    _money("credits"),
    Column("subscription_status_at_application", String(16)),
    Column("retry_count", Integer(), nullable=False),
    Column("failure_reason", Text()),
    Column("idempotency_key", String(255), nullable=False),
    Column("wallet_transaction_id", String(64)),
    _json("metadata", nullable=False),
    Column("version", Integer(), nullable=False),
    *_scoped_indexes("credit_grant_applications", "subscription_id"),
    # Serves the worker's claim of applications due across all scopes.
    Index("ix_credit_grant_applications_run_at", "run_at"),
    # One application per grant, subscription and period, whatever its status.
    Index(
        "uq_credit_grant_applications_grant_period",
        "tenant_id",
        "environment_id",
        "credit_grant_id",
        "subscription_id",
        "period_start",
        unique=True,
    ),
)

# Append-only (see storage.kinds): rows are inserted and summed, never updated. The movement key is
# unique over every row, whatever its status, so one cause is applied once.
wallet_transactions = Table(
    "wallet_transactions",
    metadata,
    *_common(),
    Column("wallet_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("type", String(16), nullable=False),
    _money("credit_amount"),
    _money("amount"),
    Column("transaction_reason", String(32), nullable=False),
    Column("idempotency_key", String(255), nullable=False),
    Column("reference_type", String(16)),
    _text("reference_id"),
    Column("parent_transaction_id", String(64)),
    _instant("expiry_date"),
    Column("priority", Integer()),
    Column("description", Text()),
    _json("metadata", nullable=False),
    Column("transaction_status", String(16), nullable=False, server_default="completed"),
    Column("source_transaction_id", String(64)),
    Index("ix_wallet_transactions_scope_created", "tenant_id", "environment_id", "created_at"),
    # Serves a wallet's balance (its rows summed) and its history.
    Index("ix_wallet_transactions_wallet", "tenant_id", "environment_id", "wallet_id", "created_at"),
    Index("ix_wallet_transactions_customer_id", "tenant_id", "environment_id", "customer_id"),
    Index(
        "uq_wallet_transactions_idempotency_key",
        "tenant_id",
        "environment_id",
        "idempotency_key",
        unique=True,
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
    _json("properties", nullable=False),
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
}
