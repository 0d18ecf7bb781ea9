"""The ``modify_subscription`` checkout action: a quantity change carried out only once paid
(reference notes §3.5, §8; the request is opened by
:func:`billingkit.services.checkout_flows.modify_subscription_checked`).

Before: nothing about the subscription changes. The change is checked and priced as
:func:`~billingkit.services.quantity_changes.change_quantities` would price it (prorated, taxed,
without drawing prepaid credits: the customer pays the whole amount at the provider), its
settlement invoice stored as a ``DRAFT`` under the change's settlement key, with a payment of it
``INITIATED``. The session's ``configuration.modify_subscription_params`` {subscription_id,
line_item_modifications [{line_item_id, quantity, effective_date}]} is the change, its effective
date fixed at the instant the session opened. A change that nets no charge (a decrease, a trial)
is refused: "checkout requires a non-zero invoice".

Apply (paid): the stored change is carried out by ``change_quantities`` itself (lines ended and
replaced, the change recorded, ``subscription.updated``); its settlement finds the stored draft
under its key and issues that very invoice, which the payment then pays. Cleanup (failed or
expired): the payment ``FAILED``, the draft invoice archived (its key released, so a later change
at the same instant is settled afresh); the subscription was never touched.
"""

from __future__ import annotations

from typing import Any

from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.invoices import Invoice
from billingkit.domain.subscriptions import Subscription
from billingkit.ports import UnitOfWork
from billingkit.services.checkout_subscriptions import cleanup_locked, lock_invoice, pay_checkout_invoice
from billingkit.services.context import Context
from billingkit.services.quantity_changes import (
    PendingQuantityChange,
    SubModifyQuantityChangeRequest,
    change_quantities,
    pending_quantity_change,
)

__all__ = [
    "apply_quantity_change",
    "cleanup_quantity_change",
    "modify_configuration",
    "prepare_quantity_change",
]

PARAMS = "modify_subscription_params"


def prepare_quantity_change(
    uow: UnitOfWork, ctx: Context, sub: Subscription, data: SubModifyQuantityChangeRequest
) -> tuple[PendingQuantityChange, Invoice]:
    """Check and price quantity change ``data`` of ``sub``, and store its invoice as a ``DRAFT``
    (see the module doc). Raises as ``change_quantities``; ``InvalidOperation`` when the change
    charges nothing."""
    pending = pending_quantity_change(uow, ctx, sub, data)
    return pending, lock_invoice(uow, ctx, pending.invoice, "the quantity change charges nothing now")


def modify_configuration(sub: Subscription, pending: PendingQuantityChange) -> dict[str, Any]:
    """The ``configuration`` of a ``modify_subscription`` session: the change it applies."""
    return {
        PARAMS: {
            "subscription_id": sub.id,
            "line_item_modifications": [
                {
                    "line_item_id": item.id,
                    "quantity": format(item.quantity, "f"),
                    "effective_date": pending.at.isoformat().replace("+00:00", "Z"),
                }
                for item in pending.request.line_items
            ],
        }
    }


def _stored_change(session: CheckoutSession) -> tuple[str, SubModifyQuantityChangeRequest]:
    params = session.configuration[PARAMS]
    request = SubModifyQuantityChangeRequest.model_validate(
        {
            "line_items": [
                {"id": m["line_item_id"], "quantity": m["quantity"], "effective_date": m["effective_date"]}
                for m in params["line_item_modifications"]
            ]
        }
    )
    return str(params["subscription_id"]), request


def apply_quantity_change(
    uow: UnitOfWork, ctx: Context, session: CheckoutSession, provider_payment_id: str | None
) -> dict[str, Any]:
    """Carry out the session's stored quantity change (issuing its locked invoice) and pay that
    invoice; the session's ``result`` is empty (the reference's result names a created
    subscription only)."""
    subscription_id, request = _stored_change(session)
    change_quantities(uow, ctx, uow.subscriptions.get(subscription_id), request)
    pay_checkout_invoice(uow, ctx, session, provider_payment_id)
    return {}


def cleanup_quantity_change(uow: UnitOfWork, ctx: Context, session: CheckoutSession, reason: str) -> None:
    """The draft invoice's settlement key released, the payment failed and archived, the invoice
    archived (:func:`~billingkit.services.checkout_subscriptions.cleanup_locked`)."""
    cleanup_locked(uow, ctx, session, reason)
