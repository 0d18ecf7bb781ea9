"""Invoice assembly: which charges go on an invoice, and its totals.

:func:`assemble_invoice` turns an :class:`InvoiceRequest` (a subscription snapshot plus the usage the
caller aggregated) into an :class:`InvoiceDraft`. It is pure: a preview and a real run compute the same.

Which charges (``reference_point``):

* ``period_start`` (opening invoice): ADVANCE charges of ``[period_start, period_end)``.
* ``period_end``: ARREAR charges of the closing period ``[period_start, period_end)`` plus ADVANCE
  charges of the next period ``[period_end, next_period_end)`` (none when there is no next period).
* ``cancel``: ARREAR charges of ``[period_start, cancel_at)``; FIXED ARREAR lines are prorated by the
  share of the period used.
* ``preview``: like ``period_end``, but earlier invoices are not checked for overlaps.

Every charge is clipped to the line's own ``[start_date, end_date)``.

Order of adjustments (each figure rounded where it is produced; totals are sums of rounded parts):

1. line amounts (commitments included); ``subtotal = Σ amounts``;
2. line coupons, then invoice-level coupons spread over lines; ``total_discount``;
3. prepaid credits on what each eligible line still owes;
4. taxes on ``subtotal - total_discount`` (credits do not lower the base);
5. ``total = subtotal - total_discount + total_tax - credits``, never below 0; ``amount_due = total``.

Example: lines 100.00 + 50.00, 10% coupon -> 135.00; tax 10% -> 13.50; credits 20.00 -> total 128.50.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from billingkit.domain.commitments import SubscriptionCommitment, split_subscription_commitment
from billingkit.domain.coupons import CouponApplication, CouponAssociation, apply_coupons
from billingkit.domain.credits import CreditAllocation, CreditSource, apply_credits
from billingkit.domain.invariants import (
    ChargeKey,
    check_no_duplicate_charges,
    check_totals,
    require_bool,
    require_choice,
    require_decimal,
    require_optional_utc,
    require_utc,
)
from billingkit.domain.invoice_lines import (
    ADVANCE,
    ARREAR,
    FIXED,
    USAGE,
    CommitmentInfo,
    InvoiceLineDraft,
    LineCharge,
    LineItemInput,
    charge_line,
)
from billingkit.domain.money import ZERO, normalize_currency, round_money
from billingkit.domain.taxes import TaxApplication, TaxRate, apply_taxes
from billingkit.errors import ValidationError

__all__ = [
    "REFERENCE_POINTS",
    "InvoiceDraft",
    "InvoiceRequest",
    "assemble_invoice",
]

REFERENCE_POINTS = ("period_start", "period_end", "cancel", "preview")
TRUE_UP_LINE_ID = "subscription_commitment"


def _typed_tuple(value: object, kind: type, field: str) -> None:
    if not isinstance(value, tuple) or not all(isinstance(v, kind) for v in value):
        raise ValidationError(f"{field} must be a tuple of {kind.__name__}", field=field)


@dataclass(frozen=True, slots=True)
class InvoiceRequest:
    """Everything invoice assembly needs; validated once, here.

    * ``currency``: invoice currency (every price must use it).
    * ``reference_point``: ``period_start`` | ``period_end`` | ``cancel`` | ``preview``.
    * ``period_start`` < ``period_end``: the subscription's current period (aware, UTC);
      ``next_period_end``: end of the next period (ADVANCE charges at ``period_end``; None = none);
      ``cancel_at``: required for ``cancel``, in ``(period_start, period_end]``.
    * ``lines``: the line items; ``subscription_commitment`` (not together with line commitments)
      with ``commitment_prior_usage``/``commitment_closes_window`` for cumulative ones.
    * ``coupons``, ``tax_rates``, ``credit_sources``: adjustments.
    * ``previously_billed``: charges already on earlier invoices (refused again unless ``preview``).
    * ``as_of``: the computation instant (coupon redeem windows, credit expiry); None = not checked.
    Raises ``ValidationError`` naming the JSON field.
    """

    currency: str
    reference_point: str
    period_start: datetime
    period_end: datetime
    lines: tuple[LineItemInput, ...]
    next_period_end: datetime | None = None
    cancel_at: datetime | None = None
    subscription_commitment: SubscriptionCommitment | None = None
    commitment_prior_usage: Decimal = ZERO
    commitment_closes_window: bool = True
    coupons: tuple[CouponAssociation, ...] = ()
    tax_rates: tuple[TaxRate, ...] = ()
    credit_sources: tuple[CreditSource, ...] = ()
    previously_billed: frozenset[ChargeKey] = frozenset()
    as_of: datetime | None = None
    plan_display_name: str = ""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "currency", normalize_currency(self.currency))
        require_choice(self.reference_point, REFERENCE_POINTS, field="reference_point")
        start = require_utc(self.period_start, field="period_start")
        end = require_utc(self.period_end, field="period_end")
        if not start < end:
            raise ValidationError("period_end must be after period_start", field="period_end")
        set_(self, "period_start", start)
        set_(self, "period_end", end)
        nxt = require_optional_utc(self.next_period_end, field="next_period_end")
        if nxt is not None and not end < nxt:
            raise ValidationError("next_period_end must be after period_end", field="next_period_end")
        set_(self, "next_period_end", nxt)
        cancel = require_optional_utc(self.cancel_at, field="cancel_at")
        if self.reference_point == "cancel":
            if cancel is None:
                raise ValidationError("cancel_at is required to cancel", field="cancel_at")
            if not start < cancel <= end:
                raise ValidationError(
                    "cancel_at must lie after period_start and not after period_end",
                    field="cancel_at",
                )
        set_(self, "cancel_at", cancel)
        _typed_tuple(self.lines, LineItemInput, "line_items")
        _typed_tuple(self.coupons, CouponAssociation, "coupons")
        _typed_tuple(self.tax_rates, TaxRate, "tax_rates")
        _typed_tuple(self.credit_sources, CreditSource, "credit_sources")
        commitment = self.subscription_commitment
        if commitment is not None:
            if not isinstance(commitment, SubscriptionCommitment):
                raise ValidationError(
                    "subscription_commitment must be a SubscriptionCommitment",
                    field="commitment_amount",
                )
            if any(line.commitment is not None for line in self.lines):
                raise ValidationError(
                    "a subscription commitment and line item commitments cannot be combined",
                    field="commitment_amount",
                )
        set_(
            self,
            "commitment_prior_usage",
            require_decimal(self.commitment_prior_usage, field="commitment_prior_usage", minimum=ZERO),
        )
        require_bool(self.commitment_closes_window, field="commitment_closes_window")
        previous = self.previously_billed
        if not isinstance(previous, frozenset):
            raise ValidationError("previously_billed must be a frozenset", field="previously_billed")
        for key in previous:
            if (
                not isinstance(key, tuple)
                or len(key) != 4
                or not isinstance(key[0], str)
                or not isinstance(key[1], str)
                or not isinstance(key[2], datetime)
                or not isinstance(key[3], datetime)
                or key[2].utcoffset() is None
                or key[3].utcoffset() is None
            ):
                raise ValidationError(
                    "previously_billed holds (line item id, kind, start, end) keys",
                    field="previously_billed",
                )
        set_(self, "as_of", require_optional_utc(self.as_of, field="as_of"))
        if not isinstance(self.plan_display_name, str):
            raise ValidationError("plan_display_name must be a string", field="plan_display_name")


@dataclass(frozen=True, slots=True)
class InvoiceDraft:
    """A computed invoice (money in ``currency``, rounded; totals are sums of rounded parts).

    ``total = max(0, subtotal - total_discount + total_tax - total_prepaid_credits_applied)`` and
    ``amount_due = total``. ``credit_debits`` says what each prepaid source paid (consumption
    order); ``credit_allocations`` the same per line.
    """

    currency: str
    reference_point: str
    period_start: datetime
    period_end: datetime
    lines: tuple[InvoiceLineDraft, ...]
    subtotal: Decimal
    total_discount: Decimal
    total_tax: Decimal
    total_prepaid_credits_applied: Decimal
    total: Decimal
    amount_due: Decimal
    coupon_applications: tuple[CouponApplication, ...]
    tax_applications: tuple[TaxApplication, ...]
    credit_allocations: tuple[CreditAllocation, ...]
    credit_debits: tuple[tuple[str, Decimal], ...]

    @property
    def charge_keys(self) -> frozenset[ChargeKey]:
        """The (line item id, kind, start, end) of every line: feed to ``previously_billed`` later."""
        return frozenset((ln.line_item_id, ln.kind, ln.period_start, ln.period_end) for ln in self.lines)


def _windows(
    request: InvoiceRequest,
) -> tuple[tuple[datetime, datetime] | None, tuple[datetime, datetime] | None, datetime]:
    """(ADVANCE full period, ARREAR full period, ARREAR cut-off) for the reference point."""
    start, end = request.period_start, request.period_end
    point = request.reference_point
    if point == "period_start":
        return (start, end), None, end
    if point == "cancel":
        cancel = request.cancel_at
        return None, (start, end), cancel if cancel is not None else end
    nxt = request.next_period_end
    return ((end, nxt) if nxt is not None else None), (start, end), end


def assemble_invoice(request: InvoiceRequest) -> InvoiceDraft:
    """Compute the invoice for ``request``; pure, so previews and real runs agree.

    Raises ``ValidationError`` for inputs that cannot be priced (e.g. a price in another currency,
    field ``currency``) and ``InvalidOperation`` when a line item would be charged twice for a period
    (within this invoice, or overlapping ``previously_billed`` unless ``preview``) or when totals
    fail to add up. Example: one FIXED ADVANCE line of 20.00 at ``period_start`` -> total 20.00.
    """
    currency = request.currency
    advance, arrear, cutoff = _windows(request)
    # Parallel lists keep the hot path to plain list operations; records are built once at the end.
    items: list[LineItemInput | None] = []
    charges: list[LineCharge | None] = []
    amounts: list[Decimal] = []
    starts: list[datetime] = []
    ends: list[datetime] = []
    infos: list[CommitmentInfo | None] = []
    for item in request.lines:
        if item.invoice_cadence == ADVANCE:
            if advance is None:
                continue
            full_start, full_end = advance
            window_end = full_end
        else:
            if arrear is None:
                continue
            full_start, full_end = arrear
            window_end = cutoff
        start = full_start
        line_start, line_end = item.start_date, item.end_date
        if line_start is not None and line_start > start:
            start = line_start
        end = window_end
        if line_end is not None and line_end < end:
            end = line_end
        if start >= end:
            continue
        charge = charge_line(item, start, end, full_start, full_end, currency)
        items.append(item)
        charges.append(charge)
        amounts.append(charge.amount)
        starts.append(start)
        ends.append(end)
        infos.append(charge.commitment_info)

    sub_commitment = request.subscription_commitment
    if sub_commitment is not None and arrear is not None:
        _apply_subscription_commitment(
            request, sub_commitment, items, charges, amounts, starts, ends, infos, cutoff
        )

    count = len(amounts)
    line_ids = [item.line_item_id if item is not None else TRUE_UP_LINE_ID for item in items]
    kinds = ["charge" if item is not None else "true_up" for item in items]
    keys = [(line_ids[i], kinds[i], starts[i], ends[i]) for i in range(count)]
    check_no_duplicate_charges(
        keys, () if request.reference_point == "preview" else request.previously_billed
    )

    subtotal = sum(amounts, ZERO)
    coupons = None
    if request.coupons:
        coupons = apply_coupons(
            line_ids,
            amounts,
            request.coupons,
            currency=currency,
            period_start=request.period_start,
            period_end=request.period_end,
            as_of=request.as_of,
        )
    if coupons is not None:
        line_disc = coupons.line_item_discounts
        inv_disc = coupons.invoice_level_discounts
        remaining = list(coupons.remaining)
        total_discount = sum(line_disc, ZERO) + sum(inv_disc, ZERO)
        coupon_records = coupons.applications
    else:
        line_disc = inv_disc = (ZERO,) * count
        remaining = amounts
        total_discount = ZERO
        coupon_records = ()

    price_types = [item.price_type if item is not None else FIXED for item in items]
    if request.credit_sources:
        credits = apply_credits(
            request.credit_sources,
            line_ids,
            price_types,
            remaining,
            currency=currency,
            as_of=request.as_of,
        )
        line_credits = credits.line_credits
        total_credits = credits.total
        allocations = credits.allocations
        debits = credits.source_debits
    else:
        line_credits = (ZERO,) * count
        total_credits = ZERO
        allocations = ()
        debits = ()

    taxes = apply_taxes(request.tax_rates, subtotal - total_discount, currency)
    total_tax = sum((t.tax_amount for t in taxes), ZERO)
    total = subtotal - total_discount + total_tax - total_credits
    if total < ZERO:
        total = ZERO
    total = round_money(total, currency)

    built: list[InvoiceLineDraft] = []
    for i in range(count):
        got = items[i]
        priced = charges[i]
        if got is None or priced is None:
            built.append(
                InvoiceLineDraft(
                    line_ids[i],
                    kinds[i],
                    _true_up_name(request),
                    "",
                    FIXED,
                    ARREAR,
                    None,
                    ZERO,
                    None,
                    amounts[i],
                    starts[i],
                    ends[i],
                    line_disc[i],
                    inv_disc[i],
                    line_credits[i],
                    infos[i],
                    None,
                    currency,
                )
            )
            continue
        built.append(
            InvoiceLineDraft(
                line_ids[i],
                kinds[i],
                got.display_name,
                got.price_id,
                got.price_type,
                got.invoice_cadence,
                got.meter_id,
                priced.quantity,
                priced.adjusted_entitlement_quantity,
                amounts[i],
                starts[i],
                ends[i],
                line_disc[i],
                inv_disc[i],
                line_credits[i],
                infos[i],
                priced,
                currency,
            )
        )
    lines = tuple(built)
    check_totals(
        line_amounts=amounts,
        line_discounts=[line_disc[i] + inv_disc[i] for i in range(count)],
        line_credits=line_credits,
        subtotal=subtotal,
        total_discount=total_discount,
        total_tax=total_tax,
        tax_amounts=[t.tax_amount for t in taxes],
        total_prepaid_credits_applied=total_credits,
        total=total,
        amount_due=total,
    )
    return InvoiceDraft(
        currency,
        request.reference_point,
        request.period_start,
        request.period_end,
        lines,
        subtotal,
        total_discount,
        total_tax,
        total_credits,
        total,
        total,
        coupon_records,
        taxes,
        allocations,
        debits,
    )


def _true_up_name(request: InvoiceRequest) -> str:
    return f"{request.plan_display_name} True Up".strip()


def _apply_subscription_commitment(
    request: InvoiceRequest,
    commitment: SubscriptionCommitment,
    items: list[LineItemInput | None],
    charges: list[LineCharge | None],
    amounts: list[Decimal],
    starts: list[datetime],
    ends: list[datetime],
    infos: list[CommitmentInfo | None],
    cutoff: datetime,
) -> None:
    """Fold the subscription commitment into the usage lines and append a true-up line if due."""
    usage_index = [i for i, item in enumerate(items) if item is not None and item.price_type == USAGE]
    split = split_subscription_commitment(
        [amounts[i] for i in usage_index],
        commitment,
        request.currency,
        prior_usage=request.commitment_prior_usage,
        closes_window=request.commitment_closes_window,
    )
    factor = commitment.overage_factor
    true_up_enabled = commitment.enable_true_up
    for position, i in enumerate(usage_index):
        within = split.within[position]
        overage = split.overage[position]
        amounts[i] = within + overage
        infos[i] = CommitmentInfo(
            "amount",
            commitment.amount,
            None,
            commitment.duration_periods,
            False,
            factor,
            true_up_enabled,
            within,
            overage,
            ZERO,
        )
    if split.true_up > ZERO:
        items.append(None)
        charges.append(None)
        amounts.append(split.true_up)
        starts.append(request.period_start)
        ends.append(cutoff)
        infos.append(
            CommitmentInfo(
                "amount",
                commitment.amount,
                None,
                commitment.duration_periods,
                False,
                factor,
                true_up_enabled,
                split.utilized,
                split.total_overage,
                split.true_up,
            )
        )
