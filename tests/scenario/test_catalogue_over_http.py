"""Scenario: an API product's whole catalogue built over HTTP only, then read back field by field.

The product: a Pro plan at $49/month in advance, API requests billed in arrear on a COUNT meter with
slab tiers, e-mails billed in packages of 1,000 on a SUM meter, an "API access" feature with a monthly
limit, a priority-support add-on, a 20%-off launch coupon for three periods and 19% VAT.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from fastapi.testclient import TestClient

from billingkit.domain.catalog import Price
from billingkit.domain.pricing import price_quantity

COMMON = {
    "id",
    "tenant_id",
    "environment_id",
    "status",
    "created_at",
    "updated_at",
    "created_by",
    "updated_by",
}


def _post(client: TestClient, headers: dict[str, str], path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(f"/v1{path}", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def _get(client: TestClient, headers: dict[str, str], path: str) -> dict[str, Any]:
    response = client.get(f"/v1{path}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _assert_fields(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    for field, value in expected.items():
        assert actual[field] == value, f"{field}: {actual[field]!r} != {value!r}"
    for field in COMMON:
        assert actual[field], field
    assert actual["status"] == "published"


def _priced(wire: dict[str, Any], quantity: int) -> Decimal:
    """Price ``quantity`` with the core, using the price exactly as the API returned it."""
    price = Price.model_validate({k: v for k, v in wire.items() if k in Price.model_fields})
    return price_quantity(price.to_spec(), Decimal(quantity)).amount


def test_api_product_catalogue(client: TestClient, test_key: dict[str, str]) -> None:
    h = test_key
    requests_meter = _post(
        client,
        h,
        "/meters",
        {"name": "API requests", "event_name": "api.request", "aggregation": {"type": "COUNT"}},
    )
    emails_meter = _post(
        client,
        h,
        "/meters",
        {
            "name": "E-mails sent",
            "event_name": "email.sent",
            "aggregation": {"type": "SUM", "field": "recipients"},
            "filters": [{"key": "channel", "values": ["smtp", "api"]}],
            "reset_usage": "BILLING_PERIOD",
        },
    )
    feature = _post(
        client,
        h,
        "/features",
        {
            "name": "API access",
            "type": "metered",
            "lookup_key": "api-access",
            "meter_id": requests_meter["id"],
            "unit_singular": "request",
            "unit_plural": "requests",
            "alert_settings": {
                "alert_enabled": True,
                "warning": {"threshold": "80000", "condition": "above"},
                "critical": {"threshold": "100000", "condition": "above"},
            },
        },
    )
    plan = _post(
        client,
        h,
        "/plans",
        {
            "name": "Pro",
            "description": "For growing teams",
            "lookup_key": "pro",
            "display_order": 1,
            "metadata": {"segment": "smb"},
            "prices": [
                {
                    "type": "FIXED",
                    "billing_model": "FLAT_FEE",
                    "amount": "49.00",
                    "currency": "USD",
                    "billing_period": "MONTHLY",
                    "billing_period_count": 1,
                    "invoice_cadence": "ADVANCE",
                    "display_name": "Platform fee",
                    "lookup_key": "pro-platform",
                    "trial_period_days": 14,
                }
            ],
        },
    )
    usage = client.post(
        "/v1/prices/bulk",
        json={
            "items": [
                {
                    "entity_type": "PLAN",
                    "entity_id": plan["id"],
                    "type": "USAGE",
                    "billing_model": "TIERED",
                    "tier_mode": "SLAB",
                    "tiers": [
                        {"up_to": 1000, "unit_amount": "0.02"},
                        {"up_to": 10000, "unit_amount": "0.015"},
                        {"up_to": None, "unit_amount": "0.01", "flat_amount": "5.00"},
                    ],
                    "meter_id": requests_meter["id"],
                    "currency": "usd",
                    "billing_period": "MONTHLY",
                    "invoice_cadence": "ARREAR",
                    "display_name": "API requests",
                    "price_unit_type": "FIAT",
                },
                {
                    "entity_type": "PLAN",
                    "entity_id": plan["id"],
                    "type": "USAGE",
                    "billing_model": "PACKAGE",
                    "amount": "2.00",
                    "transform_quantity": {"divide_by": 1000, "round": "up"},
                    "meter_id": emails_meter["id"],
                    "currency": "usd",
                    "billing_period": "MONTHLY",
                    "invoice_cadence": "ARREAR",
                    "display_name": "E-mails",
                },
            ]
        },
        headers=h,
    )
    assert usage.status_code == 201, usage.text
    tiered_id, package_id = (p["id"] for p in usage.json()["items"])
    entitlements = client.post(
        "/v1/entitlements/bulk",
        json={
            "items": [
                {
                    "feature_id": feature["id"],
                    "plan_id": plan["id"],
                    "is_enabled": True,
                    "usage_limit": 100000,
                    "usage_reset_period": "MONTHLY",
                    "is_soft_limit": True,
                    "grant_quota": "1000",
                }
            ]
        },
        headers=h,
    )
    assert entitlements.status_code == 201, entitlements.text
    addon = _post(
        client,
        h,
        "/addons",
        {"name": "Priority support", "lookup_key": "priority-support", "description": "4h SLA"},
    )
    _post(
        client,
        h,
        "/prices",
        {
            "entity_type": "ADDON",
            "entity_id": addon["id"],
            "type": "FIXED",
            "billing_model": "FLAT_FEE",
            "amount": "99",
            "currency": "usd",
            "billing_period": "MONTHLY",
            "invoice_cadence": "ADVANCE",
            "price_unit_type": "FIAT",
        },
    )
    coupon = _post(
        client,
        h,
        "/coupons",
        {
            "name": "Launch 20%",
            "coupon_code": "LAUNCH20",
            "type": "percentage",
            "cadence": "repeated",
            "percentage_off": "20",
            "duration_in_periods": 3,
            "max_redemptions": 500,
            "redeem_after": "2026-01-01T00:00:00Z",
            "redeem_before": "2027-01-01T00:00:00Z",
        },
    )
    vat = _post(
        client,
        h,
        "/taxes/rates",
        {"name": "VAT", "code": "VAT19", "tax_rate_type": "percentage", "percentage_value": "19"},
    )

    # -- read everything back ---------------------------------------------------------------
    read_plan = _get(client, h, f"/plans/{plan['id']}")
    _assert_fields(
        read_plan,
        {
            "name": "Pro",
            "description": "For growing teams",
            "lookup_key": "pro",
            "display_order": 1,
            "metadata": {"segment": "smb"},
        },
    )
    prices = {p["id"]: p for p in read_plan["prices"]}
    assert set(prices) == {plan["prices"][0]["id"], tiered_id, package_id}
    flat = prices[plan["prices"][0]["id"]]
    _assert_fields(
        flat,
        {
            "type": "FIXED",
            "billing_model": "FLAT_FEE",
            "amount": "49.00",
            "display_amount": "$49.00",
            "currency": "usd",
            "billing_cadence": "RECURRING",
            "billing_period": "MONTHLY",
            "billing_period_count": 1,
            "invoice_cadence": "ADVANCE",
            "display_name": "Platform fee",
            "lookup_key": "pro-platform",
            "trial_period_days": 14,
            "entity_type": "PLAN",
            "entity_id": plan["id"],
            "meter_id": None,
            "tiers": None,
            "price_unit_type": "FIAT",
        },
    )
    tiered = _get(client, h, f"/prices/{tiered_id}")
    _assert_fields(
        tiered,
        {
            "type": "USAGE",
            "billing_model": "TIERED",
            "tier_mode": "SLAB",
            "meter_id": requests_meter["id"],
            "invoice_cadence": "ARREAR",
            "tiers": [
                {"up_to": 1000, "unit_amount": "0.02", "flat_amount": None},
                {"up_to": 10000, "unit_amount": "0.015", "flat_amount": None},
                {"up_to": None, "unit_amount": "0.01", "flat_amount": "5.00"},
            ],
        },
    )
    assert tiered["meter"]["id"] == requests_meter["id"] and tiered["meter"]["aggregation"]["type"] == "COUNT"
    assert tiered["pricing_unit"] is None
    package = prices[package_id]
    assert (package["billing_model"], package["amount"], package["transform_quantity"]) == (
        "PACKAGE",
        "2.00",
        {"divide_by": 1000, "round": "up"},
    )
    # What was read back prices exactly like the core says: 12,500 requests on the slabs
    # = 1,000 x 0.02 + 9,000 x 0.015 + 2,500 x 0.01 + 5.00 = 20 + 135 + 25 + 5 = 185.00,
    # and 2,500 e-mails = ceil(2.5) = 3 packages x 2.00 = 6.00.
    assert _priced(tiered, 12500) == Decimal("185.00")
    assert _priced(package, 2500) == Decimal("6.00")

    (entitlement,) = read_plan["entitlements"]
    _assert_fields(
        entitlement,
        {
            "feature_id": feature["id"],
            "feature_type": "metered",
            "entity_type": "PLAN",
            "entity_id": plan["id"],
            "plan_id": plan["id"],
            "is_enabled": True,
            "usage_limit": 100000,
            "usage_reset_period": "MONTHLY",
            "is_soft_limit": True,
            "grant_quota": "1000",
        },
    )
    assert _get(client, h, f"/plans/{plan['id']}/entitlements")["items"] == [entitlement]

    read_feature = _get(client, h, f"/features/{feature['id']}")
    _assert_fields(
        read_feature,
        {
            "name": "API access",
            "type": "metered",
            "meter_id": requests_meter["id"],
            "unit_plural": "requests",
        },
    )
    assert read_feature["alert_settings"]["critical"] == {"threshold": "100000", "condition": "above"}
    read_emails = _get(client, h, f"/meters/{emails_meter['id']}")
    _assert_fields(
        read_emails,
        {
            "event_name": "email.sent",
            "filters": [{"key": "channel", "values": ["smtp", "api"]}],
            "reset_usage": "BILLING_PERIOD",
        },
    )
    assert read_emails["aggregation"]["type"] == "SUM" and read_emails["aggregation"]["field"] == "recipients"

    read_addon = _get(client, h, f"/addons/{addon['id']}")
    _assert_fields(
        read_addon, {"name": "Priority support", "lookup_key": "priority-support", "description": "4h SLA"}
    )
    assert [(p["amount"], p["entity_type"], p["entity_id"]) for p in read_addon["prices"]] == [
        ("99", "ADDON", addon["id"])
    ]
    read_coupon = _get(client, h, "/coupons/code/LAUNCH20")
    _assert_fields(
        read_coupon,
        {
            "id": coupon["id"],
            "type": "percentage",
            "cadence": "repeated",
            "percentage_off": "20",
            "amount_off": None,
            "duration_in_periods": 3,
            "max_redemptions": 500,
            "total_redemptions": 0,
            "redeem_after": "2026-01-01T00:00:00Z",
            "redeem_before": "2027-01-01T00:00:00Z",
        },
    )
    read_vat = _get(client, h, f"/taxes/rates/{vat['id']}")
    _assert_fields(
        read_vat,
        {
            "code": "VAT19",
            "tax_rate_type": "percentage",
            "percentage_value": "19",
            "tax_rate_status": "ACTIVE",
            "scope": "INTERNAL",
        },
    )
