"""Subscription hierarchies over HTTP, on every store: ``inheritance`` on ``POST /v1/subscriptions``,
the search filters ``parent_subscription_ids`` and ``invoicing_customer_ids``, ``modify/execute``
with ``inheritance`` and ``grouped_invoicing`` (and its ``changed_resources``), the parent's
invoice with its children's lines (each naming its subscription), ``subscription_customer_id`` on
invoices, and the 400s naming their field with nothing written.

The clock starts at 2026-05-01 09:30 UTC; plan Pro is 49.00 a month in advance plus 0.025 a call.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from tests.http.conftest import assert_error
from tests.http.test_subscriptions_http import created, make_world, sub_body, totals


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    made = make_world(client, test_key)
    for external_id in ("eu", "team", "payer"):
        customer = client.post(
            "/v1/customers", json={"external_id": external_id, "name": external_id}, headers=test_key
        )
        made[external_id] = created(customer)["id"]
    return made


def post(client: TestClient, key: dict[str, str], path: str, body: dict[str, Any], status: int = 200) -> Any:
    response = client.post(path, json=body, headers=key)
    assert response.status_code == status, response.text
    return response.json()


def search(client: TestClient, key: dict[str, str], **body: Any) -> list[dict[str, Any]]:
    return post(client, key, "/v1/subscriptions/search", body)["items"]  # type: ignore[no-any-return]


def test_a_family_created_searched_and_billed(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], billing: Billing, clock: TestClock
) -> None:
    parent = post(
        client,
        test_key,
        "/v1/subscriptions",
        sub_body(world, inheritance={"external_customer_ids_to_inherit_subscription": ["eu"]}),
        201,
    )
    assert (
        parent["subscription_type"],
        parent["parent_subscription_id"],
        parent["invoicing_customer_id"],
    ) == (
        "parent",
        None,
        None,
    )
    child = post(
        client,
        test_key,
        "/v1/subscriptions",
        sub_body(world, customer_id=world["team"], inheritance={"parent_subscription_id": parent["id"]}),
        201,
    )
    assert (child["subscription_type"], child["parent_subscription_id"]) == (
        "grouped_invoicing",
        parent["id"],
    )
    family = search(client, test_key, parent_subscription_ids=[parent["id"]])
    assert sorted(s["subscription_type"] for s in family) == ["grouped_invoicing", "inherited"]
    (inherited,) = [s for s in family if s["subscription_type"] == "inherited"]
    assert (inherited["customer_id"], inherited["line_items"]) == (world["eu"], [])
    calls = [
        {
            "event_name": "api.call",
            "external_customer_id": who,
            "event_id": f"{who}-{i}",
            "timestamp": "2026-05-10T00:00:00Z",
        }
        for who in ("acme", "eu", "team")
        for i in range(40)
    ]
    post(client, test_key, "/v1/events/bulk", {"events": calls}, 202)

    clock.set(datetime(2026, 6, 1, 9, 30, tzinfo=UTC))
    assert billing.run_due().invoice_count == 1
    (invoice,) = [
        i
        for i in post(client, test_key, "/v1/invoices/search", {"subscription_id": parent["id"]})["items"]
        if i["billing_reason"] == "SUBSCRIPTION_CYCLE"
    ]
    assert (invoice["customer_id"], invoice["subscription_customer_id"]) == (
        world["customer_id"],
        world["customer_id"],
    )
    read = client.get(f"/v1/invoices/{invoice['id']}", headers=test_key).json()
    rows = [
        (line["display_name"], line["quantity"], line["amount"], line["subscription_id"])
        for line in read["line_items"]
    ]
    # acme and eu: 80 calls x 0.025 = 2.00 on the parent's own line; team: 40 calls = 1.00 and its
    # fees (June in advance, May in arrears) on lines naming the child. 49 + 2 + 49 + 1 + 49 = 150.
    assert sorted(rows) == sorted(
        [
            (rows[0][0], "1", "49.00", parent["id"]),
            (rows[1][0], "80", "2.00", parent["id"]),
            (rows[0][0], "1", "49.00", child["id"]),
            (rows[1][0], "40", "1.00", child["id"]),
            (rows[0][0], "1", "49.00", child["id"]),
        ]
    )
    assert read["total"] == "150.00"
    empty = client.post("/v1/invoices/search", json={"subscription_id": child["id"]}, headers=test_key)
    assert empty.json()["items"] == []
    preview = client.post("/v1/invoices/preview", json={"subscription_id": child["id"]}, headers=test_key)
    assert_error(preview, 400, "invalid_operation")


def test_delegated_invoicing_and_its_filters(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = post(
        client,
        test_key,
        "/v1/subscriptions",
        sub_body(world, inheritance={"invoicing_customer_external_id": "payer"}),
        201,
    )
    assert (sub["subscription_type"], sub["invoicing_customer_id"]) == ("delegated_invoicing", world["payer"])
    assert [s["id"] for s in search(client, test_key, invoicing_customer_ids=[world["payer"]])] == [sub["id"]]
    assert search(client, test_key, invoicing_customer_ids=[world["customer_id"]]) == []
    (opening,) = post(client, test_key, "/v1/invoices/search", {"customer_id": world["payer"]})["items"]
    assert (opening["subscription_id"], opening["subscription_customer_id"], opening["total"]) == (
        sub["id"],
        world["customer_id"],
        "49.00",
    )
    mine = post(client, test_key, "/v1/invoices/search", {"subscription_customer_id": [world["customer_id"]]})
    assert [i["id"] for i in mine["items"]] == [opening["id"]]
    assert post(client, test_key, "/v1/invoices/search", {"customer_id": world["customer_id"]})["items"] == []


@pytest.mark.parametrize(
    ("inheritance", "extra", "field"),
    [
        ({"parent_subscription_id": "subs_nope"}, {}, "inheritance.parent_subscription_id"),
        (
            {"external_customer_ids_to_inherit_subscription": ["eu", "ghost"]},
            {},
            "inheritance.external_customer_ids_to_inherit_subscription[1]",
        ),
        ({"invoicing_customer_external_id": "ghost"}, {}, "inheritance.invoicing_customer_external_id"),
        (
            {"subscriptions_ids_for_grouped_invoicing": ["subs_nope"]},
            {},
            "inheritance.subscriptions_ids_for_grouped_invoicing[0]",
        ),
        ({"unknown": 1}, {}, "inheritance.unknown"),
    ],
)
def test_create_refusals_name_the_field_and_write_nothing(
    client: TestClient,
    test_key: dict[str, str],
    world: dict[str, str],
    inheritance: dict[str, Any],
    extra: dict[str, Any],
    field: str,
) -> None:
    before = totals(client, test_key)
    response = client.post(
        "/v1/subscriptions", json=sub_body(world, inheritance=inheritance, **extra), headers=test_key
    )
    assert assert_error(response, 400, "validation_error")["details"]["field"] == field
    assert totals(client, test_key) == before


def test_a_child_refuses_standalone_only_fields(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    parent = post(client, test_key, "/v1/subscriptions", sub_body(world), 201)
    before = totals(client, test_key)
    body = sub_body(
        world,
        customer_id=world["team"],
        commitment_amount="10",
        overage_factor="1.5",
        inheritance={"parent_subscription_id": parent["id"]},
    )
    response = client.post("/v1/subscriptions", json=body, headers=test_key)
    assert assert_error(response, 400, "validation_error")["details"]["field"] == "commitment_amount"
    assert totals(client, test_key) == before


def modify(client: TestClient, key: dict[str, str], sub_id: str, **body: Any) -> Any:
    return client.post(f"/v1/subscriptions/{sub_id}/modify/execute", json=body, headers=key)


def test_modify_inheritance_and_grouped_invoicing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    parent = post(client, test_key, "/v1/subscriptions", sub_body(world), 201)
    added = modify(
        client,
        test_key,
        parent["id"],
        type="inheritance",
        inheritance_params={"action": "add", "external_customer_ids_to_inherit_subscription": ["eu"]},
    )
    assert added.status_code == 200, added.text
    body = added.json()
    assert body["subscription"]["subscription_type"] == "parent"
    ((change),) = body["changed_resources"]["subscriptions"]
    assert (change["action"], change["status"], change["current_period_end"]) == (
        "created",
        "active",
        "2026-06-01T09:30:00Z",
    )
    assert body["changed_resources"]["invoices"] == []

    solo = post(client, test_key, "/v1/subscriptions", sub_body(world, customer_id=world["team"]), 201)
    joined = modify(
        client,
        test_key,
        solo["id"],
        type="grouped_invoicing",
        grouped_invoicing_params={"action": "add", "parent_subscription_id": parent["id"]},
    )
    assert joined.status_code == 200, joined.text
    assert (
        joined.json()["subscription"]["subscription_type"],
        joined.json()["changed_resources"]["invoices"],
    ) == (
        "grouped_invoicing",
        [],  # created this very instant: no usage to invoice yet
    )
    left = modify(
        client, test_key, solo["id"], type="grouped_invoicing", grouped_invoicing_params={"action": "remove"}
    )
    assert left.status_code == 200, left.text
    assert (
        left.json()["subscription"]["subscription_type"],
        left.json()["subscription"]["parent_subscription_id"],
    ) == (
        "standalone",
        None,
    )

    missing = modify(client, test_key, parent["id"], type="inheritance")
    assert assert_error(missing, 400, "validation_error")["details"]["field"] == "inheritance_params"
    wrong = modify(
        client,
        test_key,
        parent["id"],
        type="inheritance",
        inheritance_params={"action": "remove", "external_customer_ids_to_remove": ["team"]},
    )
    assert assert_error(wrong, 400, "validation_error")["details"]["field"] == (
        "inheritance_params.external_customer_ids_to_remove[0]"
    )
    mixed = modify(
        client,
        test_key,
        parent["id"],
        type="inheritance",
        inheritance_params={"action": "add", "external_customer_ids_to_inherit_subscription": ["team"]},
        coupon_params={"action": "add", "coupon_code": "X"},
    )
    assert assert_error(mixed, 400, "validation_error")["details"]["field"] == "coupon_params"
    no_parent = modify(
        client, test_key, parent["id"], type="grouped_invoicing", grouped_invoicing_params={"action": "add"}
    )
    assert assert_error(no_parent, 400, "validation_error")["details"]["field"] == (
        "grouped_invoicing_params.parent_subscription_id"
    )
