"""A plan's recurring credit grant over three billing periods, on every store (memory, SQLite,
PostgreSQL), through the public API with a test clock.

Plan Pro: 20.00 a month in advance, 0.10 an API call in arrears, and 100 credits every month that
expire with the billing period (``BILLING_CYCLE``). Ada subscribes on 15 Jan 2024 10:00 UTC; her
periods are [15 Jan, 15 Feb), [15 Feb, 15 Mar), [15 Mar, 15 Apr). At each period start she is
granted 100 credits expiring at that period's end. Each period's usage invoice, issued at the
period's end, is paid by that period's credits (the USAGE line only: the wallet the grant made
allows USAGE prices), and what is left of them expires then:

    period 1: 300 calls = 30.00 -> 30 credits paid, 20.00 (next month's fee) due, 70 credits expire
    period 2: 450 calls = 45.00 -> 45 credits paid, 20.00 due, 55 credits expire
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from billingkit import Billing, TestClock
from billingkit.domain.credit_grant_applications import ApplicationReason, ApplicationStatus
from billingkit.domain.queries import ListQuery, Sort
from billingkit.domain.wallets import TransactionReason, TransactionType, WalletPriceType, WalletType


def at(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2024, month, day, hour, tzinfo=UTC)


D = Decimal
P1, P2, P3, P4 = at(1, 15, 10), at(2, 15, 10), at(3, 15, 10), at(4, 15, 10)


def test_a_monthly_grant_gives_100_credits_each_period_expiring_with_it(storage: Any) -> None:
    clock = TestClock(P1)
    billing = Billing(storage, clock, renewal_notice=None)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    monthly = {"currency": "usd", "billing_period": "MONTHLY"}
    plan = s.plans.create(
        name="Pro",
        prices=[
            {
                **monthly,
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "20",
                "invoice_cadence": "ADVANCE",
            },
            {
                **monthly,
                "type": "USAGE",
                "billing_model": "FLAT_FEE",
                "amount": "0.10",
                "invoice_cadence": "ARREAR",
                "meter_id": meter.id,
            },
        ],
        credit_grants=[
            {
                "name": "Monthly credits",
                "credits": "100",
                "cadence": "RECURRING",
                "period": "MONTHLY",
                "expiration_type": "BILLING_CYCLE",
            }
        ],
    )
    ada = s.customers.create(external_id="ada", name="Ada")
    sub = s.subscriptions.create(
        customer_id=ada.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )

    def calls(count: int, start: datetime, tag: str) -> None:
        s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": "ada",
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{tag}{i}",
                }
                for i in range(count)
            ]
        )

    calls(300, P1 + timedelta(days=1), "a")  # 30.00 of usage in the first period
    for start, count, tag in ((P2, 450, "b"), (P3, 120, "c")):
        clock.set(start)
        assert billing.run_due().failures == []
        calls(count, start + timedelta(days=1), tag)
    clock.set(P3 + timedelta(days=10))
    assert billing.run_due().failures == []  # nothing more is due before 15 Apr

    # One application per period start, each applied at that instant; the fourth waits for 15 Apr.
    cgas = sorted(s.credit_grants.applications(subscription_ids=[sub.id]).items, key=lambda c: c.period_start)
    assert [
        (c.period_start, c.period_end, c.application_status, c.application_reason, c.applied_at, c.credits)
        for c in cgas
    ] == [
        (P1, P2, ApplicationStatus.APPLIED, ApplicationReason.FIRST_TIME_RECURRING, P1, D(100)),
        (P2, P3, ApplicationStatus.APPLIED, ApplicationReason.RECURRING, P2, D(100)),
        (P3, P4, ApplicationStatus.APPLIED, ApplicationReason.RECURRING, P3, D(100)),
        (P4, at(5, 15, 10), ApplicationStatus.PENDING, ApplicationReason.RECURRING, None, D(100)),
    ]
    assert [c.id for c in s.subscriptions.upcoming_grants(sub.id)] == [cgas[3].id]

    # Ada's prepaid wallet (made by the first grant: USAGE prices only) holds one credit row per
    # period, each expiring at its period's end and naming its application.
    with billing.storage.unit_of_work(s.tenant_id, s.environment_id) as uow:
        (wallet,) = uow.wallets.list(ListQuery(limit=10)).items
        order = (Sort("created_at", descending=False), Sort("id", descending=False))
        rows = uow.wallet_transactions.list(ListQuery(sort=order, limit=100)).items
    assert (wallet.customer_id, wallet.currency, wallet.wallet_type) == (ada.id, "usd", WalletType.PRE_PAID)
    assert wallet.config.allowed_price_types == (WalletPriceType.USAGE,)
    grants = [row for row in rows if row.transaction_reason is TransactionReason.SUBSCRIPTION_CREDIT_GRANT]
    assert [(row.type, row.credit_amount, row.amount, row.created_at, row.expiry_date) for row in grants] == [
        (TransactionType.CREDIT, D(100), D("100.00"), P1, P2),
        (TransactionType.CREDIT, D(100), D("100.00"), P2, P3),
        (TransactionType.CREDIT, D(100), D("100.00"), P3, P4),
    ]
    assert [row.id for row in grants] == [c.wallet_transaction_id for c in cgas[:3]]
    assert [row.reference_id for row in grants] == [c.id for c in cgas[:3]]

    # The usage invoices of periods 1 and 2 were paid by their periods' credits.
    closing = sorted(
        (
            i
            for i in s.invoices.list(subscription_id=sub.id).items
            if i.billing_reason == "SUBSCRIPTION_CYCLE" and i.period_start in (P1, P2)
        ),
        key=lambda i: i.period_start,
    )
    assert [(i.period_start, i.subtotal, i.total_prepaid_credits_applied, i.amount_due) for i in closing] == [
        (P1, D("50.00"), D("30.00"), D("20.00")),
        (P2, D("65.00"), D("45.00"), D("20.00")),
    ]
    usage_lines = [line for i in closing for line in i.line_items if line.price_type == "USAGE"]
    assert [(line.amount, line.prepaid_credits_applied) for line in usage_lines] == [
        (D("30.00"), D("30.00")),
        (D("45.00"), D("45.00")),
    ]

    # What the periods left waits: an unpaid invoice covers each grant's creation, so its expiry is
    # postponed (reference notes §6.2). Once Ada pays, the worker expires it.
    def debits() -> list[tuple[TransactionReason, Decimal, str | None]]:
        with billing.storage.unit_of_work(s.tenant_id, s.environment_id) as uow:
            found = uow.wallet_transactions.list(ListQuery(sort=order, limit=100)).items
        return [
            (row.transaction_reason, row.credit_amount, row.source_transaction_id)
            for row in found
            if row.type is TransactionType.DEBIT
        ]

    assert debits() == [
        (TransactionReason.CREDIT_ADJUSTMENT, D(30), grants[0].id),
        (TransactionReason.CREDIT_ADJUSTMENT, D(45), grants[1].id),
    ]
    assert s.wallets.real_time_balance(wallet.id).wallet.credit_balance == D(225)  # 100 + 70 + 55 waiting
    for invoice in s.invoices.list(subscription_id=sub.id).items:
        if invoice.amount_remaining > 0:
            s.invoices.update_payment(invoice.id, payment_status="SUCCEEDED")
    clock.advance(minutes=30)
    assert billing.run_due().failures == []
    assert debits()[2:] == [
        (TransactionReason.CREDIT_EXPIRED, D(70), grants[0].id),
        (TransactionReason.CREDIT_EXPIRED, D(55), grants[1].id),
    ]
    assert s.wallets.real_time_balance(wallet.id).wallet.credit_balance == D(100)  # the third period's
