"""The money of a mid-period line change (billingkit.services.change_settlements), on every
store: quoted without writing, settled once per key, never a negative invoice."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from billingkit.domain.invoices import BillingReason, InvoiceType
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.domain.wallets import TransactionReason
from billingkit.ports import UnitOfWork
from billingkit.services.change_settlements import quote_change, settle_change
from billingkit.services.context import Context
from tests.cancellations import FEE, World, june, make_world
from tests.store_rows import every_row


def _world(storage: Any) -> tuple[World, Subscription, str]:
    w = make_world(storage)
    sub = w.subscribe(prices=[FEE])  # 30.00 a month in advance, June is 30 days
    pro = w.s.plans.create(name="Pro", prices=[{**FEE, "amount": "90.00", "display_name": "Pro"}])
    return w, sub, _price_of(w, pro.id)


def _price_of(w: World, plan_id: str) -> str:
    return w.s.prices.list(plan_ids=[plan_id]).items[0].id


def _swap(
    sub: Subscription, price_id: str, *, quantity: int = 1
) -> tuple[SubscriptionLineItem, SubscriptionLineItem]:
    old = sub.line_items[0]
    new = old.model_copy(
        update={
            "id": "subs_line_new",
            "price_id": price_id,
            "start_date": june(16),
            "quantity": Decimal(quantity),
        }
    )
    return old, new


def _settle(
    w: World, sub: Subscription, old: SubscriptionLineItem, new: SubscriptionLineItem, key: str
) -> Any:
    def run(uow: UnitOfWork, ctx: Context) -> Any:
        stored = uow.subscriptions.get(sub.id)
        quote = quote_change(uow, ctx, stored, ended=[old], started=[new], effective=june(16))
        return settle_change(uow, ctx, quote, key=key)

    return w.s.run(run)


def test_an_upgrade_is_one_invoice_with_a_charge_and_a_negative_credit_line(storage: Any) -> None:
    w, sub, pro_price = _world(storage)
    old, new = _swap(sub, pro_price)
    w.clock.set(june(16))
    before = every_row(storage)

    def preview(uow: UnitOfWork, ctx: Context) -> Any:
        return quote_change(
            uow, ctx, uow.subscriptions.get(sub.id), ended=[old], started=[new], effective=june(16)
        )

    quote = w.s.run(preview)
    assert every_row(storage) == before  # quoting writes nothing
    assert (quote.settlement.charge_total, quote.settlement.credit_total) == (
        Decimal("45.00"),
        Decimal("15.00"),
    )

    settled = _settle(w, sub, old, new, "k1")
    invoice = settled.invoice
    assert invoice is not None and settled.transaction is None
    assert (invoice.subtotal, invoice.total, invoice.amount_due) == (Decimal("30.00"),) * 3
    assert invoice.billing_reason is BillingReason.SUBSCRIPTION_UPDATE
    assert invoice.invoice_type is InvoiceType.ONE_OFF
    assert invoice.invoice_number is not None
    assert (invoice.period_start, invoice.period_end) == (june(16), sub.current_period_end)
    assert [(ln.subscription_line_item_id, ln.amount) for ln in invoice.line_items] == [
        ("subs_line_new", Decimal("45.00")),
        (old.id, Decimal("-15.00")),
    ]
    again = _settle(w, sub, old, new, "k1")
    assert again.invoice is not None and again.invoice.id == invoice.id  # the same key: no second invoice
    updates = [i for i in w.invoices(sub) if i.billing_reason is BillingReason.SUBSCRIPTION_UPDATE]
    assert len(updates) == 1


def test_a_downgrade_credits_the_wallet_once(storage: Any) -> None:
    w, sub, _ = _world(storage)
    cheap = w.s.plans.create(name="Lite", prices=[{**FEE, "amount": "10.00", "display_name": "Lite"}])
    cheap_price = _price_of(w, cheap.id)
    old, new = _swap(sub, cheap_price)
    w.clock.set(june(16))
    settled = _settle(w, sub, old, new, "k2")
    assert settled.invoice is None and settled.transaction is not None
    assert settled.transaction.credit_amount == Decimal("10.00")  # 15.00 credit - 5.00 charge
    assert settled.transaction.transaction_reason is TransactionReason.SUBSCRIPTION_CREDIT_GRANT
    _settle(w, sub, old, new, "k2")
    assert [row.credit_amount for row in w.credits()] == [Decimal("10.00")]
    assert not [i for i in w.invoices(sub) if i.billing_reason is BillingReason.SUBSCRIPTION_UPDATE]


def test_a_credit_is_capped_at_what_the_line_paid(storage: Any) -> None:
    w, sub, _ = _world(storage)
    seats = {**FEE, "amount": "10.00", "display_name": "Seat"}
    sub = w.subscribe(prices=[seats])
    old = sub.line_items[0].model_copy(update={"quantity": Decimal(5)})
    w.store(sub, line_items=(old,))
    w.clock.set(june(11))  # a third into the month
    new = old.model_copy(update={"id": "subs_line_8", "quantity": Decimal(8), "start_date": june(11)})

    def run(uow: UnitOfWork, ctx: Context) -> Any:
        stored = uow.subscriptions.get(sub.id)
        quote = quote_change(uow, ctx, stored, ended=[old], started=[new], effective=june(11))
        return quote

    quote = w.s.run(run)
    # 10.00 x 5 seats were billed at opening only if the opening invoice billed 5; it billed 1
    # seat (10.00), so the credit is capped at what was paid for the line: 10.00
    assert quote.settlement.charge_total == Decimal("53.33")
    assert quote.settlement.credit_total == Decimal("10.00")


def test_period_amount_prices_the_whole_quantity(storage: Any) -> None:
    from billingkit.services.change_settlements import period_amount

    w, sub, _ = _world(storage)
    seat = sub.line_items[0].model_copy(update={"quantity": Decimal(3)})

    def run(uow: UnitOfWork, ctx: Context) -> Decimal:
        return period_amount(uow, [seat], "usd")

    assert w.s.run(run) == Decimal("90.00")
