"""``/v1/subscriptions`` and ``/v1/customers/external/{id}/subscriptions`` over HTTP, on every store.

The clock fixture stands at 2026-05-01 09:30 UTC, so a subscription created without ``start_date``
starts then and its first monthly period is 2026-05-01 09:30 .. 2026-06-01 09:30.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

NOW = "2026-05-01T09:30:00Z"
PERIOD_END = "2026-06-01T09:30:00Z"
#: Subscription fields billingkit keeps for itself; no response may show them.
INTERNAL = frozenset({"billing_sequence", "next_run_at", "renewal_notice_for", "billing_anchor_requested"})

FIXED = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "49.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
    "display_name": "Platform fee",
}


def usage_price(meter_id: str) -> dict[str, Any]:
    """0.025 per API call, billed in arrears: 123 calls = 3.075 exactly -> 3.08 (half away from 0)."""
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": "0.025",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
    }


def created(response: Any) -> dict[str, Any]:
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def make_world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    """A customer ``acme``, a COUNT meter on ``api.call`` and plan Pro: 49.00/month in advance
    plus 0.025 per call in arrears."""
    customer = created(
        client.post("/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key)
    )
    meter = created(
        client.post(
            "/v1/meters",
            json={"name": "API calls", "event_name": "api.call", "aggregation": {"type": "COUNT"}},
            headers=test_key,
        )
    )
    plan = created(
        client.post(
            "/v1/plans", json={"name": "Pro", "prices": [FIXED, usage_price(meter["id"])]}, headers=test_key
        )
    )
    fixed, usage = plan["prices"]
    assert (fixed["type"], usage["type"]) == ("FIXED", "USAGE")
    return {
        "customer_id": customer["id"],
        "meter_id": meter["id"],
        "plan_id": plan["id"],
        "fixed_price_id": fixed["id"],
        "usage_price_id": usage["id"],
    }


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    return make_world(client, test_key)


def sub_body(world: dict[str, str], **fields: Any) -> dict[str, Any]:
    return {
        "customer_id": world["customer_id"],
        "plan_id": world["plan_id"],
        "currency": "USD",
        "billing_period": "MONTHLY",
        **fields,
    }


def subscribe(
    client: TestClient, headers: dict[str, str], world: dict[str, str], **fields: Any
) -> dict[str, Any]:
    return created(client.post("/v1/subscriptions", json=sub_body(world, **fields), headers=headers))


def invoices_of(client: TestClient, headers: dict[str, str], sub_id: str) -> dict[str, Any]:
    response = client.post("/v1/invoices/search", json={"subscription_id": sub_id}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def totals(client: TestClient, headers: dict[str, str]) -> tuple[int, int]:
    """(subscriptions, invoices) stored in the environment."""
    subs = client.post("/v1/subscriptions/search", json={}, headers=headers)
    invoices = client.post("/v1/invoices/search", json={}, headers=headers)
    assert subs.status_code == invoices.status_code == 200, (subs.text, invoices.text)
    return subs.json()["pagination"]["total"], invoices.json()["pagination"]["total"]


def test_create_active_subscription(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world, lookup_key="acme-pro", metadata={"crm": "7"})
    assert sub["id"].startswith("subs_")
    expected = {
        "plan_id": world["plan_id"],
        "customer_id": world["customer_id"],
        "lookup_key": "acme-pro",
        "metadata": {"crm": "7"},
        "currency": "usd",  # sent as "USD"
        "subscription_status": "active",
        "subscription_type": "standalone",
        "pause_status": "none",
        "billing_cadence": "RECURRING",
        "billing_cycle": "anniversary",
        "billing_period": "MONTHLY",
        "billing_period_count": 1,
        "billing_anchor": NOW,
        "start_date": NOW,
        "end_date": None,
        "trial_start": None,
        "trial_end": None,
        "current_period_start": NOW,
        "current_period_end": PERIOD_END,
        "cancel_at_period_end": False,
        "collection_method": "charge_automatically",
        "payment_behavior": "default_active",
        "payment_terms": None,
        "proration_behavior": "none",
        "timezone": "UTC",
        "version": 1,
        "synced_price_sequence": 2,  # the plan's two prices have sequences 1 and 2
        "status": "published",
        "created_at": NOW,
    }
    assert {name: sub[name] for name in expected} == expected
    # billingkit's own bookkeeping stays internal.
    assert not INTERNAL & set(sub)

    fixed, usage = sub["line_items"]
    common = {
        "subscription_id": sub["id"],
        "customer_id": world["customer_id"],
        "entity_type": "plan",
        "entity_id": world["plan_id"],
        "plan_display_name": "Pro",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "billing_period_count": 1,
        "start_date": NOW,
        "end_date": None,
        "tenant_id": sub["tenant_id"],
        "environment_id": sub["environment_id"],
    }
    assert {name: fixed[name] for name in common} == common == {name: usage[name] for name in common}
    assert (fixed["price_id"], fixed["price_type"], fixed["quantity"], fixed["meter_id"]) == (
        world["fixed_price_id"],
        "FIXED",
        "1",
        None,
    )
    assert (fixed["display_name"], fixed["invoice_cadence"]) == ("Platform fee", "ADVANCE")
    assert (usage["price_id"], usage["price_type"], usage["quantity"], usage["meter_id"]) == (
        world["usage_price_id"],
        "USAGE",
        "0",
        world["meter_id"],
    )
    assert (usage["display_name"], usage["meter_display_name"], usage["invoice_cadence"]) == (
        "API calls",
        "API calls",
        "ARREAR",
    )
    assert fixed["id"].startswith("subs_line_") and fixed["id"] != usage["id"]

    assert client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json() == sub

    # The opening invoice: the first period's ADVANCE charges only (usage is billed in arrears).
    page = invoices_of(client, test_key, sub["id"])
    assert page["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    (invoice,) = page["items"]
    assert {
        name: invoice[name]
        for name in (
            "invoice_number",
            "invoice_type",
            "invoice_status",
            "payment_status",
            "billing_reason",
            "billing_sequence",
            "customer_id",
            "currency",
            "subtotal",
            "total",
            "amount_due",
            "amount_paid",
            "amount_remaining",
            "period_start",
            "period_end",
            "due_date",
        )
    } == {
        "invoice_number": "INV-202605-00001",
        "invoice_type": "SUBSCRIPTION",
        "invoice_status": "FINALIZED",
        "payment_status": "PENDING",
        "billing_reason": "SUBSCRIPTION_CREATE",
        "billing_sequence": 1,
        "customer_id": world["customer_id"],
        "currency": "usd",
        "subtotal": "49.00",  # 1 x 49.00
        "total": "49.00",
        "amount_due": "49.00",
        "amount_paid": "0",
        "amount_remaining": "49.00",
        "period_start": NOW,
        "period_end": PERIOD_END,
        "due_date": "2026-06-02T09:30:00Z",  # no payment terms: period end + 1 day
    }
    (line,) = invoice["line_items"]
    assert (line["subscription_line_item_id"], line["price_id"], line["quantity"], line["amount"]) == (
        fixed["id"],
        world["fixed_price_id"],
        "1",
        "49.00",
    )
    assert (line["period_start"], line["period_end"], line["invoice_id"]) == (NOW, PERIOD_END, invoice["id"])

    # A second subscription takes the next invoice number of the month.
    second = subscribe(client, test_key, world, payment_terms="30 NET")
    (next_invoice,) = invoices_of(client, test_key, second["id"])["items"]
    assert next_invoice["invoice_number"] == "INV-202605-00002"
    assert next_invoice["due_date"] == "2026-07-01T09:30:00Z"  # 30 NET: 2026-06-01 + 30 days
    assert second["payment_terms"] == "30 NET"


def test_external_customer_id_and_calendar_cycle(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    body = sub_body(world, billing_cycle="calendar")
    del body["customer_id"]
    sub = created(
        client.post("/v1/subscriptions", json={**body, "external_customer_id": "acme"}, headers=test_key)
    )
    assert sub["customer_id"] == world["customer_id"]
    # Calendar monthly from 1 May 09:30: a stub up to 1 June 00:00, anchored there.
    assert (sub["current_period_start"], sub["current_period_end"], sub["billing_anchor"]) == (
        NOW,
        "2026-06-01T00:00:00Z",
        "2026-06-01T00:00:00Z",
    )
    # customer_id wins over external_customer_id.
    both = subscribe(client, test_key, world, external_customer_id="nobody")
    assert both["customer_id"] == world["customer_id"]


def test_draft_then_activate(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    draft = subscribe(client, test_key, world, subscription_status="draft")
    assert draft["subscription_status"] == "draft" and draft["start_date"] == NOW
    assert invoices_of(client, test_key, draft["id"])["pagination"]["total"] == 0

    response = client.post(
        f"/v1/subscriptions/{draft['id']}/activate",
        json={"start_date": "2026-05-10T00:00:00Z"},
        headers=test_key,
    )
    assert response.status_code == 200, response.text
    active = response.json()
    assert {
        name: active[name]
        for name in (
            "subscription_status",
            "start_date",
            "billing_anchor",
            "current_period_start",
            "current_period_end",
            "version",
        )
    } == {
        "subscription_status": "active",
        "start_date": "2026-05-10T00:00:00Z",
        "billing_anchor": "2026-05-10T00:00:00Z",
        "current_period_start": "2026-05-10T00:00:00Z",
        "current_period_end": "2026-06-10T00:00:00Z",
        "version": 2,
    }
    assert [line["start_date"] for line in active["line_items"]] == ["2026-05-10T00:00:00Z"] * 2
    assert client.get(f"/v1/subscriptions/{draft['id']}", headers=test_key).json() == active
    (invoice,) = invoices_of(client, test_key, draft["id"])["items"]
    assert (invoice["billing_reason"], invoice["amount_due"], invoice["period_start"]) == (
        "SUBSCRIPTION_CREATE",
        "49.00",
        "2026-05-10T00:00:00Z",
    )

    error = assert_error(
        client.post(f"/v1/subscriptions/{draft['id']}/activate", json={}, headers=test_key),
        400,
        "invalid_operation",
    )
    assert "draft" in error["message"]
    assert invoices_of(client, test_key, draft["id"])["pagination"]["total"] == 1


def test_activate_keeps_a_requested_anchor_equal_to_the_start(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    draft = subscribe(
        client, test_key, world, subscription_status="draft", billing_anchor=NOW, start_date=NOW
    )
    assert draft["billing_anchor"] == NOW
    path = f"/v1/subscriptions/{draft['id']}/activate"
    response = client.post(path, json={"start_date": "2026-05-10T00:00:00Z"}, headers=test_key)
    assert response.status_code == 200, response.text
    active = response.json()
    # Still anchored on 1 May 09:30: the first period is the short 10 May - 1 Jun 09:30.
    assert (active["billing_anchor"], active["current_period_start"], active["current_period_end"]) == (
        NOW,
        "2026-05-10T00:00:00Z",
        PERIOD_END,
    )
    # The flag that remembers the request is internal, like the billing run's fields.
    shown = [
        draft,
        active,
        client.get(f"/v1/subscriptions/{draft['id']}", headers=test_key).json(),
        client.get(f"/v1/subscriptions/{draft['id']}/v2", headers=test_key).json(),
        *client.post("/v1/subscriptions/search", json={}, headers=test_key).json()["items"],
        *client.get("/v1/customers/external/acme/subscriptions", headers=test_key).json()["items"],
    ]
    assert len(shown) == 6
    assert not any(INTERNAL & set(sub) for sub in shown)


@pytest.mark.parametrize("body", [None, {}, {"start_date": None}])
def test_activate_without_start_date_keeps_the_start(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], body: dict[str, Any] | None
) -> None:
    draft = subscribe(client, test_key, world, subscription_status="draft")
    path = f"/v1/subscriptions/{draft['id']}/activate"
    response = (
        client.post(path, headers=test_key)
        if body is None
        else client.post(path, json=body, headers=test_key)
    )
    assert response.status_code == 200, response.text
    active = response.json()
    assert (active["subscription_status"], active["start_date"], active["current_period_end"]) == (
        "active",
        NOW,
        PERIOD_END,
    )
    assert invoices_of(client, test_key, draft["id"])["pagination"]["total"] == 1


def test_activate_with_an_earlier_start_bills_the_whole_first_period(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    draft = subscribe(client, test_key, world, subscription_status="draft")  # start 2026-05-01 09:30
    path = f"/v1/subscriptions/{draft['id']}/activate"
    active = client.post(path, json={"start_date": "2026-04-20T00:00:00Z"}, headers=test_key).json()
    assert (active["current_period_start"], active["current_period_end"]) == (
        "2026-04-20T00:00:00Z",
        "2026-05-20T00:00:00Z",
    )
    # Today: the lines still start 2026-05-01 09:30 and the invoice is 49.00 x 1,607,400 s /
    # 2,592,000 s = 30.39 instead of the whole period's 49.00.
    assert [line["start_date"] for line in active["line_items"]] == ["2026-04-20T00:00:00Z"] * 2
    (invoice,) = invoices_of(client, test_key, draft["id"])["items"]
    assert invoice["amount_due"] == "49.00"


def test_activate_bad_input(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    draft = subscribe(client, test_key, world, subscription_status="draft", end_date="2026-09-01T00:00:00Z")
    path = f"/v1/subscriptions/{draft['id']}/activate"
    for body, field in (
        ({"start_date": "next week"}, "start_date"),
        ({"start_date": "2026-10-01T00:00:00Z"}, "start_date"),  # after the end date
    ):
        error = assert_error(client.post(path, json=body, headers=test_key), 400, "validation_error")
        assert error["details"]["field"] == field
    assert client.get(f"/v1/subscriptions/{draft['id']}", headers=test_key).json() == draft
    assert totals(client, test_key) == (1, 0)
    assert_error(client.post("/v1/subscriptions/subs_nope/activate", headers=test_key), 404, "not_found")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"plan_id": "plan_nope"}, "plan_id"),
        ({"customer_id": "cust_nope"}, "customer_id"),
        ({"customer_id": None, "external_customer_id": "nobody"}, "external_customer_id"),
        ({"customer_id": None}, "customer_id"),
        ({"currency": "eur"}, "currency"),  # the plan has no EUR prices
        ({"currency": "dollars"}, "currency"),
        ({"billing_period": "ANNUAL"}, "billing_period"),  # USD prices exist, none ANNUAL
        ({"billing_period_count": 2}, "billing_period_count"),  # USD MONTHLY exist, not every 2
        ({"billing_period": "FORTNIGHTLY"}, "billing_period"),
        ({"billing_period": None}, "billing_period"),
        ({"payment_terms": "10 NET"}, "payment_terms"),
        ({"start_date": "2026-06-01T00:00:00Z", "end_date": "2026-05-15T00:00:00Z"}, "end_date"),
        ({"billing_cycle": "calendar", "billing_anchor": "2026-05-15T00:00:00Z"}, "billing_anchor"),
        ({"billing_cycle": "weekly-ish"}, "billing_cycle"),
        ({"subscription_status": "cancelled"}, "subscription_status"),
        ({"trial_period_days": -1}, "trial_period_days"),
        ({"billing_period_count": 0}, "billing_period_count"),
        ({"coupons": ["WELCOME"]}, "coupons[0]"),  # no such coupon
    ],
)
def test_create_bad_input_is_400_and_writes_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], fields: dict[str, Any], field: str
) -> None:
    response = client.post("/v1/subscriptions", json=sub_body(world, **fields), headers=test_key)
    error = assert_error(response, 400, "validation_error")
    assert error["details"]["field"] == field
    assert totals(client, test_key) == (0, 0)


def test_a_plan_without_the_asked_price_says_what_it_has(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    response = client.post(
        "/v1/subscriptions", json=sub_body(world, billing_period="ANNUAL"), headers=test_key
    )
    error = assert_error(response, 400, "validation_error")
    assert error["details"]["field"] == "billing_period"
    assert error["message"].endswith("has no ANNUAL prices in usd; it has usd 1 x MONTHLY")


def test_create_refuses_another_environments_customer_and_plan(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], world: dict[str, str]
) -> None:
    # The test environment's customer is unknown in production (checked first) ...
    response = client.post("/v1/subscriptions", json=sub_body(world), headers=prod_key)
    assert assert_error(response, 400, "validation_error")["details"]["field"] == "customer_id"
    # ... and so is its plan, for a production customer.
    prod_customer = created(
        client.post("/v1/customers", json={"external_id": "acme", "name": "A"}, headers=prod_key)
    )
    body = sub_body(world, customer_id=prod_customer["id"])
    response = client.post("/v1/subscriptions", json=body, headers=prod_key)
    assert assert_error(response, 400, "validation_error")["details"]["field"] == "plan_id"
    assert totals(client, prod_key) == (0, 0)
    assert totals(client, test_key) == (0, 0)


def test_create_needs_a_body(client: TestClient, test_key: dict[str, str]) -> None:
    assert_error(client.post("/v1/subscriptions", headers=test_key), 400, "validation_error")
    error = assert_error(
        client.post(
            "/v1/subscriptions",
            content=b"{not json",
            headers={**test_key, "content-type": "application/json"},
        ),
        400,
        "validation_error",
    )
    assert "JSON" in error["message"]


def test_v2_read_and_price_sync(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    sub = subscribe(client, test_key, world)
    path = f"/v1/subscriptions/{sub['id']}/v2"
    plain = client.get(path, headers=test_key)
    assert plain.status_code == 200, plain.text
    without_lines = {k: v for k, v in sub.items() if k != "line_items"}
    assert plain.json() == {**without_lines, "plan_prices_out_of_sync": False}
    assert not {"line_items", "coupon_associations", "credit_grants", "phases"} & set(plain.json())

    expanded = client.get(path, params={"expand": "subscription_line_items"}, headers=test_key).json()
    assert expanded == {**sub, "plan_prices_out_of_sync": False}
    assert [line["price_id"] for line in expanded["line_items"]] == [
        world["fixed_price_id"],
        world["usage_price_id"],
    ]
    everything = client.get(
        path,
        params={"expand": "subscription_line_items, phases,coupon_associations,credit_grants"},
        headers=test_key,
    ).json()
    assert (everything["phases"], everything["coupon_associations"], everything["credit_grants"]) == (
        [],
        [],
        [],
    )
    assert len(everything["line_items"]) == 2

    # A new plan price (sequence 3) leaves the subscription, synced at 2, out of sync.
    price = {
        **FIXED,
        "entity_type": "PLAN",
        "entity_id": world["plan_id"],
        "amount": "5",
        "display_name": "Support",
    }
    added = created(client.post("/v1/prices", json=price, headers=test_key))
    assert added["sequence"] == 3
    after = client.get(path, headers=test_key).json()
    assert (after["plan_prices_out_of_sync"], after["synced_price_sequence"]) == (True, 2)
    # The v1 read has no such flag; a subscription created now is in sync.
    assert (
        "plan_prices_out_of_sync" not in client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()
    )
    fresh = subscribe(client, test_key, world)
    assert fresh["synced_price_sequence"] == 3 and len(fresh["line_items"]) == 3
    assert (
        client.get(f"/v1/subscriptions/{fresh['id']}/v2", headers=test_key).json()["plan_prices_out_of_sync"]
        is False
    )

    for bad in ("customer", "line_items,phases"):
        error = assert_error(
            client.get(path, params={"expand": bad}, headers=test_key), 400, "validation_error"
        )
        assert error["details"]["field"] == "expand"
    assert_error(client.get("/v1/subscriptions/subs_nope/v2", headers=test_key), 404, "not_found")


def test_search(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    first = subscribe(client, test_key, world)
    draft = subscribe(client, test_key, world, subscription_status="draft")
    other = created(
        client.post("/v1/customers", json={"external_id": "globex", "name": "G"}, headers=test_key)
    )
    third = subscribe(client, test_key, world, customer_id=other["id"])

    def ids(body: dict[str, Any]) -> list[str]:
        response = client.post("/v1/subscriptions/search", json=body, headers=test_key)
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["items"]]

    assert set(ids({})) == {first["id"], draft["id"], third["id"]}
    assert set(ids({"customer_id": world["customer_id"]})) == {first["id"], draft["id"]}
    assert ids({"external_customer_id": "globex"}) == [third["id"]]
    assert ids({"external_customer_id": "nobody"}) == []
    assert ids({"subscription_status": ["draft"]}) == [draft["id"]]
    assert ids({"subscription_ids": [first["id"], third["id"]], "customer_ids": [other["id"]]}) == [
        third["id"]
    ]
    assert ids({"plan_id": "plan_other"}) == []

    full = client.post(
        "/v1/subscriptions/search", json={"subscription_ids": [first["id"]]}, headers=test_key
    ).json()
    assert full == {"items": [first], "pagination": {"limit": 50, "offset": 0, "total": 1}}
    bare = client.post(
        "/v1/subscriptions/search",
        json={"subscription_ids": [first["id"]], "with_line_items": False},
        headers=test_key,
    ).json()
    assert bare == {
        "items": [{k: v for k, v in first.items() if k != "line_items"}],
        "pagination": {"limit": 50, "offset": 0, "total": 1},
    }
    paged = client.post("/v1/subscriptions/search", json={"limit": 2, "offset": 2}, headers=test_key).json()
    assert len(paged["items"]) == 1 and paged["pagination"] == {"limit": 2, "offset": 2, "total": 3}

    for body, field in (
        ({"subscription_status": ["gone"]}, "subscription_status[0]"),
        ({"limit": 0}, "limit"),
        ({"active_at": "2026-05-01T00:00:00Z"}, "active_at"),
    ):
        error = assert_error(
            client.post("/v1/subscriptions/search", json=body, headers=test_key), 400, "validation_error"
        )
        assert error["details"]["field"] == field


def test_customer_subscriptions(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    path = "/v1/customers/external/acme/subscriptions"
    assert client.get(path, headers=test_key).json()["items"] == []
    first = subscribe(client, test_key, world)
    second = subscribe(client, test_key, world, subscription_status="draft")
    created(client.post("/v1/customers", json={"external_id": "globex", "name": "G"}, headers=test_key))
    response = client.get(path, headers=test_key)
    assert response.status_code == 200, response.text
    body = response.json()
    assert {item["id"] for item in body["items"]} == {first["id"], second["id"]}
    assert body["pagination"]["total"] == 2 and body["pagination"]["offset"] == 0
    assert next(item for item in body["items"] if item["id"] == first["id"]) == first
    assert client.get("/v1/customers/external/globex/subscriptions", headers=test_key).json()["items"] == []
    # The customer route itself is still the customer's.
    assert client.get("/v1/customers/external/acme", headers=test_key).json()["id"] == world["customer_id"]
    assert_error(
        client.get("/v1/customers/external/nobody/subscriptions", headers=test_key), 404, "not_found"
    )


def test_access(
    client: TestClient,
    test_key: dict[str, str],
    prod_key: dict[str, str],
    reader_key: dict[str, str],
    world: dict[str, str],
) -> None:
    sub = subscribe(client, test_key, world)
    draft = subscribe(client, test_key, world, subscription_status="draft")
    reads = (
        f"/v1/subscriptions/{sub['id']}",
        f"/v1/subscriptions/{sub['id']}/v2",
        "/v1/customers/external/acme/subscriptions",
    )
    for path in reads:
        assert client.get(path, headers=reader_key).status_code == 200
        assert_error(client.get(path, headers=prod_key), 404, "not_found")
        assert_error(client.get(path), 401, "unauthorized")
    assert (
        client.post("/v1/subscriptions/search", json={}, headers=reader_key).json()["pagination"]["total"]
        == 2
    )
    assert (
        client.post("/v1/subscriptions/search", json={}, headers=prod_key).json()["pagination"]["total"] == 0
    )
    assert_error(client.post("/v1/subscriptions/search", json={}), 401, "unauthorized")
    assert_error(client.get("/v1/subscriptions/subs_nope", headers=test_key), 404, "not_found")

    assert_error(
        client.post("/v1/subscriptions", json=sub_body(world), headers=reader_key), 403, "permission_denied"
    )
    assert_error(client.post("/v1/subscriptions", json=sub_body(world)), 401, "unauthorized")
    activate = f"/v1/subscriptions/{draft['id']}/activate"
    assert_error(client.post(activate, headers=reader_key), 403, "permission_denied")
    assert_error(client.post(activate, headers=prod_key), 404, "not_found")
    assert (
        client.get(f"/v1/subscriptions/{draft['id']}", headers=test_key).json()["subscription_status"]
        == "draft"
    )
    assert totals(client, test_key) == (2, 1)
