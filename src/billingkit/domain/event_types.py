"""The notification (webhook) event types: every type the spec names, the key its resource sits
under in the payload, and how that resource is built from billingkit's models.

A payload is ``{"event_type": <name>, <resource>: {...}}`` (``resource`` is also the stored
notification's ``entity_type``); some carry more top-level ``fields`` beside it (a wallet balance
alert's ``alert``, a spend alert's thresholds). ``build`` makes the resource object from the model it is
about (plus what it needs besides, e.g. a subscription's customer), or a :class:`Built` with the
resource and the top-level fields (``event.rejected``'s ``reason``).

Services record notifications through this catalogue (``services.notifications``), so a type
that is not declared here cannot be recorded; the API guide lists it (a test keeps the list equal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from billingkit.domain.alert_payloads import feature_wallet_alert_fields
from billingkit.domain.catalog import Entitlement, Feature
from billingkit.domain.checkout_sessions import checkout_session_payload
from billingkit.domain.credit_notes import CreditNote
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.payments import Payment
from billingkit.domain.resources import iso
from billingkit.domain.subscription_phases import SubscriptionPhase
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.usage import UsageEvent
from billingkit.domain.wallets import Wallet, WalletTransaction

__all__ = [
    "EVENT_TYPES",
    "Built",
    "EventType",
    "communication_payload",
    "credit_note_payload",
    "embedded_customer",
    "event_to_dict",
    "invoice_payload",
    "payment_payload",
    "phase_payload",
    "rejected_event_payload",
    "subscription_payload",
    "transaction_payload",
    "wallet_payload",
]


@dataclass(frozen=True, slots=True)
class Built:
    """What a builder answers for a type with top-level ``fields`` beside its resource:
    ``resource`` goes under the type's key, ``fields`` (a subset of the declared ones) beside it."""

    resource: dict[str, Any]
    fields: dict[str, Any]


PayloadBuilder = Callable[..., "dict[str, Any] | Built"]


@dataclass(frozen=True, slots=True)
class EventType:
    name: str  # "customer.created"
    group: str  # the spec's heading: "Customer"
    resource: str | None  # payload key of the resource; None: the payload is flat ``fields``
    build: PayloadBuilder | None = None
    fields: tuple[str, ...] = ()  # other top-level payload fields, as the reference documents them


# -- payload builders -------------------------------------------------------------------------

_ADDRESS = tuple(f"address_{part}" for part in ("line1", "line2", "city", "state", "postal_code", "country"))
_SUBSCRIPTION_FIELDS = (
    "id",
    "lookup_key",
    "plan_id",
    "customer_id",
    "parent_subscription_id",
    "subscription_status",
    "subscription_type",
    "pause_status",
    "billing_cadence",
    "billing_period",
    "billing_period_count",
    "currency",
    "start_date",
    "end_date",
    "current_period_start",
    "current_period_end",
    "cancel_at",
    "cancel_at_period_end",
    "cancelled_at",
    "trial_start",
    "trial_end",
    "metadata",
)


_EMBEDDED_CUSTOMER_FIELDS = ("id", "external_id", "name", "email", "timezone", "metadata", *_ADDRESS)


def embedded_customer(customer: Customer | None) -> dict[str, Any] | None:
    """A customer as webhook payloads embed it (the spec's list): id, external id, name, e-mail,
    time zone, metadata and the ``address_*`` fields; ``None`` without one."""
    if customer is None:
        return None
    whole = customer.model_dump(mode="json")
    return {name: whole.get(name) for name in _EMBEDDED_CUSTOMER_FIELDS}


def subscription_payload(sub: Subscription, customer: Customer | None) -> dict[str, Any]:
    """The ``subscription`` object of subscription webhook payloads (the spec's field list), with
    its customer embedded (:func:`embedded_customer`)."""
    data = sub.to_dict(line_items=False)
    payload = {name: data[name] for name in _SUBSCRIPTION_FIELDS}
    payload["customer"] = embedded_customer(customer)
    return payload


def phase_payload(phase: SubscriptionPhase) -> dict[str, Any]:
    """The ``phase`` of subscription phase webhook payloads (the reference's
    ``webhookDto.SubscriptionPhase``): id, subscription, window."""
    return {
        "id": phase.id,
        "subscription_id": phase.subscription_id,
        "start_date": iso(phase.start_date),
        "end_date": iso(phase.end_date),
    }


def invoice_payload(invoice: Invoice) -> dict[str, Any]:
    """The invoice as webhook payloads carry it (the wire form without the computation traces)."""
    return invoice.to_dict(traces=False)


_COMMUNICATION_FIELDS = (
    "id",
    "invoice_number",
    "invoice_type",
    "invoice_status",
    "payment_status",
    "billing_reason",
    "currency",
    "customer_id",
    "subscription_id",
    "subtotal",
    "total",
    "amount_due",
    "amount_paid",
    "amount_remaining",
    "due_date",
    "finalized_at",
    "paid_at",
    "voided_at",
    "period_start",
    "period_end",
    "invoice_pdf_url",
    "metadata",
)
_COMMUNICATION_LINE_FIELDS = (
    "id",
    "amount",
    "display_name",
    "plan_display_name",
    "price_id",
    "quantity",
    "period_start",
    "period_end",
)


def communication_payload(
    invoice: Invoice,
    customer: Customer | None,
    subscription: Subscription | None,
    subscription_customer: Customer | None = None,
) -> dict[str, Any]:
    """The ``invoice`` of ``invoice.communication.triggered`` (the spec's table): the invoice's
    figures, dates and ``line_items`` (id, amount, names, price, quantity, period), with its
    customer (:func:`embedded_customer`) and its subscription (:func:`subscription_payload` with
    ``subscription_customer``, the subscription's own customer when another one is billed;
    ``None`` for an invoice of no subscription) embedded."""
    data = invoice.to_dict(traces=False)
    payload = {name: data[name] for name in _COMMUNICATION_FIELDS}
    payload["customer"] = embedded_customer(customer)
    payload["subscription"] = (
        None
        if subscription is None
        else subscription_payload(subscription, subscription_customer or customer)
    )
    payload["line_items"] = [
        {name: line[name] for name in _COMMUNICATION_LINE_FIELDS} for line in data["line_items"]
    ]
    return payload


def event_to_dict(event: UsageEvent, environment_id: str) -> dict[str, Any]:
    """The reference API's event shape."""
    return {
        "id": event.event_id,
        "event_name": event.event_name,
        "external_customer_id": event.external_customer_id,
        "customer_id": event.customer_id,
        "timestamp": iso(event.timestamp),
        "source": event.source,
        "properties": dict(event.properties),
        "environment_id": environment_id,
    }


def rejected_event_payload(event: UsageEvent, environment_id: str, reason: str) -> Built:
    """``event.rejected`` as the reference sends it (``{event_type, reason, event}``): the event
    under ``event`` and the ``reason`` it matched no meter beside it."""
    return Built(event_to_dict(event, environment_id), {"reason": reason})


_WALLET_FIELDS = ("id", "name", "customer_id", "currency", "wallet_type", "wallet_status", "conversion_rate")


def wallet_payload(wallet: Wallet) -> dict[str, Any]:
    """The ``wallet`` of wallet webhook payloads: the reference's fields, balances as strings."""
    data = wallet.to_dict()
    return {
        **{name: data[name] for name in _WALLET_FIELDS},
        "balance": data["balance"],
        "credit_balance": data["credit_balance"],
    }


_TRANSACTION_FIELDS = (
    "id",
    "wallet_id",
    "customer_id",
    "type",
    "amount",
    "credit_amount",
    "transaction_status",
    "transaction_reason",
    "reference_type",
    "reference_id",
    "expiry_date",
    "description",
    "metadata",
)


def transaction_payload(
    transaction: WalletTransaction, currency: str, balance_before: Decimal, balance_after: Decimal
) -> dict[str, Any]:
    """The ``transaction`` (or ``updated_transaction``) of wallet transaction webhook payloads,
    with the wallet's ``currency`` and its credit balance before and after the movement."""
    data = transaction.to_dict()
    return {
        **{name: data[name] for name in _TRANSACTION_FIELDS},
        "currency": currency,
        "credit_balance_before": str(balance_before),
        "credit_balance_after": str(balance_after),
    }


_PAYMENT_FIELDS = (
    "id",
    "amount",
    "currency",
    "destination_id",
    "destination_type",
    "error_message",
    "failed_at",
    "invoice_number",
    "payment_gateway",
    "payment_method_type",
    "payment_status",
    "refunded_at",
    "succeeded_at",
    "voided_at",
)


def payment_payload(payment: Payment) -> dict[str, Any]:
    """The ``payment`` of payment webhook payloads (the reference's fields)."""
    data = payment.to_dict()
    return {name: data[name] for name in _PAYMENT_FIELDS}


_CREDIT_NOTE_FIELDS = (
    "id",
    "credit_note_number",
    "credit_note_status",
    "credit_note_type",
    "currency",
    "customer_id",
    "finalized_at",
    "invoice_id",
    "memo",
    "metadata",
    "reason",
    "subscription_id",
    "total_amount",
    "voided_at",
)


def credit_note_payload(note: CreditNote) -> dict[str, Any]:
    """The ``credit_note`` of credit note webhook payloads (the reference's fields)."""
    data = note.to_dict()
    return {name: data[name] for name in _CREDIT_NOTE_FIELDS}


def _customer(customer: Customer) -> dict[str, Any]:
    return customer.to_dict()


def _feature(feature: Feature) -> dict[str, Any]:
    return feature.to_dict()


def _entitlement(entitlement: Entitlement) -> dict[str, Any]:
    return entitlement.to_dict()


# -- the catalogue ----------------------------------------------------------------------------

_SPEND_ALERT = (
    "alert_type",
    "alert_status",
    "subscription_line_item_id",
    "group_id",
    "current_spend",
    "threshold",
    "triggered_at",
)
_WALLET_ALERT = (
    "alert_type",
    "alert_status",
    "customer_id",
    "feature_id",
    "wallet_id",
    "credit_balance",
    "current_balance",
)

_ENTITLEMENT_ALERT = (
    "alert_type",
    "alert_status",
    "customer_id",
    "subscription_id",
    "usage",
    "usage_limit",
    "triggered_at",
)


def _group(
    group: str,
    resource: str | None,
    names: str,
    build: PayloadBuilder | None = None,
    fields: tuple[str, ...] = (),
) -> tuple[EventType, ...]:
    return tuple(EventType(name, group, resource, build, fields) for name in names.split())


_CATALOGUE: tuple[EventType, ...] = (
    *_group(
        "Subscription",
        "subscription",
        "subscription.created subscription.draft.created subscription.activated subscription.updated "
        "subscription.paused subscription.cancelled subscription.resumed subscription.plan_changed",
        subscription_payload,
    ),
    *_group(
        "Subscription",
        "phase",
        "subscription.phase.created subscription.phase.updated subscription.phase.deleted",
        phase_payload,
    ),
    *_group("Subscription", "subscription", "subscription.renewal.due", subscription_payload),
    # The alert kinds (issue 17): recorded by the evaluators of services.alert_runs with their
    # fields from domain.alert_payloads.
    *_group(
        "Spend alerts",
        "subscription",
        "subscription.spend.threshold_reached subscription.spend.threshold_recovered "
        "subscription.line_item_spend.threshold_reached subscription.line_item_spend.threshold_recovered "
        "subscription.group_spend.threshold_reached subscription.group_spend.threshold_recovered",
        subscription_payload,
        fields=_SPEND_ALERT,
    ),
    *_group(
        "Feature and entitlement", "feature", "feature.created feature.updated feature.deleted", _feature
    ),
    *_group(
        "Feature and entitlement",
        None,
        "feature.wallet_balance.alert",
        feature_wallet_alert_fields,
        fields=_WALLET_ALERT,
    ),
    *_group(
        "Feature and entitlement",
        "entitlement",
        "entitlement.created entitlement.updated entitlement.deleted",
        _entitlement,
    ),
    *_group(
        "Feature and entitlement",
        "entitlement",
        "entitlement.grant.exhausted",
        _entitlement,
        fields=_ENTITLEMENT_ALERT,
    ),
    *_group(
        "Wallet",
        "wallet",
        "wallet.created wallet.updated wallet.terminated",
        wallet_payload,
    ),
    *_group("Wallet", "transaction", "wallet.transaction.created", transaction_payload),
    *_group("Wallet", "updated_transaction", "wallet.transaction.updated", transaction_payload),
    *_group(
        "Wallet",
        "wallet",
        "wallet.credit_balance.dropped wallet.credit_balance.recovered wallet.ongoing_balance.dropped "
        "wallet.ongoing_balance.recovered wallet.ongoing_balance.updated",
        wallet_payload,
        fields=("alert",),
    ),
    *_group(
        "Payment",
        "payment",
        "payment.created payment.updated payment.failed payment.success payment.pending",
        payment_payload,
    ),
    *_group("Customer", "customer", "customer.created customer.updated customer.deleted", _customer),
    *_group(
        "Invoice",
        "invoice",
        "invoice.update.finalized invoice.update.payment invoice.update.voided invoice.update "
        "invoice.payment.overdue",
        invoice_payload,
    ),
    # Its invoice embeds the customer and the subscription, with fewer line fields (the spec's table).
    *_group("Invoice", "invoice", "invoice.communication.triggered", communication_payload),
    *_group("Credit note", "credit_note", "credit_note.created credit_note.updated", credit_note_payload),
    *_group(
        "Checkout",
        "checkout_session",
        "checkout.session.initiated checkout.session.completed checkout.session.failed "
        "checkout.session.expired",
        checkout_session_payload,
    ),
    *_group("Ingestion", "event", "event.rejected", rejected_event_payload, fields=("reason",)),
)

#: Every event type by name, in the spec's order.
EVENT_TYPES: dict[str, EventType] = {event_type.name: event_type for event_type in _CATALOGUE}
