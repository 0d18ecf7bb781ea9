"""What each record shows: its :class:`Display` (and a one-line ``repr`` for the few displayed
types without one of their own: pages, invoice lines, recompute diffs).

Money is babel's ``format_currency``. An invoice is written in its customer's locale when the
customer is known (``invoice.display(customer=...)``, ``scoped.invoices.display(id)``: the rule of
the invoice PDF, :func:`billingkit.documents.invoice_locale`), else in ``en_US``; catalogue and
subscription displays, which belong to no single customer, use ``en_US``. One-line summaries
write amounts as plain decimals (``1,234.50``): they are for logs and debuggers, not customers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from babel import Locale

from billingkit.display.layout import Display, Table
from billingkit.documents.invoice_text import DEFAULT_LOCALE, Formats, invoice_locale, invoice_text
from billingkit.domain.catalog import Plan, PlanDetail, Price, PriceTier
from billingkit.domain.customers import Customer
from billingkit.domain.invoice_diff import InvoiceDiff, LineChange
from billingkit.domain.invoices import Invoice, InvoiceLineItem
from billingkit.domain.pricing import BillingModel
from billingkit.domain.queries import Page
from billingkit.domain.subscriptions import Subscription

__all__ = [
    "customer_display",
    "diff_display",
    "invoice_display",
    "page_display",
    "plan_display",
    "price_display",
    "subscription_display",
    "summary_of",
]

AMOUNTS = frozenset({"Quantity", "Amount", "Discount", "Total", "Unit amount", "Flat amount", "Value"})


def formats(currency: str, locale: Locale | str | None = None) -> Formats:
    """Money and numbers in ``currency`` for ``locale`` (``en_US`` by default), dates in UTC."""
    chosen = locale if isinstance(locale, Locale) else Locale.parse(locale or DEFAULT_LOCALE)
    return Formats(chosen, currency, UTC)


def instant(at: datetime | None) -> str:
    """An instant as ``2026-05-01 09:30 UTC`` ('' for none)."""
    return "" if at is None else at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def span(start: datetime | None, end: datetime | None) -> str:
    return f"{instant(start)} - {instant(end)}" if start or end else ""


def plain(amount: Decimal) -> str:
    """A decimal with thousands separators, for one-line summaries: ``1,234.50``."""
    return f"{amount:,}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


# -- invoices -----------------------------------------------------------------------------------


def line_summary(line: InvoiceLineItem) -> str:
    return (
        f"<InvoiceLineItem {line.id} {line.display_name!r} qty {plain(line.quantity)} {plain(line.amount)}>"
    )


def invoice_display(
    invoice: Invoice, *, customer: Customer | None = None, locale: Locale | str | None = None
) -> Display:
    """``invoice`` as its document says it (:func:`billingkit.documents.invoice_text`): facts,
    lines with periods, quantities, amounts and discounts, each coupon and tax, then totals."""
    text = invoice_text(invoice, customer=customer, locale=locale)
    who = f"{customer.name} ({customer.external_id})" if customer is not None else invoice.customer_id
    facts = (("Invoice id", invoice.id), ("Customer", who), *text.facts[1:], ("Locale", text.locale))
    tables = [
        Table(
            ("Line", "Period", "Quantity", "Amount", "Discount"),
            tuple((r.description, r.period, r.quantity, r.amount, r.discount) for r in text.lines),
            caption="Lines",
            numeric=AMOUNTS,
        )
    ]
    if text.adjustments:
        tables.append(
            Table(
                ("Discount or tax", "Amount"),
                text.adjustments,
                caption="Discounts and taxes",
                numeric=AMOUNTS,
            )
        )
    return Display(f"Invoice {text.title}", facts=facts, tables=tuple(tables), totals=text.totals)


def line_display(line: InvoiceLineItem) -> Display:
    return Display(
        f"Invoice line {line.display_name}",
        facts=(
            ("Line id", line.id),
            ("Price", line.price_id or ""),
            ("Period", span(line.period_start, line.period_end)),
            ("Quantity", str(line.quantity)),
            ("Amount", str(line.amount)),
            ("Discount", str(line.line_item_discount + line.invoice_level_discount)),
        ),
    )


def _invoice_row(invoice: Invoice) -> tuple[str, ...]:
    fmt = formats(invoice.currency)
    return (
        invoice.id,
        invoice.invoice_number or "",
        invoice.customer_id,
        span(invoice.period_start, invoice.period_end),
        invoice.invoice_status.value,
        fmt.money(invoice.total),
    )


# -- recompute diffs ----------------------------------------------------------------------------


def diff_summary(diff: InvoiceDiff) -> str:
    if not diff:
        return f"<InvoiceDiff {diff.invoice_id} unchanged>"
    total = next((t for t in diff.totals if t.field == "total"), None)
    moved = f": total {plain(total.stored)} -> {plain(total.recomputed)}" if total is not None else ""
    return f"<InvoiceDiff {diff.invoice_id} {_plural(len(diff.lines), 'line')} changed{moved}>"


def _or_blank(value: Decimal | None, write: Callable[[Decimal], str]) -> str:
    return "" if value is None else write(value)


def _diff_row(change: LineChange, fmt: Formats) -> tuple[str, ...]:
    return (
        change.kind.value,
        change.display_name,
        span(change.period_start, change.period_end),
        _or_blank(change.stored_quantity, fmt.number),
        _or_blank(change.recomputed_quantity, fmt.number),
        _or_blank(change.stored_amount, fmt.money),
        _or_blank(change.recomputed_amount, fmt.money),
        fmt.money(change.amount_difference),
    )


def diff_display(diff: InvoiceDiff) -> Display:
    """The lines and totals that differ, stored beside recomputed, with the difference."""
    fmt = formats(diff.currency, diff.locale)
    if not diff:
        return Display(
            f"Invoice {diff.invoice_id} recomputed: no difference",
            facts=(("Total", fmt.money(diff.stored.total)),),
            note="The stored invoice matches what its inputs give today.",
        )
    headers = (
        "Change",
        "Line",
        "Period",
        "Stored qty",
        "Recomputed qty",
        "Stored",
        "Recomputed",
        "Difference",
    )
    tables = []
    if diff.lines:
        rows_of_lines = tuple(_diff_row(change, fmt) for change in diff.lines)
        tables.append(Table(headers, rows_of_lines, caption="Lines", numeric=frozenset(headers[3:])))
    if diff.totals:
        rows = tuple(
            (t.field, fmt.money(t.stored), fmt.money(t.recomputed), fmt.money(t.difference))
            for t in diff.totals
        )
        tables.append(
            Table(
                ("Total", "Stored", "Recomputed", "Difference"),
                rows,
                caption="Totals",
                numeric=frozenset({"Stored", "Recomputed", "Difference"}),
            )
        )
    what = _plural(len(diff.lines), "line") if diff.lines else "totals"
    verb = "differs" if len(diff.lines) == 1 else "differ"
    return Display(f"Invoice {diff.invoice_id} recomputed: {what} {verb}", tables=tuple(tables))


# -- catalogue ----------------------------------------------------------------------------------


def _price_terms(price: Price, fmt: Formats | None) -> str:
    """What the price charges in a few words: ``$20.00 per unit``, ``3 tiers (SLAB)``."""

    def money(value: Decimal) -> str:
        return fmt.money(value) if fmt is not None else plain(value)

    model = price.billing_model
    if model is BillingModel.TIERED:
        mode = price.tier_mode.value if price.tier_mode is not None else "VOLUME"
        return f"{_plural(len(price.tiers or ()), 'tier')} ({mode})"
    if model is BillingModel.PACKAGE and price.transform_quantity is not None:
        return f"{money(price.amount)} per {price.transform_quantity.divide_by} units"
    return f"{money(price.amount)} per unit"


def _tier_rows(tiers: Sequence[PriceTier], fmt: Formats) -> tuple[tuple[str, ...], ...]:
    rows = []
    start = "0"
    for index, tier in enumerate(tiers, start=1):
        upper = str(tier.up_to) if tier.up_to is not None else "and above"
        flat = fmt.money(tier.flat_amount) if tier.flat_amount else ""
        rows.append((str(index), start, upper, fmt.money(tier.unit_amount), flat))
        start = str(tier.up_to + 1) if tier.up_to is not None else ""
    return tuple(rows)


def price_tiers_table(price: Price, fmt: Formats) -> Table:
    """The tiers of a tiered price: quantities ``From``..``Up to`` (inclusive), unit and flat
    amounts."""
    name = price.display_name or price.id
    mode = price.tier_mode.value if price.tier_mode is not None else "VOLUME"
    return Table(
        ("Tier", "From", "Up to", "Unit amount", "Flat amount"),
        _tier_rows(price.tiers or (), fmt),
        caption=f"Tiers of {name} ({mode})",
        numeric=frozenset({"From", "Up to", "Unit amount", "Flat amount"}),
    )


def price_display(price: Price) -> Display:
    fmt = formats(price.currency)
    facts = [
        ("Price id", price.id),
        ("Name", price.display_name or ""),
        ("Type", f"{price.type.value} {price.billing_model.value}"),
        ("Charges", _price_terms(price, fmt)),
        (
            "Billing",
            f"{price.billing_period.value} x{price.billing_period_count}, {price.invoice_cadence.value}",
        ),
        ("Currency", price.currency.upper()),
        ("Meter", price.meter_id or ""),
        ("Owner", f"{price.entity_type.value} {price.entity_id}"),
    ]
    tables = (price_tiers_table(price, fmt),) if price.tiers else ()
    return Display(f"Price {price.display_name or price.id}", facts=_kept(facts), tables=tables)


def _price_row(price: Price) -> tuple[str, ...]:
    fmt = formats(price.currency)
    return (
        price.display_name or price.id,
        f"{price.type.value} {price.billing_model.value}",
        _price_terms(price, fmt),
        f"{price.billing_period.value} {price.invoice_cadence.value}",
        price.meter_id or "",
    )


PRICE_HEADERS = ("Price", "Type", "Charges", "Billing", "Meter")


def plan_display(plan: Plan) -> Display:
    """The plan, and for a :class:`PlanDetail` its prices, each tiered one's tiers as a table."""
    facts = _kept(
        [
            ("Plan id", plan.id),
            ("Name", plan.name),
            ("Lookup key", plan.lookup_key or ""),
            ("Description", plan.description or ""),
        ]
    )
    tables: list[Table] = []
    if isinstance(plan, PlanDetail):
        tables.append(Table(PRICE_HEADERS, tuple(_price_row(p) for p in plan.prices), caption="Prices"))
        tables.extend(price_tiers_table(p, formats(p.currency)) for p in plan.prices if p.tiers)
    return Display(f"Plan {plan.name}", facts=facts, tables=tuple(tables))


# -- customers and subscriptions ----------------------------------------------------------------


def customer_display(customer: Customer) -> Display:
    place = ", ".join(
        part for part in (customer.address_line1, customer.address_city, customer.address_country) if part
    )
    facts = [
        ("Customer id", customer.id),
        ("External id", customer.external_id),
        ("Name", customer.name),
        ("Email", customer.email or ""),
        ("Address", place),
        ("Time zone", customer.timezone),
        ("Invoice locale", str(invoice_locale(customer))),
    ]
    return Display(f"Customer {customer.name}", facts=_kept(facts))


def subscription_display(sub: Subscription) -> Display:
    """The subscription's terms and its line items."""
    facts = [
        ("Subscription id", sub.id),
        ("Customer", sub.customer_id),
        ("Plan", sub.plan_id),
        ("Status", sub.subscription_status.value),
        ("Billing", f"{sub.billing_period.value} x{sub.billing_period_count}, {sub.billing_cycle.value}"),
        ("Currency", sub.currency.upper()),
        ("Current period", span(sub.current_period_start, sub.current_period_end)),
        ("Started", instant(sub.start_date)),
        ("Trial", span(sub.trial_start, sub.trial_end)),
        ("Ends", instant(sub.end_date or sub.cancel_at)),
    ]
    rows = tuple(
        (
            line.display_name or line.price_id,
            line.price_type.value,
            line.price_id,
            line.meter_id or "",
            str(line.quantity),
            line.invoice_cadence.value,
            span(line.start_date, line.end_date),
        )
        for line in sub.line_items
    )
    table = Table(
        ("Line", "Type", "Price", "Meter", "Quantity", "Cadence", "Active"),
        rows,
        caption="Line items",
        numeric=AMOUNTS,
    )
    return Display(f"Subscription {sub.id}", facts=_kept(facts), tables=(table,))


def _kept(facts: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The facts that have a value."""
    return tuple((label, value) for label, value in facts if value)


# -- pages --------------------------------------------------------------------------------------

#: Per record type: the headers of a page of them and the row of one.
_ROWS: tuple[tuple[type[Any], tuple[str, ...], Callable[[Any], tuple[str, ...]]], ...] = (
    (Invoice, ("Invoice", "Number", "Customer", "Period", "Status", "Total"), _invoice_row),
    (
        Subscription,
        ("Subscription", "Customer", "Plan", "Status", "Current period"),
        lambda s: (
            s.id,
            s.customer_id,
            s.plan_id,
            s.subscription_status.value,
            span(s.current_period_start, s.current_period_end),
        ),
    ),
    (
        Customer,
        ("Customer", "External id", "Name", "Email"),
        lambda c: (c.id, c.external_id, c.name, c.email or ""),
    ),
    (Price, PRICE_HEADERS, _price_row),
    (Plan, ("Plan", "Name", "Lookup key"), lambda p: (p.id, p.name, p.lookup_key or "")),
)


def rows_table(items: Sequence[Any], caption: str = "") -> Table:
    """A table of ``items`` with the columns of their type (``repr`` for an unknown one)."""
    for kind, headers, row in _ROWS:
        if items and all(isinstance(item, kind) for item in items):
            numeric = frozenset({"Total"}) if kind is Invoice else frozenset()
            return Table(headers, tuple(row(item) for item in items), caption=caption, numeric=numeric)
    return Table(("Item",), tuple((repr(item),) for item in items), caption=caption)


def _noun(items: Sequence[Any]) -> str:
    names = {type(item).__name__ for item in items}
    return names.pop() if len(names) == 1 else "item"


def page_summary(page: Page[Any]) -> str:
    shown = len(page.items)
    noun = _noun(page.items) if page.items else "item"
    return f"<Page {shown} of {page.total} {noun} (offset {page.offset})>"


def page_display(page: Page[Any]) -> Display:
    """One row per item, with the columns of the items' type."""
    shown = len(page.items)
    noun = _noun(page.items) if page.items else "item"
    first = page.offset + 1 if shown else page.offset
    title = f"{noun}s {first}-{page.offset + shown} of {page.total}"
    more = f"more on the next page (offset {page.offset + shown})" if page.has_more else ""
    return Display(title, tables=(rows_table(page.items),), note=more)


def summary_of(value: object) -> str | None:
    """The one-line summary of a record this module knows (``None`` for another value)."""
    for kind, write in _SUMMARIES:
        if isinstance(value, kind):
            return write(value)
    return None


_SUMMARIES: tuple[tuple[type[Any], Callable[[Any], str]], ...] = (
    (InvoiceLineItem, line_summary),
    (InvoiceDiff, diff_summary),
    (Page, page_summary),
)
