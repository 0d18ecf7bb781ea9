"""Stored invoices: the records a billing run (or a preview) builds from an invoice draft.

:mod:`billingkit.domain.invoicing` computes the money (an ``InvoiceDraft``); this module holds what
is stored and shown: :class:`Invoice` with its :class:`InvoiceLineItem` rows, their statuses, the
invoice number format and the due date rule.

Rules:

* An invoice of a subscription is unique per (subscription, period start, period end, billing
  reason): a repeated or concurrent billing run finds the stored one instead of billing twice.
* A finalized invoice gets a number ``<prefix>-<YYYYMM>-<5 digits>`` from a counter per
  environment and month, e.g. ``INV-202602-00001``; numbers are gap-free because the counter
  moves in the same transaction that stores the invoice.
* An invoice whose subtotal is zero is ``SKIPPED``: stored (so it is billed once) but not numbered.
* Due date: ``period_end + N days`` for payment terms ``N NET``, else ``period_end + 1 day``.
* Lifecycle (:mod:`billingkit.domain.invoice_lifecycle`): ``DRAFT`` -> ``FINALIZED`` -> ``VOIDED``;
  ``SKIPPED`` (zero subtotal) may only be voided.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.catalog.tax_rates import TaxRate
from billingkit.domain.display import Displayed
from billingkit.domain.money import ZERO
from billingkit.domain.periods import BillingPeriod, InvoiceCadence
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.subscriptions import PaymentTerms
from billingkit.domain.validation import UtcDatetime

if TYPE_CHECKING:
    from babel import Locale

    from billingkit.display import InvoiceView
    from billingkit.domain.customers import Customer

__all__ = [
    "DEFAULT_DUE_DAYS",
    "INVOICE_PDF_PATH",
    "BillingReason",
    "Invoice",
    "InvoiceCouponApplication",
    "InvoiceLineItem",
    "InvoiceStatus",
    "InvoiceTax",
    "InvoiceType",
    "PaymentStatus",
    "due_date",
    "invoice_number",
    "invoice_number_key",
]

#: Where the REST adapter serves an invoice's PDF: the ``invoice_pdf_url`` an invoice shows when
#: none was set (relative to the server, which only the adapter knows).
INVOICE_PDF_PATH = "/v1/invoices/{invoice_id}/pdf"

#: Days after the period end an invoice without payment terms is due.
DEFAULT_DUE_DAYS = 1


class InvoiceType(StrEnum):
    SUBSCRIPTION = "SUBSCRIPTION"
    ONE_OFF = "ONE_OFF"
    CREDIT = "CREDIT"


class InvoiceStatus(StrEnum):
    DRAFT = "DRAFT"
    FINALIZED = "FINALIZED"
    VOIDED = "VOIDED"
    SKIPPED = "SKIPPED"


class PaymentStatus(StrEnum):
    INITIATED = "INITIATED"
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    SUCCEEDED = "SUCCEEDED"
    OVERPAID = "OVERPAID"
    FAILED = "FAILED"
    REFUNDED = "REFUNDED"
    PARTIALLY_REFUNDED = "PARTIALLY_REFUNDED"
    VOIDED = "VOIDED"


class BillingReason(StrEnum):
    SUBSCRIPTION_CREATE = "SUBSCRIPTION_CREATE"
    SUBSCRIPTION_CYCLE = "SUBSCRIPTION_CYCLE"
    SUBSCRIPTION_UPDATE = "SUBSCRIPTION_UPDATE"
    SUBSCRIPTION_TRIAL_END = "SUBSCRIPTION_TRIAL_END"
    SUBSCRIPTION_TRIAL_START = "SUBSCRIPTION_TRIAL_START"
    PRORATION = "PRORATION"
    MANUAL = "MANUAL"
    AUTO_INVOICE_THRESHOLD = "AUTO_INVOICE_THRESHOLD"
    WALLET_AUTO_TOPUP = "WALLET_AUTO_TOPUP"


class InvoiceLineItem(Displayed, BaseModel):
    """One line of an invoice. ``amount`` is before discounts and credits (money, rounded);
    ``quantity`` is the billed quantity (usage after allowances for USAGE lines); ``trace`` says how
    the amount was computed (tiers, proration, rounding), as the billing core reported it.
    ``subscription_id``: the subscription whose line item it bills, when that is not the invoice's
    own (a ``grouped_invoicing`` child's line on its parent's invoice); ``None``: the invoice's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    subscription_line_item_id: str | None = None
    subscription_id: str | None = None
    parent_line_item_id: str | None = None
    entity_type: str | None = None
    entity_id: str | None = None
    plan_display_name: str | None = None
    display_name: str
    meter_id: str | None = None
    meter_display_name: str | None = None
    price_id: str | None = None
    price_type: PriceType | None = None
    invoice_cadence: InvoiceCadence | None = None
    price_unit: str | None = None
    price_unit_id: str | None = None
    price_unit_amount: Decimal | None = None
    quantity: Decimal
    amount: Decimal
    adjusted_entitlement_quantity: Decimal | None = None
    invoice_level_discount: Decimal = ZERO
    line_item_discount: Decimal = ZERO
    prepaid_credits_applied: Decimal = ZERO
    period_start: UtcDatetime
    period_end: UtcDatetime
    metadata: dict[str, str] = {}
    commitment_info: dict[str, Any] | None = None
    usage_event_count: int | None = None
    trace: dict[str, Any] = {}


class InvoiceCouponApplication(EnvironmentResource):
    """One coupon that discounted an invoice (the spec's "Invoice coupon application"):
    ``original_price - discounted_amount = final_price`` (money in ``currency``, rounded);
    ``invoice_line_item_id`` names the line a line-item coupon discounted (None for an
    invoice-level one); ``coupon_snapshot`` is the coupon as it was when applied."""

    invoice_id: str
    invoice_line_item_id: str | None = None
    subscription_id: str | None = None
    coupon_id: str
    coupon_association_id: str | None = None
    coupon_snapshot: dict[str, Any] = {}
    discount_type: str
    discount_percentage: Decimal | None = None
    discounted_amount: Decimal
    original_price: Decimal
    final_price: Decimal
    currency: str
    applied_at: UtcDatetime
    metadata: dict[str, str] = {}


class InvoiceTax(EnvironmentResource):
    """One tax line of an invoice (the reference's ``TaxAppliedResponse``): ``tax_amount`` charged
    by ``tax_rate_id`` on ``taxable_amount`` (subtotal minus discounts, money), with the rate as it
    was (``tax_rate``) and the tax association that brought it (None when the invoice named it)."""

    tax_rate_id: str
    tax_association_id: str | None = None
    entity_type: str = "invoice"
    entity_id: str
    taxable_amount: Decimal
    tax_amount: Decimal
    currency: str
    applied_at: UtcDatetime
    idempotency_key: str
    tax_rate: TaxRate | None = None
    metadata: dict[str, str] = {}


class Invoice(Displayed, EnvironmentResource):
    """An invoice (the spec's Invoice, stored). Money fields are Decimal in ``currency``.

    ``customer_id`` is who is billed; ``subscription_customer_id`` the customer of the subscription
    it bills (another one under delegated invoicing; ``None`` for invoices of no subscription).

    Internal fields, not on the wire: ``finalize_at`` (when the due-work runner finalizes this
    draft: a renewal draft kept open by the finalization delay), ``overdue_notified_at`` (when
    ``invoice.payment.overdue`` was recorded for it: once per invoice), ``request_fingerprint`` (the
    digest of the direct-invoice request an ``idempotency_key`` was first used with) and
    ``adjustment_sources`` (a direct invoice's coupons and tax rates, as ids, so a later
    ``apply_discount`` recomputes with what it was created with).
    """

    invoice_number: str | None = None
    invoice_type: InvoiceType = InvoiceType.SUBSCRIPTION
    invoice_status: InvoiceStatus = InvoiceStatus.DRAFT
    payment_status: PaymentStatus = PaymentStatus.PENDING
    customer_id: str
    subscription_id: str | None = None
    subscription_customer_id: str | None = None
    currency: str
    description: str | None = None
    billing_reason: BillingReason
    billing_period: BillingPeriod | None = None
    billing_sequence: int | None = None
    subtotal: Decimal
    total: Decimal
    total_discount: Decimal = ZERO
    total_tax: Decimal = ZERO
    total_prepaid_credits_applied: Decimal = ZERO
    adjustment_amount: Decimal = ZERO
    amount_due: Decimal
    amount_paid: Decimal = ZERO
    amount_remaining: Decimal
    overpaid_amount: Decimal = ZERO
    refunded_amount: Decimal = ZERO
    issue_date: UtcDatetime | None = None
    due_date: UtcDatetime | None = None
    finalized_at: UtcDatetime | None = None
    paid_at: UtcDatetime | None = None
    voided_at: UtcDatetime | None = None
    period_start: UtcDatetime | None = None
    period_end: UtcDatetime | None = None
    last_computed_at: UtcDatetime | None = None
    is_manually_edited: bool = False
    idempotency_key: str | None = None
    invoice_pdf_url: str | None = None
    recalculated_invoice_id: str | None = None
    coupon_applications: tuple[InvoiceCouponApplication, ...] = ()
    taxes: tuple[InvoiceTax, ...] = ()
    line_items: tuple[InvoiceLineItem, ...] = ()
    metadata: dict[str, str] = {}
    version: int = 1
    finalize_at: UtcDatetime | None = None
    overdue_notified_at: UtcDatetime | None = None
    request_fingerprint: str | None = None
    adjustment_sources: dict[str, Any] | None = None

    def __repr__(self) -> str:
        number = self.invoice_number or self.id
        return (
            f"<Invoice {number} {self.currency} {self.amount_due} {self.invoice_status.value} "
            f"{len(self.line_items)} lines>"
        )

    def display(self, *, customer: Customer | None = None, locale: Locale | str | None = None) -> InvoiceView:
        """This invoice for display (``_repr_html_``, ``str()``, ``show()``) written for ``customer``:
        its name, and money and dates in its locale (``metadata["locale"]``, else
        ``address_country``, else ``en_US``; ``locale`` overrides it), as on its PDF. Without
        ``customer`` the invoice itself displays in ``en_US``. ``scoped.invoices.display(id)``
        reads the customer from the store."""
        # Imported when called: the renderers live outside the domain (decision 161's pattern).
        from billingkit.display import InvoiceView

        return InvoiceView(self, customer, locale)

    def to_pdf(
        self, *, customer: Customer | None = None, seller: Sequence[str] = (), locale: str | None = None
    ) -> bytes:
        """This invoice as a PDF document (bytes), with the optional ``pdf`` extra installed.

        ``customer``: the recipient block, whose ``metadata["locale"]`` or ``address_country``
        picks how money and dates are written (else ``en_US``; ``locale`` overrides it);
        ``seller``: the issuer's lines, its name first. ``billing.scope(...).invoices.pdf(id)``
        fills both from the store. Raises ``ConfigurationError`` naming
        ``pip install 'billingkit[pdf]'`` when the extra is missing.
        """
        # Imported when called: the renderer needs the optional PDF library, and the domain
        # stays importable (and pure) without it (decision 161).
        from billingkit.documents import render_invoice_pdf

        return render_invoice_pdf(self, customer=customer, seller=seller, locale=locale)

    def to_dict(self, *, traces: bool = True) -> dict[str, Any]:
        """The wire form: money as decimal strings, instants as ISO 8601 UTC, and each line with
        the invoice's common fields, as the spec's invoice line item shows them. ``traces=False``
        leaves out each line's ``trace`` (webhook payloads carry the invoice without them).
        ``invoice_pdf_url`` is the one set on the invoice, else :data:`INVOICE_PDF_PATH`."""
        data = self.model_dump(mode="json", exclude=_WITHOUT_TRACES if not traces else _WITH_TRACES)
        data["invoice_pdf_url"] = self.invoice_pdf_url or INVOICE_PDF_PATH.format(invoice_id=self.id)
        common = {
            "invoice_id": self.id,
            "customer_id": self.customer_id,
            "subscription_id": self.subscription_id,
            "currency": self.currency,
            **self.common_fields(),
        }
        lines = data["line_items"] = [{**line, **common} for line in data["line_items"]]
        # A line billing another subscription's line item (a grouped child's on its parent's
        # invoice) shows that subscription, in the common field's place.
        for wire, line in zip(lines, self.line_items, strict=True):
            if line.subscription_id is not None:
                wire["subscription_id"] = line.subscription_id
        return data


# Bookkeeping of billingkit's own, kept out of the wire form (see ``Invoice``).
_INTERNAL = frozenset({"finalize_at", "overdue_notified_at", "request_fingerprint", "adjustment_sources"})
# A line's own ``subscription_id`` is shown in the invoice's common field's place (``to_dict``).
_WITH_TRACES: dict[str, Any] = {
    "line_items": {"__all__": {"subscription_id"}},
    **dict.fromkeys(_INTERNAL, True),
}
_WITHOUT_TRACES: dict[str, Any] = {
    "line_items": {"__all__": {"trace", "subscription_id"}},
    **dict.fromkeys(_INTERNAL, True),
}


def invoice_number_key(at: datetime) -> str:
    """The counter an invoice numbered at ``at`` draws from (one per month): ``202602``."""
    return f"{at:%Y%m}"


def invoice_number(key: str, sequence: int, *, prefix: str = "INV") -> str:
    """``INV-202602-00001`` for counter ``202602`` at ``1``."""
    return f"{prefix}-{key}-{sequence:05d}"


def due_date(period_end: datetime, terms: PaymentTerms | None) -> datetime:
    """``period_end`` plus the payment terms' days (``30 NET`` -> 30), else plus one day."""
    return period_end + timedelta(days=terms.days if terms is not None else DEFAULT_DUE_DAYS)
