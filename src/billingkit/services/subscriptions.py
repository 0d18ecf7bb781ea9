"""Subscriptions: create (draft or active), activate a draft, read and search.

Rules (``docs/billing-rules.md`` has worked examples):

* The customer is ``customer_id`` when given (it wins), else the live customer with
  ``external_customer_id``. Plan and customer must be live; unknown ones are a 400 naming the field.
* Line items: one per live plan price with the subscription's currency, billing period and period
  count (FIXED quantity = the price's ``min_quantity``, else 1; USAGE quantity 0, with the meter).
  No such price -> 400 on ``currency``. ``override_line_items``, extra ``line_items`` and
  ``override_entitlements`` follow :mod:`billingkit.services.subscription_line_items`.
* ``trial_period_days``: omitted or null inherits the days common to the plan's recurring FIXED
  prices (a 400 if they disagree), 0 means no trial, more overrides. A trial makes the subscription
  ``trialing`` with ``[start, start + days)`` as its current period; nothing is billed until it ends.
* ``subscription_status: draft`` stores a draft (no invoice, not billed); anything else starts
  billing at ``start_date`` (default now) with an opening invoice for the first period's ADVANCE
  charges.
* ``billing_cycle`` anniversary (default) anchors on ``billing_anchor`` or the start; calendar anchors
  on calendar boundaries (``billing_anchor`` is then refused). Periods are computed in ``timezone``
  (default: the customer's). Activating a draft at a new start keeps a requested ``billing_anchor``
  and moves a derived anchor to the new start.
* Credit grants: the request's ``credit_grants`` (scope ``SUBSCRIPTION``), else copies of the
  plan's grants, are stored as the subscription's own; once it has started (created active or
  trialing, or a draft activated) each gets its first credit grant application, and the ones due
  at once top up the customer's prepaid wallet before the opening invoice is computed
  (:mod:`billingkit.services.credit_grant_applications`).
* Add-ons (``addons``) are attached before the opening invoice, which bills their lines
  (:mod:`billingkit.services.subscription_addons`).
* Coupons (``subscription_coupons``, the deprecated ``coupons`` and ``line_item_coupons``) are
  attached as coupon associations before the opening invoice, which they may discount
  (:mod:`billingkit.services.coupon_associations` has their rules).
* ``payment_behavior``: the ``*incomplete`` behaviours keep the subscription ``incomplete`` (not
  billed) until its opening invoice is paid; ``error_if_incomplete`` refuses a create whose charge
  fails (:mod:`billingkit.domain.payment_behavior`).
* ``phases``: windows of the subscription with their own line items and coupons; the plan lines
  make room for them (:mod:`billingkit.services.subscription_phases`). Drafts take none.
* ``version`` starts at 1 and grows with every change; ``synced_price_sequence`` is the plan's
  highest price sequence the line items were built from (``POST /plans/{id}/sync/subscriptions``
  moves it: :mod:`billingkit.services.plan_price_sync`).
* ``auto_invoice_threshold`` (usage-only standalone subscriptions; immutable) makes the billing run
  invoice the current period's usage once it reaches the threshold
  (:mod:`billingkit.services.auto_invoice_thresholds`); ``gateway_payment_method_id`` is charged
  when its invoices are collected; with ``checkout`` the subscription is a draft activated once paid
  (:mod:`billingkit.services.checkout_flows` opens the checkout session).

The status, trial and period rules themselves are pure functions in
:mod:`billingkit.domain.subscription_lifecycle`; this module reads the store, calls them and writes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Self

from pydantic import Field, model_validator

from billingkit.domain.access import Action
from billingkit.domain.auto_invoice_thresholds import AutoInvoiceThreshold, with_next_check
from billingkit.domain.catalog import CreditGrantScope
from billingkit.domain.catalog.prices import BillingCadence, PriceEntityType
from billingkit.domain.invoices import BillingReason
from billingkit.domain.periods import (
    MAX_PERIOD_COUNT,
    BillingCycle,
    BillingPeriod,
    BillingSchedule,
    check_billing_anchor,
)
from billingkit.domain.queries import Filter, ListQuery, Op, Page, Sort
from billingkit.domain.subscription_lifecycle import (
    CREATABLE_STATUSES,
    activate_draft,
    creation_status,
    opening,
)
from billingkit.domain.subscriptions import (
    CollectionMethod,
    PaymentBehavior,
    PaymentTerms,
    ProrationBehavior,
    Subscription,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.domain.validation import (
    CurrencyCode,
    DecimalText,
    InputModel,
    Metadata,
    NonEmptyStr,
    TimeZoneName,
    UtcDatetime,
)
from billingkit.errors import NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.auto_invoice_thresholds import set_threshold
from billingkit.services.checkout_requests import CheckoutRequest
from billingkit.services.context import Context
from billingkit.services.coupon_association_reads import subscription_coupon_associations
from billingkit.services.coupon_associations import (
    SubscriptionCouponInput,
    attach_coupons,
    coupon_requests,
    move_with_activation,
)
from billingkit.services.credit_grant_applications import start_grants
from billingkit.services.credit_grants import (
    SubscriptionCreditGrantInput,
    credit_grants_of,
    subscription_credit_grants,
)
from billingkit.services.invoicing import Snapshot, load_snapshot
from billingkit.services.line_item_requests import MAX_ITEMS, LineItemCreate, OverrideEntitlement
from billingkit.services.opening_payment import settle_opening
from billingkit.services.owned_prices import next_sequence, prices_of
from billingkit.services.price_overrides import OverrideLineItem
from billingkit.services.records import build, get_live
from billingkit.services.search import Searches, SearchRequest
from billingkit.services.subscription_addons import (
    MAX_ADDONS,
    AddonAttachment,
    attach_addons,
    follow_activation,
)
from billingkit.services.subscription_commitments import (
    LineItemCommitmentConfig,
    check_line_item_commitments,
    commit_line_items,
    commitment_periods,
)
from billingkit.services.subscription_inheritance import SubscriptionInheritanceConfig, apply_inheritance
from billingkit.services.subscription_line_items import line_items_at_create
from billingkit.services.subscription_lines import record_line_items
from billingkit.services.subscription_pauses import v2_pauses
from billingkit.services.subscription_phases import (
    MAX_PHASES,
    SubscriptionPhaseCreate,
    create_phases,
    phases_of,
)
from billingkit.services.subscription_setup import (
    check_allowances,
    find_customer,
    find_plan,
    inherited_trial_days,
    matching_prices,
    open_subscription,
    plan_line_items,
)
from billingkit.services.subscription_views import V2_EXPANSIONS, SubscriptionV2, subscription_payload
from billingkit.services.tax_resolution import MAX_TAX_RATE_OVERRIDES, TaxRateOverride, override_associations

__all__ = [
    "SubscriptionActivate",
    "SubscriptionCreate",
    "SubscriptionSearch",
    "SubscriptionV2",
    "activate_subscription",
    "create_subscription",
    "customer_subscriptions",
    "get_subscription",
    "get_subscription_v2",
    "open_subscription",
    "search_subscriptions",
    "subscription_payload",
]

ENTITY = "subscription"
LABEL = "subscription"
#: Longest trial accepted, in days (ten years).
MAX_TRIAL_DAYS = 3650

#: Most coupons one request may attach through each of its coupon fields.
_MAX_COUPONS = 100
#: Most credit grants one request may give.
_MAX_GRANTS = 100

# The request fields a new subscription stores as they were given.
_STORED_AS_GIVEN = frozenset(
    {
        "lookup_key",
        "plan_id",
        "gateway_payment_method_id",
        "billing_cycle",
        "billing_period",
        "billing_period_count",
        "currency",
        "end_date",
        "collection_method",
        "payment_behavior",
        "payment_terms",
        "proration_behavior",
        "commitment_amount",
        "commitment_duration",
        "overage_factor",
        "enable_true_up",
        "metadata",
    }
)

# Collection method -> the payment behaviours it allows (the reference's pairs).
_BEHAVIOURS = {
    CollectionMethod.CHARGE_AUTOMATICALLY: frozenset(
        {
            PaymentBehavior.ALLOW_INCOMPLETE,
            PaymentBehavior.ERROR_IF_INCOMPLETE,
            PaymentBehavior.DEFAULT_ACTIVE,
        }
    ),
    CollectionMethod.SEND_INVOICE: frozenset(
        {PaymentBehavior.DEFAULT_ACTIVE, PaymentBehavior.DEFAULT_INCOMPLETE}
    ),
}


class SubscriptionCreate(InputModel):
    """A new subscription. Coupons: ``subscription_coupons`` [{coupon_code, price_id?,
    start_date?, end_date?}] (``price_id``: the coupon discounts that price's line item). The
    deprecated ``coupons`` (coupon ids) and ``line_item_coupons`` ({price_id: [coupon ids]}) are
    still accepted and attach the same associations; prefer ``subscription_coupons``."""

    plan_id: NonEmptyStr
    currency: CurrencyCode
    billing_period: BillingPeriod
    billing_period_count: Annotated[int, Field(ge=1, le=MAX_PERIOD_COUNT)] = 1
    billing_cycle: BillingCycle = BillingCycle.ANNIVERSARY
    billing_anchor: UtcDatetime | None = None
    customer_id: str | None = None
    external_customer_id: str | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    subscription_status: SubscriptionStatus | None = None
    trial_period_days: Annotated[int, Field(ge=0, le=MAX_TRIAL_DAYS)] | None = None
    collection_method: CollectionMethod = CollectionMethod.CHARGE_AUTOMATICALLY
    payment_behavior: PaymentBehavior = PaymentBehavior.DEFAULT_ACTIVE
    payment_terms: PaymentTerms | None = None
    proration_behavior: ProrationBehavior = ProrationBehavior.NONE
    commitment_amount: DecimalText | None = None
    commitment_duration: BillingPeriod | None = None
    overage_factor: DecimalText | None = None
    enable_true_up: bool = False
    gateway_payment_method_id: Annotated[str, Field(max_length=255)] | None = None
    lookup_key: Annotated[NonEmptyStr, Field(max_length=255)] | None = None
    timezone: TimeZoneName | None = None
    metadata: Metadata = {}
    addons: Annotated[list[AddonAttachment], Field(max_length=MAX_ADDONS)] | None = None
    credit_grants: Annotated[list[SubscriptionCreditGrantInput], Field(max_length=_MAX_GRANTS)] | None = None
    line_items: Annotated[list[LineItemCreate], Field(max_length=MAX_ITEMS)] | None = None
    override_line_items: Annotated[list[OverrideLineItem], Field(max_length=MAX_ITEMS)] | None = None
    override_entitlements: Annotated[list[OverrideEntitlement], Field(max_length=MAX_ITEMS)] | None = None
    line_item_commitments: (
        dict[Annotated[str, Field(min_length=1, max_length=64)], LineItemCommitmentConfig] | None
    ) = None
    phases: Annotated[list[SubscriptionPhaseCreate], Field(max_length=MAX_PHASES)] | None = None
    subscription_coupons: Annotated[list[SubscriptionCouponInput], Field(max_length=_MAX_COUPONS)] | None = (
        None
    )
    #: Deprecated: coupon ids on the whole subscription; use ``subscription_coupons``.
    coupons: Annotated[list[NonEmptyStr], Field(max_length=_MAX_COUPONS)] | None = None
    #: Deprecated: price id -> coupon ids on that price's line item; use ``subscription_coupons``.
    line_item_coupons: (
        Annotated[
            dict[NonEmptyStr, Annotated[list[NonEmptyStr], Field(max_length=_MAX_COUPONS)]],
            Field(max_length=_MAX_COUPONS),
        ]
        | None
    ) = None
    tax_rate_overrides: Annotated[list[TaxRateOverride], Field(max_length=MAX_TAX_RATE_OVERRIDES)] | None = (
        None
    )
    inheritance: SubscriptionInheritanceConfig | None = None
    checkout: CheckoutRequest = None
    auto_invoice_threshold: AutoInvoiceThreshold | None = None

    @model_validator(mode="after")
    def _fields_agree(self) -> Self:
        """The rules that compare this request's fields with each other (those that need the
        plan, the customer or the clock are checked by :func:`create_subscription`)."""
        if self.billing_period is BillingPeriod.ONETIME:
            raise ValidationError("a subscription needs a recurring billing_period", field="billing_period")
        if self.subscription_status not in (None, *CREATABLE_STATUSES):
            raise ValidationError(
                "subscription_status may only ask for draft, active or trialing", field="subscription_status"
            )
        if self.payment_behavior not in _BEHAVIOURS[self.collection_method]:
            raise ValidationError(
                f"payment_behavior {self.payment_behavior.value} does not go with collection_method "
                f"{self.collection_method.value}",
                field="payment_behavior",
            )
        self._check_commitment()
        if self.start_date is not None and self.end_date is not None and self.end_date <= self.start_date:
            raise ValidationError("end_date must be after start_date", field="end_date")
        check_billing_anchor(billing_cycle=self.billing_cycle, billing_anchor=self.billing_anchor)
        if self.trial_period_days == 0:  # an omitted one may be inherited from the plan's prices
            creation_status(requested=self.subscription_status, trial_days=0)
        return self

    def _check_commitment(self) -> None:
        amount, factor = self.commitment_amount, self.overage_factor
        if amount is not None or factor is not None:
            if amount is None or factor is None:
                field = "commitment_amount" if amount is None else "overage_factor"
                raise ValidationError("commitment_amount and overage_factor go together", field=field)
            if amount <= 0:
                raise ValidationError("commitment_amount must be greater than 0", field="commitment_amount")
            if factor < 1:
                raise ValidationError("overage_factor must be at least 1", field="overage_factor")
        commitment_periods(
            self.commitment_duration,
            self.billing_period,
            self.billing_period_count,
            field="commitment_duration",
        )
        if self.line_item_commitments:
            if amount is not None:
                raise ValidationError(
                    "line_item_commitments cannot be combined with a subscription commitment_amount",
                    field="line_item_commitments",
                )
            check_line_item_commitments(
                self.line_item_commitments, self.billing_period, self.billing_period_count
            )


class SubscriptionActivate(InputModel):
    """``start_date`` (optional) replaces the draft's start date."""

    start_date: UtcDatetime | None = None


class SubscriptionSearch(SearchRequest):
    kind: ClassVar[str] = "subscriptions"
    # Reference filters we lack are refused when given; there are no coupon associations to load.
    not_supported = frozenset({"active_at", "effective_date_for_update", "trial_end_due_lte"})
    ignored = frozenset({"with_coupon_associations"})

    subscription_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    customer_id: Annotated[str | None, Searches("customer_id", Op.EQ)] = None
    customer_ids: Annotated[list[str] | None, Searches("customer_id", Op.IN)] = None
    external_customer_id: str | None = None
    plan_id: Annotated[str | None, Searches("plan_id", Op.EQ)] = None
    subscription_status: Annotated[
        list[SubscriptionStatus] | None, Searches("subscription_status", Op.IN)
    ] = None
    billing_period: Annotated[list[BillingPeriod] | None, Searches("billing_period", Op.IN)] = None
    billing_cadence: Annotated[list[BillingCadence] | None, Searches("billing_cadence", Op.IN)] = None
    subscription_type: Annotated[list[SubscriptionType] | None, Searches("subscription_type", Op.IN)] = None
    parent_subscription_ids: Annotated[list[str] | None, Searches("parent_subscription_id", Op.IN)] = None
    invoicing_customer_ids: Annotated[list[str] | None, Searches("invoicing_customer_id", Op.IN)] = None
    with_line_items: bool = True


#: Issues a new subscription's opening invoice and returns the subscription as it then stands
#: (its billing sequence moved): :func:`open_subscription` with ``SUBSCRIPTION_CREATE`` unless the
#: caller of :func:`create_subscription` opens it another way (``open_with``) (a plan change nets the old
#: subscription's unused time on it: :mod:`billingkit.services.plan_change_replace`).
Opening = Callable[[UnitOfWork, Context, Subscription, Snapshot], Subscription]


def _open_created(uow: UnitOfWork, ctx: Context, sub: Subscription, snapshot: Snapshot) -> Subscription:
    return open_subscription(uow, ctx, sub, BillingReason.SUBSCRIPTION_CREATE, snapshot)


def create_subscription(
    uow: UnitOfWork,
    ctx: Context,
    *,
    data: SubscriptionCreate,
    renewal_notice: timedelta | None = None,
    open_with: Opening | None = None,
) -> Subscription:
    """Create a subscription (see the module doc); with status active, its opening invoice too
    (issued by ``open_with`` when given: see :data:`Opening`).

    Raises ``ValidationError`` naming the field for bad input; nothing is written then.
    """
    ctx.require(ENTITY, Action.WRITE)
    if data.checkout is not None:  # the pay-first flow opens a session around the draft
        raise ValidationError(
            "checkout is carried out by checkout_flows.create_subscription_checked", field="checkout"
        )
    customer = find_customer(
        uow, customer_id=data.customer_id, external_customer_id=data.external_customer_id
    )
    plan = find_plan(uow, data.plan_id)
    start = data.start_date or ctx.now
    if data.end_date is not None and data.end_date <= start:  # a given start_date: checked by the model
        raise ValidationError("end_date must be after start_date", field="end_date")
    timezone = data.timezone or customer.timezone
    schedule = BillingSchedule.for_start(
        start,
        period=data.billing_period,
        count=data.billing_period_count,
        cycle=data.billing_cycle,
        timezone=timezone,
        billing_anchor=data.billing_anchor,
    )
    prices = matching_prices(
        prices_of(uow, PriceEntityType.PLAN, plan.id),
        plan.id,
        currency=data.currency,
        billing_period=data.billing_period,
        billing_period_count=data.billing_period_count,
        start=start,
    )
    trial_days = inherited_trial_days(data.trial_period_days, prices)
    status = creation_status(requested=data.subscription_status, trial_days=trial_days)
    draft = status is SubscriptionStatus.DRAFT
    opened = opening(
        status=status,
        start=start,
        end_date=data.end_date,
        schedule=schedule,
        trial_days=trial_days,
        renewal_notice=renewal_notice,
    )
    sub_id = ctx.ids.new("subs")
    fields: dict[str, Any] = {
        "id": sub_id,
        **ctx.stamp(),
        **data.model_dump(include=set(_STORED_AS_GIVEN)),
        "customer_id": customer.id,
        **opened.fields(),
        # Remembered because an anchor equal to the start looks derived: a draft created on 5 May
        # with billing_anchor 5 May and activated on 12 May must still renew on the 5th.
        "billing_anchor_requested": data.billing_cycle is BillingCycle.ANNIVERSARY
        and data.billing_anchor is not None,
        "timezone": timezone,
        "start_date": start,
        "line_items": plan_line_items(
            uow, ctx, sub_id=sub_id, customer=customer, plan=plan, prices=prices, start=start
        ),
        "synced_price_sequence": next_sequence(uow, PriceEntityType.PLAN, plan.id) - 1,
    }
    sub = build(Subscription, fields)
    if data.line_item_commitments:
        meters = {m.id: m for m in uow.meters.find_many(li.meter_id for li in sub.line_items if li.meter_id)}
        sub = sub.model_copy(
            update={"line_items": commit_line_items(sub.line_items, data.line_item_commitments, meters)}
        )
    sub = attach_addons(uow, ctx, sub, data.addons)
    sub = line_items_at_create(
        uow,
        ctx,
        sub,
        line_items=data.line_items,
        override_line_items=data.override_line_items,
        entitlement_overrides=data.override_entitlements,
    )
    sub = apply_inheritance(uow, ctx, sub, data, create=create_subscription)
    requests = coupon_requests(data.subscription_coupons, data.coupons, data.line_item_coupons)
    if requests:
        attach_coupons(uow, ctx, sub, requests, default_start=start, new_subscription=True)
    sub = create_phases(uow, ctx, sub, data.phases)
    if data.tax_rate_overrides:
        # Stored first, so the opening invoice below is taxed by them.
        uow.tax_associations.add_many(override_associations(uow, ctx, sub, data.tax_rate_overrides))
    grants = subscription_credit_grants(
        uow, ctx, subscription_id=sub.id, plan_id=plan.id, requested=data.credit_grants
    )
    # Before the opening invoice, so that it sees the credits granted at the start.
    start_grants(uow, ctx, sub, grants)
    sub = set_threshold(ctx, sub, data)  # last: it checks the line items the others gave
    snapshot = load_snapshot(uow, [sub], at=ctx.now)
    check_allowances(sub, snapshot)
    sub = (open_with or _open_created)(uow, ctx, sub, snapshot)
    sub = settle_opening(uow, ctx, sub)  # payment_behavior: active, incomplete, or refused
    uow.subscriptions.add(sub)
    record_line_items(uow, ctx, sub.line_items)
    event = "subscription.draft.created" if draft else "subscription.created"
    notifications.notify(uow, ctx, event, sub, customer)
    return sub


def activate_subscription(
    uow: UnitOfWork,
    ctx: Context,
    *,
    subscription_id: str,
    data: SubscriptionActivate,
    renewal_notice: timedelta | None = None,
    open_with: Callable[[UnitOfWork, Context, Subscription], Subscription] | None = None,
) -> Subscription:
    """Activate a draft: optionally move its start to ``data.start_date``, recompute its first
    period and trial window, and issue its opening invoice (``open_with`` opens it another way:
    a checkout session finalizes the invoice its customer paid). The anchor is kept when the draft was
    created with ``billing_anchor``, else it moves to the new start. Anything but a draft ->
    ``InvalidOperation`` (400 ``invalid_operation``); a start at or after ``end_date`` ->
    ``ValidationError`` on ``start_date``."""
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    activated = activate_draft(sub, start=data.start_date, renewal_notice=renewal_notice)
    activated = follow_activation(uow, ctx, sub, activated.model_copy(update=ctx.touch()))
    activated = with_next_check(activated, ctx.now, ctx.settings.auto_invoice_check_interval)
    move_with_activation(uow, ctx, sub, activated)
    start_grants(uow, ctx, activated, credit_grants_of(uow, CreditGrantScope.SUBSCRIPTION, sub.id))
    if open_with is None:
        activated = open_subscription(uow, ctx, activated, BillingReason.SUBSCRIPTION_CREATE)
    else:
        activated = open_with(uow, ctx, activated)
    activated = settle_opening(uow, ctx, activated, activation=True)
    activated = uow.subscriptions.update(activated, expected_version=sub.version)
    customer = uow.customers.find(activated.customer_id)
    notifications.notify(uow, ctx, "subscription.activated", activated, customer)
    return activated


def get_subscription(uow: UnitOfWork, ctx: Context, *, subscription_id: str) -> Subscription:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.subscriptions, LABEL, subscription_id)


def get_subscription_v2(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, expand: str | None = None
) -> SubscriptionV2:
    """The v2 read. ``expand`` is a comma list of ``coupon_associations``, ``credit_grants``,
    ``subscription_line_items`` and ``phases``; anything else is a 400 on ``expand``."""
    ctx.require(ENTITY, Action.READ)
    wanted = frozenset(part.strip() for part in (expand or "").split(",") if part.strip())
    unknown = wanted - V2_EXPANSIONS
    if unknown:
        raise ValidationError(
            f"expand may name {', '.join(sorted(V2_EXPANSIONS))}; not {', '.join(sorted(unknown))}",
            field="expand",
        )
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    plan_sequence = next_sequence(uow, PriceEntityType.PLAN, sub.plan_id) - 1
    associations = (
        tuple(subscription_coupon_associations(uow, sub)) if "coupon_associations" in wanted else ()
    )
    grants = (
        tuple(credit_grants_of(uow, CreditGrantScope.SUBSCRIPTION, sub.id))
        if "credit_grants" in wanted
        else ()
    )
    phases = tuple(phases_of(uow, sub.id)) if "phases" in wanted else ()
    out_of_sync = sub.synced_price_sequence < plan_sequence
    return SubscriptionV2(sub, wanted, out_of_sync, associations, grants, phases, pauses=v2_pauses(uow, sub))


def search_subscriptions(uow: UnitOfWork, ctx: Context, *, search: SubscriptionSearch) -> Page[Subscription]:
    """A page of subscriptions matching the filters (newest first by default)."""
    ctx.require(ENTITY, Action.READ)
    query = search.to_query()
    if search.external_customer_id:
        customer = uow.customers.find_one(external_id=search.external_customer_id)
        if customer is None:
            return Page(items=[], total=0, limit=query.limit, offset=query.offset)
        query = ListQuery(
            filters=(*query.filters, Filter("customer_id", Op.EQ, customer.id)),
            sort=query.sort,
            limit=query.limit,
            offset=query.offset,
            status=query.status,
        )
    return uow.subscriptions.list(query)


def customer_subscriptions(uow: UnitOfWork, ctx: Context, *, external_id: str) -> Page[Subscription]:
    """Every live subscription of the customer with ``external_id`` (newest first);
    ``NotFound`` when there is no such customer."""
    ctx.require(ENTITY, Action.READ)
    customer = uow.customers.find_one(external_id=external_id)
    if customer is None:
        raise NotFound(f"customer with external id {external_id!r} not found")
    query = ListQuery(
        filters=(Filter("customer_id", Op.EQ, customer.id),), sort=(Sort("created_at"),), limit=1000
    )
    return uow.subscriptions.list(query)
