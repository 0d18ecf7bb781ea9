"""Checkout over HTTP, on every store: ``/v1/checkout/sessions`` (create, read, delete, refusals),
the sandbox page and its buttons as a browser uses them, Razorpay's webhook route (always 200),
and ``POST /v1/subscriptions`` with ``checkout``. The clock stands at 2026-05-01 09:30 UTC."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from billingkit.http import create_app
from billingkit.services.access import BootstrapResult
from billingkit.testing.razorpay_fake import RazorpayFake
from tests.checkout_world import PRICE, subscription_params

from .conftest import assert_error


@pytest.fixture
def plan_id(client: TestClient, test_key: dict[str, str]) -> str:
    plan = client.post("/v1/plans", json={"name": "Pro", "prices": [PRICE]}, headers=test_key)
    assert plan.status_code == 201, plan.text
    customer = client.post("/v1/customers", json={"external_id": "c1", "name": "Ada"}, headers=test_key)
    assert customer.status_code == 201, customer.text
    return str(plan.json()["id"])


def session_body(plan_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "customer_external_id": "c1",
        "action": "create_subscription",
        "payment_provider": "sandbox",
        "configuration": subscription_params(plan_id),
        **fields,
    }


def counts(client: TestClient, key: dict[str, str]) -> tuple[int, int]:
    subs = client.post("/v1/subscriptions/search", json={}, headers=key).json()["pagination"]["total"]
    invoices = client.post("/v1/invoices/search", json={}, headers=key).json()["pagination"]["total"]
    return subs, invoices


def test_a_session_is_created_read_and_deleted(
    client: TestClient, test_key: dict[str, str], plan_id: str
) -> None:
    created = client.post(
        "/v1/checkout/sessions",
        json=session_body(plan_id, idempotency_key="o-1", success_url="https://shop.test/ok"),
        headers=test_key,
    )
    assert created.status_code == 201, created.text
    session = created.json()
    assert (session["checkout_status"], session["action"], session["payment_provider"]) == (
        "pending",
        "create_subscription",
        "sandbox",
    )
    assert session["payment_action"]["type"] == "checkout_url"
    assert session["payment_action"]["url"].startswith(f"/v1/checkout/sandbox/{session['id']}?tenant_id=")
    assert session["expires_at"] == "2026-05-01T10:00:00Z"
    assert "open_key" not in session and "run_at" not in session and "version" not in session
    assert client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json() == session

    assert client.delete(f"/v1/checkout/sessions/{session['id']}", headers=test_key).status_code == 204
    assert_error(client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key), 404, "not_found")
    assert_error(client.delete(f"/v1/checkout/sessions/{session['id']}", headers=test_key), 404, "not_found")
    assert counts(client, test_key) == (0, 0)  # the draft and its invoice went with it


def test_refusals_write_nothing(client: TestClient, test_key: dict[str, str], plan_id: str) -> None:
    assert client.post(
        "/v1/checkout/sessions", json=session_body(plan_id, idempotency_key="o-2"), headers=test_key
    )
    before = counts(client, test_key)
    for body, field in (
        (session_body(plan_id, colour="red"), "colour"),
        ({**session_body(plan_id), "action": "teleport"}, "action"),
        (session_body(plan_id, payment_provider="paypal"), "payment_provider"),
        ({**session_body(plan_id), "configuration": {}}, "configuration"),
    ):
        error = assert_error(
            client.post("/v1/checkout/sessions", json=body, headers=test_key), 400, "validation_error"
        )
        assert error["details"]["field"] == field, error
    duplicate = client.post(
        "/v1/checkout/sessions", json=session_body(plan_id, idempotency_key="o-2"), headers=test_key
    )
    assert "idempotency_key" in assert_error(duplicate, 409, "already_exists")["message"]
    assert counts(client, test_key) == before
    assert client.post("/v1/checkout/sessions", json=session_body(plan_id)).status_code == 401


def test_the_sandbox_page_pays_and_redirects_as_a_browser_sees_it(
    client: TestClient, test_key: dict[str, str], plan_id: str
) -> None:
    body = session_body(plan_id, success_url="https://shop.test/ok", failure_url="https://shop.test/no")
    session = client.post("/v1/checkout/sessions", json=body, headers=test_key).json()
    url = session["payment_action"]["url"]

    page = client.get(url)  # no API key: a payer's browser
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "33.00" not in page.text and "30.00 USD" in page.text
    assert ">Pay</button>" in page.text and ">Decline</button>" in page.text
    pay_path = url.replace("?", "/pay?", 1)
    assert f'action="{pay_path.replace("&", "&amp;")}"' in page.text

    paid = client.post(pay_path, follow_redirects=False)
    assert (paid.status_code, paid.headers["location"]) == (303, "https://shop.test/ok")
    done = client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json()
    assert done["checkout_status"] == "completed" and done["checkout_invoice_id"]
    assert done["result"]["create_subscription_result"]["subscription_id"]
    sub = client.get(
        f"/v1/subscriptions/{done['result']['create_subscription_result']['subscription_id']}",
        headers=test_key,
    )
    assert sub.json()["subscription_status"] == "active"
    after = client.get(url)
    assert "completed" in after.text and ">Pay</button>" not in after.text
    # A second Pay (a double click) changes nothing and sends the browser to the same place.
    again = client.post(pay_path, follow_redirects=False)
    assert (again.status_code, again.headers["location"]) == (303, "https://shop.test/ok")
    assert client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json() == done


def test_decline_fails_the_session_and_goes_back_to_the_page_without_a_failure_url(
    client: TestClient, test_key: dict[str, str], plan_id: str
) -> None:
    session = client.post("/v1/checkout/sessions", json=session_body(plan_id), headers=test_key).json()
    url = session["payment_action"]["url"]
    declined = client.post(url.replace("?", "/decline?", 1), follow_redirects=False)
    assert (declined.status_code, declined.headers["location"]) == (303, url)
    failed = client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json()
    assert (failed["checkout_status"], failed["failure_reason"]) == ("failed", "payment declined")
    assert "payment declined" in client.get(url).text
    assert counts(client, test_key) == (0, 0)


def test_the_sandbox_page_of_another_scope_is_not_found(
    client: TestClient, test_key: dict[str, str], plan_id: str
) -> None:
    session = client.post("/v1/checkout/sessions", json=session_body(plan_id), headers=test_key).json()
    wrong = f"/v1/checkout/sandbox/{session['id']}?tenant_id=tenant_x&environment_id=env_x"
    assert_error(client.get(wrong), 404, "not_found")
    assert_error(client.post(wrong.replace("?", "/pay?", 1)), 404, "not_found")
    assert client.get(f"/v1/checkout/sandbox/{session['id']}").status_code == 400  # no scope given


def test_a_subscription_created_with_checkout_answers_its_session(
    client: TestClient, test_key: dict[str, str], plan_id: str
) -> None:
    body = {
        "external_customer_id": "c1",
        "plan_id": plan_id,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "checkout": {"payment_provider": "sandbox", "idempotency_key": "s-1"},
    }
    created = client.post("/v1/subscriptions", json=body, headers=test_key)
    assert created.status_code == 201, created.text
    sub = created.json()
    assert sub["subscription_status"] == "draft"
    assert (sub["checkout_session"]["checkout_status"], sub["checkout_session"]["idempotency_key"]) == (
        "pending",
        "s-1",
    )
    assert "checkout_session" not in client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()


@pytest.fixture
def razorpay(
    billing: Billing, setup: BootstrapResult, clock: TestClock
) -> Iterator[tuple[TestClient, RazorpayFake]]:
    with RazorpayFake() as fake:
        own = Billing(
            billing.storage, clock, environment_providers={setup.environments[0][0].id: fake.provider()}
        )
        yield TestClient(create_app(own), raise_server_exceptions=False), fake


def test_razorpays_webhook_always_answers_200_and_applies_only_signed_events(
    razorpay: tuple[TestClient, RazorpayFake], setup: BootstrapResult, test_key: dict[str, str], plan_id: str
) -> None:
    client, fake = razorpay
    body = session_body(plan_id, payment_provider="razorpay")
    session = client.post("/v1/checkout/sessions", json=body, headers=test_key).json()
    link_id = session["provider_result"]["provider_session_id"]
    fake.pay_link(link_id)
    hook = fake.webhook("payment_link.paid", link_id)
    path = f"/v1/webhooks/razorpay/{setup.tenant.id}/{setup.environments[0][0].id}"

    forged = client.post(path, content=hook.body, headers={**hook.headers, "X-Razorpay-Signature": "f" * 64})
    assert (forged.status_code, forged.json()) == (200, {"status": "ignored: the signature does not match"})
    assert (
        client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json()["checkout_status"]
        == "pending"
    )
    elsewhere = client.post(
        f"/v1/webhooks/razorpay/{setup.tenant.id}/env_nowhere", content=hook.body, headers=hook.headers
    )
    assert elsewhere.status_code == 200 and elsewhere.json()["status"].startswith("ignored")

    applied = client.post(path, content=hook.body, headers=hook.headers)
    assert (applied.status_code, applied.json()) == (200, {"status": "applied"})
    done = client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json()
    assert done["checkout_status"] == "completed"
    repeated = client.post(path, content=hook.body, headers=hook.headers)
    assert repeated.status_code == 200 and repeated.json()["status"].startswith("ignored")


def test_a_razorpay_mandate_is_opened_over_http_and_completed_by_its_payment_captured(
    razorpay: tuple[TestClient, RazorpayFake], setup: BootstrapResult, test_key: dict[str, str], plan_id: str
) -> None:
    client, fake = razorpay
    mandate = {"collection_method": "charge_automatically", "payment_method": "UPI"}
    too_low = session_body(
        plan_id, payment_provider="razorpay", payment_provider_config={**mandate, "max_mandate_limit": "1"}
    )
    refused = client.post("/v1/checkout/sessions", json=too_low, headers=test_key)
    assert (refused.status_code, refused.json()["http_status_code"]) == (400, 400)
    assert "max_mandate_limit" in refused.json()["message"] and fake.invoices == {}

    body = session_body(plan_id, payment_provider="razorpay", payment_provider_config=mandate)
    created = client.post("/v1/checkout/sessions", json=body, headers=test_key)
    assert created.status_code == 201, created.text
    session = created.json()
    (invoice,) = fake.invoices.values()
    assert (session["checkout_status"], session["payment_action"]) == (
        "pending",
        {"type": "checkout_url", "url": invoice["short_url"]},
    )
    payment = fake.authorise_mandate(invoice["id"])
    hook = fake.webhook("payment.captured", payment["id"])
    path = f"/v1/webhooks/razorpay/{setup.tenant.id}/{setup.environments[0][0].id}"
    applied = client.post(path, content=hook.body, headers=hook.headers)
    assert (applied.status_code, applied.json()) == (200, {"status": "applied"})
    done = client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json()
    assert done["checkout_status"] == "completed"


def test_a_top_up_with_checkout_answers_its_session_and_lands_once_paid(
    client: TestClient, test_key: dict[str, str], plan_id: str
) -> None:
    customer = client.get("/v1/customers/external/c1", headers=test_key).json()
    wallet = client.post(
        "/v1/wallets", json={"customer_id": customer["id"], "currency": "usd"}, headers=test_key
    ).json()
    body = {
        "credits_to_add": "25",
        "transaction_reason": "PURCHASED_CREDIT_INVOICED",
        "checkout": {"payment_provider": "sandbox", "success_url": "https://shop.test/ok"},
    }
    topped = client.post(f"/v1/wallets/{wallet['id']}/top-up", json=body, headers=test_key)
    assert topped.status_code == 200, topped.text
    session = topped.json()["checkout_session"]
    assert (session["action"], session["checkout_status"]) == ("wallet_topup", "pending")
    again = client.post(
        f"/v1/wallets/{wallet['id']}/top-up", json={**body, "credits_to_add": "5"}, headers=test_key
    )
    assert_error(again, 409, "already_exists")
    assert (
        client.post(
            session["payment_action"]["url"].replace("?", "/pay?", 1), follow_redirects=False
        ).status_code
        == 303
    )
    assert client.get(f"/v1/wallets/{wallet['id']}", headers=test_key).json()["credit_balance"] == "25"
