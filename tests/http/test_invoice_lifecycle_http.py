"""The invoice lifecycle over HTTP, on every store: ``POST /invoices`` (direct, idempotent),
``PUT /invoices/{id}`` (edits, ``apply_discount``, ``version``), ``/finalize``, ``/void``,
``PUT /invoices/{id}/payment``, and the removed apply-discount and recalculate-discount routes."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error


@pytest.fixture
def customer_id(client: TestClient, test_key: dict[str, str]) -> str:
    response = client.post("/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def body(customer_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "customer_id": customer_id,
        "currency": "usd",
        "line_items": [{"amount": "200.00", "quantity": "2", "display_name": "Setup", "price_id": "p1"}],
        "subtotal": "200.00",
        "total": "200.00",
        "amount_due": "200.00",
        **fields,
    }


def create(client: TestClient, headers: dict[str, str], data: dict[str, Any], status: int = 201) -> Any:
    response = client.post("/v1/invoices", json=data, headers=headers)
    assert response.status_code == status, response.text
    return response.json()


def test_a_direct_invoice_with_coupon_and_tax_then_idempotent_replay(
    client: TestClient, test_key: dict[str, str], customer_id: str
) -> None:
    coupon = client.post(
        "/v1/coupons",
        json={"name": "10 %", "type": "percentage", "cadence": "once", "percentage_off": "10"},
        headers=test_key,
    ).json()
    client.post(
        "/v1/taxes/rates",
        json={"name": "VAT", "code": "VAT20", "tax_rate_type": "percentage", "percentage_value": "20"},
        headers=test_key,
    )
    # 10 % of 200.00 = 20.00; VAT 20 % of 180.00 = 36.00; 200.00 - 20.00 + 36.00 = 216.00
    data = body(
        customer_id,
        invoice_coupons=[{"coupon_id": coupon["id"]}],
        tax_rate_overrides=[{"currency": "USD", "tax_rate_code": "VAT20"}],
        total="216.00",
        amount_due="216.00",
        idempotency_key="order-1",
        force_sync_invoice=False,
    )
    invoice = create(client, test_key, data)
    assert (invoice["total_discount"], invoice["total_tax"], invoice["total"]) == ("20.00", "36.00", "216.00")
    assert (invoice["invoice_status"], invoice["invoice_type"], invoice["billing_reason"]) == (
        "FINALIZED",
        "ONE_OFF",
        "MANUAL",
    )
    assert invoice["idempotency_key"] == "order-1"
    assert "request_fingerprint" not in invoice and "finalize_at" not in invoice
    assert create(client, test_key, data)["id"] == invoice["id"]
    other = create(client, test_key, {**data, "description": "another"}, status=409)
    assert other["code"] == "idempotency_conflict"
    listed = client.post("/v1/invoices/search", json={}, headers=test_key).json()
    assert listed["pagination"]["total"] == 1


def test_figures_that_do_not_add_up_are_a_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], customer_id: str
) -> None:
    response = client.post("/v1/invoices", json=body(customer_id, amount_due="150.00"), headers=test_key)
    error = assert_error(response, 400, "validation_error")
    assert error["details"]["field"] == "amount_due"
    response = client.post("/v1/invoices", json=body(customer_id, tax_rates=["NOPE"]), headers=test_key)
    assert assert_error(response, 400, "validation_error")["details"]["field"] == "tax_rates[0]"


def test_draft_update_finalize_void_and_payment(
    client: TestClient, test_key: dict[str, str], customer_id: str
) -> None:
    draft = create(client, test_key, body(customer_id, invoice_status="DRAFT"))
    assert (draft["invoice_status"], draft["invoice_number"], draft["version"]) == ("DRAFT", None, 1)
    path = f"/v1/invoices/{draft['id']}"
    edited = client.put(
        path,
        json={"metadata": {"po": "7"}, "due_date": "2026-06-30T00:00:00Z", "version": 1},
        headers=test_key,
    )
    assert edited.status_code == 200, edited.text
    assert (edited.json()["metadata"], edited.json()["due_date"], edited.json()["version"]) == (
        {"po": "7"},
        "2026-06-30T00:00:00Z",
        2,
    )
    stale = client.put(path, json={"metadata": {}, "version": 1}, headers=test_key)
    assert_error(stale, 409, "version_conflict")
    paying_a_draft = client.put(f"{path}/payment", json={"payment_status": "SUCCEEDED"}, headers=test_key)
    assert_error(paying_a_draft, 400, "invalid_operation")
    finalized = client.post(f"{path}/finalize", headers=test_key)
    assert (finalized.status_code, finalized.json()) == (200, {"message": "invoice finalized successfully"})
    assert client.get(path, headers=test_key).json()["invoice_number"] == "INV-202605-00001"
    partial = client.put(
        f"{path}/payment", json={"payment_status": "PENDING", "amount": "50.00"}, headers=test_key
    )
    assert partial.status_code == 200, partial.text
    assert (partial.json()["amount_paid"], partial.json()["amount_remaining"]) == ("50.00", "150.00")
    paid_void = client.post(f"{path}/void", headers=test_key)
    assert paid_void.status_code == 200, paid_void.text
    refunded = client.get(path, headers=test_key).json()
    # The 50.00 paid goes back to the customer's PRE_PAID wallet (decision: void refunds).
    assert (refunded["payment_status"], refunded["refunded_amount"]) == ("REFUNDED", "50.00")

    other = create(client, test_key, body(customer_id))
    other_path = f"/v1/invoices/{other['id']}"
    voided = client.post(f"{other_path}/void", headers=test_key)
    assert (voided.status_code, voided.json()) == (200, {"message": "invoice voided successfully"})
    shown = client.get(other_path, headers=test_key).json()
    assert (shown["invoice_status"], shown["voided_at"]) == ("VOIDED", "2026-05-01T09:30:00Z")
    assert_error(client.post(f"{other_path}/void", headers=test_key), 400, "invalid_operation")
    again = client.put(f"{other_path}/payment", json={"payment_status": "SUCCEEDED"}, headers=test_key)
    assert_error(again, 400, "invalid_operation")
    assert_error(client.post(f"{other_path}/finalize", headers=test_key), 400, "invalid_operation")
    assert_error(client.post("/v1/invoices/inv_missing/void", headers=test_key), 404, "not_found")


def test_apply_discount_on_a_finalized_invoice_is_refused(
    client: TestClient, test_key: dict[str, str], customer_id: str
) -> None:
    invoice = create(client, test_key, body(customer_id))
    response = client.put(f"/v1/invoices/{invoice['id']}", json={"apply_discount": True}, headers=test_key)
    assert_error(response, 400, "invalid_operation")


@pytest.mark.parametrize("removed", ["apply-discount", "recalculate-discount"])
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_the_removed_discount_routes_answer_404(
    client: TestClient, test_key: dict[str, str], customer_id: str, removed: str, method: str
) -> None:
    invoice = create(client, test_key, body(customer_id, invoice_status="DRAFT"))
    response = client.request(method, f"/v1/invoices/{invoice['id']}/{removed}", json={}, headers=test_key)
    assert response.status_code == 404
