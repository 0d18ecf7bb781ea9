"""What an invoice document says, as text: the locale it is written in, and every label and value
formatted for it. Pure (babel only), so the wording is tested without a PDF library; the PDF
renderer (:mod:`billingkit.documents.invoice_pdf`) only lays these strings out.

Rules:

* The locale is the customer's ``metadata["locale"]`` when babel knows it (``de_DE``, ``fr-CH``),
  else the most likely locale of ``address_country`` (``DE`` -> ``de_DE``, ``CH`` -> ``de_CH``,
  ``US`` -> ``en_US``), else ``en_US``. It formats numbers, money and dates; labels stay English.
* Money is babel's ``format_currency`` in the invoice currency: 1234.50 eur reads ``1.234,50 €``
  for ``de_DE`` and ``€1,234.50`` for ``en_US``; a discount is written negative (``-€20.00``).
* Dates are the customer's calendar days (``Customer.timezone``), babel's medium format.
* The title is the invoice number, or ``DRAFT`` for an unnumbered draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel import Locale, UnknownLocaleError
from babel.dates import format_date
from babel.numbers import format_currency, format_decimal, format_percent

from billingkit.domain.customers import Customer
from billingkit.domain.invoices import (
    Invoice,
    InvoiceCouponApplication,
    InvoiceLineItem,
    InvoiceStatus,
    InvoiceTax,
)
from billingkit.domain.money import ZERO
from billingkit.errors import ValidationError

__all__ = [
    "DEFAULT_LOCALE",
    "Formats",
    "InvoiceText",
    "LineRow",
    "customer_zone",
    "invoice_locale",
    "invoice_text",
]

#: The locale of a customer that names none and has no known country.
DEFAULT_LOCALE = "en_US"


@dataclass(frozen=True, slots=True)
class LineRow:
    """One invoice line as printed: what, for which period, how many, how much, less what."""

    description: str
    period: str
    quantity: str
    amount: str
    discount: str


@dataclass(frozen=True, slots=True)
class InvoiceText:
    """Every string of an invoice document, in print order. ``facts``, ``adjustments`` and
    ``totals`` are (label, value) pairs."""

    locale: str
    title: str
    seller: tuple[str, ...]
    customer: tuple[str, ...]
    facts: tuple[tuple[str, str], ...]
    lines: tuple[LineRow, ...]
    adjustments: tuple[tuple[str, str], ...]
    totals: tuple[tuple[str, str], ...]


def _parse(tag: str) -> Locale | None:
    try:
        return Locale.parse(tag.replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        return None


def _given_locale(locale: Locale | str) -> Locale:
    chosen = locale if isinstance(locale, Locale) else _parse(locale)
    if chosen is None:
        raise ValidationError(f"unknown locale {locale!r}; give one like 'de_DE' or 'en-US'", field="locale")
    return chosen


def invoice_locale(customer: Customer | None) -> Locale:
    """The locale ``customer``'s documents are written in (see the module rules)."""
    if customer is not None:
        named = customer.metadata.get("locale")
        if named and (locale := _parse(named)) is not None:
            return locale
        country = (customer.address_country or "").strip()
        if len(country) == 2 and country.isalpha():
            # "und_DE": babel's likely-subtags table picks the country's main language (de_DE).
            locale = _parse(f"und_{country.upper()}")
            if locale is not None and locale.territory == country.upper():
                return locale
    return Locale.parse(DEFAULT_LOCALE)


def customer_zone(customer: Customer | None) -> tzinfo:
    """``customer``'s time zone (UTC without a customer or for an unknown zone name)."""
    if customer is None:
        return UTC
    try:
        return ZoneInfo(customer.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


class Formats:
    """Formatting in one locale, currency and time zone."""

    def __init__(self, locale: Locale, currency: str, zone: tzinfo) -> None:
        self.locale = locale
        self.currency = currency.upper()
        self.zone = zone

    def money(self, amount: Decimal) -> str:
        return str(format_currency(amount, self.currency, locale=self.locale))

    def deducted(self, amount: Decimal) -> str:
        """A deduction, written negative (zero stays ``€0.00``, never ``-€0.00``)."""
        return self.money(-amount if amount else ZERO)

    def number(self, value: Decimal) -> str:
        """All significant digits, no trailing zeros: 3.000 -> ``3``, 1234.5 -> ``1,234.5``."""
        return str(format_decimal(value.normalize(), locale=self.locale, decimal_quantization=False))

    def percent(self, value: Decimal) -> str:
        """A rate given in percent: 20 -> ``20%`` (en_US), ``20 %`` (de_DE)."""
        return str(format_percent(value / 100, locale=self.locale, decimal_quantization=False))

    def day(self, at: datetime | None) -> str:
        return "" if at is None else str(format_date(at.astimezone(self.zone), "medium", locale=self.locale))

    def span(self, start: datetime | None, end: datetime | None) -> str:
        if start is None and end is None:
            return ""
        return f"{self.day(start)} - {self.day(end)}"


def _customer_block(customer: Customer | None, customer_id: str) -> tuple[str, ...]:
    if customer is None:
        return (customer_id,)
    city = " ".join(part for part in (customer.address_postal_code, customer.address_city) if part)
    lines = (
        customer.name,
        customer.email,
        customer.address_line1,
        customer.address_line2,
        ", ".join(part for part in (city, customer.address_state) if part),
        customer.address_country,
    )
    return tuple(line for line in lines if line)


def _title(invoice: Invoice) -> str:
    if invoice.invoice_number:
        return invoice.invoice_number
    return "DRAFT" if invoice.invoice_status is InvoiceStatus.DRAFT else "not numbered"


def _line_row(line: InvoiceLineItem, fmt: Formats) -> LineRow:
    description = line.display_name
    if line.plan_display_name and line.plan_display_name != line.display_name:
        description = f"{description}\n{line.plan_display_name}"
    return LineRow(
        description=description,
        period=fmt.span(line.period_start, line.period_end),
        quantity=fmt.number(line.quantity),
        amount=fmt.money(line.amount),
        discount=_blank_if_zero(fmt, line.line_item_discount + line.invoice_level_discount),
    )


def _blank_if_zero(fmt: Formats, discount: Decimal) -> str:
    return fmt.deducted(discount) if discount else ""


def _coupon_label(record: InvoiceCouponApplication, fmt: Formats) -> str:
    snapshot = record.coupon_snapshot
    name = snapshot.get("name") or snapshot.get("coupon_code") or record.coupon_id
    if record.discount_percentage is not None:
        return f"Discount: {name} ({fmt.percent(record.discount_percentage)})"
    return f"Discount: {name}"


def _tax_label(record: InvoiceTax, fmt: Formats) -> str:
    rate = record.tax_rate
    name = (rate.name or rate.code) if rate is not None else record.tax_rate_id
    on = fmt.money(record.taxable_amount)
    if rate is not None and rate.percentage_value is not None:
        return f"{name} ({fmt.percent(rate.percentage_value)} of {on})"
    return f"{name} (on {on})"


def _adjustments(invoice: Invoice, fmt: Formats) -> tuple[tuple[str, str], ...]:
    coupons = [
        (_coupon_label(record, fmt), fmt.deducted(record.discounted_amount))
        for record in invoice.coupon_applications
    ]
    taxes = [(_tax_label(record, fmt), fmt.money(record.tax_amount)) for record in invoice.taxes]
    return (*coupons, *taxes)


def invoice_text(
    invoice: Invoice,
    *,
    customer: Customer | None = None,
    seller: Sequence[str] = (),
    locale: Locale | str | None = None,
) -> InvoiceText:
    """The strings of ``invoice``'s document. ``customer`` gives the recipient block, the locale and
    the time zone (without it: the customer id, ``en_US``, UTC); ``seller`` is the issuer's lines
    (its name first); ``locale`` overrides the customer's (an unknown one is a ``ValidationError``
    naming ``locale``)."""
    chosen = invoice_locale(customer) if locale is None else _given_locale(locale)
    fmt = Formats(chosen, invoice.currency, customer_zone(customer))
    facts = (
        ("Invoice number", _title(invoice)),
        ("Status", invoice.invoice_status.value),
        ("Payment status", invoice.payment_status.value),
        ("Issue date", fmt.day(invoice.issue_date or invoice.finalized_at or invoice.created_at)),
        ("Due date", fmt.day(invoice.due_date)),
        ("Billing period", fmt.span(invoice.period_start, invoice.period_end)),
        ("Currency", fmt.currency),
    )
    totals = (
        ("Subtotal", fmt.money(invoice.subtotal)),
        ("Total discount", fmt.deducted(invoice.total_discount)),
        ("Total tax", fmt.money(invoice.total_tax)),
        ("Prepaid credits applied", fmt.deducted(invoice.total_prepaid_credits_applied)),
        ("Total", fmt.money(invoice.total)),
        ("Amount due", fmt.money(invoice.amount_due)),
        ("Amount paid", fmt.money(invoice.amount_paid)),
        ("Amount remaining", fmt.money(invoice.amount_remaining)),
    )
    return InvoiceText(
        locale=str(chosen),
        title=_title(invoice),
        seller=tuple(line for line in seller if line),
        customer=_customer_block(customer, invoice.customer_id),
        facts=tuple((label, value) for label, value in facts if value),
        lines=tuple(_line_row(line, fmt) for line in invoice.line_items),
        adjustments=_adjustments(invoice, fmt),
        totals=totals,
    )
