"""``/v1/payments`` and ``/v1/invoices/{id}/payment/attempt`` over HTTP, on every store: the
reference's statuses and bodies, errors as ``{code, http_status_code, message}``, and that a
refused request writes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error


@pytest.fixture
def invoice_id(client: TestClient, test_key: dict[str, str]) -> str:
    customer = client.post("/v1/customers", json={"external_id": "c1", "name": "Ada"}, headers=test_key)
    assert customer.status_code == 201, customer.text
    body = {
        "customer_id": customer.json()["id"],
        "currency": "usd",
        "line_items": [{"amount": "100.00", "quantity": "1", "display_name": "Service"}],
        "subtotal": "100.00",
        "total": "100.00",
        "amount_due": "100.00",
    }
    made = client.post("/v1/invoices", json=body, headers=test_key)
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def payment(invoice_id: str, amount: str, **fields: Any) -> dict[str, Any]:
    return {
        "amount": amount,
        "currency": "USD",
        "destination_id": invoice_id,
        "destination_type": "INVOICE",
        "payment_method_type": "OFFLINE",
        **fields,
    }


def test_round_trip(client: TestClient, test_key: dict[str, str], invoice_id: str) -> None:
    created = client.post(
        "/v1/payments", json=payment(invoice_id, "60", metadata={"method": "cash"}), headers=test_key
    )
    assert created.status_code == 201, created.text
    answer = created.json()
    assert {k: answer[k] for k in ("amount", "currency", "payment_status", "destination_id", "metadata")} == {
        "amount": "60.00",
        "currency": "usd",
        "payment_status": "SUCCEEDED",
        "destination_id": invoice_id,
        "metadata": {"method": "cash"},
    }
    assert "request_fingerprint" not in answer
    assert [(a["attempt_number"], a["payment_status"], a["payment_id"]) for a in answer["attempts"]] == [
        (1, "SUCCEEDED", answer["id"])
    ]
    pid = answer["id"]
    assert client.get(f"/v1/payments/{pid}", headers=test_key).json() == answer
    # The same body again: the same payment, 201 as the first time, nothing moved.
    again = client.post(
        "/v1/payments", json=payment(invoice_id, "60.00", metadata={"method": "cash"}), headers=test_key
    )
    assert (again.status_code, again.json()["id"]) == (201, pid)
    inv = client.get(f"/v1/invoices/{invoice_id}", headers=test_key).json()
    assert {k: inv[k] for k in ("payment_status", "amount_paid", "amount_remaining")} == {
        "payment_status": "PENDING",
        "amount_paid": "60.00",
        "amount_remaining": "40.00",
    }

    updated = client.put(f"/v1/payments/{pid}", json={"metadata": {"method": "check"}}, headers=test_key)
    assert updated.status_code == 200, updated.text
    assert updated.json()["metadata"] == {"method": "check"}

    listed = client.get("/v1/payments", params={"destination_id": invoice_id, "offset": 0}, headers=test_key)
    assert listed.status_code == 200
    assert [p["id"] for p in listed.json()["items"]] == [pid]
    assert listed.json()["pagination"] == {"total": 1, "limit": 50, "offset": 0}
    assert (
        client.get("/v1/payments", params={"payment_status": "FAILED"}, headers=test_key).json()[
            "pagination"
        ]["total"]
        == 0
    )

    assert_error(client.delete(f"/v1/payments/{pid}", headers=test_key), 400, "invalid_operation")
    pending = client.post(
        "/v1/payments", json=payment(invoice_id, "40.00", process_payment=False), headers=test_key
    ).json()
    assert pending["payment_status"] == "INITIATED"
    processed = client.post(f"/v1/payments/{pending['id']}/process", headers=test_key)
    assert processed.status_code == 200, processed.text
    assert processed.json()["payment_status"] == "SUCCEEDED"
    paid = client.get(f"/v1/invoices/{invoice_id}", headers=test_key).json()
    assert (paid["payment_status"], paid["amount_remaining"]) == ("SUCCEEDED", "0.00")


def test_delete_answers_a_message_and_archives(
    client: TestClient, test_key: dict[str, str], invoice_id: str
) -> None:
    made = client.post(
        "/v1/payments", json=payment(invoice_id, "10.00", process_payment=False), headers=test_key
    ).json()
    deleted = client.delete(f"/v1/payments/{made['id']}", headers=test_key)
    assert (deleted.status_code, deleted.json()) == (200, {"message": "payment deleted successfully"})
    assert_error(client.get(f"/v1/payments/{made['id']}", headers=test_key), 404, "not_found")
    archived = client.get("/v1/payments", params={"status": "archived"}, headers=test_key).json()
    assert [p["id"] for p in archived["items"]] == [made["id"]]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"destination_type": "CUSTOMER"}, "destination_type"),
        ({"currency": "EUR"}, "currency"),
        ({"amount": "-5"}, "amount"),
        ({"amount": "1.234"}, "amount"),
        ({"payment_method_type": "CHEQUE"}, "payment_method_type"),
        ({"payment_method_type": "CREDITS"}, "payment_method_id"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_requests_are_400_naming_the_field_and_write_nothing(
    client: TestClient, test_key: dict[str, str], invoice_id: str, fields: dict[str, Any], field: str
) -> None:
    body = assert_error(
        client.post("/v1/payments", json={**payment(invoice_id, "10.00"), **fields}, headers=test_key),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == field
    assert client.get("/v1/payments", params={"status": "archived"}, headers=test_key).json()["items"] == []
    assert client.get("/v1/payments", headers=test_key).json()["items"] == []


def test_a_named_key_with_another_body_is_409(
    client: TestClient, test_key: dict[str, str], invoice_id: str
) -> None:
    first = client.post(
        "/v1/payments", json=payment(invoice_id, "10.00", idempotency_key="k1"), headers=test_key
    )
    assert first.status_code == 201
    body = assert_error(
        client.post(
            "/v1/payments", json=payment(invoice_id, "11.00", idempotency_key="k1"), headers=test_key
        ),
        409,
        "idempotency_conflict",
    )
    assert body["details"]["payment_id"] == first.json()["id"]


def test_a_declined_card_is_a_failed_payment_not_an_error(
    client: TestClient, test_key: dict[str, str], invoice_id: str
) -> None:
    made = client.post(
        "/v1/payments",
        json=payment(
            invoice_id, "100.00", payment_method_type="CARD", payment_method_id="pm_sandbox_declined"
        ),
        headers=test_key,
    )
    assert made.status_code == 201, made.text
    assert (made.json()["payment_status"], made.json()["error_message"]) == ("FAILED", "card_declined")
    inv = client.get(f"/v1/invoices/{invoice_id}", headers=test_key).json()
    # Nothing was ever paid: amount_paid is still the invoice's default "0".
    assert (inv["payment_status"], inv["amount_paid"], inv["amount_remaining"]) == ("FAILED", "0", "100.00")


def test_attempt_answers_a_message_or_an_error(
    client: TestClient, test_key: dict[str, str], invoice_id: str
) -> None:
    body = assert_error(
        client.post(f"/v1/invoices/{invoice_id}/payment/attempt", headers=test_key), 400, "invalid_operation"
    )
    assert "no payment method" in body["message"]
    assert_error(client.post("/v1/invoices/inv_missing/payment/attempt", headers=test_key), 404, "not_found")
    assert_error(client.post("/v1/payments/pay_missing/process", headers=test_key), 404, "not_found")


def test_void_of_a_paid_invoice_refunds_and_is_not_repeated(
    client: TestClient, test_key: dict[str, str], invoice_id: str
) -> None:
    client.post("/v1/payments", json=payment(invoice_id, "100.00"), headers=test_key)
    voided = client.post(f"/v1/invoices/{invoice_id}/void", headers=test_key)
    assert voided.status_code == 200, voided.text
    inv = client.get(f"/v1/invoices/{invoice_id}", headers=test_key).json()
    assert (inv["invoice_status"], inv["payment_status"], inv["refunded_amount"]) == (
        "VOIDED",
        "REFUNDED",
        "100.00",
    )
    assert_error(client.post(f"/v1/invoices/{invoice_id}/void", headers=test_key), 400, "invalid_operation")


def test_a_bad_list_filter_is_400_naming_it(client: TestClient, test_key: dict[str, str]) -> None:
    body = assert_error(
        client.get("/v1/payments", params={"end_time": "not a time"}, headers=test_key),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == "end_time"
