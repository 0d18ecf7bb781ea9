"""Commitments and first-stub proration over HTTP: ``line_item_commitments`` on create (the
reference's JSON numbers), ``commitment_info`` on invoice lines (money as strings, ``duration`` a
billing period), and 400s naming the field. The clock stands at 2026-05-01 09:30 UTC."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.http.conftest import assert_error
from tests.http.test_invoices_http import ingest, preview
from tests.http.test_subscriptions_http import sub_body, subscribe, world

__all__ = ["world"]


def test_line_item_commitment_round_trip(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    price_id = world["usage_price_id"]
    # the reference types these numbers; 5 and 1.5 are read exactly
    commit = {"commitment_amount": 5, "overage_factor": 1.5, "enable_true_up": True}
    sub = subscribe(client, test_key, world, line_item_commitments={price_id: commit})
    (usage_line,) = [line for line in sub["line_items"] if line["price_id"] == price_id]
    assert {key: usage_line[key] for key in usage_line if key.startswith("commitment_")} == {
        "commitment_amount": "5",
        "commitment_quantity": None,
        "commitment_type": "amount",
        "commitment_duration": None,
        "commitment_overage_factor": "1.5",
        "commitment_true_up_enabled": True,
        "commitment_windowed": False,
        "commitment_time_buckets": [],
    }
    ingest(client, test_key)  # 123 calls x 0.025 = 3.075
    invoice = preview(client, test_key, subscription_id=sub["id"])
    (calls,) = [line for line in invoice["line_items"] if line["price_id"] == price_id]
    assert calls["amount"] == "5.00"  # 3.08 used + 1.92 true-up = the commitment exactly
    assert calls["commitment_info"] == {
        "type": "amount",
        "amount": "5",
        "quantity": None,
        "duration": "MONTHLY",
        "is_windowed": False,
        "overage_factor": "1.5",
        "true_up_enabled": True,
        "computed_commitment_utilized_amount": "3.08",
        "computed_overage_amount": "0",
        "computed_true_up_amount": "1.92",
    }


def test_bad_line_item_commitments_are_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    usage, fixed = world["usage_price_id"], world["fixed_price_id"]
    cases: list[tuple[dict[str, Any], str]] = [
        ({usage: {"commitment_amount": "5", "overage_factor": "0.9"}}, f"{usage}.overage_factor"),
        ({usage: {"commitment_amount": "5", "commitment_type": "seats"}}, f"{usage}.commitment_type"),
        ({fixed: {"commitment_amount": "5"}}, fixed),
    ]
    for commitments, field in cases:
        body = sub_body(world, line_item_commitments=commitments)
        error = assert_error(
            client.post("/v1/subscriptions", json=body, headers=test_key), 400, "validation_error"
        )
        assert error["details"]["field"] == f"line_item_commitments.{field}", error


def test_subscription_commitment_and_proration_fields(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(
        client,
        test_key,
        world,
        billing_period="MONTHLY",
        billing_cycle="calendar",
        proration_behavior="create_prorations",
        commitment_amount="100",
        commitment_duration="QUARTERLY",
        overage_factor="2",
        enable_true_up=True,
    )
    assert (sub["commitment_amount"], sub["commitment_duration"], sub["overage_factor"]) == (
        "100",
        "QUARTERLY",
        "2",
    )
    # the first stub [1 May 09:30, 1 Jun) of May (31 days): 49.00 x 2,644,200 s / 2,678,400 s
    invoice = client.post("/v1/invoices/search", json={"subscription_id": sub["id"]}, headers=test_key)
    (opening,) = invoice.json()["items"]
    assert opening["subtotal"] == "48.37"  # 49 x 2644200 / 2678400 = 48.3744... -> 48.37
