"""``/v1/invoices`` over HTTP, on every store: reads, search, the preview and a billing run.

Plan Pro (see ``test_subscriptions_http.make_world``): 49.00/month in advance plus 0.025 per
``api.call`` event in arrears. The subscription starts at the clock's 2026-05-01 09:30 UTC, so its
first period is 2026-05-01 09:30 .. 2026-06-01 09:30 and the next one ends 2026-07-01 09:30.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from tests.http.conftest import assert_error
from tests.http.test_subscriptions_http import (
    FIXED,
    NOW,
    PERIOD_END,
    created,
    invoices_of,
    make_world,
    subscribe,
    totals,
)

NEXT_END = "2026-07-01T09:30:00Z"


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    return make_world(client, test_key)


def event(event_id: str, timestamp: str, customer: str = "acme", name: str = "api.call") -> dict[str, Any]:
    return {
        "event_id": event_id,
        "event_name": name,
        "external_customer_id": customer,
        "timestamp": timestamp,
    }


def ingest(client: TestClient, headers: dict[str, str]) -> None:
    """123 billable calls in the first period, and five events that must not count."""
    billable = [event(f"start-{i}", NOW) for i in range(100)]  # the period start is inside
    billable += [event(f"end-{i}", "2026-06-01T09:29:59Z") for i in range(23)]
    others = [
        event("before", "2026-05-01T09:29:59Z"),  # before the subscription started
        event("next", PERIOD_END),  # the period end belongs to the next period
        event("globex", "2026-05-10T00:00:00Z", customer="globex"),  # another customer
        event("other", "2026-05-10T00:00:00Z", name="api.other"),  # another meter's event
        {**event("start-0", "2026-05-20T00:00:00Z")},  # a repeated id counts once
    ]
    response = client.post("/v1/events/bulk", json={"events": billable + others}, headers=headers)
    assert response.status_code == 202, response.text
    assert (response.json()["accepted"], response.json()["duplicates"]) == ("127", "1")


def summary(invoice: dict[str, Any]) -> dict[str, Any]:
    names = ("invoice_number", "invoice_status", "billing_reason", "billing_sequence", "subtotal", "total")
    return {name: invoice[name] for name in (*names, "amount_due", "period_start", "period_end")}


def lines(invoice: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            line["price_type"],
            line["invoice_cadence"],
            line["quantity"],
            line["amount"],
            line["period_start"],
            line["period_end"],
        )
        for line in invoice["line_items"]
    ]


def preview(client: TestClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = client.post("/v1/invoices/preview", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_amount_filters_and_sort_compare_numbers(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    for amount in ("100.00", "5.00"):
        plan = created(
            client.post(
                "/v1/plans",
                json={"name": f"P{amount}", "prices": [{**FIXED, "amount": amount}]},
                headers=test_key,
            )
        )
        subscribe(client, test_key, {**world, "plan_id": plan["id"]})
    subscribe(client, test_key, world)  # 49.00

    def amounts(body: dict[str, Any]) -> list[str]:
        body = {**body, "sort": [{"field": "amount_due", "direction": "asc"}]}
        response = client.post("/v1/invoices/search", json=body, headers=test_key)
        assert response.status_code == 200, response.text
        return [invoice["amount_due"] for invoice in response.json()["items"]]

    assert amounts({}) == ["5.00", "49.00", "100.00"]
    assert amounts({"amount_due_gt": "9"}) == ["49.00", "100.00"]
    assert amounts({"amount_remaining_gt": "50"}) == ["100.00"]


def test_get_invoice(
    client: TestClient,
    test_key: dict[str, str],
    prod_key: dict[str, str],
    reader_key: dict[str, str],
    world: dict[str, str],
) -> None:
    sub = subscribe(client, test_key, world)
    (opening,) = invoices_of(client, test_key, sub["id"])["items"]
    path = f"/v1/invoices/{opening['id']}"
    got = client.get(path, headers=test_key)
    assert got.status_code == 200, got.text
    assert got.json() == opening
    assert opening["id"].startswith("inv_") and opening["subscription_id"] == sub["id"]
    assert client.get(path, headers=reader_key).json() == opening
    assert_error(client.get(path, headers=prod_key), 404, "not_found")
    assert_error(client.get(path), 401, "unauthorized")
    assert_error(client.get("/v1/invoices/inv_nope", headers=test_key), 404, "not_found")
    # GET on the fixed paths is not taken for an invoice id.
    assert_error(client.get("/v1/invoices/search", headers=test_key), 404, "not_found")


def test_search_invoices(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], world: dict[str, str]
) -> None:
    first = subscribe(client, test_key, world)
    globex = client.post(
        "/v1/customers", json={"external_id": "globex", "name": "G"}, headers=test_key
    ).json()
    second = subscribe(client, test_key, world, customer_id=globex["id"])
    subscribe(client, test_key, world, subscription_status="draft")  # no invoice

    def search(body: dict[str, Any]) -> dict[str, Any]:
        response = client.post("/v1/invoices/search", json=body, headers=test_key)
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    everything = search({})
    assert everything["pagination"] == {"limit": 50, "offset": 0, "total": 2}
    assert {item["subscription_id"] for item in everything["items"]} == {first["id"], second["id"]}
    assert sorted(item["invoice_number"] for item in everything["items"]) == [
        "INV-202605-00001",
        "INV-202605-00002",
    ]
    assert [i["subscription_id"] for i in search({"external_customer_id": "globex"})["items"]] == [
        second["id"]
    ]
    assert search({"external_customer_id": "nobody"})["items"] == []
    assert [i["subscription_id"] for i in search({"customer_id": world["customer_id"]})["items"]] == [
        first["id"]
    ]
    assert (
        search({"billing_reason": "SUBSCRIPTION_CREATE", "invoice_status": ["FINALIZED"]})["pagination"][
            "total"
        ]
        == 2
    )
    assert search({"billing_reason": "SUBSCRIPTION_CYCLE"})["items"] == []
    assert search({"invoice_status": ["DRAFT", "VOIDED"]})["items"] == []
    assert search({"period_start_gte": "2026-05-01T09:30:01Z"})["items"] == []
    assert search({"period_end_lte": PERIOD_END, "amount_due_gt": "48.99"})["pagination"]["total"] == 2
    assert search({"amount_due_gt": "49.00"})["items"] == []
    one = everything["items"][0]
    assert search({"invoice_ids": [one["id"]]})["items"] == [one]
    bare = search({"invoice_ids": [one["id"]], "skip_line_items": True})["items"]
    assert bare == [{**one, "line_items": []}]
    paged = search({"limit": 1, "offset": 1})
    assert len(paged["items"]) == 1 and paged["pagination"] == {"limit": 1, "offset": 1, "total": 2}
    assert client.post("/v1/invoices/search", json={}, headers=prod_key).json()["pagination"]["total"] == 0

    for body, field in (
        ({"invoice_status": ["PAID"]}, "invoice_status[0]"),
        ({"billing_reason": "BIRTHDAY"}, "billing_reason"),
        ({"period_start_gte": "soon"}, "period_start_gte"),
        ({"amount_due_gt": 1.5}, "amount_due_gt"),  # floats are not exact
        ({"limit": 1001}, "limit"),
    ):
        error = assert_error(
            client.post("/v1/invoices/search", json=body, headers=test_key), 400, "validation_error"
        )
        assert error["details"]["field"] == field
    assert_error(client.post("/v1/invoices/search", json={}), 401, "unauthorized")


def test_preview_bills_usage_and_stores_nothing(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world)
    empty = preview(client, test_key, subscription_id=sub["id"])
    assert lines(empty) == [
        ("FIXED", "ADVANCE", "1", "49.00", PERIOD_END, NEXT_END),  # the next period, in advance
        ("USAGE", "ARREAR", "0", "0.00", NOW, PERIOD_END),  # no usage yet
    ]
    hidden = preview(client, test_key, subscription_id=sub["id"], hide_zero_charges_line_items=True)
    assert lines(hidden) == lines(empty)[:1]

    ingest(client, test_key)
    invoice = preview(client, reader_key, subscription_id=sub["id"])
    assert summary(invoice) == {
        "invoice_number": None,  # not finalized: never numbered
        "invoice_status": "DRAFT",
        "billing_reason": "SUBSCRIPTION_CYCLE",
        "billing_sequence": 2,
        "subtotal": "52.08",  # 49.00 + 3.08
        "total": "52.08",
        "amount_due": "52.08",
        "period_start": NOW,
        "period_end": PERIOD_END,
    }
    assert lines(invoice) == [
        ("FIXED", "ADVANCE", "1", "49.00", PERIOD_END, NEXT_END),
        # 100 + 23 calls inside [start, end): 123 x 0.025 = 3.075 -> 3.08 (half away from zero)
        ("USAGE", "ARREAR", "123", "3.08", NOW, PERIOD_END),
    ]
    usage = invoice["line_items"][1]
    assert (usage["meter_id"], usage["price_id"], usage["usage_event_count"]) == (
        world["meter_id"],
        world["usage_price_id"],
        123,
    )
    # Nothing was stored: not the invoice, not a number.
    assert_error(client.get(f"/v1/invoices/{invoice['id']}", headers=test_key), 404, "not_found")
    assert totals(client, test_key) == (1, 1)
    assert preview(client, test_key, subscription_id=sub["id"])["subtotal"] == "52.08"

    # Another window: the first 14.5 days hold only the 100 calls at the start.
    window = preview(
        client,
        test_key,
        subscription_id=sub["id"],
        period_start=NOW,
        period_end="2026-05-16T00:00:00Z",
    )
    (usage_line,) = [line for line in lines(window) if line[0] == "USAGE"]
    # 100 x 0.025 = 2.50
    assert usage_line == ("USAGE", "ARREAR", "100", "2.50", NOW, "2026-05-16T00:00:00Z")


def test_preview_of_a_draft_is_its_opening_invoice(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    draft = subscribe(client, test_key, world, subscription_status="draft")
    invoice = preview(client, test_key, subscription_id=draft["id"])
    assert (invoice["billing_reason"], invoice["subtotal"], invoice["billing_sequence"]) == (
        "SUBSCRIPTION_CREATE",
        "49.00",
        1,
    )
    assert lines(invoice) == [("FIXED", "ADVANCE", "1", "49.00", NOW, PERIOD_END)]
    assert totals(client, test_key) == (1, 0)


def test_preview_bad_input(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world)
    for body, field in (
        ({}, "subscription_id"),
        ({"subscription_id": ""}, "subscription_id"),
        ({"subscription_id": sub["id"], "period_start": NOW}, "period_end"),
        ({"subscription_id": sub["id"], "period_end": PERIOD_END}, "period_start"),
        ({"subscription_id": sub["id"], "period_start": PERIOD_END, "period_end": NOW}, "period_end"),
        ({"subscription_id": sub["id"], "period_start": "tomorrow", "period_end": NOW}, "period_start"),
    ):
        error = assert_error(
            client.post("/v1/invoices/preview", json=body, headers=test_key), 400, "validation_error"
        )
        assert error["details"]["field"] == field, body
    for headers in (test_key, prod_key):
        assert_error(
            client.post("/v1/invoices/preview", json={"subscription_id": "subs_nope"}, headers=headers),
            404,
            "not_found",
        )
    assert_error(
        client.post("/v1/invoices/preview", json={"subscription_id": sub["id"]}, headers=prod_key),
        404,
        "not_found",
    )
    assert_error(
        client.post("/v1/invoices/preview", json={"subscription_id": sub["id"]}), 401, "unauthorized"
    )
    assert totals(client, test_key) == (1, 1)


def test_billing_period_over_http(
    client: TestClient, test_key: dict[str, str], billing: Billing, clock: TestClock, world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world)
    ingest(client, test_key)
    expected = preview(client, test_key, subscription_id=sub["id"])

    # Nothing is billed before the period ends (the run only sends the renewal notice, due 3 days
    # before the end, which moves the subscription to version 2).
    clock.set(datetime(2026, 6, 1, 9, 29, 59, tzinfo=UTC))
    early = billing.run_due()
    assert (early.invoices, early.notification_count) == ([], 1)
    assert totals(client, test_key) == (1, 1)

    clock.set(datetime(2026, 6, 1, 9, 30, tzinfo=UTC))
    report = billing.run_due()
    assert (len(report.invoices), report.failures) == (1, [])
    page = client.post(
        "/v1/invoices/search",
        json={"subscription_id": sub["id"], "billing_reason": "SUBSCRIPTION_CYCLE"},
        headers=test_key,
    ).json()
    (listed,) = page["items"]
    assert listed["id"] == report.invoices[0].id
    response = client.get(f"/v1/invoices/{listed['id']}", headers=test_key)
    assert response.status_code == 200, response.text
    cycle = response.json()
    assert cycle == listed
    assert summary(cycle) == {
        "invoice_number": "INV-202606-00001",  # June's counter starts again at 1
        "invoice_status": "FINALIZED",
        "billing_reason": "SUBSCRIPTION_CYCLE",
        "billing_sequence": 2,
        "subtotal": "52.08",  # 49.00 (June, in advance) + 3.08 (May's 123 calls x 0.025 = 3.075)
        "total": "52.08",
        "amount_due": "52.08",
        "period_start": NOW,
        "period_end": PERIOD_END,
    }
    assert (cycle["issue_date"], cycle["finalized_at"], cycle["due_date"]) == (
        PERIOD_END,
        PERIOD_END,
        "2026-06-02T09:30:00Z",  # period end + 1 day
    )
    assert lines(cycle) == [
        ("FIXED", "ADVANCE", "1", "49.00", PERIOD_END, NEXT_END),
        ("USAGE", "ARREAR", "123", "3.08", NOW, PERIOD_END),
    ]
    assert lines(cycle) == lines(expected)  # the preview told the truth
    fixed_line, usage_line = sub["line_items"]
    assert [line["subscription_line_item_id"] for line in cycle["line_items"]] == [
        fixed_line["id"],
        usage_line["id"],
    ]
    assert cycle["line_items"][1]["usage_event_count"] == 123

    after = client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()
    assert (after["current_period_start"], after["current_period_end"], after["version"]) == (
        PERIOD_END,
        NEXT_END,
        3,  # renewal notice, then the new period
    )
    # Billing again at the same instant issues nothing more.
    assert billing.run_due().invoices == []
    assert totals(client, test_key) == (1, 2)

    # The event stamped at the old period end is June's: 1 x 0.025 = 0.025 -> 0.03.
    june = preview(client, test_key, subscription_id=sub["id"])
    assert lines(june) == [
        ("FIXED", "ADVANCE", "1", "49.00", NEXT_END, "2026-08-01T09:30:00Z"),
        ("USAGE", "ARREAR", "1", "0.03", PERIOD_END, NEXT_END),
    ]
    assert (june["subtotal"], june["billing_sequence"]) == ("49.03", 3)
