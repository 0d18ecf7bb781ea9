"""Add-ons on subscriptions: attached when a subscription is created (``addons``) or later
(``POST /subscriptions/addon``), removed (``DELETE /subscriptions/addon``:
:mod:`billingkit.services.subscription_addon_removal`), listed.

Rules (``docs/billing-rules.md`` has worked examples; the pure ones are in
:mod:`billingkit.domain.subscription_addons`):

* An attachment is an :class:`~billingkit.domain.addon_associations.AddonAssociation` (entity
  ``subscription``), ``active`` from ``start_date`` (default: now; a draft's own start), and one
  line item per live add-on price in the subscription's currency, billing period and period count
  (``entity_type`` ``addon``, ``addon_association_id``). Prices of other currencies or periods are
  left out; an add-on with prices none of which match is a 400 on ``addon_id`` listing what it
  offers. An add-on without prices attaches its entitlements and credit grants only.
* ``cadence`` ``recurring`` (default) bills every period from its start; ``onetime`` bills one
  billing period (the one its start falls in): its FIXED prices once in full, its usage until that
  period ends; then its lines end (the association stays, with its entitlements and grants).
* ``line_item_commitments`` (keyed by add-on price id) and ``override_line_items`` (rule 8:
  subscription-owned prices, :mod:`billingkit.services.price_overrides`) apply to the add-on's
  lines; every invoice prices a line by the price it names, so overrides hold on every invoice.
* Added to a running subscription during its current period: FIXED ADVANCE lines are charged at
  once for a ``onetime`` add-on (the whole period), and for a ``recurring`` one with
  ``proration_behavior`` ``create_prorations`` (default: the subscription's; from its start),
  settled like every mid-period change (:mod:`billingkit.services.line_settlements`: one
  ``ONE_OFF`` invoice, key ``addon_charge|<association>``); otherwise the add-on bills from the
  next period. Removal ends the lines and the association at ``effective_date`` (default: the
  current period's end); with ``create_prorations`` the unused ADVANCE time of a recurring add-on
  is credited to the customer's PRE_PAID wallet.
* Entitlements: the add-on's metered allowances count in the billing of every period the
  association overlaps (:mod:`billingkit.services.addon_allowances`). Credit grants: each of the
  add-on's live grants is copied as a grant of the subscription (metadata ``addon_id``,
  ``addon_association_id``) starting with the association, and starts like the subscription's own;
  removal ends the copies and cancels their pending applications from the end on.
* Every change checks the subscription's and the association's versions and records
  ``subscription.updated``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.addon_associations import (
    AddonAssociation,
    AddonAssociationEntityType,
    AddonCadence,
    AddonStatus,
)
from billingkit.domain.catalog import Addon, CreditGrant, CreditGrantScope, Price, check_credit_grant
from billingkit.domain.catalog.entitlements import EntitlementEntityType
from billingkit.domain.catalog.prices import PriceEntityType
from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.input_rules import prefixed
from billingkit.domain.invoices import Invoice
from billingkit.domain.periods import Period
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Record, Status
from billingkit.domain.subscription_addons import line_window, onetime_period
from billingkit.domain.subscriptions import (
    ProrationBehavior,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
)
from billingkit.domain.validation import InputModel, Metadata, NonEmptyStr, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.checkout_requests import CheckoutRequest
from billingkit.services.context import Context
from billingkit.services.credit_grant_applications import start_grants
from billingkit.services.credit_grants import credit_grants_of
from billingkit.services.entitlements import entitlements_of
from billingkit.services.invoicing import supported_allowance
from billingkit.services.line_settlements import addon_charge_key, settle_lines
from billingkit.services.owned_prices import prices_of
from billingkit.services.price_overrides import OverrideLineItem, override_lines
from billingkit.services.records import build, get_live, new_fields
from billingkit.services.subscription_commitments import (
    LineItemCommitmentConfig,
    check_line_item_commitments,
    commit_line_items,
)
from billingkit.services.subscription_lines import record_line_items
from billingkit.services.subscription_setup import line_for_price

__all__ = [
    "MAX_ADDONS",
    "AddAddonRequest",
    "AddedAddon",
    "AddonAttachment",
    "PendingAddon",
    "add_addon",
    "addon_associations",
    "attach_addons",
    "follow_activation",
    "hold_addon",
]

ENTITY = "subscription"
#: Most add-ons one subscription create may attach, and overrides one attachment may give.
MAX_ADDONS = 100
_MAX_OVERRIDES = 100
_ENDED = frozenset({SubscriptionStatus.CANCELLED})


class AddonAttachment(InputModel):
    """An add-on for a subscription (the reference's ``AddAddonToSubscriptionRequest``, the items
    of ``addons`` on ``POST /subscriptions``). ``proration_behavior`` defaults to the
    subscription's; ``line_item_commitments`` and ``override_line_items`` name add-on price ids."""

    # The SDK (newer than the reference) can send these; this version does not honour them.
    not_supported: ClassVar[frozenset[str]] = frozenset({"coupons", "change_at"})

    addon_id: NonEmptyStr
    start_date: UtcDatetime | None = None
    cadence: AddonCadence = AddonCadence.RECURRING
    proration_behavior: ProrationBehavior | None = None
    override_line_items: Annotated[list[OverrideLineItem], Field(max_length=_MAX_OVERRIDES)] | None = None
    line_item_commitments: (
        dict[Annotated[str, Field(min_length=1, max_length=64)], LineItemCommitmentConfig] | None
    ) = None
    metadata: Metadata = {}


class AddAddonRequest(AddonAttachment):
    """``POST /subscriptions/addon``: an add-on for the live subscription ``subscription_id``;
    with ``checkout``, attached only once paid
    (:func:`billingkit.services.checkout_flows.add_addon_checked`)."""

    subscription_id: NonEmptyStr
    checkout: CheckoutRequest = None


@dataclass(frozen=True, slots=True)
class AddedAddon:
    """What :func:`add_addon` did: the ``association``, the ``subscription`` as saved (with the
    add-on's lines) and the ``invoice`` charged at once (``None`` when nothing was); a pay-first
    attachment: the ``pending`` association, the subscription unchanged and ``checkout_session``."""

    association: AddonAssociation
    subscription: Subscription
    invoice: Invoice | None
    checkout_session: CheckoutSession | None = None

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``AddAddonToSubscriptionResponse``: the association's fields, and
        ``invoice`` when one was issued, ``checkout_session`` when it waits for a payment."""
        data = self.association.to_dict()
        if self.invoice is not None:
            data["invoice"] = self.invoice.to_dict()
        if self.checkout_session is not None:
            data["checkout_session"] = self.checkout_session.to_dict()
        return data


# -- attaching ------------------------------------------------------------------------------------


def _find_addon(uow: UnitOfWork, addon_id: str, field: str) -> Addon:
    addon = uow.addons.find(addon_id)
    if addon is None or addon.status is not Status.PUBLISHED:
        raise ValidationError(f"add-on {addon_id} not found", field=field)
    return addon


def _matching_prices(
    uow: UnitOfWork, addon: Addon, sub: Subscription, start: datetime, field: str
) -> list[Price]:
    """The add-on's live prices in force at ``start`` with the subscription's currency, period and
    count; a ``ValidationError`` on ``field`` when it has prices and none of them match."""
    live = [
        p for p in prices_of(uow, PriceEntityType.ADDON, addon.id) if p.end_date is None or p.end_date > start
    ]
    want = (sub.currency, sub.billing_period, sub.billing_period_count)
    prices = [p for p in live if (p.currency, p.billing_period, p.billing_period_count) == want]
    if live and not prices:
        offers = sorted({f"{p.currency} {p.billing_period_count} x {p.billing_period.value}" for p in live})
        raise ValidationError(
            f"add-on {addon.id} has no prices for {sub.currency} {sub.billing_period_count} x "
            f"{sub.billing_period.value}; it has {', '.join(offers)}",
            field=field,
        )
    return prices


def _check_entitlements(uow: UnitOfWork, addon: Addon, sub: Subscription, field: str) -> None:
    """Refuse an add-on whose metered entitlements reset on another cycle than the subscription's
    (the same rule as plans: billing applies allowances per billing period)."""
    for entitlement in entitlements_of(uow, EntitlementEntityType.ADDON, addon.id):
        if not supported_allowance(entitlement, sub):
            period = entitlement.usage_reset_period.value if entitlement.usage_reset_period else "none"
            raise ValidationError(
                f"add-on {addon.id}'s entitlement {entitlement.id} resets {period}, which differs from the "
                f"subscription's {sub.billing_period_count} x {sub.billing_period.value} period; such "
                "allowances are not supported by this version of billingkit",
                field=field,
            )


def _lines(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    addon: Addon,
    prices: Sequence[Price],
    association: AddonAssociation,
    period: Period | None,
) -> list[SubscriptionLineItem]:
    meters = {m.id: m for m in uow.meters.find_many({p.meter_id for p in prices if p.meter_id})}
    lines = []
    for price in prices:
        start, end = line_window(
            association.cadence,
            price.type,
            association.start_date,
            period,
            price_start=price.start_date,
            price_end=price.end_date,
        )
        lines.append(
            line_for_price(
                ctx,
                price,
                meters.get(price.meter_id or ""),
                subscription_id=sub.id,
                customer_id=sub.customer_id,
                entity_type="addon",
                entity_id=addon.id,
                owner_name=addon.name,
                start=start,
                end=end,
                addon_association_id=association.id,
            )
        )
    return lines


def _grant_copies(
    uow: UnitOfWork, ctx: Context, sub: Subscription, association: AddonAssociation
) -> list[CreditGrant]:
    """The add-on's live grants copied as the subscription's own, starting with the association
    (no ``start_date`` when it starts with the subscription, so a draft's activation moves them)."""
    copies = []
    for grant in credit_grants_of(uow, CreditGrantScope.ADDON, association.addon_id):
        fields = grant.model_dump(exclude=set(Record.model_fields) | {"tenant_id", "environment_id"})
        start = grant.start_date
        if association.start_date > sub.start_date:
            start = max(start or association.start_date, association.start_date)
        fields.update(
            new_fields(ctx, "cg"),
            scope=CreditGrantScope.SUBSCRIPTION,
            plan_id=None,
            addon_id=None,
            subscription_id=sub.id,
            start_date=start,
            metadata={
                **grant.metadata,
                "addon_id": association.addon_id,
                "addon_association_id": association.id,
            },
        )
        if fields["end_date"] is not None and start is not None and fields["end_date"] <= start:
            continue  # the grant ends before the add-on starts
        copies.append(uow.credit_grants.add(build(CreditGrant, fields, check_credit_grant)))
    return copies


def _start(data: AddonAttachment, sub: Subscription, ctx: Context, field: str, *, new: bool) -> datetime:
    """The association's start: as asked, else the subscription's start (a ``new`` subscription
    or a draft), else now; checked against the subscription's life and its billed periods."""
    draft = sub.subscription_status is SubscriptionStatus.DRAFT
    start = data.start_date or (sub.start_date if new or draft else max(ctx.now, sub.start_date))
    if start < sub.start_date:
        raise ValidationError("start_date is before the subscription's start", field=field)
    if not draft and start < sub.current_period_start:
        raise ValidationError(
            "start_date is before the current billing period, which is already billed", field=field
        )
    ends = [end for end in (sub.end_date, sub.cancel_at) if end is not None]
    if ends and start >= min(ends):
        raise ValidationError("start_date is at or after the subscription's end", field=field)
    return start


def _attach(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    data: AddonAttachment,
    prefix: str,
    *,
    new: bool,
    pending: AddonAssociation | None = None,
    hold: bool = False,
) -> tuple[Subscription, AddonAssociation, list[SubscriptionLineItem], list[CreditGrant]]:
    """``data`` attached to ``sub`` (not saved): the subscription with the new lines, the stored
    association, the new lines and the stored grant copies. Errors name ``prefix`` + field.
    ``hold``: the association is stored ``pending`` and no grant is copied (a checkout waits for
    the money); ``pending``: that stored association is activated instead of a new one made."""
    addon = _find_addon(uow, data.addon_id, prefix + "addon_id")
    start = _start(data, sub, ctx, prefix + "start_date", new=new)
    prices = _matching_prices(uow, addon, sub, start, prefix + "addon_id")
    _check_entitlements(uow, addon, sub, prefix + "addon_id")
    period = None
    if data.cadence is AddonCadence.ONETIME:
        if sub.subscription_status is SubscriptionStatus.TRIALING:
            raise ValidationError(
                "a onetime add-on cannot be added during a trial (its billing period is not known "
                "until the trial ends)",
                field=prefix + "cadence",
            )
        period = onetime_period(
            start, Period(sub.current_period_start, sub.current_period_end), sub.schedule()
        )
    association = AddonAssociation(
        id=pending.id if pending is not None else ctx.ids.new("addon_assoc"),
        **ctx.stamp(),
        entity_id=sub.id,
        entity_type=AddonAssociationEntityType.SUBSCRIPTION,
        addon_id=addon.id,
        addon_status=AddonStatus.PENDING if hold else AddonStatus.ACTIVE,
        cadence=data.cadence,
        start_date=start,
        metadata=data.metadata,
    )
    lines = _lines(uow, ctx, sub, addon, prices, association, period)
    try:
        if data.line_item_commitments:
            if sub.commitment_amount is not None:
                raise ValidationError(
                    "line_item_commitments cannot be combined with a subscription commitment_amount",
                    field="line_item_commitments",
                )
            check_line_item_commitments(
                data.line_item_commitments, sub.billing_period, sub.billing_period_count
            )
            meters = {m.id: m for m in uow.meters.find_many({li.meter_id for li in lines if li.meter_id})}
            lines = list(commit_line_items(lines, data.line_item_commitments, meters))
        if data.override_line_items:
            lines = list(override_lines(uow, ctx, lines, data.override_line_items))
    except ValidationError as exc:
        raise prefixed(exc, prefix) from None
    if pending is None:
        uow.addon_associations.add(association)
    else:
        kept = {"created_at": pending.created_at, "created_by": pending.created_by}
        association = uow.addon_associations.update(
            association.model_copy(update=kept), expected_version=pending.version
        )
    grants = [] if hold else _grant_copies(uow, ctx, sub, association)
    return sub.model_copy(update={"line_items": (*sub.line_items, *lines)}), association, lines, grants


def attach_addons(
    uow: UnitOfWork, ctx: Context, sub: Subscription, requests: Sequence[AddonAttachment] | None
) -> Subscription:
    """``addons`` of a new subscription (not stored yet): each attached (errors name
    ``addons[i].<field>``), its grants started; returns ``sub`` with the add-ons' lines, which
    its opening invoice then bills and ``create_subscription`` records."""
    for index, data in enumerate(requests or ()):
        sub, _association, _lines, grants = _attach(uow, ctx, sub, data, f"addons[{index}].", new=True)
        start_grants(uow, ctx, sub, grants)
    return sub


def _live_subscription(uow: UnitOfWork, subscription_id: str) -> Subscription:
    return get_live(uow.subscriptions, "subscription", subscription_id)


@dataclass(frozen=True, slots=True)
class PendingAddon:
    """An add-on held for a checkout (:func:`hold_addon`): the ``pending`` association, the
    subscription as it would be with the add-on's ``lines``, and the charge the attachment makes
    now (``charged``: the lines charged from ``effective``, those of ``in_full`` whole), empty
    when the add-on bills from the next period."""

    association: AddonAssociation
    subscription: Subscription
    lines: tuple[SubscriptionLineItem, ...]
    charged: bool
    effective: datetime
    in_full: tuple[str, ...]


def _charge_now(data: AddonAttachment, sub: Subscription) -> bool:
    behaviour = data.proration_behavior or sub.proration_behavior
    charged = data.cadence is AddonCadence.ONETIME or behaviour is ProrationBehavior.CREATE_PRORATIONS
    return charged and sub.subscription_status is SubscriptionStatus.ACTIVE


def _in_full(data: AddonAttachment, lines: Sequence[SubscriptionLineItem]) -> tuple[str, ...]:
    return tuple(line.id for line in lines) if data.cadence is AddonCadence.ONETIME else ()


def _changeable(uow: UnitOfWork, subscription_id: str) -> Subscription:
    sub = _live_subscription(uow, subscription_id)
    if sub.subscription_status in _ENDED:
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_status.value}: add-ons cannot be added"
        )
    return sub


def hold_addon(uow: UnitOfWork, ctx: Context, *, data: AddAddonRequest) -> PendingAddon:
    """Check ``data`` as :func:`add_addon` does and store its association ``pending``; nothing
    else is written (the subscription keeps its lines, no grant is copied) until
    :func:`add_addon` activates it (``pending=``). Raises as :func:`add_addon`."""
    ctx.require(ENTITY, Action.WRITE)
    sub = _changeable(uow, data.subscription_id)
    updated, association, lines, _grants = _attach(uow, ctx, sub, data, "", new=False, hold=True)
    effective = max(association.start_date, sub.current_period_start)
    return PendingAddon(
        association, updated, tuple(lines), _charge_now(data, sub), effective, _in_full(data, lines)
    )


def add_addon(
    uow: UnitOfWork, ctx: Context, *, data: AddAddonRequest, pending: str | None = None
) -> AddedAddon:
    """Attach an add-on to a live subscription (see the module doc) and charge what falls due now.
    ``pending``: the id of the association :func:`hold_addon` stored, activated now (its start
    kept; ``InvalidOperation`` when it is no longer pending, e.g. the subscription was cancelled).

    ``NotFound`` for an unknown subscription; ``InvalidOperation`` for a cancelled one;
    ``ValidationError`` naming the field for bad input (nothing written then);
    ``VersionConflict`` when the subscription changed meanwhile.
    """
    ctx.require(ENTITY, Action.WRITE)
    if data.checkout is not None:
        raise ValidationError("checkout is carried out by checkout_flows.add_addon_checked", field="checkout")
    sub = _changeable(uow, data.subscription_id)
    held = uow.addon_associations.get(pending) if pending is not None else None
    if held is not None:
        if held.status is not Status.PUBLISHED or held.addon_status is not AddonStatus.PENDING:
            raise InvalidOperation(f"add-on association {held.id} is not pending: it cannot be activated")
        data = data.model_copy(update={"start_date": held.start_date})
    updated, association, lines, grants = _attach(uow, ctx, sub, data, "", new=False, pending=held)
    invoice = None
    if _charge_now(data, sub):
        settled = settle_lines(
            uow,
            ctx,
            updated,
            key=addon_charge_key(association.id),
            effective=max(association.start_date, sub.current_period_start),
            started=lines,
            in_full=_in_full(data, lines),
            field="start_date",
        )
        updated, invoice = settled.subscription, settled.invoice
    start_grants(uow, ctx, updated, grants)
    saved = uow.subscriptions.update(updated.model_copy(update=ctx.touch()), expected_version=sub.version)
    record_line_items(uow, ctx, lines)
    notifications.notify(uow, ctx, "subscription.updated", saved, uow.customers.find(saved.customer_id))
    return AddedAddon(association, saved, invoice)


# -- reading, and a draft's activation ----------------------------------------------------------------


def _associations_of(uow: UnitOfWork, subscription_id: str) -> list[AddonAssociation]:
    filters = (
        Filter("entity_type", Op.EQ, AddonAssociationEntityType.SUBSCRIPTION.value),
        Filter("entity_id", Op.EQ, subscription_id),
    )
    sort = (Sort("created_at", descending=False), Sort("id", descending=False))
    found: list[AddonAssociation] = []
    while True:
        page = uow.addon_associations.list(
            ListQuery(filters=filters, sort=sort, limit=MAX_LIMIT, offset=len(found))
        )
        found += page.items
        if not page.has_more:
            return found


def addon_associations(uow: UnitOfWork, ctx: Context, *, subscription_id: str) -> list[AddonAssociation]:
    """The subscription's add-on associations in force now or later (not ended: no ``end_date``
    or one still ahead, so a removal effective at the period end is listed until then), oldest
    first; ``NotFound`` for an unknown subscription."""
    ctx.require(ENTITY, Action.READ)
    sub = _live_subscription(uow, subscription_id)
    return [a for a in _associations_of(uow, sub.id) if a.end_date is None or a.end_date > ctx.now]


def follow_activation(
    uow: UnitOfWork, ctx: Context, draft: Subscription, activated: Subscription
) -> Subscription:
    """A draft's add-ons moved with its activation (``activated`` is the draft at its new start):
    associations that started with the draft start with it, later ones no earlier than it, and a
    onetime add-on's lines are put in the period its start now falls in. Returns ``activated`` with
    those lines; the associations are saved in ``uow``."""
    associations = _associations_of(uow, draft.id)
    if not associations:
        return activated
    current = Period(activated.current_period_start, activated.current_period_end)
    lines = list(activated.line_items)
    for association in associations:
        start = (
            activated.start_date
            if association.start_date == draft.start_date
            else max(activated.start_date, association.start_date)
        )
        if start != association.start_date:
            association = uow.addon_associations.update(
                association.model_copy(update={**ctx.touch(), "start_date": start}),
                expected_version=association.version,
            )
        if association.cadence is not AddonCadence.ONETIME:
            continue
        period = onetime_period(start, current, activated.schedule())
        for index, line in enumerate(lines):
            if line.addon_association_id == association.id:
                begin, end = line_window(association.cadence, line.price_type, start, period)
                lines[index] = line.model_copy(update={"start_date": begin, "end_date": end})
    return activated.model_copy(update={"line_items": tuple(lines)})
