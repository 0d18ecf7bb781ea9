"""Prepaid credits on direct invoices and previews, through the library, on every store.

A ONE_OFF invoice is paid by the customer's PRE_PAID credits when it is created (reference notes
§4.6); a CREDIT invoice (a wallet purchase) never is; a preview shows credits and debits nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.invoices import PaymentStatus
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionType,
    Wallet,
    WalletPriceType,
    WalletTransaction,
    movement_key,
)
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.context import Context

D = Decimal
START = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def env(storage: Any) -> Scoped:
    billing = Billing(storage, TestClock(START))
    setup = billing.bootstrap()
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


def fund(
    env: Scoped, customer_id: str, credits: str, *, allowed: WalletPriceType = WalletPriceType.ALL
) -> Wallet:
    def run(uow: UnitOfWork, ctx: Context) -> Wallet:
        wallet = wallet_ledger.prepaid_wallet(
            uow, ctx, customer_id=customer_id, currency="usd", allowed_price_types=(allowed,)
        )
        return wallet_ledger.credit(
            uow,
            ctx,
            wallet,
            credits=D(credits),
            reason=TransactionReason.FREE_CREDIT_GRANT,
            key=movement_key("test_top_up", customer_id, credits),
        ).wallet

    return env.run(run)


def rows(env: Scoped, wallet_id: str) -> list[WalletTransaction]:
    from billingkit.domain.queries import Filter, ListQuery, Op

    query = ListQuery(filters=(Filter("wallet_id", Op.EQ, wallet_id),), limit=100)
    return env.run(lambda uow, ctx: list(uow.wallet_transactions.list(query).items))


def balance(env: Scoped, wallet_id: str) -> Decimal:
    return env.run(lambda uow, ctx: uow.wallets.get(wallet_id)).credit_balance


def one_off(env: Scoped, customer_id: str, **fields: Any) -> Any:
    body: dict[str, Any] = {
        "customer_id": customer_id,
        "currency": "usd",
        "line_items": [{"amount": "100.00", "quantity": "1", "display_name": "Setup"}],
        "tax_rates": ["VAT20"],
        # The caller's figures are before prepaid credits: 100.00 + 20 % tax.
        "subtotal": "100.00",
        "total": "120.00",
        "amount_due": "120.00",
    }
    return env.invoices.create(**{**body, **fields})


def test_a_one_off_invoice_is_paid_by_credits_on_its_lines_not_its_tax(env: Scoped) -> None:
    env.tax_rates.create(name="VAT", code="VAT20", tax_rate_type="percentage", percentage_value="20")
    customer = env.customers.create(external_id="c1", name="Ada")
    wallet = fund(env, customer.id, "50")

    invoice = one_off(env, customer.id, idempotency_key="setup-1")
    # 100.00 + 20.00 tax (credits do not lower the base) - 50.00 credits = 70.00
    assert (invoice.total_tax, invoice.total_prepaid_credits_applied, invoice.total, invoice.amount_due) == (
        D("20.00"),
        D("50.00"),
        D("70.00"),
        D("70.00"),
    )
    assert invoice.line_items[0].prepaid_credits_applied == D("50.00")
    assert (invoice.amount_remaining, invoice.payment_status) == (D("70.00"), PaymentStatus.PENDING)
    (debit,) = [r for r in rows(env, wallet.id) if r.type is TransactionType.DEBIT]
    assert (debit.credit_amount, debit.reference_id, debit.transaction_reason) == (
        D(50),
        invoice.id,
        TransactionReason.CREDIT_ADJUSTMENT,
    )
    assert balance(env, wallet.id) == D(0)

    # The same request again answers the same invoice and debits nothing more.
    assert one_off(env, customer.id, idempotency_key="setup-1").id == invoice.id
    assert len(rows(env, wallet.id)) == 2


def test_a_wrong_total_prepaid_applied_is_refused_and_nothing_is_written(env: Scoped) -> None:
    env.tax_rates.create(name="VAT", code="VAT20", tax_rate_type="percentage", percentage_value="20")
    customer = env.customers.create(external_id="c1", name="Ada")
    wallet = fund(env, customer.id, "30")
    with pytest.raises(ValidationError) as caught:
        one_off(env, customer.id, total_prepaid_applied="0")
    assert (caught.value.field, caught.value.details["computed"]) == ("total_prepaid_applied", "30.00")
    assert env.invoices.list().total == 0
    assert len(rows(env, wallet.id)) == 1 and balance(env, wallet.id) == D(30)
    invoice = one_off(env, customer.id, total_prepaid_applied="30")
    assert invoice.amount_due == D("90.00")


def test_usage_only_credits_and_credit_invoices_pay_nothing(env: Scoped) -> None:
    env.tax_rates.create(name="VAT", code="VAT20", tax_rate_type="percentage", percentage_value="20")
    usage_only = env.customers.create(external_id="u", name="U")
    wallet = fund(env, usage_only.id, "50", allowed=WalletPriceType.USAGE)
    invoice = one_off(env, usage_only.id)  # a line without a price type counts as FIXED
    assert (invoice.total_prepaid_credits_applied, invoice.amount_due) == (D("0"), D("120.00"))

    everything = env.customers.create(external_id="a", name="A")
    funded = fund(env, everything.id, "50")
    purchase = one_off(env, everything.id, invoice_type="CREDIT")
    assert (purchase.total_prepaid_credits_applied, purchase.amount_due) == (D("0"), D("120.00"))
    assert [len(rows(env, w.id)) for w in (wallet, funded)] == [1, 1]


def test_a_preview_shows_credits_and_debits_nothing(env: Scoped) -> None:
    customer = env.customers.create(external_id="c1", name="Ada")
    plan = env.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "20",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    sub = env.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    wallet = fund(env, customer.id, "15")
    preview = env.invoices.preview(sub.id)  # next period's 20.00 fee
    assert (preview.subtotal, preview.total_prepaid_credits_applied, preview.amount_due) == (
        D("20.00"),
        D("15.00"),
        D("5.00"),
    )
    assert len(rows(env, wallet.id)) == 1 and balance(env, wallet.id) == D(15)


def test_the_opening_invoice_is_paid_by_credits_held_before_the_subscription(env: Scoped) -> None:
    customer = env.customers.create(external_id="c1", name="Ada")
    wallet = fund(env, customer.id, "15")
    plan = env.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "20",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    sub = env.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    (opening,) = env.invoices.list(subscription_id=sub.id).items
    assert (opening.total_prepaid_credits_applied, opening.amount_due) == (D("15.00"), D("5.00"))
    assert balance(env, wallet.id) == D(0)
