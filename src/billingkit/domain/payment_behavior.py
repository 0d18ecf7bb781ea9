"""What a subscription's ``payment_behavior`` makes of its opening invoice (reference notes
§1.2-§1.4): whether it starts ``active`` or ``incomplete``, or is not created at all, and which paid
invoices turn an ``incomplete`` subscription ``active``.

| payment_behavior | collection_method | opening invoice | created | draft activated |
|---|---|---|---|---|
| default_active | either | anything | active | active |
| default_incomplete | send_invoice | zero or paid (prepaid credits) | active | active |
| default_incomplete | send_invoice | unpaid (not charged) | incomplete | incomplete |
| allow_incomplete | charge_automatically | paid by the charge | active | active |
| allow_incomplete | charge_automatically | unpaid after the charge | incomplete | incomplete |
| error_if_incomplete | charge_automatically | unpaid after the charge | refused | incomplete |

An ``incomplete`` subscription is not billed for renewals (the billing run bills ``active`` ones)
until an invoice of it with billing reason ``SUBSCRIPTION_CREATE``, ``SUBSCRIPTION_UPDATE`` or
``SUBSCRIPTION_TRIAL_END`` is paid in full; it is then ``active`` and billing catches up.
"""

from __future__ import annotations

from enum import Enum

from billingkit.domain.invoices import BillingReason, Invoice, PaymentStatus
from billingkit.domain.subscriptions import CollectionMethod, PaymentBehavior

__all__ = [
    "ACTIVATING_REASONS",
    "INCOMPLETE_BEHAVIORS",
    "OpeningOutcome",
    "charges_at_opening",
    "fully_paid",
    "opening_outcome",
]

#: The behaviours that hold a subscription ``incomplete`` while its opening invoice is unpaid.
INCOMPLETE_BEHAVIORS = frozenset(
    {
        PaymentBehavior.ALLOW_INCOMPLETE,
        PaymentBehavior.DEFAULT_INCOMPLETE,
        PaymentBehavior.ERROR_IF_INCOMPLETE,
    }
)
#: Billing reasons of the invoices whose payment in full makes an ``incomplete`` subscription
#: ``active``.
ACTIVATING_REASONS = frozenset(
    {
        BillingReason.SUBSCRIPTION_CREATE,
        BillingReason.SUBSCRIPTION_UPDATE,
        BillingReason.SUBSCRIPTION_TRIAL_END,
    }
)
_PAID = frozenset({PaymentStatus.SUCCEEDED, PaymentStatus.OVERPAID})


class OpeningOutcome(Enum):
    ACTIVE = "active"
    INCOMPLETE = "incomplete"
    REFUSED = "refused"


def fully_paid(invoice: Invoice) -> bool:
    """Nothing remains to pay: ``payment_status`` SUCCEEDED or OVERPAID and ``amount_remaining``
    0 (a zero or SKIPPED invoice is paid on issue)."""
    return invoice.payment_status in _PAID and invoice.amount_remaining <= 0


def charges_at_opening(behavior: PaymentBehavior, collection_method: CollectionMethod) -> bool:
    """Whether the opening invoice is charged at once (with the subscription's card, then the
    customer's POST_PAID wallets): ``charge_automatically`` with ``allow_incomplete`` or
    ``error_if_incomplete``, whose outcome decides the status. ``default_active`` does not wait
    for the money; ``send_invoice`` is paid by the customer later."""
    return collection_method is CollectionMethod.CHARGE_AUTOMATICALLY and behavior in (
        PaymentBehavior.ALLOW_INCOMPLETE,
        PaymentBehavior.ERROR_IF_INCOMPLETE,
    )


def opening_outcome(behavior: PaymentBehavior, *, paid: bool, activation: bool) -> OpeningOutcome:
    """The status an active subscription's opening takes (see the module table): ``paid`` says
    whether its opening invoice is paid in full (or there is none); ``activation``: a draft being
    activated (``error_if_incomplete`` then leaves it ``incomplete`` rather than refusing, as the
    draft exists already)."""
    if paid or behavior not in INCOMPLETE_BEHAVIORS:
        return OpeningOutcome.ACTIVE
    if behavior is PaymentBehavior.ERROR_IF_INCOMPLETE and not activation:
        return OpeningOutcome.REFUSED
    return OpeningOutcome.INCOMPLETE
