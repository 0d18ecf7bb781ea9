"""The shipped payment provider contract, run on the sandbox and on Razorpay (through the local
fake of its API: real HTTP, Razorpay's wire format)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from billingkit import SandboxPaymentProvider
from billingkit.testing.contracts.payment_provider import PaymentProviderContract, PaymentProviderHarness
from billingkit.testing.razorpay_fake import RazorpayFake


class TestSandboxContract(PaymentProviderContract):
    @pytest.fixture
    def payment_provider_harness(self) -> PaymentProviderHarness:
        sandbox = SandboxPaymentProvider()
        return PaymentProviderHarness(
            provider=sandbox,
            method_id="pm_card",
            declined_method_id=SandboxPaymentProvider.DECLINED_METHOD,
            unknown_payment_id="sbx_pay_999999",
            pay_checkout=sandbox.settle,
        )


class TestRazorpayContract(PaymentProviderContract):
    @pytest.fixture
    def payment_provider_harness(self) -> Iterator[PaymentProviderHarness]:
        with RazorpayFake() as fake:
            fake.decline_token("token_declined")
            yield PaymentProviderHarness(
                provider=fake.provider(),
                method_id="token_F0000000000001",
                declined_method_id="token_declined",
                unknown_payment_id="pay_F9999999999999",
                pay_checkout=fake.pay_link,
            )
