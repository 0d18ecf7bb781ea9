"""The money of a mid-period change of a subscription's lines: quoted without writing, then
settled once (reference notes §3.1, §3.4).

Every change that ends lines and starts others at one instant (a plan change in place, a quantity
change) goes through here:

1. :func:`quote_change` (reads only; previews stop here): each ended recurring ADVANCE fee is
   credited ``price x old quantity x remaining / period`` (by seconds), capped at what the
   subscription's invoices of the current period charged for it, less earlier credits
   (:func:`billingkit.services.line_billing.paid_for_lines`); each started one is charged ``price x
   new quantity x remaining / period``; both through :mod:`billingkit.domain.proration` (any
   billing model: tiers and packages priced on the whole quantity first). The lines are netted by
   :func:`billingkit.domain.change_settlement.settle` with the subscription's tax rates and the
   customer's prepaid credits. ARREAR and usage lines move no money now: the period's invoice bills
   them for the time each line covered. A subscription not billing yet (trialing, draft) moves none.
   A first stub of a subscription that prorates its stubs (``create_prorations``: its invoice
   charged ``price x stub / full period``) is measured against the full billing period it is cut
   from, as that invoice was: 31.00 a month on a ``[15 Mar, 1 Apr)`` stub, changed on 20 Mar,
   credits 31.00 x 12/31 = 12.00 of the 17.00 paid. ``in_full`` lines are charged from their own
   start, not from ``effective``: a one-time (``ONETIME``) fee its whole price, a recurring one
   the part of the period it covers (a ``onetime`` add-on's fee: the whole period).
2. :func:`settle_change` (writes): ``net > 0`` -> one ``ONE_OFF`` invoice, billing reason
   ``SUBSCRIPTION_UPDATE``, period ``[effective, current period end)``, with the charge lines and the
   credits as negative lines, finalized at once; ``net < 0`` -> ``-net`` into the customer's
   PRE_PAID wallet (reason ``SUBSCRIPTION_CREDIT_GRANT``; no credit note, never a negative invoice);
   ``net = 0`` -> nothing. The caller's ``key`` names the invoice (``idempotency_key``
   ``subscription_change|<key>``, :func:`settlement_key`) or the wallet movement: settling the
   same key again finds the first and moves nothing.

Example (by seconds): 30.00 -> 90.00 a month, changed at the middle of a 30-day period: credit
15.00, charge 45.00, one invoice of 30.00 net. 90.00 -> 30.00: 30.00 into the wallet, no invoice.
A credit line carries the ended line's id, so what that line counts as paid for the period drops
by the credit: no later change or cancellation can credit the same time twice.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from billingkit.domain.catalog import Price
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.change_settlement import ChangeLine, Settlement, settle
from billingkit.domain.invoices import (
    BillingReason,
    Invoice,
    InvoiceLineItem,
    InvoiceStatus,
    InvoiceType,
    PaymentStatus,
    due_date,
)
from billingkit.domain.line_item_rules import is_one_time, is_recurring_advance_fee, started_by
from billingkit.domain.money import ZERO, round_money
from billingkit.domain.periods import InvoiceCadence, Period
from billingkit.domain.pricing import price_quantity
from billingkit.domain.proration import (
    ProratedItem,
    ProrationKind,
    ProrationLine,
    prorate_charge,
    prorate_credit,
    stub_reference_period,
)
from billingkit.domain.subscriptions import ProrationBehavior, Subscription, SubscriptionLineItem
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    WalletTransaction,
    movement_key,
)
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications, wallet_ledger
from billingkit.services.context import Context
from billingkit.services.grouped_billing import check_settled_alone
from billingkit.services.invoice_adjustments import AppliedTaxRate, tax_application_records
from billingkit.services.invoice_credits import InvoiceCredits, load_invoice_credits, record_debits
from billingkit.services.invoice_issuing import invoice_event, number_invoices
from billingkit.services.line_billing import paid_for_lines
from billingkit.services.tax_resolution import load_subscription_tax_rates

__all__ = [
    "CHANGE_CAUSE",
    "WALLET_NAME",
    "ChangeQuote",
    "SettledChange",
    "change_invoice",
    "period_amount",
    "quote_change",
    "settle_change",
    "settlement_key",
]

#: The cause of a change's invoice key and wallet movement key: ``subscription_change|<key>``.
CHANGE_CAUSE = "subscription_change"
#: The name of the PRE_PAID wallet made for a net credit when the customer has none.
WALLET_NAME = "Proration Credit Wallet"


def settlement_key(key: str) -> str:
    """The idempotency key of the invoice or wallet movement settling the change named ``key``:
    ``subscription_change|<key>``. ``key`` may itself be ``|``-separated parts (``addon_charge|
    <association>``); each part non-empty and without ``|`` (``ValidationError`` otherwise)."""
    return movement_key(CHANGE_CAUSE, *key.split("|"))


@dataclass(frozen=True, slots=True)
class ChangeQuote:
    """What a change of ``subscription``'s lines at ``effective`` moves (see the module doc):
    ``settlement`` nets the ``charges`` and ``credits`` of its lines over ``period`` (the current
    billing period). ``credits_source``: the prepaid credits ``settlement`` was paid from, for
    :func:`settle_change` to debit; ``tax_rates``: the rates it was taxed with."""

    subscription: Subscription
    effective: datetime
    period: Period
    settlement: Settlement
    credits_source: InvoiceCredits
    tax_rates: tuple[AppliedTaxRate, ...] = ()

    @property
    def charges(self) -> tuple[ChangeLine, ...]:
        return self.settlement.charges

    @property
    def credits(self) -> tuple[ChangeLine, ...]:
        return self.settlement.credits


def _line(
    kind: ProrationKind,
    line: SubscriptionLineItem,
    price: Price,
    prorated: ProrationLine,
    start: datetime,
    end: datetime,
    *,
    whole: bool = False,
) -> ChangeLine:
    name = line.display_name or price.display_name or line.plan_display_name or line.price_id
    verb = "Remaining time on " if kind is ProrationKind.CHARGE else "Unused time on "
    return ChangeLine(
        kind=kind,
        line_item_id=line.id,
        price_id=line.price_id,
        display_name=name if whole else f"{verb}{name}",
        quantity=line.quantity,
        amount=prorated.amount,
        full_amount=prorated.full_amount,
        period_start=start,
        period_end=end,
        trace=prorated.trace(),
    )


def _prices(uow: UnitOfWork, lines: Sequence[SubscriptionLineItem]) -> dict[str, Price]:
    prices = {price.id: price for price in uow.prices.find_many({line.price_id for line in lines})}
    for line in lines:
        if line.price_id not in prices:
            raise ValidationError(
                f"price {line.price_id} of line item {line.id} is missing", field="price_id"
            )
    return prices


def period_amount(uow: UnitOfWork, lines: Sequence[SubscriptionLineItem], currency: str) -> Decimal:
    """What ``lines`` cost for one whole billing period: the sum over their recurring FIXED lines
    (either cadence) of the price applied to the quantity (any billing model), rounded once.
    What a plan change is classified by (``upgrade`` when the target lines cost more than the
    current ones, :func:`billingkit.domain.subscription_changes.classify_change`). Usage lines
    count nothing: their cost is not known before the usage is."""
    fixed = [line for line in lines if line.price_type is PriceType.FIXED and not is_one_time(line)]
    prices = _prices(uow, fixed)
    total = sum(
        (price_quantity(prices[line.price_id].to_spec(), line.quantity).unrounded_amount for line in fixed),
        ZERO,
    )
    return round_money(total, currency)


def quote_change(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    *,
    ended: Sequence[SubscriptionLineItem],
    started: Sequence[SubscriptionLineItem],
    effective: datetime,
    prorate: bool = True,
    in_full: Collection[str] = (),
    use_credits: bool = True,
) -> ChangeQuote:
    """What ending ``ended`` (as they were before the change) and starting ``started`` (as they
    will be) at ``effective`` moves, for stored ``sub`` (see the module doc). Writes nothing.
    ``prorate`` False (``proration_behavior: none``), an ``effective`` outside the current period,
    or a subscription that is not billing yet: nothing moves. ``in_full``: ids of started lines
    charged from their own start (a ``ONETIME`` FIXED ADVANCE one in full). ``use_credits`` False:
    the customer's prepaid credits are not drawn (a checkout's invoice is paid whole at the
    provider). ``InvalidOperation`` for a grouped child (its parent's invoices bill its lines)."""
    period = Period(sub.current_period_start, sub.current_period_end)
    nothing = ChangeQuote(sub, effective, period, settle((), (), currency=sub.currency), InvoiceCredits())
    if not prorate or not started_by(sub) or not period.start <= effective < period.end:
        return nothing
    ending = [line for line in ended if is_recurring_advance_fee(line) and _covers(line, effective, period)]
    starting = [line for line in started if _charged(line, in_full) and _live_in(line, period)]
    if not ending and not starting:
        return nothing
    check_settled_alone(sub)
    prices = _prices(uow, [*ending, *starting])
    basis = _measure(sub, period)
    credits: list[ChangeLine] = []
    if ending:
        paid = paid_for_lines(uow, sub, period)
        for line in ending:
            item = ProratedItem(prices[line.price_id].to_spec(), line.quantity, InvoiceCadence.ADVANCE)
            credit = prorate_credit(item, basis, effective, amount_billed=paid.get(line.id, ZERO))
            if credit is not None and credit.amount > ZERO:
                credits.append(
                    _line(ProrationKind.CREDIT, line, prices[line.price_id], credit, effective, period.end)
                )
    charges: list[ChangeLine] = []
    for line in starting:
        whole = line.id in in_full
        start = max(period.start if whole else effective, line.start_date or effective)
        at = basis.start if is_one_time(line) else start
        item = ProratedItem(prices[line.price_id].to_spec(), line.quantity, InvoiceCadence.ADVANCE)
        charge = prorate_charge(item, basis, at)
        if charge is not None and charge.amount > ZERO:
            price = prices[line.price_id]
            charges.append(_line(ProrationKind.CHARGE, line, price, charge, start, period.end, whole=whole))
    rates = load_subscription_tax_rates(uow, [sub], at=ctx.now).get(sub.id, ())
    source = (
        load_invoice_credits(uow, [sub.billed_customer_id]) if charges and use_credits else InvoiceCredits()
    )
    settlement = settle(
        charges,
        credits,
        currency=sub.currency,
        tax_rates=[applied.rate.to_core() for applied in rates],
        credit_sources=source.sources(sub.billed_customer_id, sub.currency),
        as_of=ctx.now,
    )
    return ChangeQuote(sub, effective, period, settlement, source, rates)


def _charged(line: SubscriptionLineItem, in_full: Collection[str]) -> bool:
    """A started line a change charges: a recurring ADVANCE fee, or a one-time one in ``in_full``."""
    if is_recurring_advance_fee(line):
        return True
    return (
        line.id in in_full
        and line.price_type is PriceType.FIXED
        and line.invoice_cadence is InvoiceCadence.ADVANCE
    )


def _measure(sub: Subscription, period: Period) -> Period:
    """The period a change in ``period`` is prorated over: ``period``, or the full billing period
    a first stub is cut from when ``sub`` prorates its stubs (its stub invoice charged that share)."""
    if sub.proration_behavior is not ProrationBehavior.CREATE_PRORATIONS:
        return period
    if sub.trial_end is not None and period.start < sub.trial_end:
        return period
    return stub_reference_period(sub.schedule(), period) or period


def _covers(line: SubscriptionLineItem, at: datetime, period: Period) -> bool:
    """``line`` ran in ``period`` up to ``at`` (it has unused time to give back)."""
    starts = line.start_date or period.start
    return starts < period.end and starts <= at and (line.end_date is None or line.end_date > at)


def _live_in(line: SubscriptionLineItem, period: Period) -> bool:
    starts = line.start_date or period.start
    return starts < period.end and (line.end_date is None or line.end_date > starts)


def change_invoice(ctx: Context, quote: ChangeQuote, *, key: str | None = None) -> Invoice | None:
    """The invoice settling ``quote`` when its net is above zero (built, not numbered or stored:
    what a preview shows, and what :func:`settle_change` issues), else None. ``key``: the change's
    idempotency key (the invoice's ``idempotency_key`` is ``subscription_change|<key>``)."""
    settlement, sub = quote.settlement, quote.subscription
    if not settlement.invoiced:
        return None
    owners = {line.id: line for line in sub.line_items}
    lines = []
    for drafted, prepaid in zip(settlement.lines, settlement.line_credits, strict=True):
        owner = owners.get(drafted.line_item_id)
        lines.append(
            InvoiceLineItem(
                id=ctx.ids.new("inv_line"),
                subscription_line_item_id=drafted.line_item_id,
                entity_type=owner.entity_type if owner is not None else "plan",
                entity_id=owner.entity_id if owner is not None else sub.plan_id,
                plan_display_name=owner.plan_display_name if owner is not None else None,
                display_name=drafted.display_name,
                price_id=drafted.price_id,
                price_type=PriceType.FIXED,
                invoice_cadence=InvoiceCadence.ADVANCE,
                quantity=drafted.quantity,
                amount=drafted.signed_amount,
                prepaid_credits_applied=prepaid,
                period_start=drafted.period_start,
                period_end=drafted.period_end,
                metadata={"proration": drafted.kind.value},
                trace=drafted.trace,
            )
        )
    invoice_id = ctx.ids.new("inv")
    return Invoice(
        id=invoice_id,
        **ctx.stamp(),
        invoice_type=InvoiceType.ONE_OFF,
        invoice_status=InvoiceStatus.DRAFT,
        payment_status=PaymentStatus.SUCCEEDED if settlement.total == ZERO else PaymentStatus.PENDING,
        customer_id=sub.billed_customer_id,
        subscription_id=sub.id,
        subscription_customer_id=sub.customer_id,
        currency=sub.currency,
        description=f"Change of subscription {sub.id} from {quote.effective.isoformat()}",
        billing_reason=BillingReason.SUBSCRIPTION_UPDATE,
        billing_period=sub.billing_period,
        subtotal=settlement.net,
        total=settlement.total,
        total_tax=settlement.total_tax,
        total_prepaid_credits_applied=settlement.total_prepaid_credits_applied,
        amount_due=settlement.total,
        amount_remaining=settlement.total,
        due_date=due_date(quote.period.end, sub.payment_terms),
        period_start=quote.effective,
        period_end=quote.period.end,
        last_computed_at=ctx.now,
        idempotency_key=None if key is None else settlement_key(key),
        taxes=tax_application_records(
            ctx,
            invoice_id=invoice_id,
            applications=settlement.taxes,
            rates={applied.rate.id: applied for applied in quote.tax_rates},
        ),
        line_items=tuple(lines),
    )


@dataclass(frozen=True, slots=True)
class SettledChange:
    """What :func:`settle_change` moved: the issued ``invoice`` (net above zero), or the wallet
    ``transaction`` (net below zero), or neither; ``subscription`` with its billing sequence moved
    when an invoice was issued (the caller saves it)."""

    subscription: Subscription
    invoice: Invoice | None = None
    transaction: WalletTransaction | None = None


def settle_change(uow: UnitOfWork, ctx: Context, quote: ChangeQuote, *, key: str) -> SettledChange:
    """Carry out ``quote`` (see the module doc) under idempotency ``key`` (say what the change is
    and when it took effect, :func:`settlement_key`): the same key settled before
    -> the first invoice or wallet movement, nothing moved again. A ``DRAFT`` invoice stored under
    the key beforehand (the invoice a checkout session locked, :func:`change_invoice`, which its
    customer has paid) is the settlement: numbered and finalized now, whatever ``quote`` says.
    ``AlreadyExists`` (409) when the subscription already has an update invoice for the same
    window under another key."""
    sub, settlement = quote.subscription, quote.settlement
    earlier = uow.invoices.find_one(idempotency_key=settlement_key(key), include_archived=True)
    if earlier is not None and earlier.invoice_status is InvoiceStatus.DRAFT:
        return _issue_locked(uow, ctx, sub, earlier)
    if earlier is not None:
        return SettledChange(sub, invoice=earlier)
    if settlement.invoiced:
        drafted = change_invoice(ctx, quote, key=key)
        assert drafted is not None  # settlement.invoiced
        sequence = sub.billing_sequence + 1
        (issued,) = number_invoices(uow, ctx, [drafted.model_copy(update={"billing_sequence": sequence})])
        uow.invoices.add(issued)
        if settlement.credit_debits:
            taken = quote.credits_source.take(settlement.credit_debits, issued.id)
            record_debits(uow, ctx, quote.credits_source, [taken])
        notifications.record_many(uow, ctx, [invoice_event(ctx, issued)])
        return SettledChange(sub.model_copy(update={"billing_sequence": sequence}), invoice=issued)
    if settlement.wallet_credit > ZERO:
        wallet = wallet_ledger.prepaid_wallet(
            uow, ctx, customer_id=sub.customer_id, currency=sub.currency, name=WALLET_NAME
        )
        movement = wallet_ledger.credit(
            uow,
            ctx,
            wallet,
            credits=settlement.wallet_credit,
            amount=settlement.wallet_credit,
            reason=TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
            key=settlement_key(key),
            reference_type=TransactionReferenceType.EXTERNAL,
            reference_id=sub.id,
            description=f"Net credit of the change of subscription {sub.id} at {quote.effective.isoformat()}",
            metadata={"subscription_id": sub.id, "effective_date": quote.effective.isoformat()},
        )
        return SettledChange(sub, transaction=movement.transactions[0])
    return SettledChange(sub)


def _issue_locked(uow: UnitOfWork, ctx: Context, sub: Subscription, draft: Invoice) -> SettledChange:
    """Number and finalize ``draft``, the invoice stored for the change before it was applied."""
    sequence = sub.billing_sequence + 1
    (issued,) = number_invoices(
        uow, ctx, [draft.model_copy(update={"billing_sequence": sequence, **ctx.touch()})]
    )
    saved = uow.invoices.update(issued, expected_version=draft.version)
    notifications.notify(uow, ctx, "invoice.update.finalized", saved)
    return SettledChange(sub.model_copy(update={"billing_sequence": sequence}), invoice=saved)
