"""The webhook payloads, one model per event kind (:data:`PAYLOADS`), for the OpenAPI document's
``webhooks``: ``{"event_type": <kind>, <resource key>: {...}}`` plus the kind's other top-level
fields, as :mod:`billingkit.domain.event_types` builds them.

The shapes follow the spec's payload table and the reference's ``webhookDto`` schemas; resources
that webhooks carry in their whole wire form (customer, feature, entitlement, invoice) reuse the
answer models; the alert kinds' top-level fields follow ``webhookDto.SpendAlertEvent``,
``AlertWebhookPayload`` and ``WalletWebhookPayload``'s ``alert`` (``WalletAlertInfo``), with money
as decimal strings; the checkout session kinds' ``checkout_session`` follows
``webhookDto.CheckoutSession``.
A test validates every example payload the code produces against its kind's model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import create_model

from billingkit.domain.alerts import AlertType
from billingkit.domain.checkout_sessions import CheckoutAction, CheckoutStatus
from billingkit.domain.event_types import EVENT_TYPES
from billingkit.domain.wallets import AlertState
from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel
from billingkit.http.schemas.billing import InvoiceLineItemResponse, InvoiceResponse
from billingkit.http.schemas.catalog import EntitlementResponse
from billingkit.http.schemas.checkout import PaymentActionResponse
from billingkit.http.schemas.customers import CustomerResponse
from billingkit.http.schemas.events import EventResponse
from billingkit.http.schemas.features import FeatureAlertSettingsResponse, FeatureResponse

__all__ = [
    "PAYLOADS",
    "WebhookCheckoutSession",
    "WebhookCommunicationInvoice",
    "WebhookCreditNote",
    "WebhookCustomer",
    "WebhookInvoice",
    "WebhookPayment",
    "WebhookPhase",
    "WebhookSubscription",
    "WebhookTransaction",
    "WebhookWallet",
    "WebhookWalletAlert",
]


class WebhookCustomer(WireModel):
    """A customer as webhook payloads embed it (the spec's list)."""

    id: str
    external_id: str
    name: str
    email: str | None
    timezone: str
    metadata: dict[str, str]
    address_line1: str | None
    address_line2: str | None
    address_city: str | None
    address_state: str | None
    address_postal_code: str | None
    address_country: str | None


class WebhookSubscription(WireModel):
    """The ``subscription`` of subscription payloads (the spec's table), its customer embedded."""

    id: str
    lookup_key: str | None
    plan_id: str
    customer_id: str
    parent_subscription_id: str | None
    subscription_status: str
    subscription_type: str
    pause_status: str
    billing_cadence: str
    billing_period: str
    billing_period_count: int
    currency: str
    start_date: Timestamp
    end_date: Timestamp | None
    current_period_start: Timestamp
    current_period_end: Timestamp
    cancel_at: Timestamp | None
    cancel_at_period_end: bool
    cancelled_at: Timestamp | None
    trial_start: Timestamp | None
    trial_end: Timestamp | None
    metadata: dict[str, str]
    customer: WebhookCustomer | None


class WebhookPhase(WireModel):
    """The ``phase`` of subscription phase payloads (``webhookDto.SubscriptionPhase``)."""

    id: str
    subscription_id: str
    start_date: Timestamp
    end_date: Timestamp | None


class WebhookInvoiceLine(InvoiceLineItemResponse):
    """An invoice line as invoice payloads carry it: without its computation ``trace``."""

    trace: dict[str, Any] | None = None  # type: ignore[assignment]


class WebhookInvoice(InvoiceResponse):
    """The ``invoice`` of invoice update payloads: the invoice's wire form, lines without traces."""

    line_items: list[WebhookInvoiceLine]  # type: ignore[assignment]


class WebhookCommunicationLine(WireModel):
    id: str
    amount: DecimalString
    display_name: str
    plan_display_name: str | None
    price_id: str | None
    quantity: DecimalString
    period_start: Timestamp | None
    period_end: Timestamp | None


class WebhookCommunicationInvoice(WireModel):
    """The ``invoice`` of ``invoice.communication.triggered`` (the spec's table)."""

    id: str
    invoice_number: str | None
    invoice_type: str
    invoice_status: str
    payment_status: str
    billing_reason: str
    currency: str
    customer_id: str
    subscription_id: str | None
    subtotal: DecimalString
    total: DecimalString
    amount_due: DecimalString
    amount_paid: DecimalString
    amount_remaining: DecimalString
    due_date: Timestamp | None
    finalized_at: Timestamp | None
    paid_at: Timestamp | None
    voided_at: Timestamp | None
    period_start: Timestamp | None
    period_end: Timestamp | None
    invoice_pdf_url: str | None
    metadata: dict[str, str]
    customer: WebhookCustomer | None
    subscription: WebhookSubscription | None
    line_items: list[WebhookCommunicationLine]


class WebhookWallet(WireModel):
    """The ``wallet`` of wallet payloads (``webhookDto.Wallet``)."""

    id: str
    name: str | None
    customer_id: str
    currency: str
    wallet_type: str
    wallet_status: str
    conversion_rate: DecimalString
    balance: DecimalString
    credit_balance: DecimalString


class WebhookWalletAlert(WireModel):
    """The ``alert`` of wallet balance alert payloads (``webhookDto.WalletAlertInfo``): the
    wallet's thresholds, which alert changed to which ``state``, the credit balance and the
    balance compared (the reference types the two balances as numbers; here decimal strings)."""

    alert_settings: FeatureAlertSettingsResponse
    alert_type: Literal[AlertType.LOW_CREDIT_BALANCE, AlertType.LOW_ONGOING_BALANCE]
    state: AlertState
    credit_balance: DecimalString
    current_balance: DecimalString


class WebhookTransaction(WireModel):
    """The ``transaction`` / ``updated_transaction`` of wallet transaction payloads
    (``webhookDto.WalletTransaction``), with the wallet's credit balance around the movement."""

    id: str
    wallet_id: str
    customer_id: str
    type: str
    amount: DecimalString
    credit_amount: DecimalString
    transaction_status: str
    transaction_reason: str
    reference_type: str | None
    reference_id: str | None
    expiry_date: Timestamp | None
    description: str | None
    metadata: dict[str, str]
    currency: str
    credit_balance_before: DecimalString
    credit_balance_after: DecimalString


class WebhookPayment(WireModel):
    """The ``payment`` of payment payloads (``webhookDto.Payment``)."""

    id: str
    amount: DecimalString
    currency: str
    destination_id: str
    destination_type: str
    error_message: str | None
    failed_at: Timestamp | None
    invoice_number: str | None
    payment_gateway: str | None
    payment_method_type: str
    payment_status: str
    refunded_at: Timestamp | None
    succeeded_at: Timestamp | None
    voided_at: Timestamp | None


class WebhookCreditNote(WireModel):
    """The ``credit_note`` of credit note payloads (``webhookDto.CreditNote``)."""

    id: str
    credit_note_number: str | None
    credit_note_status: str
    credit_note_type: str
    currency: str
    customer_id: str
    finalized_at: Timestamp | None
    invoice_id: str
    memo: str | None
    metadata: dict[str, str]
    reason: str
    subscription_id: str | None
    total_amount: DecimalString
    voided_at: Timestamp | None


class WebhookCheckoutSession(WireModel):
    """The ``checkout_session`` of checkout session payloads (``webhookDto.CheckoutSession``):
    where the customer pays (``payment_action``), how the session ended (``completed_at``, or
    ``cancelled_at`` with ``failure_reason`` when it failed), and the invoice and payment made
    once it completed. ``payment_provider`` is ``sandbox`` or ``razorpay``."""

    id: str
    action: CheckoutAction
    checkout_status: CheckoutStatus
    customer_id: str
    payment_provider: str
    payment_action: PaymentActionResponse | None
    expires_at: Timestamp
    completed_at: Timestamp | None
    cancelled_at: Timestamp | None
    failure_reason: str | None
    checkout_invoice_id: str | None
    checkout_payment_id: str | None


#: The model of each resource key, where billingkit builds the resource.
_RESOURCES: dict[str, Any] = {
    "subscription": WebhookSubscription,
    "phase": WebhookPhase,
    "feature": FeatureResponse,
    "entitlement": EntitlementResponse,
    "wallet": WebhookWallet,
    "transaction": WebhookTransaction,
    "updated_transaction": WebhookTransaction,
    "payment": WebhookPayment,
    "customer": CustomerResponse,
    "invoice": WebhookInvoice,
    "credit_note": WebhookCreditNote,
    "event": EventResponse,
    "checkout_session": WebhookCheckoutSession,
}
#: The types of the top-level fields beside the resource (the reference's alert payloads).
_FIELDS: dict[str, Any] = {
    "reason": str,
    "alert": WebhookWalletAlert,
    "alert_status": AlertState,
    "subscription_line_item_id": str | None,
    "group_id": str | None,
    "current_spend": DecimalString,
    "threshold": DecimalString | None,
    "triggered_at": Timestamp,
    "customer_id": str,
    "feature_id": str,
    "wallet_id": str,
    "credit_balance": DecimalString,
    "current_balance": DecimalString,
    "subscription_id": str,
    "usage": DecimalString,
    "usage_limit": DecimalString | None,
}

#: The one ``alert_type`` each flat or spend alert kind carries, by the kind's name up to its last
#: dot (the wallet kinds' ``alert`` says which of their two alerts changed).
_ALERT_TYPES = {
    "subscription.spend": AlertType.SUBSCRIPTION_SPEND,
    "subscription.line_item_spend": AlertType.SUBSCRIPTION_LINE_ITEM_SPEND,
    "subscription.group_spend": AlertType.SUBSCRIPTION_GROUP_SPEND,
    "feature.wallet_balance": AlertType.FEATURE_WALLET_BALANCE,
    "entitlement.grant": AlertType.ENTITLEMENT_GRANT_EXHAUSTED,
}


def _field(kind: str, field: str) -> Any:
    if field == "alert_type":
        return Literal[_ALERT_TYPES[kind.rsplit(".", 1)[0]]]
    return _FIELDS[field]


def _title(name: str) -> str:
    return "Webhook_" + name.replace(".", "_")


def _payload(name: str) -> type[WireModel]:
    declared = EVENT_TYPES[name]
    fields: dict[str, Any] = {"event_type": (Literal[name], ...)}
    if declared.resource is not None:
        resource = _RESOURCES[declared.resource]
        if name == "invoice.communication.triggered":
            resource = WebhookCommunicationInvoice
        fields[declared.resource] = (resource, ...)
    for field in declared.fields:
        fields[field] = (_field(name, field), ...)
    model: type[WireModel] = create_model(_title(name), __base__=WireModel, **fields)
    model.__doc__ = f"The payload of ``{name}``."
    return model


#: Each event kind's payload model, in the catalogue's order.
PAYLOADS: dict[str, type[WireModel]] = {name: _payload(name) for name in EVENT_TYPES}
