"""``/v1/creditnotes`` over HTTP, on every store: the reference's shapes and statuses (create 201,
finalize and void 200), the list with its filters, and the errors (400 naming the field or the
reason, 404, 409), each writing nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

Headers = dict[str, str]


def _paid_invoice(client: TestClient, key: Headers, *amounts: str, paid: bool = True) -> dict[str, Any]:
    customer = client.post("/v1/customers", json={"external_id": "c1", "name": "Ada"}, headers=key)
    customer_id = customer.json()["id"] if customer.status_code == 201 else None
    if customer_id is None:
        customer_id = client.get("/v1/customers/external/c1", headers=key).json()["id"]
    total = f"{sum(float(a) for a in amounts):.2f}"
    created = client.post(
        "/v1/invoices",
        json={
            "customer_id": customer_id,
            "currency": "usd",
            "line_items": [
                {"amount": a, "quantity": "1", "display_name": f"Item {i}", "price_id": f"p{i}"}
                for i, a in enumerate(amounts)
            ],
            "subtotal": total,
            "total": total,
            "amount_due": total,
        },
        headers=key,
    )
    assert created.status_code == 201, created.text
    invoice: dict[str, Any] = created.json()
    if paid:
        answer = client.put(
            f"/v1/invoices/{invoice['id']}/payment", json={"payment_status": "SUCCEEDED"}, headers=key
        )
        assert answer.status_code == 200, answer.text
        invoice = answer.json()
    return invoice


@pytest.fixture
def paid(client: TestClient, test_key: Headers) -> dict[str, Any]:
    return _paid_invoice(client, test_key, "100.00")


def _body(invoice: dict[str, Any], amount: str = "70.00", **fields: Any) -> dict[str, Any]:
    return {
        "invoice_id": invoice["id"],
        "reason": "DUPLICATE",
        "line_items": [{"invoice_line_item_id": invoice["line_items"][0]["id"], "amount": amount}],
        **fields,
    }


def _count(client: TestClient, key: Headers) -> int:
    total: int = client.get("/v1/creditnotes", headers=key).json()["pagination"]["total"]
    return total


def test_create_answers_the_reference_shape(
    client: TestClient, test_key: Headers, paid: dict[str, Any]
) -> None:
    body = _body(paid, memo="double charge", metadata={"ticket": "T-1"})
    body["line_items"][0].update(display_name="Refund of item", metadata={"k": "v"})
    created = client.post("/v1/creditnotes", json=body, headers=test_key)
    assert created.status_code == 201, created.text
    note = created.json()
    assert {
        k: note[k]
        for k in (
            "credit_note_number",
            "invoice_id",
            "customer_id",
            "subscription_id",
            "credit_note_type",
            "credit_note_status",
            "reason",
            "memo",
            "currency",
            "total_amount",
            "refund_status",
            "finalized_at",
            "voided_at",
            "metadata",
            "status",
        )
    } == {
        "credit_note_number": "CN-202605-00001",
        "invoice_id": paid["id"],
        "customer_id": paid["customer_id"],
        "subscription_id": None,
        "credit_note_type": "REFUND",
        "credit_note_status": "FINALIZED",
        "reason": "DUPLICATE",
        "memo": "double charge",
        "currency": "usd",
        "total_amount": "70.00",
        "refund_status": "SUCCEEDED",
        "finalized_at": "2026-05-01T09:30:00Z",
        "voided_at": None,
        "metadata": {"ticket": "T-1"},
        "status": "published",
    }
    (line,) = note["line_items"]
    assert {
        k: line[k] for k in ("invoice_line_item_id", "display_name", "amount", "currency", "metadata")
    } == {
        "invoice_line_item_id": paid["line_items"][0]["id"],
        "display_name": "Refund of item",
        "amount": "70.00",
        "currency": "usd",
        "metadata": {"k": "v"},
    }
    assert (line["credit_note_id"], line["tenant_id"], line["environment_id"]) == (
        note["id"],
        note["tenant_id"],
        note["environment_id"],
    )
    assert client.get(f"/v1/creditnotes/{note['id']}", headers=test_key).json() == note
    invoice = client.get(f"/v1/invoices/{paid['id']}", headers=test_key).json()
    assert (invoice["refunded_amount"], invoice["payment_status"]) == ("70.00", "PARTIALLY_REFUNDED")


def test_the_same_request_twice_answers_the_first_note(
    client: TestClient, test_key: Headers, paid: dict[str, Any]
) -> None:
    first = client.post("/v1/creditnotes", json=_body(paid), headers=test_key)
    again = client.post("/v1/creditnotes", json=_body(paid, amount="70"), headers=test_key)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json()
    assert _count(client, test_key) == 1
    conflict = client.post(
        "/v1/creditnotes", json=_body(paid, amount="20.00", idempotency_key="k1"), headers=test_key
    )
    assert conflict.status_code == 201
    body = assert_error(
        client.post(
            "/v1/creditnotes", json=_body(paid, amount="1.00", idempotency_key="k1"), headers=test_key
        ),
        409,
        "idempotency_conflict",
    )
    assert body["details"]["field"] == "idempotency_key"


def test_draft_finalize_and_void(client: TestClient, test_key: Headers, paid: dict[str, Any]) -> None:
    draft = client.post(
        "/v1/creditnotes", json=_body(paid, process_credit_note=False, idempotency_key="a"), headers=test_key
    ).json()
    assert (draft["credit_note_status"], draft["credit_note_number"], draft["refund_status"]) == (
        "DRAFT",
        None,
        "PENDING",
    )
    other = client.post(
        "/v1/creditnotes", json=_body(paid, process_credit_note=False, idempotency_key="b"), headers=test_key
    ).json()
    done = client.post(f"/v1/creditnotes/{draft['id']}/finalize", headers=test_key)
    assert done.status_code == 200, done.text
    assert (done.json()["credit_note_status"], done.json()["credit_note_number"]) == (
        "FINALIZED",
        "CN-202605-00001",
    )
    refused = assert_error(
        client.post(f"/v1/creditnotes/{other['id']}/finalize", headers=test_key), 400, "invalid_operation"
    )
    assert "exceeds the refundable amount" in refused["message"]
    voided = client.post(f"/v1/creditnotes/{other['id']}/void", headers=test_key)
    assert voided.status_code == 200, voided.text
    assert (voided.json()["credit_note_status"], voided.json()["voided_at"]) == (
        "VOIDED",
        "2026-05-01T09:30:00Z",
    )
    assert_error(
        client.post(f"/v1/creditnotes/{draft['id']}/void", headers=test_key), 400, "invalid_operation"
    )
    assert_error(
        client.post(f"/v1/creditnotes/{draft['id']}/finalize", headers=test_key), 400, "invalid_operation"
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"line_items": []}, "line_items"),
        ({"amount": "0"}, "line_items[0].amount"),
        ({"amount": "1.001"}, "line_items[0].amount"),
        ({"amount": "ten"}, "line_items[0].amount"),
        ({"reason": "BORED"}, "reason"),
        ({"invoice_id": None}, "invoice_id"),
        ({"credit_note_number": "CN-202605-00001"}, "credit_note_number"),
        (
            {"line_items": [{"invoice_line_item_id": "nope", "amount": "1"}]},
            "line_items[0].invoice_line_item_id",
        ),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(
    client: TestClient, test_key: Headers, paid: dict[str, Any], change: dict[str, Any], field: str
) -> None:
    change = dict(change)
    body = _body(paid, amount=change.pop("amount", "10.00"))
    body.update(change)
    if body.get("invoice_id") is None:
        del body["invoice_id"]
    answer = assert_error(
        client.post("/v1/creditnotes", json=body, headers=test_key), 400, "validation_error"
    )
    assert answer["details"]["field"] == field
    assert _count(client, test_key) == 0


def test_refusals_of_state_are_400_and_unknown_ids_404(
    client: TestClient, test_key: Headers, paid: dict[str, Any]
) -> None:
    too_much = assert_error(
        client.post("/v1/creditnotes", json=_body(paid, amount="100.01"), headers=test_key),
        400,
        "invalid_operation",
    )
    assert "exceeds the refundable amount" in too_much["message"]
    missing = _body(paid)
    missing["invoice_id"] = "inv_missing"
    assert_error(client.post("/v1/creditnotes", json=missing, headers=test_key), 404, "not_found")
    for path in ("", "/finalize", "/void"):
        method = client.get if not path else client.post
        assert_error(method(f"/v1/creditnotes/cn_missing{path}", headers=test_key), 404, "not_found")
    assert _count(client, test_key) == 0


def test_a_credit_note_of_another_environment_is_not_found(
    client: TestClient, test_key: Headers, prod_key: Headers, paid: dict[str, Any]
) -> None:
    note = client.post("/v1/creditnotes", json=_body(paid), headers=test_key).json()
    assert_error(client.get(f"/v1/creditnotes/{note['id']}", headers=prod_key), 404, "not_found")
    assert_error(client.post("/v1/creditnotes", json=_body(paid), headers=prod_key), 404, "not_found")
    assert client.get("/v1/creditnotes", headers=prod_key).json()["pagination"]["total"] == 0


def test_list_filters_and_pagination(client: TestClient, test_key: Headers, paid: dict[str, Any]) -> None:
    due = _paid_invoice(client, test_key, "50.00", paid=False)
    refund = client.post("/v1/creditnotes", json=_body(paid, amount="10.00"), headers=test_key).json()
    draft = client.post(
        "/v1/creditnotes", json=_body(paid, amount="20.00", process_credit_note=False), headers=test_key
    ).json()
    adjustment = client.post("/v1/creditnotes", json=_body(due, amount="5.00"), headers=test_key).json()
    assert adjustment["credit_note_type"] == "ADJUSTMENT"

    def ids(query: str) -> list[str]:
        answer = client.get(f"/v1/creditnotes{query}", headers=test_key)
        assert answer.status_code == 200, answer.text
        return sorted(item["id"] for item in answer.json()["items"])

    assert ids("") == sorted([refund["id"], draft["id"], adjustment["id"]])
    assert ids(f"?invoice_id={paid['id']}") == sorted([refund["id"], draft["id"]])
    assert ids("?credit_note_status=DRAFT&credit_note_status=VOIDED") == [draft["id"]]
    assert ids("?credit_note_type=ADJUSTMENT") == [adjustment["id"]]
    assert ids("?reason=DUPLICATE") == sorted([refund["id"], draft["id"], adjustment["id"]])
    page = client.get("/v1/creditnotes?limit=1&offset=2", headers=test_key).json()
    assert page["pagination"] == {"limit": 1, "offset": 2, "total": 3}
    assert len(page["items"]) == 1
    assert_error(
        client.get("/v1/creditnotes?credit_note_type=BOTH", headers=test_key), 400, "validation_error"
    )
