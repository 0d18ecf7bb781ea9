"""The payment method a subscription was created with (``gateway_payment_method_id``), used when
its invoices are collected.

* ``POST /invoices/{id}/payment/attempt`` charges it first (:mod:`billingkit.services.payment_attempts`);
* a ``CARD`` payment of one of its invoices that names no ``payment_method_id`` is charged to it
  (:func:`with_subscription_method`, applied by ``record_payment`` before the payment's key is
  derived, so a repeated request finds the same payment). A payment naming its own method keeps
  it; other methods (a payment link, a wallet, offline money) never take it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from billingkit.domain.payments import PaymentMethodType
from billingkit.ports import UnitOfWork

if TYPE_CHECKING:  # payments imports this module
    from billingkit.services.payments import PaymentCreate

__all__ = ["subscription_method", "with_subscription_method"]


def subscription_method(uow: UnitOfWork, invoice_id: str) -> str | None:
    """The ``gateway_payment_method_id`` of invoice ``invoice_id``'s subscription (``None``
    for an unknown invoice, one without a subscription, or a subscription without one)."""
    invoice = uow.invoices.find(invoice_id)
    if invoice is None or invoice.subscription_id is None:
        return None
    sub = uow.subscriptions.find(invoice.subscription_id)
    return sub.gateway_payment_method_id if sub is not None else None


def with_subscription_method(uow: UnitOfWork, request: PaymentCreate) -> PaymentCreate:
    """``request``, naming its invoice's subscription's payment method when it is a ``CARD``
    payment that names none (see the module doc)."""
    if request.payment_method_type is not PaymentMethodType.CARD or request.payment_method_id:
        return request
    method = subscription_method(uow, request.destination_id)
    return request if method is None else request.model_copy(update={"payment_method_id": method})
