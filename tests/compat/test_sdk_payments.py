"""Payments, and collecting an invoice, through the official SDK."""

from __future__ import annotations

from decimal import Decimal

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.domain.wallets import Wallet, WalletType
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code
from tests.wallet_reads import add_wallet, ledger


def _invoice(sdk: Flexprice, customer_id: str, amount: str = "100.00") -> str:
    invoice = sdk.invoices.create_invoice(
        customer_id=customer_id,
        currency="usd",
        subtotal=amount,
        total=amount,
        amount_due=amount,
        line_items=[{"amount": amount, "quantity": "1", "display_name": "Service"}],
    )
    assert invoice.id is not None
    return invoice.id


def test_payments(sdk: Flexprice, env: Scoped) -> None:
    customer = sdk.customers.create_customer(external_id="c1", name="Ada")
    invoice_id = _invoice(sdk, customer.id)
    created = known(
        sdk.payments.create_payment(
            amount="60.00",
            currency="usd",
            destination_id=invoice_id,
            destination_type="INVOICE",
            payment_method_type="OFFLINE",
            metadata={"method": "bank_transfer"},
        )
    )
    assert isinstance(created, models.PaymentResponse)
    assert (created.payment_status, created.amount, created.destination_id) == (
        "SUCCEEDED",
        "60.00",
        invoice_id,
    )
    assert created.attempts is not None and [a.attempt_number for a in created.attempts] == [1]
    assert known(sdk.payments.get_payment(id=created.id)).model_dump() == created.model_dump()
    again = sdk.payments.create_payment(
        amount="60",
        currency="usd",
        destination_id=invoice_id,
        destination_type="INVOICE",
        payment_method_type="OFFLINE",
        metadata={"method": "bank_transfer"},
    )
    assert again.id == created.id
    invoice = sdk.invoices.get_invoice(id=invoice_id)
    assert (invoice.payment_status, invoice.amount_paid, invoice.amount_remaining) == (
        "PENDING",
        "60.00",
        "40.00",
    )

    updated = known(sdk.payments.update_payment(id=created.id, metadata={"method": "check"}))
    assert updated.metadata == {"method": "check"}

    later = known(
        sdk.payments.create_payment(
            amount="40.00",
            currency="usd",
            destination_id=invoice_id,
            destination_type="INVOICE",
            payment_method_type="CARD",
            process_payment=False,
        )
    )
    assert later.payment_status == "INITIATED"
    listed = known(sdk.payments.list_payments(destination_id=invoice_id, payment_status="INITIATED"))
    assert isinstance(listed, models.ListPaymentsResponse)
    assert [p.id for p in listed.items or []] == [later.id]
    # A card without a payment method: the customer pays at the provider's checkout.
    pending = known(sdk.payments.process_payment(id=later.id))
    assert (pending.payment_status, pending.payment_gateway) == ("PENDING", "sandbox")
    assert pending.payment_url is not None and pending.payment_url.startswith("https://sandbox.")
    env.billing.providers.payment_provider.settle(pending.gateway_payment_id)  # type: ignore[attr-defined]
    done = known(sdk.payments.process_payment(id=later.id))
    assert done.payment_status == "SUCCEEDED"
    paid = sdk.invoices.get_invoice(id=invoice_id)
    assert (paid.payment_status, paid.amount_paid, paid.amount_remaining) == ("SUCCEEDED", "100.00", "0.00")

    spare = sdk.payments.create_payment(
        amount="1.00",
        currency="usd",
        destination_id=invoice_id,
        destination_type="INVOICE",
        payment_method_type="OFFLINE",
        process_payment=False,
    )
    deleted = sdk.payments.delete_payment(id=spare.id)
    assert deleted.message == "payment deleted successfully"
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.payments.get_payment(id=spare.id)
    assert status_and_code(raised.value) == (404, "not_found")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.payments.delete_payment(id=created.id)
    assert status_and_code(raised.value) == (400, "invalid_operation")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.payments.create_payment(
            amount="5.00",
            currency="usd",
            destination_id=invoice_id,
            destination_type="CUSTOMER",
            payment_method_type="OFFLINE",
        )
    assert status_and_code(raised.value) == (400, "validation_error")


def test_attempt_invoice_payment_draws_a_post_paid_wallet(sdk: Flexprice, env: Scoped) -> None:
    customer = sdk.customers.create_customer(external_id="c1", name="Ada")
    invoice_id = _invoice(sdk, customer.id, "30.00")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.invoices.attempt_invoice_payment(id=invoice_id)
    assert status_and_code(raised.value) == (400, "invalid_operation")
    stamp = env.customers.get(customer.id)
    purse = Wallet(
        id="wallet_post",
        tenant_id=env.tenant_id,
        environment_id=str(env.environment_id),
        created_at=stamp.created_at,
        updated_at=stamp.created_at,
        created_by="test",
        updated_by="test",
        customer_id=customer.id,
        currency="usd",
        wallet_type=WalletType.POST_PAID,
    )
    add_wallet(env, purse, Decimal(50))
    answer = sdk.invoices.attempt_invoice_payment(id=invoice_id)
    assert answer.message == "payment attempt processed successfully"
    invoice = sdk.invoices.get_invoice(id=invoice_id)
    assert (invoice.payment_status, invoice.amount_paid) == ("SUCCEEDED", "30.00")
    # 50 credits - 30 = 20 left on the wallet.
    (wallet,), _ = ledger(env)
    assert wallet.credit_balance == Decimal(20)
    (made,) = sdk.payments.list_payments(destination_id=invoice_id).items or []
    assert (made.payment_method_type, made.payment_method_id) == ("CREDITS", "wallet_post")
