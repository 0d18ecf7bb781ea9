"""``/v1/wallets`` and the wallets of a customer over HTTP, on every store: the reference's
paths, statuses and fields; errors as ``{code, http_status_code, message}`` (400 never 422), and
nothing written on bad input; an invoiced top-up paid through ``PUT /invoices/{id}/payment``."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error


@pytest.fixture
def customer(client: TestClient, test_key: dict[str, str]) -> dict[str, Any]:
    made = client.post("/v1/customers", json={"external_id": "c1", "name": "Ada"}, headers=test_key)
    assert made.status_code == 201, made.text
    return made.json()  # type: ignore[no-any-return]


@pytest.fixture
def wallet(client: TestClient, test_key: dict[str, str], customer: dict[str, Any]) -> dict[str, Any]:
    made = client.post(
        "/v1/wallets",
        json={"customer_id": customer["id"], "currency": "USD", "initial_credits_to_load": "50"},
        headers=test_key,
    )
    assert made.status_code == 200, made.text
    return made.json()  # type: ignore[no-any-return]


def transactions(client: TestClient, key: dict[str, str], wallet_id: str, **params: Any) -> dict[str, Any]:
    answer = client.get(f"/v1/wallets/{wallet_id}/transactions", params=params, headers=key)
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_create_read_update_and_list(
    client: TestClient, test_key: dict[str, str], customer: dict[str, Any]
) -> None:
    body = {
        "external_customer_id": "c1",
        "currency": "USD",
        "name": "Prepaid",
        "description": "team credits",
        "wallet_type": "PRE_PAID",
        "conversion_rate": "2",
        "topup_conversion_rate": "1.5",
        "config": {"allowed_price_types": ["USAGE"]},
        "auto_topup": {"enabled": True, "threshold": 10, "amount": 100.5, "invoicing": True},
        "alert_settings": {"alert_enabled": True, "critical": {"threshold": "5", "condition": "below"}},
        "metadata": {"team": "a"},
        "initial_credits_to_load": "50",
        "initial_credits_expiry_date_utc": "2027-01-01T00:00:00Z",
    }
    created = client.post("/v1/wallets", json=body, headers=test_key)
    assert created.status_code == 200, created.text  # the reference's status
    wallet = created.json()
    assert {k: wallet[k] for k in ("customer_id", "currency", "wallet_type", "wallet_status")} == {
        "customer_id": customer["id"],
        "currency": "usd",
        "wallet_type": "PRE_PAID",
        "wallet_status": "active",
    }
    assert (
        wallet["credit_balance"],
        wallet["balance"],
        wallet["conversion_rate"],
        wallet["topup_conversion_rate"],
    ) == (
        "50",
        "100.00",
        "2",
        "1.5",
    )
    assert wallet["auto_topup"] == {
        "enabled": True,
        "threshold": "10",
        "amount": "100.5",
        "invoicing": True,
        "cooldown": None,
    }
    assert wallet["alert_settings"]["critical"] == {"threshold": "5", "condition": "below"}
    assert "next_expiry_at" not in wallet
    wid = wallet["id"]
    assert client.get(f"/v1/wallets/{wid}", headers=test_key).json() == wallet

    updated = client.put(
        f"/v1/wallets/{wid}", json={"name": "Renamed", "metadata": {"team": "b"}}, headers=test_key
    )
    assert updated.status_code == 200, updated.text
    assert (updated.json()["name"], updated.json()["metadata"], updated.json()["version"]) == (
        "Renamed",
        {"team": "b"},
        wallet["version"] + 1,
    )

    by_customer = client.get(f"/v1/customers/{customer['id']}/wallets", headers=test_key)
    assert by_customer.status_code == 200
    assert [w["id"] for w in by_customer.json()] == [wid]  # a plain array, as the reference answers
    for params in ({"id": customer["id"]}, {"lookup_key": "c1"}):
        listed = client.get("/v1/customers/wallets", params=params, headers=test_key)
        assert listed.status_code == 200, listed.text
        assert [w["id"] for w in listed.json()] == [wid]
    searched = client.post(
        "/v1/wallets/search", json={"wallet_ids": [wid], "status": "active"}, headers=test_key
    )
    assert searched.status_code == 200, searched.text
    assert [w["id"] for w in searched.json()["items"]] == [wid]
    assert searched.json()["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    none = client.post("/v1/wallets/search", json={"status": "closed", "offset": 3}, headers=test_key).json()
    assert none == {"items": [], "pagination": {"limit": 50, "offset": 3, "total": 0}}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"currency": "usd"}, "customer_id"),
        ({"customer_id": "<c>"}, "currency"),
        ({"customer_id": "<c>", "currency": "dollars"}, "currency"),
        ({"customer_id": "<c>", "currency": "usd", "conversion_rate": "0"}, "conversion_rate"),
        ({"customer_id": "<c>", "currency": "usd", "conversion_rate": 1.5}, "conversion_rate"),  # a float
        ({"customer_id": "<c>", "currency": "usd", "wallet_type": "CREDIT"}, "wallet_type"),
        ({"customer_id": "<c>", "currency": "usd", "auto_topup": {"enabled": True}}, "auto_topup.threshold"),
        ({"customer_id": "<c>", "currency": "usd", "price_unit": "pts"}, "price_unit"),
        ({"customer_id": "<c>", "currency": "usd", "colour": "red"}, "colour"),
        (
            {
                "customer_id": "<c>",
                "currency": "usd",
                "initial_credits_to_load": "5",
                "initial_credits_to_load_expiry_date": 20200101,
            },
            "initial_credits_to_load_expiry_date",
        ),
    ],
)
def test_create_refuses_bad_input_with_a_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], customer: dict[str, Any], body: dict[str, Any], field: str
) -> None:
    sent = {k: customer["id"] if v == "<c>" else v for k, v in body.items()}
    error = assert_error(client.post("/v1/wallets", json=sent, headers=test_key), 400, "validation_error")
    assert error["details"]["field"] == field
    assert client.get(f"/v1/customers/{customer['id']}/wallets", headers=test_key).json() == []


def test_missing_and_conflicting_wallets(
    client: TestClient,
    test_key: dict[str, str],
    prod_key: dict[str, str],
    wallet: dict[str, Any],
    customer: dict[str, Any],
) -> None:
    assert_error(client.get("/v1/wallets/wallet_nope", headers=test_key), 404, "not_found")
    assert_error(client.get(f"/v1/wallets/{wallet['id']}", headers=prod_key), 404, "not_found")
    assert_error(client.get("/v1/customers/cust_nope/wallets", headers=test_key), 404, "not_found")
    assert_error(
        client.get("/v1/customers/wallets", params={"lookup_key": "nobody"}, headers=test_key),
        404,
        "not_found",
    )
    assert_error(client.get("/v1/customers/wallets", headers=test_key), 400, "validation_error")
    again = client.post(
        "/v1/wallets", json={"customer_id": customer["id"], "currency": "usd"}, headers=test_key
    )
    assert_error(again, 409, "already_exists")
    assert_error(
        client.post("/v1/wallets", json={"customer_id": "cust_nope", "currency": "usd"}, headers=test_key),
        404,
        "not_found",
    )
    assert_error(
        client.post("/v1/wallets", json={"currency": "usd", "customer_id": customer["id"]}),
        401,
        "unauthorized",
    )


def test_top_up_and_transactions(
    client: TestClient, test_key: dict[str, str], wallet: dict[str, Any]
) -> None:
    wid = wallet["id"]
    done = client.post(
        f"/v1/wallets/{wid}/top-up",
        json={
            "credits_to_add": "100",
            "transaction_reason": "PURCHASED_CREDIT_DIRECT",
            "priority": 1,
            "expiry_date_utc": "2027-01-01T00:00:00Z",
            "idempotency_key": "order-7",
            "bonus_credits_to_add": "10",
            "metadata": {"order": "7"},
            "force_sync_invoice": True,
        },
        headers=test_key,
    )
    assert done.status_code == 200, done.text
    answer = done.json()
    assert set(answer) == {"wallet", "wallet_transaction"}
    assert (answer["wallet"]["credit_balance"], answer["wallet"]["balance"]) == ("160", "160.00")
    tx = answer["wallet_transaction"]
    assert {
        k: tx[k] for k in ("type", "transaction_status", "transaction_reason", "credit_amount", "amount")
    } == {
        "type": "credit",
        "transaction_status": "completed",
        "transaction_reason": "PURCHASED_CREDIT_DIRECT",
        "credit_amount": "100",
        "amount": "100.00",
    }
    assert (tx["credits_available"], tx["currency"], tx["priority"], tx["idempotency_key"]) == (
        "100",
        "usd",
        1,
        "wallet_topup|order-7",
    )
    repeat = client.post(
        f"/v1/wallets/{wid}/top-up",
        json={
            "credits_to_add": "100",
            "transaction_reason": "PURCHASED_CREDIT_DIRECT",
            "idempotency_key": "order-7",
        },
        headers=test_key,
    )
    assert repeat.status_code == 200 and repeat.json()["wallet_transaction"]["id"] == tx["id"]
    assert repeat.json()["wallet"]["credit_balance"] == "160"
    conflict = client.post(
        f"/v1/wallets/{wid}/top-up",
        json={
            "credits_to_add": "5",
            "transaction_reason": "PURCHASED_CREDIT_DIRECT",
            "idempotency_key": "order-7",
        },
        headers=test_key,
    )
    assert_error(conflict, 409, "idempotency_conflict")

    listed = transactions(client, test_key, wid)
    assert [t["transaction_reason"] for t in listed["items"]] == [
        "PURCHASED_CREDIT_BONUS",
        "PURCHASED_CREDIT_DIRECT",
        "FREE_CREDIT_GRANT",
    ]
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 3}
    assert listed["items"][0]["parent_transaction_id"] == tx["id"]
    assert [
        t["id"]
        for t in transactions(
            client, test_key, wid, priority=1, transaction_reason="PURCHASED_CREDIT_DIRECT"
        )["items"]
    ] == [tx["id"]]
    assert transactions(client, test_key, wid, limit=1, offset=1, order="asc")["items"][0]["id"] == tx["id"]
    assert transactions(client, test_key, wid, expiry_date_before="2026-12-31T00:00:00Z")["items"] == []
    assert [
        t["id"]
        for t in transactions(client, test_key, wid, expiry_date_after="2026-12-31T00:00:00Z")["items"]
    ] == [tx["id"]]
    assert len(transactions(client, test_key, wid, credits_available_gt="50")["items"]) == 1  # only the 100
    assert transactions(client, test_key, wid, type="debit")["pagination"]["total"] == 0
    assert transactions(client, test_key, wid, id=tx["id"])["items"][0]["id"] == tx["id"]
    searched = client.post(
        "/v1/wallets/transactions/search",
        json={"transaction_reason": "FREE_CREDIT_GRANT", "credits_available_gt": 49.5, "limit": 5},
        headers=test_key,
    )
    assert searched.status_code == 200, searched.text
    assert [t["credit_amount"] for t in searched.json()["items"]] == ["50"]
    assert searched.json()["pagination"] == {"limit": 5, "offset": 0, "total": 1}
    assert_error(
        client.get(f"/v1/wallets/{wid}/transactions", params={"type": "sideways"}, headers=test_key),
        400,
        "validation_error",
    )
    assert_error(
        client.get(f"/v1/wallets/{wid}/transactions", params={"created_by": "me"}, headers=test_key),
        400,
        "validation_error",
    )
    assert_error(client.get("/v1/wallets/wallet_nope/transactions", headers=test_key), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"credits_to_add": "10"}, "transaction_reason"),
        ({"credits_to_add": "10", "transaction_reason": "WALLET_TERMINATION"}, "transaction_reason"),
        ({"transaction_reason": "FREE_CREDIT_GRANT"}, "credits_to_add"),
        (
            {
                "credits_to_add": "10",
                "transaction_reason": "FREE_CREDIT_GRANT",
                "expiry_date_utc": "2020-01-01T00:00:00Z",
            },
            "expiry_date_utc",
        ),
        ({"credits_to_add": "10", "transaction_reason": "FREE_CREDIT_GRANT", "priority": -1}, "priority"),
        (
            {
                "credits_to_add": "10",
                "transaction_reason": "PURCHASED_CREDIT_INVOICED",
                "checkout": {"payment_provider": "razorpay"},  # not configured for the environment
            },
            "payment_provider",
        ),
    ],
)
def test_a_bad_top_up_is_a_400_and_writes_nothing(
    client: TestClient, test_key: dict[str, str], wallet: dict[str, Any], body: dict[str, Any], field: str
) -> None:
    answer = client.post(f"/v1/wallets/{wallet['id']}/top-up", json=body, headers=test_key)
    error = assert_error(answer, 400, "validation_error")
    assert error["details"]["field"] == field
    assert transactions(client, test_key, wallet["id"])["pagination"]["total"] == 1
    assert client.get(f"/v1/wallets/{wallet['id']}", headers=test_key).json()["credit_balance"] == "50"


def test_an_invoiced_top_up_lands_when_its_invoice_is_paid(
    client: TestClient, test_key: dict[str, str], wallet: dict[str, Any]
) -> None:
    wid = wallet["id"]
    bought = client.post(
        f"/v1/wallets/{wid}/top-up",
        json={"amount": "25.00", "transaction_reason": "PURCHASED_CREDIT_INVOICED"},
        headers=test_key,
    )
    assert bought.status_code == 200, bought.text
    answer = bought.json()
    assert answer["wallet_transaction"]["transaction_status"] == "pending"
    assert answer["wallet"]["credit_balance"] == "50"
    invoice = client.get(f"/v1/invoices/{answer['invoice_id']}", headers=test_key).json()
    assert (invoice["invoice_type"], invoice["invoice_status"], invoice["amount_due"]) == (
        "CREDIT",
        "FINALIZED",
        "25.00",
    )
    assert invoice["metadata"]["wallet_transaction_id"] == answer["wallet_transaction"]["id"]
    paid = client.put(
        f"/v1/invoices/{invoice['id']}/payment", json={"payment_status": "SUCCEEDED"}, headers=test_key
    )
    assert paid.status_code == 200, paid.text
    assert client.get(f"/v1/wallets/{wid}", headers=test_key).json()["credit_balance"] == "75"
    client.put(
        f"/v1/invoices/{invoice['id']}/payment", json={"payment_status": "SUCCEEDED"}, headers=test_key
    )
    assert client.get(f"/v1/wallets/{wid}", headers=test_key).json()["credit_balance"] == "75"
    completed = transactions(client, test_key, wid, transaction_status="completed")
    assert completed["pagination"]["total"] == 2


def test_terminate(client: TestClient, test_key: dict[str, str], wallet: dict[str, Any]) -> None:
    closed = client.post(f"/v1/wallets/{wallet['id']}/terminate", headers=test_key)
    assert closed.status_code == 200, closed.text
    assert (closed.json()["wallet_status"], closed.json()["balance"]) == ("closed", "0.00")
    (debit,) = transactions(client, test_key, wallet["id"], type="debit")["items"]
    assert (debit["transaction_reason"], debit["credit_amount"], debit["amount"]) == (
        "WALLET_TERMINATION",
        "50",
        "50.00",
    )
    assert_error(
        client.post(f"/v1/wallets/{wallet['id']}/terminate", headers=test_key), 400, "invalid_operation"
    )
    assert_error(
        client.post(
            f"/v1/wallets/{wallet['id']}/top-up",
            json={"credits_to_add": "1", "transaction_reason": "FREE_CREDIT_GRANT"},
            headers=test_key,
        ),
        400,
        "invalid_operation",
    )
    assert_error(
        client.put(f"/v1/wallets/{wallet['id']}", json={"name": "x"}, headers=test_key),
        400,
        "invalid_operation",
    )


def test_a_reader_may_read_but_not_write(
    client: TestClient, reader_key: dict[str, str], wallet: dict[str, Any]
) -> None:
    assert client.get(f"/v1/wallets/{wallet['id']}", headers=reader_key).status_code == 200
    assert transactions(client, reader_key, wallet["id"])["pagination"]["total"] == 1
    denied = client.post(
        f"/v1/wallets/{wallet['id']}/top-up",
        json={"credits_to_add": "1", "transaction_reason": "FREE_CREDIT_GRANT"},
        headers=reader_key,
    )
    assert_error(denied, 403, "permission_denied")
    assert_error(
        client.post(f"/v1/wallets/{wallet['id']}/terminate", headers=reader_key), 403, "permission_denied"
    )
