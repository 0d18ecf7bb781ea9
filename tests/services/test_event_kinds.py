"""Every notification kind billingkit emits is recorded once by the operation that causes it,
with the payload shape of the spec's table, the reference notes §9 and the reference's
``webhookDto`` schemas.

The story (``tests/event_kinds.py``) drives each operation through the library and checks that it
recorded exactly one notification of the kind about its resource; here each payload is checked
field by field. Storage is covered elsewhere: the memory store is enough.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from billingkit.domain.event_types import EVENT_TYPES
from tests.event_kinds import OPERATIONS, START, tell

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "flexprice-openapi-3.0.json"


def _dto(name: str, prefix: str = "webhookDto") -> set[str]:
    """The fields of the reference's ``webhookDto.<name>`` schema (its OpenAPI document)."""
    if not REFERENCE.exists():
        pytest.skip(f"the reference OpenAPI is not at {REFERENCE}", allow_module_level=True)
    schemas = json.loads(REFERENCE.read_text())["components"]["schemas"]
    return set(schemas[f"{prefix}.{name}"]["properties"])


# The reference's webhookDto field lists are the oracle; where billingkit differs, the difference
# is written here (decisions "Webhook event kinds").
SUBSCRIPTION = _dto("Subscription")
EMBEDDED_CUSTOMER = _dto("Customer") - {"environment_id"}  # the spec's embedded customer
PHASE = _dto("SubscriptionPhase")
WALLET = _dto("Wallet")
TRANSACTION = _dto("WalletTransaction")
PAYMENT = _dto("Payment")
CREDIT_NOTE = _dto("CreditNote")
# Resources carried in their whole wire form hold the reference's fields and more.
CUSTOMER = _dto("Customer")
FEATURE = _dto("Feature")
ENTITLEMENT = _dto("Entitlement")
INVOICE = _dto("Invoice") - {"customer", "subscription"}
# The communication's invoice is the spec's table: the reference's without environment_id.
COMMUNICATION = _dto("Invoice") - {"environment_id"}
COMMUNICATION_LINE = _dto("InvoiceLineItem")
# The rejected event keeps its environment_id.
REJECTED_EVENT = _dto("RejectedEventData") | {"environment_id"}
# The alert payloads: the envelope's event_type beside the reference's spend event; the flat
# feature alert is the reference's whole; the wallet alert kinds carry WalletAlertInfo.
SPEND_ALERT = _dto("SpendAlertEvent") | {"event_type"}
FEATURE_ALERT = _dto("AlertWebhookPayload")
WALLET_ALERT = _dto("WalletWebhookPayload")
WALLET_ALERT_INFO = _dto("WalletAlertInfo")
ALERT_SETTINGS = _dto("AlertSettings", "types")
# The reference has no payload of its own for the exhaustion: EntitlementWebhookPayload with the
# alert fields of AlertWebhookPayload that apply and the grant's figures (decisions "Alerts").
GRANT_EXHAUSTED = (
    _dto("EntitlementWebhookPayload")
    | (_dto("AlertWebhookPayload") & {"alert_type", "alert_status", "customer_id"})
    | {"subscription_id", "usage", "usage_limit", "triggered_at"}
)
CHECKOUT_SESSION = _dto("CheckoutSession")
CHECKOUT_KINDS = ("initiated", "completed", "failed", "expired")
SPEND_KINDS = {
    "spend": "subscription_spend",
    "line_item_spend": "subscription_line_item_spend",
    "group_spend": "subscription_group_spend",
}


@pytest.fixture(scope="module")
def examples() -> dict[str, dict[str, Any]]:
    return tell()


def test_the_story_covers_every_kind(examples: dict[str, dict[str, Any]]) -> None:
    assert sorted(examples) == sorted(EVENT_TYPES)
    assert sorted(OPERATIONS) == sorted(EVENT_TYPES)
    assert len(EVENT_TYPES) == 57


@pytest.mark.parametrize("kind", list(EVENT_TYPES))
def test_the_envelope(kind: str, examples: dict[str, dict[str, Any]]) -> None:
    payload = examples[kind]
    declared = EVENT_TYPES[kind]
    assert payload["event_type"] == kind
    resource = [declared.resource] if declared.resource else []
    assert set(payload) == {"event_type", *resource, *declared.fields}
    assert all(isinstance(payload[key], dict) for key in resource)


@pytest.mark.parametrize("kind", [k for k in EVENT_TYPES if EVENT_TYPES[k].resource == "subscription"])
def test_subscription_payloads_embed_the_customer(kind: str, examples: dict[str, dict[str, Any]]) -> None:
    sub = examples[kind]["subscription"]
    assert set(sub) == SUBSCRIPTION
    assert set(sub["customer"]) == EMBEDDED_CUSTOMER
    assert (sub["customer"]["id"], sub["customer"]["external_id"], sub["customer"]["address_country"]) == (
        sub["customer_id"],
        "acme-1",
        "DE",
    )


def test_subscription_values_follow_the_operation(examples: dict[str, dict[str, Any]]) -> None:
    status = {
        kind: examples[kind]["subscription"]["subscription_status"]
        for kind in EVENT_TYPES
        if kind.startswith("subscription.") and ".phase." not in kind
    }
    assert status == {
        "subscription.created": "active",
        "subscription.draft.created": "draft",
        "subscription.activated": "active",
        "subscription.updated": "active",
        "subscription.paused": "paused",
        "subscription.cancelled": "cancelled",
        "subscription.resumed": "active",
        "subscription.plan_changed": "active",
        "subscription.renewal.due": "active",
        **{
            f"subscription.{k}.threshold_{c}": "active" for k in SPEND_KINDS for c in ("reached", "recovered")
        },
    }
    assert examples["subscription.paused"]["subscription"]["pause_status"] == "active"
    assert examples["subscription.resumed"]["subscription"]["pause_status"] == "none"
    created = examples["subscription.created"]["subscription"]
    assert examples["subscription.plan_changed"]["subscription"]["id"] == created["id"]
    assert examples["subscription.plan_changed"]["subscription"]["plan_id"] != created["plan_id"]
    assert created["lookup_key"] == "acme-pro" and created["start_date"] == "2026-05-01T09:30:00Z"
    assert examples["subscription.cancelled"]["subscription"]["cancelled_at"] == "2026-05-01T09:30:00Z"
    # The renewal notice: 3 days before the period end (the period was stretched by the pause).
    due = examples["subscription.renewal.due"]["subscription"]
    assert due["current_period_end"] == "2026-06-03T09:30:00Z"


def test_phase_payloads(examples: dict[str, dict[str, Any]]) -> None:
    created, updated, deleted = (
        examples[f"subscription.phase.{k}"]["phase"] for k in ("created", "updated", "deleted")
    )
    for phase in (created, updated, deleted):
        assert set(phase) == PHASE
    assert created["subscription_id"] == examples["subscription.created"]["subscription"]["id"]
    assert (created["start_date"], created["end_date"]) == ("2026-07-01T09:30:00Z", None)
    assert updated["end_date"] == "2026-09-01T09:30:00Z"
    assert deleted["id"] == created["id"]


def test_customer_feature_and_entitlement_payloads(examples: dict[str, dict[str, Any]]) -> None:
    created = examples["customer.created"]["customer"]
    assert set(created) >= CUSTOMER
    assert (created["name"], created["email"], created["metadata"]) == (
        "Acme",
        "billing@acme.test",
        {"segment": "startup"},
    )
    assert examples["customer.updated"]["customer"]["name"] == "Acme GmbH"
    assert examples["customer.deleted"]["customer"]["status"] == "archived"
    feature = examples["feature.created"]["feature"]
    assert set(feature) >= FEATURE and (feature["type"], feature["lookup_key"]) == ("boolean", "sso")
    assert examples["feature.updated"]["feature"]["description"] == "Single sign-on"
    assert examples["feature.deleted"]["feature"]["status"] == "archived"
    grant = examples["entitlement.created"]["entitlement"]
    assert set(grant) >= ENTITLEMENT
    assert (grant["feature_id"], grant["entity_type"], grant["is_enabled"]) == (feature["id"], "PLAN", True)
    assert examples["entitlement.updated"]["entitlement"]["is_enabled"] is False
    assert examples["entitlement.deleted"]["entitlement"]["status"] == "archived"


def test_invoice_payloads(examples: dict[str, dict[str, Any]]) -> None:
    for kind in (
        "invoice.update",
        "invoice.update.finalized",
        "invoice.update.payment",
        "invoice.update.voided",
        "invoice.payment.overdue",
    ):
        assert set(examples[kind]["invoice"]) >= INVOICE, kind
        assert "overdue_notified_at" not in examples[kind]["invoice"]
    assert examples["invoice.update"]["invoice"]["metadata"] == {"po": "PO-7"}
    assert examples["invoice.update.finalized"]["invoice"]["invoice_status"] == "FINALIZED"
    paid = examples["invoice.update.payment"]["invoice"]
    assert (paid["payment_status"], paid["amount_paid"], paid["amount_remaining"]) == (
        "SUCCEEDED",
        "100.00",
        "0.00",
    )
    assert examples["invoice.update.voided"]["invoice"]["invoice_status"] == "VOIDED"
    overdue = examples["invoice.payment.overdue"]["invoice"]
    assert (overdue["due_date"], overdue["amount_remaining"]) == ("2026-05-13T09:30:00Z", "100.00")


def test_the_communication_payload_is_the_spec_table(examples: dict[str, dict[str, Any]]) -> None:
    invoice = examples["invoice.communication.triggered"]["invoice"]
    assert set(invoice) == COMMUNICATION
    assert (invoice["billing_reason"], invoice["invoice_status"], invoice["total"]) == (
        "SUBSCRIPTION_CREATE",
        "FINALIZED",
        "30.00",
    )
    assert (
        set(invoice["customer"]) == EMBEDDED_CUSTOMER and invoice["customer"]["id"] == invoice["customer_id"]
    )
    assert (
        set(invoice["subscription"]) == SUBSCRIPTION
        and invoice["subscription"]["id"] == invoice["subscription_id"]
    )
    (line,) = invoice["line_items"]
    assert set(line) == COMMUNICATION_LINE
    assert (line["display_name"], line["amount"], line["quantity"], line["plan_display_name"]) == (
        "Pro",
        "30.00",
        "1",
        "Pro",
    )


def test_wallet_payment_and_credit_note_payloads(examples: dict[str, dict[str, Any]]) -> None:
    for kind in ("wallet.created", "wallet.updated", "wallet.terminated"):
        assert set(examples[kind]["wallet"]) == WALLET, kind
    assert examples["wallet.updated"]["wallet"]["name"] == "Credits"
    assert examples["wallet.terminated"]["wallet"]["wallet_status"] == "closed"
    created = examples["wallet.transaction.created"]["transaction"]
    assert set(created) == TRANSACTION
    assert (created["credit_amount"], created["credit_balance_before"], created["credit_balance_after"]) == (
        "25",
        "0",
        "25",
    )
    settled = examples["wallet.transaction.updated"]["updated_transaction"]
    assert set(settled) == TRANSACTION
    # 25 credits, then the purchase of 10 lands when its invoice is paid: 25 -> 35.
    assert (
        settled["transaction_status"],
        settled["credit_balance_before"],
        settled["credit_balance_after"],
    ) == ("completed", "25", "35")
    for kind in (
        "payment.created",
        "payment.updated",
        "payment.failed",
        "payment.success",
        "payment.pending",
    ):
        assert set(examples[kind]["payment"]) == PAYMENT, kind
    statuses = {
        kind: examples[kind]["payment"]["payment_status"]
        for kind in ("payment.failed", "payment.success", "payment.pending")
    }
    assert statuses == {
        "payment.failed": "FAILED",
        "payment.success": "SUCCEEDED",
        "payment.pending": "PENDING",
    }
    assert examples["payment.failed"]["payment"]["error_message"] == "card_declined"
    assert examples["payment.success"]["payment"]["amount"] == "20.00"
    for kind in ("credit_note.created", "credit_note.updated"):
        assert set(examples[kind]["credit_note"]) == CREDIT_NOTE, kind
    assert examples["credit_note.created"]["credit_note"]["credit_note_status"] == "DRAFT"
    updated = examples["credit_note.updated"]["credit_note"]
    assert (updated["credit_note_status"], updated["total_amount"]) == ("FINALIZED", "15.00")


def test_a_rejected_event_carries_its_reason_beside_it(examples: dict[str, dict[str, Any]]) -> None:
    payload = examples["event.rejected"]
    assert payload["reason"] == "no_meter_for_event_name"
    assert set(payload["event"]) == REJECTED_EVENT
    assert (payload["event"]["id"], payload["event"]["event_name"], payload["event"]["timestamp"]) == (
        "evt_unmetered_1",
        "unknown_call",
        "2026-05-14T09:30:00Z",
    )
    assert START.isoformat() < payload["event"]["timestamp"]


def test_spend_alert_payloads(examples: dict[str, dict[str, Any]]) -> None:
    """60 tokens reach the 50.00 of all three settings at ingestion; raised to 100.00, the
    worker's next run finds the spend back under them."""
    subscription = examples["subscription.spend.threshold_reached"]["subscription"]
    for kind, alert_type in SPEND_KINDS.items():
        reached = examples[f"subscription.{kind}.threshold_reached"]
        recovered = examples[f"subscription.{kind}.threshold_recovered"]
        for payload in (reached, recovered):
            assert set(payload) == SPEND_ALERT, kind
            assert payload["subscription"] == subscription
            assert (payload["alert_type"], payload["current_spend"]) == (alert_type, "60.00")
        assert (reached["alert_status"], reached["threshold"], reached["triggered_at"]) == (
            "in_alarm",
            "50.00",
            "2026-05-15T09:30:00Z",
        )
        assert (recovered["alert_status"], recovered["threshold"], recovered["triggered_at"]) == (
            "ok",
            "100.00",
            "2026-05-15T09:31:00Z",
        )
    assert subscription["plan_id"] != examples["subscription.created"]["subscription"]["plan_id"]
    whole = examples["subscription.spend.threshold_reached"]
    line = examples["subscription.line_item_spend.threshold_reached"]
    group = examples["subscription.group_spend.threshold_reached"]
    assert (whole["subscription_line_item_id"], whole["group_id"]) == (None, None)
    assert line["subscription_line_item_id"].startswith("subs_line_") and line["group_id"] is None
    assert group["group_id"].startswith("group_") and group["subscription_line_item_id"] is None


def test_wallet_alert_payloads(examples: dict[str, dict[str, Any]]) -> None:
    """An empty wallet (thresholds 20 and 5, below) drops at the worker's run; 100 credits bring
    it back; 85 then 97 tokens of usage take the real-time balance to 15.00 then 3.00."""
    expected = {
        "wallet.credit_balance.dropped": ("low_credit_balance", "in_alarm", "0", "0.00"),
        "wallet.credit_balance.recovered": ("low_credit_balance", "ok", "100", "100.00"),
        "wallet.ongoing_balance.dropped": ("low_ongoing_balance", "in_alarm", "0", "0.00"),
        "wallet.ongoing_balance.recovered": ("low_ongoing_balance", "ok", "100", "100.00"),
        "wallet.ongoing_balance.updated": ("low_ongoing_balance", "in_alarm", "100", "3.00"),
    }
    wallet_ids = set()
    for kind, (alert_type, state, credits, balance) in expected.items():
        payload = examples[kind]
        assert set(payload) == WALLET_ALERT and set(payload["wallet"]) == WALLET, kind
        alert = payload["alert"]
        assert set(alert) == WALLET_ALERT_INFO and set(alert["alert_settings"]) == ALERT_SETTINGS
        assert (alert["alert_type"], alert["state"], alert["credit_balance"], alert["current_balance"]) == (
            alert_type,
            state,
            credits,
            balance,
        ), kind
        assert alert["alert_settings"]["warning"] == {"threshold": "20", "condition": "below"}
        assert payload["wallet"]["credit_balance"] == credits
        wallet_ids.add(payload["wallet"]["id"])
    (wallet_id,) = wallet_ids
    feature = examples["feature.wallet_balance.alert"]
    assert set(feature) == FEATURE_ALERT
    assert (feature["wallet_id"], feature["alert_type"], feature["alert_status"]) == (
        wallet_id,
        "feature_wallet_balance",
        "warning",
    )
    assert (feature["credit_balance"], feature["current_balance"]) == ("100", "15.00")
    assert feature["customer_id"] == examples["wallet.ongoing_balance.updated"]["wallet"]["customer_id"]
    assert feature["feature_id"].startswith("feat_")


def test_the_grant_exhausted_payload(examples: dict[str, dict[str, Any]]) -> None:
    """The 100th call of a month whose grant is 100 calls."""
    payload = examples["entitlement.grant.exhausted"]
    assert set(payload) == GRANT_EXHAUSTED
    grant = payload["entitlement"]
    assert set(grant) >= ENTITLEMENT and (grant["usage_limit"], grant["feature_type"]) == (100, "metered")
    subscription = examples["subscription.spend.threshold_reached"]["subscription"]
    assert (payload["subscription_id"], payload["customer_id"]) == (
        subscription["id"],
        subscription["customer_id"],
    )
    assert (payload["alert_type"], payload["alert_status"]) == ("entitlement_grant_exhausted", "in_alarm")
    assert (payload["usage"], payload["usage_limit"], payload["triggered_at"]) == (
        "100",
        "100",
        "2026-05-15T09:32:00Z",
    )


def test_checkout_session_payloads(examples: dict[str, dict[str, Any]]) -> None:
    """Three sandbox sessions of acme-1 opened at 2026-05-16 09:30: one paid two minutes later,
    one declined, one left open past its 30 minutes until the worker's run at 10:03."""
    sessions = {kind: examples[f"checkout.session.{kind}"]["checkout_session"] for kind in CHECKOUT_KINDS}
    customer_id = examples["customer.created"]["customer"]["id"]
    for kind, session in sessions.items():
        assert set(session) == CHECKOUT_SESSION, kind
        assert (session["action"], session["payment_provider"], session["customer_id"]) == (
            "create_subscription",
            "sandbox",
            customer_id,
        )
        assert session["payment_action"]["type"] == "checkout_url"
        assert session["payment_action"]["url"].startswith(f"/v1/checkout/sandbox/{session['id']}?")
    initiated, completed, failed, expired = sessions.values()
    # How each ended: (status, failure_reason, completed_at, cancelled_at). The notification of
    # the opening is recorded once the customer has somewhere to pay: already pending.
    ends = {
        kind: (s["checkout_status"], s["failure_reason"], s["completed_at"], s["cancelled_at"])
        for kind, s in sessions.items()
    }
    assert ends == {
        "initiated": ("pending", None, None, None),
        "completed": ("completed", None, "2026-05-16T09:32:00Z", None),
        "failed": ("failed", "payment declined", None, "2026-05-16T09:32:00Z"),
        "expired": ("expired", None, None, "2026-05-16T10:03:00Z"),
    }
    assert (initiated["expires_at"], expired["expires_at"]) == (
        "2026-05-16T10:00:00Z",
        "2026-05-16T10:02:00Z",
    )
    assert completed["id"] == initiated["id"]
    assert len({initiated["id"], failed["id"], expired["id"]}) == 3
    # The invoice and payment are named once the session completed, never otherwise.
    assert completed["checkout_invoice_id"].startswith("inv_")
    assert completed["checkout_payment_id"].startswith("pay_")
    for session in (initiated, failed, expired):
        assert (session["checkout_invoice_id"], session["checkout_payment_id"]) == (None, None)
