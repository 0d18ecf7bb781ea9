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

Every charge is clipped to the line's own ``[start_date, end_date)``; a one-time line is charged
once, in full, on the invoice whose window holds its date.

Order of adjustments (each figure rounded where it is produced; totals are sums of rounded parts):

1. line amounts (commitments included); ``subtotal = Σ amounts``;
2. line coupons, then invoice-level coupons spread over lines; ``total_discount``;
3. prepaid credits on what each eligible line still owes;
4. taxes on ``subtotal - total_discount`` (credits do not lower the base);
5. ``total = subtotal - total_discount + total_tax - credits``, never below 0; ``amount_due = total``.

Example: lines 100.00 + 50.00, 10% coupon -> 135.00; tax 10% -> 13.50; credits 20.00 -> total 128.50.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from operator import add
from typing import Any

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
    * ``credits_as_of``: the instant credit expiry is checked at instead of ``as_of`` (a period billed
      late is paid by the credits that were live at its end); None = ``as_of``.
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
    credits_as_of: datetime | None = None

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
                    field="subscription_commitment",
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
        set_(self, "credits_as_of", require_optional_utc(self.credits_as_of, field="credits_as_of"))
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


# One invoice line while it is assembled: its charge key (line item id, kind, period start, period
# end), then price type, amount, line item (None for the true-up line), charge (None likewise) and
# commitment info. One tuple per line on the hot path; transposed once (in C, ``zip(*rows)``) into
# the columns the adjustments take, and the output records are built once at the end.
_Row = tuple[
    str, str, datetime, datetime, str, Decimal, LineItemInput | None, LineCharge | None, CommitmentInfo | None
]
_NO_ROWS: list[tuple[Any, ...]] = [()] * 9
# Output records are built with tuple.__new__: the same NamedTuple, without its Python __new__ frame.
_new = tuple.__new__


# The helpers below are the only places rows and lines are built; each keeps the field order of
# _Row / InvoiceLineDraft in one spot (the unit tests compare them with the keyword-built records).
# They take at most 14 keywords: CPython 3.11 binds that many as fast as positional arguments.


def _charge_row(*, item: LineItemInput, charge: LineCharge, start: datetime, end: datetime) -> _Row:
    """The row of ``item`` charged ``charge`` for ``[start, end)``."""
    return (
        item.line_item_id,
        "charge",
        start,
        end,
        item.price_type,
        charge.amount,
        item,
        charge,
        charge.commitment_info,
    )


def _true_up_row(*, start: datetime, end: datetime, amount: Decimal, info: CommitmentInfo) -> _Row:
    """The row of the subscription commitment's true-up (a FIXED line with no line item)."""
    return (TRUE_UP_LINE_ID, "true_up", start, end, FIXED, amount, None, None, info)


def _with_commitment(row: _Row, *, amount: Decimal, info: CommitmentInfo) -> _Row:
    """``row`` with the amount and commitment info the subscription commitment gives it."""
    line_id, kind, start, end, price_type, _amount, item, charge, _info = row
    return (line_id, kind, start, end, price_type, amount, item, charge, info)


def _charged_line(
    *, row: _Row, discount: Decimal, invoice_discount: Decimal, credit: Decimal, currency: str
) -> InvoiceLineDraft:
    """The invoice line of a charged ``row``, with its discounts and credit."""
    line_id, kind, start, end, _type, amount, item, charge, info = row
    assert item is not None and charge is not None  # a charged row has both
    return _new(
        InvoiceLineDraft,
        (
            line_id,  # line_item_id
            kind,  # kind
            item.display_name,  # display_name
            item.price_id,  # price_id
            item.price_type,  # price_type
            item.invoice_cadence,  # invoice_cadence
            item.meter_id,  # meter_id
            charge.quantity,  # quantity
            charge.adjusted_entitlement_quantity,  # adjusted_entitlement_quantity
            amount,  # amount
            start,  # period_start
            end,  # period_end
            discount,  # line_item_discount
            invoice_discount,  # invoice_level_discount
            credit,  # prepaid_credits_applied
            info,  # commitment_info
            charge,  # charge
            currency,  # currency
        ),
    )


def _true_up_line(
    *, row: _Row, name: str, discount: Decimal, invoice_discount: Decimal, credit: Decimal, currency: str
) -> InvoiceLineDraft:
    """The invoice line of the subscription commitment's true-up ``row``: FIXED, ARREAR, no price."""
    line_id, kind, start, end, price_type, amount, _item, _charge, info = row
    return _new(
        InvoiceLineDraft,
        (
            line_id,  # line_item_id
            kind,  # kind
            name,  # display_name
            "",  # price_id
            price_type,  # price_type
            ARREAR,  # invoice_cadence
            None,  # meter_id
            ZERO,  # quantity
            None,  # adjusted_entitlement_quantity
            amount,  # amount
            start,  # period_start
            end,  # period_end
            discount,  # line_item_discount
            invoice_discount,  # invoice_level_discount
            credit,  # prepaid_credits_applied
            info,  # commitment_info
            None,  # charge
            currency,  # currency
        ),
    )


def assemble_invoice(request: InvoiceRequest) -> InvoiceDraft:
    """Compute the invoice for ``request``; pure, so previews and real runs agree.

    Raises ``ValidationError`` for inputs that cannot be priced (e.g. a price in another currency,
    field ``currency``) and ``InvalidOperation`` when a line item would be charged twice for a period
    (within this invoice, or overlapping ``previously_billed`` unless ``preview``) or when totals
    fail to add up. Example: one FIXED ADVANCE line of 20.00 at ``period_start`` -> total 20.00.
    """
    currency = request.currency
    advance, arrear, cutoff = _windows(request)
    rows: list[_Row] = []
    append = rows.append
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
        line_start, line_end = item.start_date, item.end_date
        if item.one_time:
            # Charged once, in full, by the window holding its date: 50.00 dated 10 May is 50.00
            # on the invoice whose window holds 10 May, and on no other.
            assert line_start is not None  # LineItemInput checks it
            if line_start < full_start or line_start >= window_end:
                continue
            if line_end is not None and line_end <= line_start:
                continue
            charge = charge_line(item, full_start, full_end, full_start, full_end, currency)
            append(_charge_row(item=item, charge=charge, start=line_start, end=window_end))
            continue
        start = full_start
        if line_start is not None and line_start > start:
            start = line_start
        end = window_end
        if line_end is not None and line_end < end:
            end = line_end
        if start >= end:
            continue
        charge = charge_line(item, start, end, full_start, full_end, currency)
        append(_charge_row(item=item, charge=charge, start=start, end=end))

    sub_commitment = request.subscription_commitment
    if sub_commitment is not None and arrear is not None:
        _apply_subscription_commitment(request, sub_commitment, rows, cutoff)

    count = len(rows)
    line_ids, kinds, starts, ends, price_types, amounts, _items, _charges, _infos = (
        list(zip(*rows, strict=True)) or _NO_ROWS
    )
    keys: list[ChargeKey] = list(zip(line_ids, kinds, starts, ends, strict=True))
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
    line_disc: Sequence[Decimal]
    inv_disc: Sequence[Decimal]
    remaining: Sequence[Decimal]
    if coupons is not None:
        line_disc = coupons.line_item_discounts
        inv_disc = coupons.invoice_level_discounts
        remaining = coupons.remaining
        total_discount = sum(line_disc, ZERO) + sum(inv_disc, ZERO)
        coupon_records = coupons.applications
    else:
        line_disc = inv_disc = (ZERO,) * count
        remaining = amounts
        total_discount = ZERO
        coupon_records = ()

    line_credits: Sequence[Decimal]
    if request.credit_sources:
        credits = apply_credits(
            request.credit_sources,
            line_ids,
            price_types,
            remaining,
            currency=currency,
            as_of=request.as_of if request.credits_as_of is None else request.credits_as_of,
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
    tax_amounts = [t.tax_amount for t in taxes]
    total_tax = sum(tax_amounts, ZERO)
    total = subtotal - total_discount + total_tax - total_credits
    if total < ZERO:
        total = ZERO
    total = round_money(total, currency)

    built: list[InvoiceLineDraft] = []
    add_line = built.append
    for row, discount, invoice_discount, credit in zip(rows, line_disc, inv_disc, line_credits, strict=True):
        if row[6] is None:  # no line item: the true-up
            line = _true_up_line(
                row=row,
                name=_true_up_name(request),
                discount=discount,
                invoice_discount=invoice_discount,
                credit=credit,
                currency=currency,
            )
        else:
            line = _charged_line(
                row=row,
                discount=discount,
                invoice_discount=invoice_discount,
                credit=credit,
                currency=currency,
            )
        add_line(line)
    line_discounts = list(map(add, line_disc, inv_disc))
    check_totals(
        line_amounts=amounts,
        line_discounts=line_discounts,
        line_credits=line_credits,
        subtotal=subtotal,
        total_discount=total_discount,
        total_tax=total_tax,
        tax_amounts=tax_amounts,
        total_prepaid_credits_applied=total_credits,
        total=total,
        amount_due=total,
    )
    return InvoiceDraft(
        currency,
        request.reference_point,
        request.period_start,
        request.period_end,
        tuple(built),
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
    rows: list[_Row],
    cutoff: datetime,
) -> None:
    """Fold the subscription commitment into the usage lines and append a true-up line if due."""
    usage_index = [i for i, row in enumerate(rows) if row[6] is not None and row[4] == USAGE]
    split = split_subscription_commitment(
        [rows[i][5] for i in usage_index],
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
        info = CommitmentInfo(
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
        rows[i] = _with_commitment(rows[i], amount=within + overage, info=info)
    if split.true_up > ZERO:
        info = CommitmentInfo(
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
        rows.append(_true_up_row(start=request.period_start, end=cutoff, amount=split.true_up, info=info))
