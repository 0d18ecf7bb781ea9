"""``POST /v1/invoices/{id}/comms/trigger`` on every store: a FINALIZED invoice records one
``invoice.communication.triggered`` (the reference's ``{message}`` answer); a draft, a voided
invoice, an unknown id and a reader are refused with nothing recorded."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.services.access import BootstrapResult
from tests.http.conftest import assert_error, service_key


def _invoice(client: TestClient, key: dict[str, str], customer_id: str, status: str) -> Any:
    response = client.post(
        "/v1/invoices",
        json={
            "customer_id": customer_id,
            "currency": "usd",
            "line_items": [{"amount": "50.00", "quantity": "1", "display_name": "Setup", "price_id": "p1"}],
            "subtotal": "50.00",
            "total": "50.00",
            "amount_due": "50.00",
            "invoice_status": status,
        },
        headers=key,
    )
    assert response.status_code == 201, response.text
    return response.json()


def _sent(billing: Billing, setup: BootstrapResult) -> list[Any]:
    env = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    return env.notifications.list(event_type="invoice.communication.triggered").items


def test_a_finalized_invoice_is_communicated_once_per_call(
    client: TestClient, test_key: dict[str, str], billing: Billing, setup: BootstrapResult
) -> None:
    customer = client.post(
        "/v1/customers",
        json={"external_id": "acme", "name": "Acme", "email": "a@acme.test"},
        headers=test_key,
    ).json()
    invoice = _invoice(client, test_key, customer["id"], "FINALIZED")
    response = client.post(f"/v1/invoices/{invoice['id']}/comms/trigger", headers=test_key)
    assert response.status_code == 200, response.text
    assert response.json() == {"message": "invoice communication triggered successfully"}
    (sent,) = _sent(billing, setup)
    body = sent.payload["invoice"]
    assert (sent.entity_id, body["invoice_number"], body["amount_due"]) == (
        invoice["id"],
        invoice["invoice_number"],
        "50.00",
    )
    assert (body["customer"]["email"], body["subscription"]) == ("a@acme.test", None)
    client.post(f"/v1/invoices/{invoice['id']}/comms/trigger", headers=test_key)
    assert len(_sent(billing, setup)) == 2


def test_refusals_record_nothing(
    client: TestClient, test_key: dict[str, str], billing: Billing, setup: BootstrapResult
) -> None:
    customer = client.post(
        "/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key
    ).json()
    draft = _invoice(client, test_key, customer["id"], "DRAFT")
    body = assert_error(
        client.post(f"/v1/invoices/{draft['id']}/comms/trigger", headers=test_key), 400, "invalid_operation"
    )
    assert "DRAFT" in body["message"]
    voided = _invoice(client, test_key, customer["id"], "FINALIZED")
    client.post(f"/v1/invoices/{voided['id']}/void", headers=test_key)
    assert_error(
        client.post(f"/v1/invoices/{voided['id']}/comms/trigger", headers=test_key), 400, "invalid_operation"
    )
    assert_error(client.post("/v1/invoices/inv_missing/comms/trigger", headers=test_key), 404, "not_found")
    reader = service_key(client, test_key, ["all_reader"])
    finalized = _invoice(client, test_key, customer["id"], "FINALIZED")
    assert_error(
        client.post(f"/v1/invoices/{finalized['id']}/comms/trigger", headers=reader), 403, "permission_denied"
    )
    assert _sent(billing, setup) == []
