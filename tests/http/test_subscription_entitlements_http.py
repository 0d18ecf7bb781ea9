"""Subscription and customer entitlements over HTTP: ``POST /v1/subscriptions/search`` with
``expand=entitlements``, ``GET /v1/subscriptions/{id}/entitlements``, ``GET
/v1/customers/{id}/entitlements`` (and by external id) and the check route."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from billingkit.services.access import BootstrapResult
from tests.entitlement_catalogue import EntitlementCatalogue, attach_addon, build_catalogue
from tests.http.conftest import assert_error


@pytest.fixture
def cat(billing: Billing, setup: BootstrapResult, clock: TestClock) -> EntitlementCatalogue:
    found = build_catalogue(billing.scope(setup.tenant.id, setup.environments[0][0].id))
    attach_addon(found.scoped, found.subscription.id, found.boost, clock.now())
    return found


def features(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["feature"]["lookup_key"]: item for item in body["features"]}


def test_subscription_entitlements(
    client: TestClient, test_key: dict[str, str], cat: EntitlementCatalogue
) -> None:
    sub = cat.subscription
    got = client.get(f"/v1/subscriptions/{sub.id}/entitlements", headers=test_key)
    assert got.status_code == 200, got.text
    body = got.json()
    assert (body["subscription_id"], body["plan_id"]) == (sub.id, cat.plan_id)
    found = features(body)
    assert list(found) == ["calls", "sso", "tier", "regions"]
    calls = found["calls"]
    assert calls["entitlement"] == {
        "is_enabled": True,
        "usage_limit": 1500,
        "usage_reset_period": "MONTHLY",
        "is_soft_limit": True,
        "static_values": [],
        "config_values": [],
        "aggregation_mode": "additive",
        "buckets": [],
    }
    assert [
        (s["entity_type"], s["entity_name"], s["quantity"], s["usage_limit"]) for s in calls["sources"]
    ] == [
        ("plan", "Pro", 1, 1000),
        ("addon", "Boost", 1, 500),
    ]
    assert calls["feature"]["id"] == cat.calls and calls["feature"]["type"] == "metered"
    assert found["tier"]["entitlement"]["static_values"] == ["gold", "platinum"]
    assert found["regions"]["entitlement"]["config_values"] == [{"storage": {"region": "eu"}}]


@pytest.mark.parametrize("query", ["feature_ids={sso},{tier}", "feature_ids={sso}&feature_ids={tier}"])
def test_feature_ids_filter(
    client: TestClient, test_key: dict[str, str], cat: EntitlementCatalogue, query: str
) -> None:
    url = f"/v1/subscriptions/{cat.subscription.id}/entitlements?" + query.format(sso=cat.sso, tier=cat.tier)
    got = client.get(url, headers=test_key)
    assert got.status_code == 200, got.text
    assert list(features(got.json())) == ["sso", "tier"]


def test_unknown_or_foreign_subscription(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], cat: EntitlementCatalogue
) -> None:
    assert_error(
        client.get("/v1/subscriptions/subs_missing/entitlements", headers=test_key), 404, "not_found"
    )
    assert_error(
        client.get(f"/v1/subscriptions/{cat.subscription.id}/entitlements", headers=prod_key),
        404,
        "not_found",
    )
    assert client.get(f"/v1/subscriptions/{cat.subscription.id}/entitlements").status_code == 401


def test_search_expands_entitlements(
    client: TestClient, test_key: dict[str, str], cat: EntitlementCatalogue
) -> None:
    plain = client.post("/v1/subscriptions/search", json={}, headers=test_key)
    assert plain.status_code == 200, plain.text
    assert "entitlements" not in plain.json()["items"][0]

    expanded = client.post(
        "/v1/subscriptions/search",
        json={"expand": "plan, entitlements", "with_line_items": False},
        headers=test_key,
    )
    assert expanded.status_code == 200, expanded.text
    (item,) = expanded.json()["items"]
    assert item["id"] == cat.subscription.id and "line_items" not in item
    calls = features({"features": item["entitlements"]})["calls"]
    assert (calls["entitlement"]["usage_limit"], len(calls["sources"])) == (1500, 2)
    assert expanded.json()["pagination"] == {"limit": 50, "offset": 0, "total": 1}

    with_lines = client.post("/v1/subscriptions/search", json={"expand": "entitlements"}, headers=test_key)
    (item,) = with_lines.json()["items"]
    assert len(item["line_items"]) == 1 and len(item["entitlements"]) == 4


def test_customer_entitlements(
    client: TestClient, test_key: dict[str, str], cat: EntitlementCatalogue
) -> None:
    got = client.get(f"/v1/customers/{cat.customer_id}/entitlements", headers=test_key)
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["customer_id"] == cat.customer_id
    assert [s["id"] for s in body["subscriptions"]] == [cat.subscription.id]
    assert features(body)["calls"]["entitlement"]["usage_limit"] == 1500

    by_external = client.get(
        f"/v1/customers/external/ada/entitlements?feature_ids={cat.calls}&subscription_ids={cat.subscription.id}",
        headers=test_key,
    )
    assert by_external.status_code == 200, by_external.text
    assert list(features(by_external.json())) == ["calls"]
    none = client.get(
        f"/v1/customers/{cat.customer_id}/entitlements?subscription_ids=subs_other", headers=test_key
    )
    assert none.json()["features"] == [] and none.json()["subscriptions"] == []

    assert_error(client.get("/v1/customers/cust_missing/entitlements", headers=test_key), 404, "not_found")
    assert_error(client.get("/v1/customers/external/nobody/entitlements", headers=test_key), 404, "not_found")


def test_the_check(client: TestClient, test_key: dict[str, str], cat: EntitlementCatalogue) -> None:
    cat.scoped.events.ingest_bulk(
        [{"event_id": f"c{i}", "event_name": "api.call", "external_customer_id": "ada"} for i in range(20)]
    )
    got = client.get("/v1/customers/ada/entitlements/check?feature_id=calls", headers=test_key)
    assert got.status_code == 200, got.text
    assert got.json() == {
        "customer_id": cat.customer_id,
        "feature_id": cat.calls,
        "feature_type": "metered",
        "allowed": True,
        "is_enabled": True,
        "usage": "20",
        "usage_limit": "1500",
        "remaining": "1480",
        "is_soft_limit": True,
        "usage_reset_period": "MONTHLY",
        "window_start": "2026-05-01T09:30:00Z",
        "window_end": "2026-06-01T09:30:00Z",
        "subscription_ids": [cat.subscription.id],
        "static_values": [],
        "config_values": [],
    }
    tier = client.get(
        f"/v1/customers/{cat.customer_id}/entitlements/check?feature_id={cat.tier}", headers=test_key
    )
    assert (tier.json()["allowed"], tier.json()["static_values"]) == (True, ["gold", "platinum"])
    body = assert_error(
        client.get("/v1/customers/ada/entitlements/check", headers=test_key), 400, "validation_error"
    )
    assert "feature_id" in body["message"]
    assert_error(
        client.get("/v1/customers/ada/entitlements/check?feature_id=nope", headers=test_key), 404, "not_found"
    )
    assert_error(
        client.get("/v1/customers/nobody/entitlements/check?feature_id=calls", headers=test_key),
        404,
        "not_found",
    )
