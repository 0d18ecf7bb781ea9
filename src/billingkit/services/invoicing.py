"""Computing and issuing subscription invoices: the money path shared by subscription creation,
draft activation, the billing run and invoice previews.

1. :func:`load_snapshot` reads what a set of subscriptions is priced with (prices, meters, customers,
   plan entitlements and their features), a few statements for the whole set;
2. :func:`measure_usage` asks the usage store for every metered line's usage in one batch;
   :func:`compute_invoice` hands each invoice to the billing core
   (:func:`billingkit.domain.invoicing.assemble_invoice`);
3. :func:`build_invoice` turns a computed draft into an :class:`~billingkit.domain.invoices.Invoice`
   with its per-line trace; :func:`issue_invoice` (:mod:`billingkit.services.invoice_issuing`)
   numbers it, stores it under its unique key and records its notification.

Previews stop after step 3, so they run the same code without writing anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from billingkit.domain.allowances import apply_allowance
from billingkit.domain.catalog import Coupon, Entitlement, Feature, Meter, Price
from billingkit.domain.catalog.entitlements import EntitlementEntityType
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.commitments import SubscriptionCommitment
from billingkit.domain.coupons import CouponAssociation
from billingkit.domain.customers import Customer
from billingkit.domain.event_types import invoice_payload
from billingkit.domain.invoice_lines import ARREAR, LineItemInput
from billingkit.domain.invoices import (
    BillingReason,
    Invoice,
    InvoiceLineItem,
    InvoiceStatus,
    PaymentStatus,
    due_date,
)
from billingkit.domain.invoicing import InvoiceDraft, InvoiceRequest, assemble_invoice
from billingkit.domain.line_item_rules import one_time_charge_date
from billingkit.domain.money import ZERO
from billingkit.domain.periods import BillingPeriod, Period
from billingkit.domain.pricing import PriceSpec
from billingkit.domain.resources import Record
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.domain.usage import MeterSpec, UsageQuery, UsageResult
from billingkit.errors import ValidationError
from billingkit.ports import Repository, UnitOfWork
from billingkit.services.addon_allowances import AddonAllowances, line_allowance, load_addon_allowances
from billingkit.services.context import Context
from billingkit.services.coupon_associations import load_coupon_associations
from billingkit.services.invoice_adjustments import (
    AppliedTaxRate,
    coupon_application_records,
    tax_application_records,
)
from billingkit.services.invoice_credits import (
    InvoiceCredits,
    credits_instant,
    load_invoice_credits,
)
from billingkit.services.invoice_issuing import (
    finalize_or_hold,
    invoice_event,
    issue_invoice,
    number_invoices,
)
from billingkit.services.line_terms import (
    arrear_period,
    arrear_window,
    commitment_terms,
    has_arrear,
    prior_committed_usage,
    stub_proration,
)
from billingkit.services.records import list_where_in
from billingkit.services.subscription_commitments import (
    CommittedUsage,
    commitment_periods,
    committed_usage,
    load_commitment_usage,
    wire_commitment_info,
)
from billingkit.services.subscription_families import (
    Families,
    billed_customer_ids,
    load_families,
    usage_customers,
)
from billingkit.services.tax_resolution import load_subscription_tax_rates

__all__ = [
    "Charge",
    "ComputedInvoice",
    "CurrentPeriods",
    "Snapshot",
    "Usage",
    "build_invoice",
    "compute_invoice",
    "compute_invoices",
    "finalize_or_hold",
    "invoice_event",
    "invoice_payload",
    "issue_invoice",
    "load_snapshot",
    "measure_usage",
    "number_invoices",
    "preview_current_periods",
    "supported_allowance",
]

R = TypeVar("R", bound=Record)


@dataclass(frozen=True, slots=True)
class Charge:
    """One invoice to compute for ``subscription``: ``period`` is the invoice period; with
    ``reference_point`` ``period_end`` (or ``preview``) its ARREAR charges plus the ADVANCE charges of
    ``next_period``; with ``period_start`` its ADVANCE charges; with ``cancel`` the ARREAR charges
    of ``[period.start, cancel_at)`` (the invoice's period ends at ``cancel_at``)."""

    subscription: Subscription
    reason: BillingReason
    reference_point: str
    period: Period
    next_period: Period | None = None
    cancel_at: datetime | None = None
    #: Lines of ``grouped_invoicing`` children billed on this (their parent's) invoice, each with
    #: the charge of its own subscription (:func:`billingkit.services.grouped_billing.group_charges`).
    grouped: tuple[tuple[Charge, SubscriptionLineItem], ...] = ()


@dataclass(slots=True)
class Snapshot:
    """The catalogue a set of subscriptions is priced with, by id."""

    prices: dict[str, Price] = field(default_factory=dict)
    meters: dict[str, Meter] = field(default_factory=dict)
    customers: dict[str, Customer] = field(default_factory=dict)
    # plan id -> meter id -> the plan's entitlement on the feature metered by that meter
    allowances: dict[str, dict[str, Entitlement]] = field(default_factory=dict)
    # subscription id -> overridden entitlement id -> the subscription's override of it
    entitlement_overrides: dict[str, dict[str, Entitlement]] = field(default_factory=dict)
    # subscription id -> meter id -> its add-ons' entitlements on that meter, with their dates
    addon_allowances: AddonAllowances = field(default_factory=dict)
    # subscription id -> the coupons attached to it, as the billing core applies them
    coupon_associations: dict[str, tuple[CouponAssociation, ...]] = field(default_factory=dict)
    # coupon id -> the stored coupon (its snapshot goes on each coupon application record)
    coupons: dict[str, Coupon] = field(default_factory=dict)
    # subscription id -> the tax rates its invoices are taxed with, in order, one per rate
    tax_rates: dict[str, tuple[AppliedTaxRate, ...]] = field(default_factory=dict)
    # subscription id -> the usage its committed invoice lines billed in its cumulative commitment
    # window (only subscriptions with one); :func:`compute_invoice` adds each draft it computes,
    # so a catch-up counts the earlier periods of the same batch too
    committed_usage: dict[str, list[CommittedUsage]] = field(default_factory=dict)
    # the customers' PRE_PAID wallets and their lots (credits left), shrunk by each invoice the
    # batch issues (:meth:`InvoiceCredits.take`); empty when loaded without credits
    credits: InvoiceCredits = field(default_factory=InvoiceCredits)
    # the parents' children (:mod:`billingkit.services.subscription_families`), and parent id ->
    # the external ids of its inherited children's customers, whose usage it bills
    families: Families = field(default_factory=Families)
    usage_customers: dict[str, frozenset[str]] = field(default_factory=dict)
    _specs: dict[str, PriceSpec] = field(default_factory=dict)
    _meter_specs: dict[str, MeterSpec] = field(default_factory=dict)

    def price_spec(self, price_id: str) -> PriceSpec:
        spec = self._specs.get(price_id)
        if spec is None:
            spec = self._specs[price_id] = self.price(price_id).to_spec()
        return spec

    def price(self, price_id: str) -> Price:
        price = self.prices.get(price_id)
        if price is None:
            raise ValidationError(
                f"price {price_id} of a subscription line item is missing", field="price_id"
            )
        return price

    def meter_spec(self, meter_id: str) -> MeterSpec:
        spec = self._meter_specs.get(meter_id)
        if spec is None:
            meter = self.meters.get(meter_id)
            if meter is None:
                raise ValidationError(f"meter {meter_id} of a usage line item is missing", field="meter_id")
            spec = self._meter_specs[meter_id] = meter.to_spec()
        return spec


#: A charge's usage: subscription line item id -> its usage in the charged window.
Usage = dict[str, UsageResult]


@dataclass(frozen=True, slots=True)
class ComputedInvoice:
    charge: Charge
    draft: InvoiceDraft
    usage: Usage


def _by_ids(repo: Repository[R], ids: Iterable[str]) -> dict[str, R]:
    """The items with these ids in any lifecycle status (an archived price still prices the
    subscriptions that use it), by id."""
    return {item.id: item for item in repo.find_many(ids)}


def load_snapshot(
    uow: UnitOfWork, subscriptions: Sequence[Subscription], *, at: datetime, credits: bool = True
) -> Snapshot:
    """What ``subscriptions`` (of the unit of work's scope) are priced with when their invoices are
    computed at ``at`` (the tax associations in force then); with ``credits``, also their customers'
    prepaid credits (:func:`~billingkit.services.invoice_credits.load_invoice_credits`). The
    parents' grouped children are priced with them, so they are loaded too."""
    families = load_families(uow, subscriptions)
    if families:
        subscriptions = [*subscriptions, *families.members()]
    lines = [line for sub in subscriptions for line in sub.line_items]
    snapshot = Snapshot(
        prices=_by_ids(uow.prices, (line.price_id for line in lines)),
        meters=_by_ids(uow.meters, (line.meter_id for line in lines if line.meter_id)),
        customers=_by_ids(uow.customers, billed_customer_ids(subscriptions, families)),
        families=families,
    )
    if families:
        snapshot.usage_customers = families.usage_customers(subscriptions, snapshot.customers)
    metered = [sub for sub in subscriptions if any(li.meter_id for li in sub.line_items)]
    # One read for the plans' entitlements and the subscriptions' overrides of them (ids differ
    # by prefix, the owner type tells them apart).
    owners = sorted({sub.plan_id for sub in metered} | {sub.id for sub in metered})
    entitlements = list_where_in(uow.entitlements, "entity_id", owners)
    features: dict[str, Feature] = _by_ids(uow.features, (e.feature_id for e in entitlements))
    for entitlement in entitlements:
        if entitlement.entity_type is EntitlementEntityType.SUBSCRIPTION:
            if entitlement.parent_entitlement_id:
                overrides = snapshot.entitlement_overrides.setdefault(entitlement.entity_id, {})
                overrides[entitlement.parent_entitlement_id] = entitlement
            continue
        feature = features.get(entitlement.feature_id)
        if entitlement.entity_type is EntitlementEntityType.PLAN and feature is not None and feature.meter_id:
            snapshot.allowances.setdefault(entitlement.entity_id, {})[feature.meter_id] = entitlement
    snapshot.addon_allowances = load_addon_allowances(uow, subscriptions)
    snapshot.committed_usage = load_commitment_usage(uow, subscriptions)
    snapshot.coupon_associations, snapshot.coupons = load_coupon_associations(uow, subscriptions)
    snapshot.tax_rates = load_subscription_tax_rates(uow, subscriptions, at=at)
    if credits:
        snapshot.credits = load_invoice_credits(uow, (sub.billed_customer_id for sub in subscriptions))
    return snapshot


def supported_allowance(entitlement: Entitlement, sub: Subscription) -> bool:
    """Whether billing can apply ``entitlement``'s allowance to ``sub``: its limit resets with the
    subscription's own period (or is unset), so the billing period is the only window."""
    reset = entitlement.usage_reset_period
    if reset is None:
        return True
    return sub.billing_period_count == 1 and reset.value == sub.billing_period.value


def measure_usage(uow: UnitOfWork, charges: Sequence[Charge], snapshot: Snapshot) -> list[Usage]:
    """For each charge, the usage of each of its metered lines in the charged window (subscription
    line item id -> result), read from the usage store in one batch for all the charges.

    Raises ``ValidationError`` when a charge's customer or meter is missing.
    """
    # Lines asking the same question (a plan's and an add-on's price on one meter, same window and
    # customer) share one query.
    positions: dict[UsageQuery, int] = {}
    owners: list[tuple[int, str, int]] = []
    for index, charge in enumerate(charges):
        if not has_arrear(charge):
            continue
        who = usage_customers(charge.subscription, snapshot.customers, snapshot.usage_customers)
        metered = [(line, who) for line in charge.subscription.line_items]
        for own, line in charge.grouped:
            metered.append((line, usage_customers(own.subscription, snapshot.customers, {})))
        for line, customers in metered:
            if line.price_type is not PriceType.USAGE or line.meter_id is None:
                continue
            window = arrear_window(line, arrear_period(charge))
            if window is None:
                continue
            query = UsageQuery(snapshot.meter_spec(line.meter_id), window[0], window[1], customers)
            owners.append((index, line.id, positions.setdefault(query, len(positions))))
    results = uow.usage.aggregate(list(positions)) if positions else []
    usage: list[Usage] = [{} for _ in charges]
    for index, line_id, position in owners:
        usage[index][line_id] = results[position]
    return usage


def compute_invoice(charge: Charge, snapshot: Snapshot, usage: Usage, *, as_of: datetime) -> ComputedInvoice:
    """Price one charge with its measured usage (pure: the billing core does the arithmetic).

    Raises ``ValidationError`` when the subscription cannot be priced (a missing price or meter).
    The committed usage of the draft is added to ``snapshot.committed_usage`` for subscriptions
    with a cumulative commitment, so the next charge of the same subscription counts it.
    """
    draft = assemble_invoice(_request(charge, snapshot, usage, as_of))
    history = snapshot.committed_usage.get(charge.subscription.id)
    if history is not None:
        history += committed_usage(
            (ln.line_item_id, ln.period_start, ln.period_end, ln.commitment_info, ln.kind == "true_up")
            for ln in draft.lines
        )
    return ComputedInvoice(charge, draft, usage)


def compute_invoices(
    uow: UnitOfWork, charges: Sequence[Charge], snapshot: Snapshot, *, as_of: datetime
) -> list[ComputedInvoice]:
    """:func:`measure_usage` then :func:`compute_invoice` for every charge."""
    usage = measure_usage(uow, charges, snapshot)
    return [
        compute_invoice(charge, snapshot, used, as_of=as_of)
        for charge, used in zip(charges, usage, strict=True)
    ]


def preview_current_periods(
    uow: UnitOfWork, subscriptions: Sequence[Subscription], *, at: datetime
) -> tuple[Snapshot, list[ComputedInvoice]]:
    """The invoice each subscription's current period would produce at ``at`` (its ARREAR charges
    with the usage so far; no next period, no ADVANCE), without prepaid credits, computed together;
    and the snapshot they were priced with. What real-time balances and spend alerts read."""
    charges = [
        Charge(
            sub,
            BillingReason.SUBSCRIPTION_CYCLE,
            "preview",
            Period(sub.current_period_start, sub.current_period_end),
        )
        for sub in subscriptions
    ]
    snapshot = load_snapshot(uow, subscriptions, at=at, credits=False)
    return snapshot, compute_invoices(uow, charges, snapshot, as_of=at)


class CurrentPeriods:
    """:func:`preview_current_periods` remembered per subscription for one instant, so the readers
    of one evaluation (spend alerts, real-time balances) compute each subscription's preview once."""

    def __init__(self, uow: UnitOfWork, at: datetime) -> None:
        self._uow = uow
        self._at = at
        self._done: dict[str, tuple[Snapshot, ComputedInvoice]] = {}

    def of(self, subscriptions: Sequence[Subscription]) -> dict[str, tuple[Snapshot, ComputedInvoice]]:
        """Each subscription's preview and the snapshot it was priced with, by subscription id."""
        missing = [sub for sub in subscriptions if sub.id not in self._done]
        if missing:
            snapshot, computed = preview_current_periods(self._uow, missing, at=self._at)
            for invoice in computed:
                self._done[invoice.charge.subscription.id] = (snapshot, invoice)
        return {sub.id: self._done[sub.id] for sub in subscriptions}


def _line_input(
    line: SubscriptionLineItem, charge: Charge, snapshot: Snapshot, usage: UsageResult | None
) -> LineItemInput:
    sub = charge.subscription
    price = snapshot.price(line.price_id)
    common: dict[str, Any] = {
        "display_name": line.display_name or price.display_name or line.price_id,
        "price_id": line.price_id,
        "meter_id": line.meter_id,
        "start_date": line.start_date,
        "end_date": line.end_date,
    }
    spec = snapshot.price_spec(line.price_id)
    if line.price_type is PriceType.FIXED:
        if line.billing_period is BillingPeriod.ONETIME:
            common["start_date"] = one_time_charge_date(line, sub)
            return LineItemInput(
                line.id,
                spec,
                "FIXED",
                line.invoice_cadence.value,
                quantity=line.quantity,
                one_time=True,
                **common,
            )
        return LineItemInput(
            line.id,
            spec,
            "FIXED",
            line.invoice_cadence.value,
            quantity=line.quantity,
            proration_coefficient=stub_proration(line, charge),
            **common,
        )
    value = usage.value if usage is not None else ZERO
    meter = snapshot.meter_spec(line.meter_id) if line.meter_id else None
    if line.commitment_type is not None:
        common.update(commitment_terms(line, charge, snapshot, usage))
        if "usage_buckets" in common:
            return LineItemInput(line.id, spec, "USAGE", ARREAR, **common)
    if meter is not None and meter.bucket_size is not None and usage is not None:
        return LineItemInput(
            line.id,
            spec,
            "USAGE",
            ARREAR,
            bucket_quantities=tuple(bucket.value for bucket in usage.buckets),
            **common,
        )
    allowance: Decimal | None = None
    meter_id = line.meter_id or ""
    entitlement = snapshot.allowances.get(sub.plan_id, {}).get(meter_id)
    addons = snapshot.addon_allowances.get(sub.id, {}).get(meter_id, ())
    if entitlement is not None or addons:  # the plan's allowance, plus the add-ons' in force
        overrides = snapshot.entitlement_overrides.get(sub.id, {})
        window = arrear_window(line, charge.period)
        rule = line_allowance(entitlement, addons, window, sub, supported_allowance, overrides)
        if rule is not None:
            allowance = value - apply_allowance(rule, value).billable
    return LineItemInput(line.id, spec, "USAGE", ARREAR, quantity=value, allowance=allowance, **common)


def _request(
    charge: Charge, snapshot: Snapshot, usage: dict[str, UsageResult], as_of: datetime
) -> InvoiceRequest:
    sub = charge.subscription
    lines = tuple(_line_input(line, charge, snapshot, usage.get(line.id)) for line in sub.line_items)
    if charge.grouped:
        lines += tuple(_line_input(line, own, snapshot, usage.get(line.id)) for own, line in charge.grouped)
    commitment = None
    prior, closes = ZERO, True
    if sub.commitment_amount is not None:
        commitment = SubscriptionCommitment(
            amount=sub.commitment_amount,
            overage_factor=sub.overage_factor if sub.overage_factor is not None else Decimal(1),
            enable_true_up=sub.enable_true_up,
            duration_periods=commitment_periods(
                sub.commitment_duration,
                sub.billing_period,
                sub.billing_period_count,
                field="commitment_duration",
            ),
        )
        if commitment.duration_periods > 1 and sub.commitment_duration is not None:
            prior, closes = prior_committed_usage(snapshot, charge, sub.commitment_duration, None)
    plan_name = next((li.plan_display_name for li in sub.line_items if li.plan_display_name), "") or ""
    taxes = snapshot.tax_rates.get(sub.id, ())
    return InvoiceRequest(
        currency=sub.currency,
        reference_point=charge.reference_point,
        period_start=charge.period.start,
        period_end=charge.period.end,
        next_period_end=charge.next_period.end if charge.next_period is not None else None,
        cancel_at=charge.cancel_at,
        lines=lines,
        subscription_commitment=commitment,
        commitment_prior_usage=prior,
        commitment_closes_window=closes,
        coupons=snapshot.coupon_associations.get(sub.id, ()),
        tax_rates=tuple(applied.rate.to_core() for applied in taxes),
        as_of=as_of,
        plan_display_name=plan_name,
        credit_sources=snapshot.credits.sources(sub.billed_customer_id, sub.currency),
        credits_as_of=credits_instant(charge.reference_point, charge.period.end, as_of),
    )


def build_invoice(
    ctx: Context,
    computed: ComputedInvoice,
    snapshot: Snapshot,
    *,
    billing_sequence: int | None,
    invoice_id: str | None = None,
) -> Invoice:
    """The invoice record of a computed draft (not numbered, not stored). Zero subtotal -> SKIPPED,
    else DRAFT until :func:`issue_invoice` finalizes it. ``invoice_id``: the id of a stored
    invoice being computed again (its coupon and tax records name it); default a new one."""
    charge, draft = computed.charge, computed.draft
    sub = charge.subscription
    by_id = {line.id: line for line in sub.line_items}
    owners: dict[str, Subscription] = {}
    if charge.grouped:  # a parent's invoice: its grouped children's lines name their own
        owners = {line.id: own.subscription for own, line in charge.grouped}
        by_id.update((line.id, line) for _, line in charge.grouped)
    lines = []
    for drafted in draft.lines:
        item = by_id.get(drafted.line_item_id)
        owner = owners.get(drafted.line_item_id, sub) if owners else sub
        meter = snapshot.meters.get(drafted.meter_id) if drafted.meter_id else None
        used = computed.usage.get(drafted.line_item_id)
        price = snapshot.prices.get(drafted.price_id) if drafted.price_id else None
        lines.append(
            InvoiceLineItem(
                id=ctx.ids.new("inv_line"),
                subscription_line_item_id=item.id if item is not None else None,
                subscription_id=owner.id if owner is not sub else None,
                entity_type=item.entity_type if item is not None else "plan",
                entity_id=item.entity_id if item is not None else owner.plan_id,
                plan_display_name=item.plan_display_name if item is not None else None,
                display_name=drafted.display_name,
                meter_id=drafted.meter_id,
                meter_display_name=meter.name if meter is not None else None,
                price_id=drafted.price_id or None,
                price_type=drafted.price_type,
                invoice_cadence=drafted.invoice_cadence,
                price_unit=price.price_unit if price is not None else None,
                price_unit_id=price.price_unit_id if price is not None else None,
                price_unit_amount=price.price_unit_amount if price is not None else None,
                quantity=drafted.quantity,
                amount=drafted.amount,
                adjusted_entitlement_quantity=drafted.adjusted_entitlement_quantity,
                invoice_level_discount=drafted.invoice_level_discount,
                line_item_discount=drafted.line_item_discount,
                prepaid_credits_applied=drafted.prepaid_credits_applied,
                period_start=drafted.period_start,
                period_end=drafted.period_end,
                metadata=drafted.metadata,
                commitment_info=wire_commitment_info(
                    drafted.commitment_info, _commitment_duration(sub, item)
                ),
                usage_event_count=used.event_count if used is not None else None,
                trace=drafted.trace,
            )
        )
    skipped = draft.subtotal == ZERO
    invoice_id = invoice_id or ctx.ids.new("inv")
    period_end = charge.cancel_at or charge.period.end
    return Invoice(
        id=invoice_id,
        **ctx.stamp(),
        invoice_status=InvoiceStatus.SKIPPED if skipped else InvoiceStatus.DRAFT,
        payment_status=PaymentStatus.SUCCEEDED if draft.amount_due == ZERO else PaymentStatus.PENDING,
        customer_id=sub.billed_customer_id,
        subscription_id=sub.id,
        subscription_customer_id=sub.customer_id,
        currency=sub.currency,
        billing_reason=charge.reason,
        billing_period=sub.billing_period,
        billing_sequence=billing_sequence,
        subtotal=draft.subtotal,
        total=draft.total,
        total_discount=draft.total_discount,
        total_tax=draft.total_tax,
        total_prepaid_credits_applied=draft.total_prepaid_credits_applied,
        amount_due=draft.amount_due,
        amount_remaining=draft.amount_due,
        due_date=due_date(period_end, sub.payment_terms),
        period_start=charge.period.start,
        period_end=period_end,
        last_computed_at=ctx.now,
        coupon_applications=coupon_application_records(
            ctx,
            invoice_id=invoice_id,
            subscription_id=sub.id,
            applications=draft.coupon_applications,
            lines=lines,
            coupons=snapshot.coupons,
        ),
        taxes=tax_application_records(
            ctx,
            invoice_id=invoice_id,
            applications=draft.tax_applications,
            rates={applied.rate.id: applied for applied in snapshot.tax_rates.get(sub.id, ())},
        ),
        line_items=tuple(lines),
    )


def _commitment_duration(sub: Subscription, item: SubscriptionLineItem | None) -> BillingPeriod:
    """The billing period an invoice line's commitment spans: the line's own commitment's, else
    the subscription's (the true-up line has no line item), else one billing period."""
    if item is not None and item.commitment_type is not None:
        return item.commitment_duration or sub.billing_period
    return sub.commitment_duration or sub.billing_period
