"""``SandboxPaymentProvider``: the default payment provider, and the payment test double."""

from __future__ import annotations

import threading
from dataclasses import replace
from decimal import Decimal

from billingkit.domain.gateways import (
    PaymentRequest,
    ProviderPayment,
    ProviderPaymentStatus,
    ProviderRefund,
    RefundRequest,
)
from billingkit.domain.minor_units import to_minor_units
from billingkit.errors import IdempotencyConflict, InvalidOperation, NotFound, ValidationError

__all__ = ["SandboxPaymentProvider"]


class SandboxPaymentProvider:
    """A payment provider in process memory: no network, no money, the same answers every run.

    - A request naming a payment method is charged at once and succeeds, unless the method is
      :attr:`DECLINED_METHOD` (``"pm_sandbox_declined"``): that one fails with
      ``failure_reason="card_declined"``.
    - A request without a payment method stays ``pending``, with a ``checkout_url`` under
      :attr:`CHECKOUT_BASE`, until :meth:`settle` says how the customer's checkout ended.
    - Payment ids count up per provider: ``sbx_pay_000001``, ``sbx_pay_000002``, ...
    - The same idempotency key answers with the same payment (as it stands now) and charges nothing
      again; the same key with a different request is :class:`~billingkit.errors.IdempotencyConflict`.
    - :attr:`requests` lists every request it was asked, in order, repeats included.
    - A refund of a succeeded payment succeeds at once (ids ``sbx_rfnd_000001``...), never more in
      total than the payment took, in the payment's currency; the same key answers with the same
      refund.
    - Amounts are whole minor units of the currency, as every real provider takes them: ``12.505``
      usd is :class:`~billingkit.errors.ValidationError` (``field="amount"``).

    Nothing is shared between instances; one instance is safe to use from several threads.
    """

    name = "sandbox"
    DECLINED_METHOD = "pm_sandbox_declined"
    CHECKOUT_BASE = "https://sandbox.billingkit.invalid/checkout/"

    def __init__(self) -> None:
        self.requests: list[PaymentRequest] = []
        self._payments: dict[str, ProviderPayment] = {}
        self._by_key: dict[str, tuple[PaymentRequest, str]] = {}
        self._refunds: dict[str, tuple[RefundRequest, ProviderRefund]] = {}
        self._lock = threading.Lock()

    def create_payment(self, request: PaymentRequest) -> ProviderPayment:
        to_minor_units(request.amount, request.currency)  # a real provider takes whole minor units
        with self._lock:
            self.requests.append(request)
            known = self._by_key.get(request.idempotency_key)
            if known is not None:
                first, payment_id = known
                if first != request:
                    raise IdempotencyConflict(
                        f"idempotency key {request.idempotency_key!r} was used for another payment request"
                    )
                return self._payments[payment_id]
            payment_id = f"sbx_pay_{len(self._payments) + 1:06d}"
            payment = ProviderPayment(
                provider=self.name,
                provider_payment_id=payment_id,
                idempotency_key=request.idempotency_key,
                status=ProviderPaymentStatus.PENDING,
                amount=request.amount,
                currency=request.currency,
            )
            if request.payment_method_id is None:
                payment = replace(payment, checkout_url=self.CHECKOUT_BASE + payment_id)
            elif request.payment_method_id == self.DECLINED_METHOD:
                payment = replace(
                    payment, status=ProviderPaymentStatus.FAILED, failure_reason="card_declined"
                )
            else:
                payment = replace(payment, status=ProviderPaymentStatus.SUCCEEDED)
            self._payments[payment_id] = payment
            self._by_key[request.idempotency_key] = (request, payment_id)
            return payment

    def get_payment(self, provider_payment_id: str) -> ProviderPayment:
        with self._lock:
            payment = self._payments.get(provider_payment_id)
        if payment is None:
            raise NotFound(f"the sandbox issued no payment {provider_payment_id!r}")
        return payment

    def settle(
        self, provider_payment_id: str, *, succeeded: bool = True, failure_reason: str = "checkout_abandoned"
    ) -> ProviderPayment:
        """End a pending payment's checkout as the customer would: paid (``succeeded=True``) or not
        (failed with ``failure_reason``). :class:`~billingkit.errors.InvalidOperation` when it is
        not pending."""
        with self._lock:
            payment = self._payments.get(provider_payment_id)
            if payment is None:
                raise NotFound(f"the sandbox issued no payment {provider_payment_id!r}")
            if payment.status is not ProviderPaymentStatus.PENDING:
                raise InvalidOperation(
                    f"payment {provider_payment_id} is {payment.status.value}, not pending"
                )
            if succeeded:
                payment = replace(payment, status=ProviderPaymentStatus.SUCCEEDED)
            else:
                payment = replace(payment, status=ProviderPaymentStatus.FAILED, failure_reason=failure_reason)
            self._payments[provider_payment_id] = payment
            return payment

    def refund_payment(self, request: RefundRequest) -> ProviderRefund:
        with self._lock:
            known = self._refunds.get(request.idempotency_key)
            if known is not None:
                if known[0] != request:
                    raise IdempotencyConflict(
                        f"idempotency key {request.idempotency_key!r} was used for another refund request"
                    )
                return known[1]
            payment = self._payments.get(request.provider_payment_id)
            if payment is None:
                raise NotFound(f"the sandbox issued no payment {request.provider_payment_id!r}")
            if payment.status is not ProviderPaymentStatus.SUCCEEDED:
                raise InvalidOperation(
                    f"payment {payment.provider_payment_id} is {payment.status.value}: "
                    "only a succeeded payment is refunded"
                )
            if request.currency.lower() != payment.currency.lower():
                raise ValidationError(
                    f"payment {payment.provider_payment_id} is in {payment.currency.lower()}, "
                    f"not {request.currency.lower()}",
                    field="currency",
                )
            to_minor_units(request.amount, payment.currency)
            refunded = sum(
                (
                    r.amount
                    for _req, r in self._refunds.values()
                    if r.provider_payment_id == payment.provider_payment_id
                ),
                Decimal(0),
            )
            if refunded + request.amount > payment.amount:
                raise InvalidOperation(
                    f"payment {payment.provider_payment_id} took {payment.amount}; {refunded} is "
                    f"refunded already, so {request.amount} more cannot be"
                )
            refund = ProviderRefund(
                provider=self.name,
                provider_refund_id=f"sbx_rfnd_{len(self._refunds) + 1:06d}",
                provider_payment_id=payment.provider_payment_id,
                idempotency_key=request.idempotency_key,
                status=ProviderPaymentStatus.SUCCEEDED,
                amount=request.amount,
                currency=request.currency,
            )
            self._refunds[request.idempotency_key] = (request, refund)
            return refund

    def __repr__(self) -> str:
        return f"SandboxPaymentProvider({len(self._payments)} payments)"
