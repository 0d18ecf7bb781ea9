"""Direct (one-off) invoices: ``POST /invoices`` with the reference's CreateInvoiceRequest.

billingkit computes the money from the lines, coupons and tax rates
(:func:`billingkit.domain.invoice_adjustments.adjust_invoice`, reference notes §4.6); the
request's ``subtotal``, ``total`` and ``amount_due`` (and any line discount it states) must equal
what billingkit computes, else a ``ValidationError`` naming the field: a figure that does not add
up is never stored. Those are the figures before prepaid credits: a ``ONE_OFF`` invoice is then
paid by the customer's PRE_PAID credits in its currency (reference notes §4.6, at computation),
which lower ``total`` and ``amount_due`` and are debited with the invoice (decision "Credits on
invoices"). The invoice is finalized at once (numbered from the environment's gap-free
sequence) unless ``invoice_status: DRAFT`` is asked.

Idempotency: ``idempotency_key`` is unique per environment over every invoice. The same key with
the same body answers the invoice it created (nothing written, no second notification); the same
key with another body is ``IdempotencyConflict`` (409). Without a key, every call creates one
invoice. Coupon redemptions count once per application (reference notes §5).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import Coupon
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.coupons import ensure_redeemable
from billingkit.domain.invoice_adjustments import InvoiceCoupon, invoice_coupon_associations
from billingkit.domain.invoice_lifecycle import payment_changes
from billingkit.domain.invoices import (
    DEFAULT_DUE_DAYS,
    BillingReason,
    Invoice,
    InvoiceLineItem,
    InvoiceStatus,
    InvoiceType,
    PaymentStatus,
)
from billingkit.domain.money import ZERO
from billingkit.domain.periods import BillingPeriod
from billingkit.domain.validation import (
    CurrencyCode,
    DecimalText,
    InputModel,
    Key,
    Metadata,
    NonEmptyStr,
    UtcDatetime,
)
from billingkit.errors import AlreadyExists, IdempotencyConflict, InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.coupon_associations import redeem
from billingkit.services.invoice_adjustments import AppliedTaxRate
from billingkit.services.invoice_credits import invoice_line_credits, load_invoice_credits, record_debits
from billingkit.services.invoice_sources import direct_sources
from billingkit.services.invoice_updates import recompute_adjustments
from billingkit.services.invoicing import number_invoices
from billingkit.services.records import get_live
from billingkit.services.tax_resolution import TaxRateOverride, resolve_invoice_tax_rates

__all__ = [
    "InvoiceCouponRequest",
    "InvoiceCreate",
    "InvoiceLineCreate",
    "LineItemCouponRequest",
    "create_invoice",
]

ENTITY = "invoice"
LABEL = "invoice"


class InvoiceCouponRequest(InputModel):
    """A coupon on the whole invoice; ``coupon_association_id`` is kept on its application."""

    coupon_id: NonEmptyStr
    coupon_association_id: Key | None = None


class LineItemCouponRequest(InputModel):
    """A coupon on the lines whose ``price_id`` is ``line_item_id`` (the reference matches lines
    by price id)."""

    not_supported: ClassVar[frozenset[str]] = frozenset({"subscription_line_item_id"})

    coupon_id: NonEmptyStr
    line_item_id: NonEmptyStr
    coupon_association_id: Key | None = None


class InvoiceLineCreate(InputModel):
    """One line: ``amount`` is the line's money (before discounts), ``quantity`` what it bills.
    ``line_item_discount`` and ``invoice_level_discount``, when given, must equal what billingkit
    computes."""

    not_supported: ClassVar[frozenset[str]] = frozenset(
        {"commitment_info", "prepaid_credits_applied", "subscription_id", "plan_id"}
    )

    amount: DecimalText
    quantity: DecimalText
    display_name: str | None = None
    entity_id: str | None = None
    entity_type: str | None = None
    plan_display_name: str | None = None
    meter_id: str | None = None
    meter_display_name: str | None = None
    price_id: str | None = None
    price_type: PriceType | None = None
    price_unit: str | None = None
    price_unit_amount: DecimalText | None = None
    subscription_line_item_id: str | None = None
    adjusted_entitlement_quantity: DecimalText | None = None
    line_item_discount: DecimalText | None = None
    invoice_level_discount: DecimalText | None = None
    period_start: UtcDatetime | None = None
    period_end: UtcDatetime | None = None
    metadata: Metadata = {}


class InvoiceCreate(InputModel):
    """The reference's CreateInvoiceRequest. ``subtotal``, ``total`` and ``amount_due`` are
    required and checked against what billingkit computes before prepaid credits; a ``ONE_OFF``
    invoice is then paid by the customer's PRE_PAID credits (``CREDIT`` invoices, wallet purchases,
    never are), and ``total_prepaid_applied``, when given, must equal what they pay.
    ``amount_paid`` records a payment on the finalized invoice. ``invoice_number`` is refused
    (numbers come from the sequence)."""

    not_supported: ClassVar[frozenset[str]] = frozenset(
        {"invoice_number", "prepared_tax_rates", "payment_status"}
    )
    #: Syncing to an outside accounting vendor: nothing here to sync to.
    ignored: ClassVar[frozenset[str]] = frozenset({"force_sync_invoice"})

    customer_id: NonEmptyStr
    currency: CurrencyCode
    subtotal: DecimalText
    total: DecimalText
    amount_due: DecimalText
    amount_paid: DecimalText | None = None
    total_prepaid_applied: DecimalText | None = None
    invoice_type: InvoiceType = InvoiceType.ONE_OFF
    invoice_status: InvoiceStatus | None = None
    billing_reason: BillingReason = BillingReason.MANUAL
    billing_period: BillingPeriod | None = None
    subscription_id: str | None = None
    description: str | None = None
    due_date: UtcDatetime | None = None
    issue_date: UtcDatetime | None = None
    period_start: UtcDatetime | None = None
    period_end: UtcDatetime | None = None
    invoice_pdf_url: str | None = None
    idempotency_key: Key | None = None
    metadata: Metadata = {}
    line_items: list[InvoiceLineCreate] = Field(default_factory=list)
    coupons: list[NonEmptyStr] = Field(default_factory=list)
    invoice_coupons: list[InvoiceCouponRequest] = Field(default_factory=list)
    line_item_coupons: list[LineItemCouponRequest] = Field(default_factory=list)
    tax_rates: list[NonEmptyStr] = Field(default_factory=list)
    tax_rate_overrides: list[TaxRateOverride] = Field(default_factory=list)

    def fingerprint(self) -> str:
        """The digest the idempotency key is held to: the whole request except the key, with
        every decimal in its shortest form, so ``"100"`` and ``"100.00"`` are the same body."""
        body = self.model_dump(exclude={"idempotency_key"})
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=_canonical).encode()).hexdigest()


def _canonical(value: object) -> str:
    """A request value JSON cannot write, as text that is equal exactly when the values are."""
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} has no canonical form")


def _check_request(request: InvoiceCreate) -> None:
    if request.invoice_status not in (None, InvoiceStatus.DRAFT, InvoiceStatus.FINALIZED):
        raise ValidationError(
            "a direct invoice is created DRAFT or FINALIZED (the default)", field="invoice_status"
        )
    if request.period_start and request.period_end and request.period_end <= request.period_start:
        raise ValidationError("period_end must be after period_start", field="period_end")
    if request.invoice_status is InvoiceStatus.DRAFT and request.amount_paid:
        raise InvalidOperation("a DRAFT invoice records no payment: leave amount_paid out or finalize it")
    if not request.line_items:
        raise ValidationError("a direct invoice needs at least one line item", field="line_items")


def _coupon(uow: UnitOfWork, ctx: Context, coupon_id: str, currency: str, field: str) -> Coupon:
    coupon = get_live(uow.coupons, "coupon", coupon_id)
    try:
        ensure_redeemable(coupon.to_core(), ctx.now, currency=currency)
    except ValidationError as exc:
        raise ValidationError(f"coupon {coupon_id}: {exc.message}", field=field) from None
    return coupon


def _coupons(
    uow: UnitOfWork, ctx: Context, request: InvoiceCreate, lines: list[InvoiceLineItem]
) -> tuple[list[InvoiceCoupon], dict[str, Coupon]]:
    """The request's coupons as the core applies them, and the stored coupons by id."""
    stored: dict[str, Coupon] = {}
    named: list[InvoiceCoupon] = []
    whole: list[tuple[str, str | None, str]] = [
        (c, None, f"coupons[{i}]") for i, c in enumerate(request.coupons)
    ]
    whole += [
        (c.coupon_id, c.coupon_association_id, f"invoice_coupons[{i}].coupon_id")
        for i, c in enumerate(request.invoice_coupons)
    ]
    seen: set[str] = set()
    for coupon_id, association_id, field in whole:
        if coupon_id in seen:
            raise ValidationError(f"coupon {coupon_id} is named twice on the invoice", field=field)
        seen.add(coupon_id)
        coupon = stored[coupon_id] = _coupon(uow, ctx, coupon_id, request.currency, field)
        named.append(InvoiceCoupon(coupon.to_core(), None, association_id))
    for i, item in enumerate(request.line_item_coupons):
        field = f"line_item_coupons[{i}]"
        coupon = stored[item.coupon_id] = _coupon(
            uow, ctx, item.coupon_id, request.currency, f"{field}.coupon_id"
        )
        matching = [line for line in lines if line.price_id == item.line_item_id]
        if not matching:
            raise ValidationError(
                f"no line item has price_id {item.line_item_id!r}", field=f"{field}.line_item_id"
            )
        named += [InvoiceCoupon(coupon.to_core(), line.id, item.coupon_association_id) for line in matching]
    return named, stored


def _tax_rates(
    uow: UnitOfWork, ctx: Context, request: InvoiceCreate, customer_id: str
) -> list[AppliedTaxRate]:
    """The rates named on the request (``tax_rates``, then the applied ``tax_rate_overrides`` by
    priority), else the customer's, else the tenant's tax associations in force now."""
    return list(
        resolve_invoice_tax_rates(
            uow,
            customer_id=customer_id,
            currency=request.currency,
            at=ctx.now,
            tax_rates=request.tax_rates,
            tax_rate_overrides=request.tax_rate_overrides,
        )
    )


def _lines(ctx: Context, request: InvoiceCreate) -> list[InvoiceLineItem]:
    start = request.period_start or ctx.now
    end = request.period_end or start
    return [
        InvoiceLineItem(
            id=ctx.ids.new("inv_line"),
            subscription_line_item_id=line.subscription_line_item_id,
            entity_type=line.entity_type,
            entity_id=line.entity_id,
            plan_display_name=line.plan_display_name,
            display_name=line.display_name or f"Line {index + 1}",
            meter_id=line.meter_id,
            meter_display_name=line.meter_display_name,
            price_id=line.price_id,
            price_type=line.price_type,
            price_unit=line.price_unit,
            price_unit_amount=line.price_unit_amount,
            quantity=line.quantity,
            amount=line.amount,
            adjusted_entitlement_quantity=line.adjusted_entitlement_quantity,
            period_start=line.period_start or start,
            period_end=line.period_end or line.period_start or end,
            metadata=line.metadata,
        )
        for index, line in enumerate(request.line_items)
    ]


def _check_figures(request: InvoiceCreate, invoice: Invoice) -> None:
    """Every figure the caller stated equals billingkit's, else ``ValidationError`` naming it."""
    for index, (asked, line) in enumerate(zip(request.line_items, invoice.line_items, strict=True)):
        for name in ("line_item_discount", "invoice_level_discount"):
            stated = getattr(asked, name)
            if stated is not None and stated != getattr(line, name):
                raise ValidationError(
                    f"{name} {stated} does not match the computed {getattr(line, name)}",
                    field=f"line_items[{index}].{name}",
                )
    for name in ("subtotal", "total", "amount_due"):
        stated, computed = getattr(request, name), getattr(invoice, name)
        if stated != computed:
            raise ValidationError(
                f"{name} {stated} does not match the {computed} billingkit computes from the line items, "
                "coupons and tax rates",
                field=name,
                details={"computed": str(computed), "provided_value": str(stated)},
            )


def _check_prepaid(request: InvoiceCreate, invoice: Invoice) -> None:
    """A stated ``total_prepaid_applied`` equals what the customer's credits pay, else
    ``ValidationError`` naming it."""
    stated = request.total_prepaid_applied
    if stated is not None and stated != invoice.total_prepaid_credits_applied:
        raise ValidationError(
            f"total_prepaid_applied {stated} does not match the {invoice.total_prepaid_credits_applied} "
            "the customer's prepaid credits pay",
            field="total_prepaid_applied",
            details={
                "computed": str(invoice.total_prepaid_credits_applied),
                "provided_value": str(stated),
            },
        )


def _existing(uow: UnitOfWork, key: str, fingerprint: str) -> Invoice | None:
    found = uow.invoices.find_one(include_archived=True, idempotency_key=key)
    if found is not None and found.request_fingerprint != fingerprint:
        raise IdempotencyConflict(
            f"idempotency_key {key!r} was used for another invoice request ({found.id})",
            details={"field": "idempotency_key", "invoice_id": found.id},
        )
    return found


def create_invoice(uow: UnitOfWork, ctx: Context, *, request: InvoiceCreate, taxed: bool = True) -> Invoice:
    """Create a direct invoice (see the module docstring); ``invoice.update.finalized`` when it is
    finalized, ``invoice.update`` for a draft. ``taxed=False`` (billingkit's own invoices that sell
    wallet credits) applies no tax rate, not even the customer's tax associations.

    Raises ``NotFound`` (customer, subscription, coupon); ``ValidationError`` naming the field for
    a figure that does not add up, an unknown tax rate, an unredeemable coupon;
    ``IdempotencyConflict`` for a key used with another body.
    """
    ctx.require(ENTITY, Action.WRITE)
    fingerprint = request.fingerprint()
    key = request.idempotency_key
    if key is not None and (found := _existing(uow, key, fingerprint)) is not None:
        return found
    _check_request(request)
    customer = get_live(uow.customers, "customer", request.customer_id)
    if request.subscription_id is not None:
        sub = get_live(uow.subscriptions, "subscription", request.subscription_id)
        if sub.customer_id != customer.id:
            raise ValidationError(
                f"subscription {sub.id} belongs to another customer", field="subscription_id"
            )
    lines = _lines(ctx, request)
    named, stored = _coupons(uow, ctx, request, lines)
    rates = _tax_rates(uow, ctx, request, customer.id) if taxed else []
    invoice_id = ctx.ids.new("inv")
    issued_at = ctx.now
    draft = Invoice(
        id=invoice_id,
        **ctx.stamp(),
        invoice_type=request.invoice_type,
        invoice_status=InvoiceStatus.DRAFT,
        payment_status=PaymentStatus.PENDING,
        customer_id=customer.id,
        subscription_id=request.subscription_id,
        currency=request.currency,
        description=request.description,
        billing_reason=request.billing_reason,
        billing_period=request.billing_period,
        subtotal=ZERO,
        total=ZERO,
        amount_due=ZERO,
        amount_remaining=ZERO,
        due_date=request.due_date or (request.period_end or issued_at) + timedelta(days=DEFAULT_DUE_DAYS),
        period_start=request.period_start,
        period_end=request.period_end,
        idempotency_key=key,
        request_fingerprint=fingerprint if key is not None else None,
        invoice_pdf_url=request.invoice_pdf_url,
        metadata=request.metadata,
        line_items=tuple(lines),
        adjustment_sources=direct_sources(named, [applied.rate for applied in rates]),
    )
    start = request.period_start or issued_at
    computed = recompute_adjustments(
        ctx,
        draft,
        invoice_coupon_associations(named, start),
        rates,
        coupons=stored,
        given_association_ids={(c.coupon.id, c.line_id): c.association_id for c in named},
    )
    _check_figures(request, computed)
    credits = (
        load_invoice_credits(uow, [customer.id]) if request.invoice_type is InvoiceType.ONE_OFF else None
    )
    paid = invoice_line_credits(credits, computed, as_of=ctx.now) if credits is not None else None
    if paid is not None:
        # Prepaid credits pay the lines after their discounts (reference notes §4.6: ONE_OFF
        # invoices at computation); the totals are computed again with them.
        computed = recompute_adjustments(
            ctx,
            computed.model_copy(
                update={
                    "line_items": tuple(
                        line.model_copy(update={"prepaid_credits_applied": credit})
                        for line, credit in zip(computed.line_items, paid.line_credits, strict=True)
                    ),
                    "total_prepaid_credits_applied": paid.total,
                }
            ),
            invoice_coupon_associations(named, start),
            rates,
            coupons=stored,
            given_association_ids={(c.coupon.id, c.line_id): c.association_id for c in named},
        )
    _check_prepaid(request, computed)
    try:
        uow.invoices.add(computed)
    except AlreadyExists:
        # A concurrent call with the same key won: answer its invoice (or the conflict).
        if key is not None and (found := _existing(uow, key, fingerprint)) is not None:
            return found
        raise
    if paid is not None and credits is not None:
        record_debits(uow, ctx, credits, [credits.take(paid.source_debits, computed.id)])
    _redeem(uow, ctx, computed)
    invoice = computed
    if request.invoice_status is not InvoiceStatus.DRAFT:
        (invoice,) = number_invoices(uow, ctx, [computed])
        if request.issue_date is not None:
            invoice = invoice.model_copy(update={"issue_date": request.issue_date})
        if request.amount_paid is not None and request.amount_paid > ZERO:
            settled = (
                PaymentStatus.SUCCEEDED
                if request.amount_paid >= invoice.amount_due
                else PaymentStatus.PENDING
            )
            invoice = invoice.model_copy(
                update=payment_changes(invoice, settled, request.amount_paid, ctx.now)
            )
        invoice = uow.invoices.update(invoice)
    finalized = invoice.invoice_status is InvoiceStatus.FINALIZED
    notifications.notify(uow, ctx, "invoice.update.finalized" if finalized else "invoice.update", invoice)
    return invoice


def _redeem(uow: UnitOfWork, ctx: Context, invoice: Invoice) -> None:
    """Count each coupon application as one redemption (reference notes §5), taken from the
    coupon's redemption counter like a subscription's attachment, within ``max_redemptions``."""
    used: dict[str, int] = {}
    for record in invoice.coupon_applications:
        used[record.coupon_id] = used.get(record.coupon_id, 0) + 1
    for coupon_id, count in used.items():
        redeem(uow, ctx, uow.coupons.get(coupon_id), field="coupons", count=count)
