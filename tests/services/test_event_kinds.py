"""Every notification kind billingkit emits (all but the alert and checkout kinds, which their parts
emit) is recorded once by the operation that causes it, with the payload shape of the spec's
table, the reference notes §9 and the reference's ``webhookDto`` schemas.

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
from tests.event_kinds import OPERATIONS, PENDING, START, tell

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "flexprice-openapi-3.0.json"


def _dto(name: str) -> set[str]:
    """The fields of the reference's ``webhookDto.<name>`` schema (its OpenAPI document)."""
    if not REFERENCE.exists():
        pytest.skip(f"the reference OpenAPI is not at {REFERENCE}", allow_module_level=True)
    schemas = json.loads(REFERENCE.read_text())["components"]["schemas"]
    return set(schemas[f"webhookDto.{name}"]["properties"])


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

MINE = [name for name in EVENT_TYPES if name not in PENDING]


@pytest.fixture(scope="module")
def examples() -> dict[str, dict[str, Any]]:
    return tell()


def test_the_story_covers_every_kind_of_this_part_and_only_those(examples: dict[str, dict[str, Any]]) -> None:
    assert sorted(examples) == sorted(MINE)
    assert sorted(OPERATIONS) == sorted(MINE)
    assert len(MINE) == 40 and len(PENDING) == 17


@pytest.mark.parametrize("kind", MINE)
def test_the_envelope(kind: str, examples: dict[str, dict[str, Any]]) -> None:
    payload = examples[kind]
    declared = EVENT_TYPES[kind]
    assert payload["event_type"] == kind
    assert set(payload) == {"event_type", declared.resource, *declared.fields} - {"alert"}
    assert isinstance(payload[str(declared.resource)], dict)


@pytest.mark.parametrize("kind", [k for k in MINE if EVENT_TYPES[k].resource == "subscription"])
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
        for kind in MINE
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
