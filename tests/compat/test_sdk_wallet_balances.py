"""A wallet's real-time balance through the official SDK."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import Billing
from billingkit.domain.wallets import TransactionReason, Wallet, movement_key
from billingkit.facade import Scoped
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.context import Context
from tests.compat.conftest import known, status_and_code


def test_the_real_time_balance_deducts_unpaid_invoices_and_current_usage(
    sdk: Flexprice, env: Scoped, billing: Billing
) -> None:
    meter = env.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
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
            },
            {
                "type": "USAGE",
                "billing_model": "FLAT_FEE",
                "amount": "0.1",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ARREAR",
                "meter_id": meter.id,
            },
        ],
    )
    customer = sdk.customers.create_customer(external_id="c1", name="Ada")
    sdk.subscriptions.create_subscription(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )  # the opening invoice: 20.00, unpaid

    def top_up(uow: UnitOfWork, ctx: Context) -> Wallet:
        wallet = wallet_ledger.prepaid_wallet(uow, ctx, customer_id=customer.id, currency="usd")
        return wallet_ledger.credit(
            uow,
            ctx,
            wallet,
            credits=Decimal(100),
            reason=TransactionReason.FREE_CREDIT_GRANT,
            key=movement_key("sdk_top_up", customer.id),
        ).wallet

    wallet = env.run(top_up)
    now = billing.clock.now()
    env.events.ingest_bulk(
        [
            {
                "event_name": "api",
                "external_customer_id": "c1",
                "timestamp": (now + timedelta(minutes=i)).isoformat(),
                "event_id": f"e{i}",
            }
            for i in range(150)
        ]
    )  # 150 x 0.10 = 15.00 so far this period
    billing.clock.set(now + timedelta(days=3))

    answer = known(sdk.wallets.get_wallet_balance(id=wallet.id))
    assert isinstance(answer, models.WalletBalanceResponse)
    assert (answer.id, answer.customer_id, answer.currency, answer.wallet_type) == (
        wallet.id,
        customer.id,
        "usd",
        "PRE_PAID",
    )
    # 100.00 - 20.00 unpaid - 15.00 usage = 65.00
    assert (answer.balance, answer.unpaid_invoices_amount, answer.current_period_usage) == (
        "100.00",
        "20.00",
        "15.00",
    )
    assert (answer.real_time_balance, answer.real_time_credit_balance) == ("65.00", "65")
    assert answer.is_cached_fallback is False
    assert answer.config is not None and answer.config.allowed_price_types == ["ALL"]

    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.wallets.get_wallet_balance(id="wallet_missing")
    assert status_and_code(raised.value) == (404, "not_found")
