"""Sample resources for the storage contract: one valid resource of any stored kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from billingkit.domain.access import (
    AccountType,
    EnvironmentType,
    Role,
)
from billingkit.storage.kinds import KINDS, Level

__all__ = ["T0", "sample", "unique_number"]


T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_counter = iter(range(10**9))


def sample(kind: str, tenant_id: str = "tenant_a", environment_id: str = "env_a", **fields: Any) -> Any:
    """A valid resource of ``kind`` in the given scope (fields override the defaults)."""
    n = next(_counter)
    common: dict[str, Any] = {
        "id": f"{kind}_{n:08d}",
        "created_at": T0 + timedelta(seconds=n),
        "updated_at": T0 + timedelta(seconds=n),
        "created_by": "test",
        "updated_by": "test",
    }
    scope: dict[str, Any] = {}
    level = KINDS[kind].level
    if level is not Level.GLOBAL:
        scope["tenant_id"] = tenant_id
    if level is Level.ENVIRONMENT:
        scope["environment_id"] = environment_id
    defaults: dict[str, dict[str, Any]] = {
        "tenants": {"name": f"Tenant {n}"},
        "environments": {"name": f"env {n}", "type": EnvironmentType.DEVELOPMENT},
        "accounts": {
            "type": AccountType.USER,
            "name": f"User {n}",
            "email": f"user{n}@example.com",
            "roles": (Role.ALL_READER,),
        },
        "api_keys": {
            "name": f"key {n}",
            "key_hash": f"{n:064x}",
            "display_id": "sk_ab***cd",
            "account_id": "user_1",
            "account_type": AccountType.USER,
            "roles": (Role.ALL_WRITER, Role.EVENT_INGESTOR),
        },
        "customers": {"external_id": f"ext-{n}", "name": f"Customer {n}", "metadata": {"tier": "gold"}},
        "notifications": {
            "event_type": "customer.created",
            "entity_type": "customer",
            "entity_id": f"cust_{n}",
            "payload": {"event_type": "customer.created", "customer": {"id": f"cust_{n}"}},
        },
        # Catalogue kinds carry nested values (tiers, aggregations, alert settings) and exact
        # decimals, so their round trip proves JSON columns keep decimals and structure exactly.
        "plans": {"name": f"Plan {n}", "lookup_key": f"plan-{n}", "display_order": 2, "metadata": {"a": "b"}},
        "addons": {"name": f"Add-on {n}", "lookup_key": f"addon-{n}"},
        "prices": {
            "entity_type": "PLAN",
            "entity_id": "plan_1",
            "type": "USAGE",
            "billing_model": "TIERED",
            "billing_period": "MONTHLY",
            "invoice_cadence": "ARREAR",
            "currency": "usd",
            "tier_mode": "SLAB",
            "tiers": [
                {"up_to": 1000, "unit_amount": "0.0125", "flat_amount": "0.10"},
                {"up_to": None, "unit_amount": "0.01"},
            ],
            "meter_id": "meter_1",
            "lookup_key": f"price-{n}",
            "start_date": T0,
            "min_quantity": "0.000001",
        },
        "price_units": {
            "code": f"cr{n}",
            "name": "Credits",
            "symbol": "CR",
            "base_currency": "usd",
            "conversion_rate": "0.0001",
        },
        "groups": {"name": f"Group {n}", "lookup_key": f"group-{n}", "entity_type": "price"},
        "meters": {
            "name": f"Meter {n}",
            "event_name": "api.request",
            "aggregation": {"type": "SUM_WITH_MULTIPLIER", "field": "bytes", "multiplier": "0.001"},
            "filters": [{"key": "region", "values": ["eu", "us"]}],
        },
        "features": {
            "name": f"Feature {n}",
            "type": "metered",
            "lookup_key": f"feature-{n}",
            "meter_id": "meter_1",
            "reporting_unit": {"unit_singular": "call", "unit_plural": "calls", "conversion_rate": "0.5"},
            "alert_settings": {
                "alert_enabled": True,
                "warning": {"threshold": "80.5", "condition": "above"},
                "critical": {"threshold": "100", "condition": "above"},
            },
        },
        "entitlements": {
            "entity_type": "PLAN",
            "entity_id": f"plan_{n}",
            "plan_id": f"plan_{n}",
            "feature_id": "feat_1",
            "feature_type": "config",
            "config_value": {"regions": ["eu"], "max": 3},
        },
        "credit_grants": {
            "name": f"Grant {n}",
            "scope": "PLAN",
            "plan_id": "plan_1",
            "cadence": "RECURRING",
            "credits": "100.50",
            "period": "MONTHLY",
            "period_count": 1,
            "expiration_type": "DURATION",
            "expiration_duration": 30,
            "expiration_duration_unit": "DAY",
        },
        "coupons": {
            "name": f"Coupon {n}",
            "type": "percentage",
            "cadence": "repeated",
            "coupon_code": f"SAVE{n}",
            "percentage_off": "12.5",
            "duration_in_periods": 3,
            "max_redemptions": 100,
            "rules": {"min_amount": "10"},
        },
        "coupon_associations": {
            "coupon_id": f"coupon_{n}",
            "subscription_id": f"subs_{n}",
            "subscription_line_item_id": f"subs_line_{n}",
            "start_date": T0,
            "end_date": T0 + timedelta(days=62, microseconds=1),
            "applications": 2,
            "metadata": {"source": "signup"},
        },
        "tax_rates": {
            "name": f"VAT {n}",
            "code": f"VAT{n}",
            "tax_rate_type": "percentage",
            "percentage_value": "20",
        },
        "tax_associations": {
            "tax_rate_id": "taxrate_1",
            "entity_type": "customer",
            "entity_id": f"cust_{n}",
            "priority": 10,
            "auto_apply": True,
            "currency": "usd",
            "start_date": T0,
            "end_date": T0 + timedelta(days=365),
            "metadata": {"region": "eu"},
        },
        # Subscriptions and invoices embed their line items as JSON: the round trip proves that
        # decimals, instants and enums inside them come back exactly.
        "subscriptions": {
            "plan_id": "plan_1",
            "customer_id": f"cust_{n}",
            "subscription_status": "active",
            "billing_period": "MONTHLY",
            "billing_anchor": T0,
            "currency": "usd",
            "start_date": T0,
            "current_period_start": T0,
            "current_period_end": T0 + timedelta(days=31),
            "payment_terms": "30 NET",
            "commitment_amount": "100.005",
            "overage_factor": "1.5",
            "next_run_at": T0 + timedelta(days=31),
            "line_items": [
                {
                    "id": f"subs_line_{n}",
                    "subscription_id": f"subs_{n}",
                    "customer_id": f"cust_{n}",
                    "entity_id": "plan_1",
                    "price_id": "price_1",
                    "price_type": "USAGE",
                    "meter_id": "meter_1",
                    "quantity": "0.000001",
                    "currency": "usd",
                    "billing_period": "MONTHLY",
                    "invoice_cadence": "ARREAR",
                    "start_date": T0,
                }
            ],
        },
        "invoices": {
            "customer_id": f"cust_{n}",
            "subscription_id": f"subs_{n}",
            "invoice_number": f"INV-202603-{n:05d}",
            "idempotency_key": f"idem_{n}",
            "invoice_status": "FINALIZED",
            "currency": "usd",
            "billing_reason": "SUBSCRIPTION_CYCLE",
            "subtotal": "12.50",
            "total": "12.50",
            "amount_due": "12.50",
            "amount_remaining": "12.50",
            "period_start": T0,
            "period_end": T0 + timedelta(days=31),
            "due_date": T0 + timedelta(days=32),
            "line_items": [
                {
                    "id": f"inv_line_{n}",
                    "display_name": "API calls",
                    "price_type": "USAGE",
                    "quantity": "1250.5",
                    "amount": "12.50",
                    "period_start": T0,
                    "period_end": T0 + timedelta(days=31),
                    "trace": {"unrounded_amount": "12.5025", "tiers": [{"quantity": "1000"}]},
                }
            ],
        },
        "wallet_transactions": {
            "wallet_id": "wallet_1",
            "customer_id": f"cust_{n}",
            "type": "credit",
            "credit_amount": "10.005",
            "amount": "20.01",
            "transaction_reason": "FREE_CREDIT_GRANT",
            "idempotency_key": f"sample|{n}",
            "expiry_date": T0 + timedelta(days=30),
            "transaction_status": "pending",
        },
        "wallets": {
            "customer_id": f"cust_{n}",
            "currency": "usd",
            "name": f"Wallet {n}",
            "conversion_rate": "0.5",
            "config": {"allowed_price_types": ["USAGE"]},
            "auto_topup": {
                "enabled": True,
                "threshold": "5",
                "amount": "100",
                "cooldown": {"unit": "hour", "value": 1},
            },
            "alert_settings": {"alert_enabled": True, "critical": {"threshold": "0", "condition": "below"}},
            "credit_balance": "12.3456789012",
            "metadata": {"plan": "pro"},
        },
        "payments": {
            "idempotency_key": f"pay|{n}",
            "destination_id": f"inv_{n}",
            "payment_method_type": "CARD",
            "payment_method_id": "pm_1",
            "payment_gateway": "sandbox",
            "gateway_payment_id": f"sbx_pay_{n:06d}",
            "gateway_tracking_id": f"track_{n}",
            "request_fingerprint": "0" * 64,
            "amount": "100.05",
            "currency": "usd",
            "payment_status": "SUCCEEDED",
            "succeeded_at": T0 + timedelta(hours=1),
            "attempts": [
                {"id": f"attempt_{n}", "attempt_number": 1, "payment_status": "SUCCEEDED", "created_at": T0}
            ],
        },
        "credit_notes": {
            "credit_note_number": f"CN-{n:05d}",
            "invoice_id": f"inv_{n}",
            "customer_id": f"cust_{n}",
            "credit_note_type": "REFUND",
            "reason": "SERVICE_ISSUE",
            "currency": "usd",
            "total_amount": "70.00",
            "idempotency_key": f"cn|{n}",
            "line_items": [
                {
                    "id": f"cn_line_{n}",
                    "invoice_line_item_id": "inv_line_1",
                    "amount": "70.00",
                    "currency": "usd",
                }
            ],
        },
        "credit_grant_applications": {
            "credit_grant_id": f"cg_{n}",
            "subscription_id": f"subs_{n}",
            "customer_id": f"cust_{n}",
            "scheduled_for": T0,
            "run_at": T0,
            "period_start": T0,
            "period_end": T0 + timedelta(days=31),
            "application_reason": "first_time_recurring_credit_grant",
            "credits": "100",
            "idempotency_key": f"cga|{n}",
        },
        "line_item_owners": {"subscription_id": f"subs_{n}"},
        "alert_settings": {
            "entity_type": "subscription",
            "entity_id": f"subs_{n}",
            "customer_id": f"cust_{n}",
            "config": {"alert_enabled": True, "critical": {"threshold": "100", "condition": "above"}},
            "next_check_at": T0,
        },
        "tasks": {
            "entity_type": "invoice",
            "scheduled_task_id": f"schtask_{n}",
            "workflow_id": f"tasks_{n:08d}",
            "metadata": {"start_time": "2026-03-01T00:00:00Z", "end_time": "2026-04-01T00:00:00Z"},
            "run_at": T0,
        },
        "export_parts": {
            "task_id": f"task_{n}",
            "sequence": n,
            "content": "id,total\r\ninv_1,10.50\r\n",
            "record_count": 1,
        },
        "scheduled_tasks": {
            "connection_id": f"conn_{n}",
            "entity_type": "events",
            "interval": "hourly",
            "job_config": {"bucket": "exports", "region": "eu-west-1"},
            "window_start": T0,
            "next_run_at": T0 + timedelta(hours=1),
        },
        "alert_logs": {
            "alert_key": f"subscription_spend:subs_{n}:",
            "sequence": n,
            "alert_type": "subscription_spend",
            "alert_status": "in_alarm",
            "entity_type": "subscription",
            "entity_id": f"subs_{n}",
            "customer_id": f"cust_{n}",
            "alert_info": {
                "alert_settings": {
                    "alert_enabled": True,
                    "critical": {"threshold": "100", "condition": "above"},
                },
                "value": "120.5",
                "timestamp": T0,
            },
        },
        "subscription_pauses": {
            "subscription_id": f"subs_{n}",
            "pause_status": "active",
            "pause_mode": "immediate",
            "pause_start": T0,
            "pause_end": T0 + timedelta(days=10),
            "original_period_start": T0,
            "original_period_end": T0 + timedelta(days=31),
            "run_at": T0 + timedelta(days=10),
        },
        "subscription_schedules": {
            "subscription_id": f"subs_{n}",
            "schedule_type": "cancellation",
            "scheduled_at": T0 + timedelta(days=31),
            "configuration": {"original_cancel_at": None},
            "run_at": T0 + timedelta(days=31),
        },
        "subscription_changes": {
            "subscription_id": f"subs_{n}",
            "change_kind": "plan_change_v2",
            "change_type": "upgrade",
            "from_plan_id": f"plan_{n}",
            "to_plan_id": f"plan_{n}b",
            "effective_at": T0 + timedelta(days=15),
            "idempotency_key": f"change_{n}",
            "result": {"change_type": "upgrade"},
        },
        "addon_associations": {"entity_id": f"subs_{n}", "addon_id": f"addon_{n}", "start_date": T0},
        "subscription_phases": {"subscription_id": f"subs_{n}", "start_date": T0},
        "webhook_endpoints": {
            "url": f"https://hooks.example.com/{n}",
            "event_types": ["customer.created"],
            "headers": {"x-source": "billingkit"},
            "secret_ciphertext": f"ciphertext-{n}",
        },
        "webhook_deliveries": {
            "endpoint_id": f"whep_{n}",
            "event_id": f"sys_event_{n}",
            "event_type": "customer.created",
            "entity_type": "customer",
            "entity_id": f"cust_{n}",
            "next_attempt_at": T0,
            "attempts": [
                {"at": "2026-01-01T00:00:00Z", "response_code": 500, "latency_ms": 3, "error": None}
            ],
        },
        "checkout_sessions": {
            "customer_id": f"cust_{n}",
            "action": "create_subscription",
            "checkout_status": "pending",
            "expires_at": T0 + timedelta(minutes=30),
            "idempotency_key": f"checkout_{n}",
            "open_key": f"checkout_{n}",
            "open_wallet_id": f"wallet_{n}",
            "payment_provider": "sandbox",
            "run_at": T0 + timedelta(minutes=30),
            "provider_session_id": f"sbx_cs_{n}",
            "subscription_id": f"subs_{n}",
        },
        "costsheets": {
            "name": f"Costsheet {n}",
            "lookup_key": f"costsheet-{n}",
            "description": "Infrastructure cost",
            "metadata": {"team": "infra"},
        },
    }
    model = KINDS[kind].model
    return model(**{**common, **scope, **defaults[kind], **fields})


def unique_number() -> int:
    """A number no other sample or contract scope of this process has used."""
    return next(_counter)
