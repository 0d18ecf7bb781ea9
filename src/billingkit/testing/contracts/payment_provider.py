"""The payment provider contract: what every ``ports.PaymentProvider`` must do, whoever it talks to.

Subclass :class:`PaymentProviderContract` and provide one fixture, ``payment_provider_harness``,
returning a fresh :class:`PaymentProviderHarness` (a provider with nothing charged yet, and the few
things only its test setup knows)::

    import pytest
    from billingkit import SandboxPaymentProvider
    from billingkit.testing.contracts.payment_provider import (
        PaymentProviderContract,
        PaymentProviderHarness,
    )

    class TestSandbox(PaymentProviderContract):
        @pytest.fixture
        def payment_provider_harness(self):
            sandbox = SandboxPaymentProvider()
            return PaymentProviderHarness(
                provider=sandbox,
                method_id="pm_card",
                declined_method_id=SandboxPaymentProvider.DECLINED_METHOD,
                unknown_payment_id="sbx_pay_999999",
                pay_checkout=sandbox.settle,
            )

The cases: a saved method is charged at once; a declined one fails with a reason; without a
method the payment is pending behind a checkout URL until the customer pays; one idempotency key
is one payment (another request under it is :class:`IdempotencyConflict`); amounts finer than the
currency's minor unit are refused; refunds stay within what the payment took, one key is one
refund, only a succeeded payment is refunded; unknown ids are :class:`NotFound`.

Needs pytest (extra ``testing``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import pytest

from billingkit.domain.gateways import (
    PaymentRequest,
    ProviderPayment,
    ProviderPaymentStatus,
    RefundRequest,
)
from billingkit.errors import IdempotencyConflict, InvalidOperation, NotFound, ValidationError
from billingkit.ports import PaymentProvider

__all__ = ["PaymentProviderContract", "PaymentProviderHarness"]

PENDING, SUCCEEDED, FAILED = ProviderPaymentStatus


@dataclass(frozen=True)
class PaymentProviderHarness:
    """A provider under test and what its setup knows.

    ``method_id`` is a saved payment method that pays; ``declined_method_id`` one that is declined;
    ``unknown_payment_id`` an id in the provider's format that it never issued; ``pay_checkout``
    makes the customer pay the pending checkout payment with the given provider payment id;
    ``currency`` is the currency the cases charge in (two decimal places)."""

    provider: PaymentProvider
    method_id: str
    declined_method_id: str
    unknown_payment_id: str
    pay_checkout: Callable[[str], object]
    currency: str = "usd"


class PaymentProviderContract:
    """Subclass and provide a ``payment_provider_harness`` fixture (see the module docstring)."""

    @staticmethod
    def _request(
        h: PaymentProviderHarness, key: str, amount: str = "12.50", method: str | None = None
    ) -> PaymentRequest:
        return PaymentRequest(
            idempotency_key=key,
            amount=Decimal(amount),
            currency=h.currency,
            customer_id="cust_contract",
            payment_method_id=method,
            description="contract case",
            metadata={"case": key},
        )

    def _paid(self, h: PaymentProviderHarness, key: str, amount: str = "10.00") -> ProviderPayment:
        payment = h.provider.create_payment(self._request(h, key, amount, h.method_id))
        assert payment.status is SUCCEEDED
        return payment

    def _refund(self, h: PaymentProviderHarness, key: str, payment_id: str, amount: str) -> RefundRequest:
        return RefundRequest(
            idempotency_key=key, provider_payment_id=payment_id, amount=Decimal(amount), currency=h.currency
        )

    # -- charging -----------------------------------------------------------------------------------
    def test_a_saved_method_is_charged_at_once(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        payment = h.provider.create_payment(self._request(h, "pay-1", "12.50", h.method_id))
        assert (payment.provider, payment.idempotency_key, payment.status) == (
            h.provider.name,
            "pay-1",
            SUCCEEDED,
        )
        assert (payment.amount, payment.currency.lower()) == (Decimal("12.50"), h.currency.lower())
        assert (payment.checkout_url, payment.failure_reason) == (None, None)
        assert h.provider.get_payment(payment.provider_payment_id) == payment

    def test_a_declined_method_fails_with_a_reason(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        payment = h.provider.create_payment(self._request(h, "pay-declined", "12.50", h.declined_method_id))
        assert payment.status is FAILED
        assert payment.failure_reason
        assert h.provider.get_payment(payment.provider_payment_id).status is FAILED

    def test_without_a_method_the_customer_pays_through_a_checkout_url(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        pending = h.provider.create_payment(self._request(h, "checkout-1", "20.00"))
        assert pending.status is PENDING
        assert pending.checkout_url is not None and pending.checkout_url.startswith(("https://", "http://"))
        assert h.provider.get_payment(pending.provider_payment_id) == pending
        h.pay_checkout(pending.provider_payment_id)
        paid = h.provider.get_payment(pending.provider_payment_id)
        assert (paid.status, paid.amount, paid.checkout_url) == (
            SUCCEEDED,
            Decimal("20.00"),
            pending.checkout_url,
        )

    def test_one_idempotency_key_is_one_payment(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        first = h.provider.create_payment(self._request(h, "pay-once", "12.50", h.method_id))
        again = h.provider.create_payment(self._request(h, "pay-once", "12.50", h.method_id))
        assert again == first
        checkout = h.provider.create_payment(self._request(h, "checkout-once", "5.00"))
        assert h.provider.create_payment(self._request(h, "checkout-once", "5.00")) == checkout
        with pytest.raises(IdempotencyConflict):
            h.provider.create_payment(self._request(h, "pay-once", "99.00", h.method_id))
        with pytest.raises(IdempotencyConflict):
            h.provider.create_payment(self._request(h, "checkout-once", "5.00", h.method_id))

    def test_an_amount_finer_than_the_minor_unit_is_refused(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        with pytest.raises(ValidationError) as refused:
            h.provider.create_payment(self._request(h, "pay-fine", "12.505", h.method_id))
        assert refused.value.field == "amount"
        # Nothing was made under the key: the right amount is one fresh payment.
        assert (
            h.provider.create_payment(self._request(h, "pay-fine", "12.50", h.method_id)).status is SUCCEEDED
        )

    # -- refunds ------------------------------------------------------------------------------------
    def test_refunds_stay_within_what_the_payment_took(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        payment = self._paid(h, "pay-refunds", "10.00")
        first = h.provider.refund_payment(self._refund(h, "rf-1", payment.provider_payment_id, "4.00"))
        assert (first.provider, first.provider_payment_id, first.idempotency_key) == (
            h.provider.name,
            payment.provider_payment_id,
            "rf-1",
        )
        assert (first.status, first.amount, first.currency.lower()) == (
            SUCCEEDED,
            Decimal("4.00"),
            h.currency,
        )
        with pytest.raises(InvalidOperation):
            h.provider.refund_payment(self._refund(h, "rf-2", payment.provider_payment_id, "7.00"))
        rest = h.provider.refund_payment(self._refund(h, "rf-3", payment.provider_payment_id, "6.00"))
        assert (rest.status, rest.amount) == (SUCCEEDED, Decimal("6.00"))
        assert rest.provider_refund_id != first.provider_refund_id
        with pytest.raises(InvalidOperation):
            h.provider.refund_payment(self._refund(h, "rf-4", payment.provider_payment_id, "0.01"))

    def test_one_idempotency_key_is_one_refund(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        payment = self._paid(h, "pay-refund-once", "10.00")
        request = self._refund(h, "rf-once", payment.provider_payment_id, "3.00")
        first = h.provider.refund_payment(request)
        assert h.provider.refund_payment(request) == first
        with pytest.raises(IdempotencyConflict):
            h.provider.refund_payment(self._refund(h, "rf-once", payment.provider_payment_id, "4.00"))
        # The repeat refunded nothing more: exactly 7.00 is left.
        assert h.provider.refund_payment(
            self._refund(h, "rf-rest", payment.provider_payment_id, "7.00")
        ).amount == (Decimal("7.00"))
        with pytest.raises(InvalidOperation):
            h.provider.refund_payment(self._refund(h, "rf-more", payment.provider_payment_id, "0.01"))

    def test_only_a_succeeded_payment_is_refunded(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        declined = h.provider.create_payment(self._request(h, "pay-no", "10.00", h.declined_method_id))
        pending = h.provider.create_payment(self._request(h, "checkout-no", "10.00"))
        for payment in (declined, pending):
            with pytest.raises(InvalidOperation):
                h.provider.refund_payment(
                    self._refund(h, f"rf-{payment.provider_payment_id}", payment.provider_payment_id, "1.00")
                )

    def test_a_paid_checkout_is_refunded(self, payment_provider_harness: PaymentProviderHarness) -> None:
        h = payment_provider_harness
        pending = h.provider.create_payment(self._request(h, "checkout-refund", "8.00"))
        h.pay_checkout(pending.provider_payment_id)
        refund = h.provider.refund_payment(
            self._refund(h, "rf-checkout", pending.provider_payment_id, "8.00")
        )
        assert (refund.status, refund.amount, refund.provider_payment_id) == (
            SUCCEEDED,
            Decimal("8.00"),
            pending.provider_payment_id,
        )

    def test_a_refund_in_another_currency_is_refused(
        self, payment_provider_harness: PaymentProviderHarness
    ) -> None:
        h = payment_provider_harness
        payment = self._paid(h, "pay-currency", "10.00")
        other = "eur" if h.currency.lower() != "eur" else "usd"
        with pytest.raises(ValidationError) as refused:
            h.provider.refund_payment(
                RefundRequest("rf-currency", payment.provider_payment_id, Decimal("1.00"), other)
            )
        assert refused.value.field == "currency"

    # -- ids ----------------------------------------------------------------------------------------
    def test_unknown_ids_are_not_found(self, payment_provider_harness: PaymentProviderHarness) -> None:
        h = payment_provider_harness
        with pytest.raises(NotFound):
            h.provider.get_payment(h.unknown_payment_id)
        with pytest.raises(NotFound):
            h.provider.refund_payment(self._refund(h, "rf-unknown", h.unknown_payment_id, "1.00"))
