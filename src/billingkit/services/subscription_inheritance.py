"""Subscription hierarchies on create: the ``inheritance`` request of ``POST /subscriptions``
(the reference's ``SubscriptionInheritanceConfig``), and the changes it shares with the modify
types ``inheritance`` and ``grouped_invoicing`` (:mod:`billingkit.services.inheritance_modify`).

* ``parent_subscription_id``: the new subscription is a ``grouped_invoicing`` child of that live
  ``standalone``, ``delegated_invoicing`` or ``parent`` subscription (which becomes a ``parent``),
  in its currency, billing period and count, following its schedule, status and periods (no
  opening invoice: its lines are billed on the parent's invoices);
* ``external_customer_ids_to_inherit_subscription``: an ``inherited`` skeleton child (no line
  items, never invoiced) for each of these customers, whose usage the parent bills;
* ``subscriptions_ids_for_grouped_invoicing``: these ``standalone`` subscriptions become grouped
  children (their usage so far in their current period is invoiced on their own first);
* ``grouped_invoicing_children_to_create``: new grouped children, each a full create request of
  its own (``plan_id``, ``external_customer_id``, line items, add-ons...) in the parent's
  currency and billing period;
* ``invoicing_customer_external_id``: the invoices go to that customer (``delegated_invoicing``,
  or a parent's invoices).

The type is implied (:func:`billingkit.domain.subscription_inheritance.implied_type`); every
refusal is a ``ValidationError`` naming the field, and nothing is written then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Self

from pydantic import Field, PrivateAttr, model_validator

from billingkit.domain.catalog import TaxRateEntityType
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.periods import Period
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Status
from billingkit.domain.subscription_inheritance import (
    BILLED_WITH_PARENT,
    PARENTABLE_TYPES,
    child_standing,
    implied_type,
)
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus, SubscriptionType
from billingkit.domain.validation import InputModel, NonEmptyStr, parse_input
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.coupon_associations import count_applications, record_applications
from billingkit.services.invoicing import (
    Charge,
    build_invoice,
    compute_invoices,
    issue_invoice,
    load_snapshot,
)
from billingkit.services.records import build, list_where_in

if TYPE_CHECKING:  # the subscriptions module calls this one
    from billingkit.services.subscriptions import SubscriptionCreate

__all__ = [
    "MAX_CHILDREN",
    "GroupedInvoicingChildRequest",
    "SubscriptionInheritanceConfig",
    "apply_inheritance",
    "children_of",
    "convert_to_grouped",
    "find_customers",
    "inherit",
    "promote",
]

#: Most children one request may name in each of its lists.
MAX_CHILDREN = 100
#: Most grouped children one create request may create (each is a whole subscription create).
MAX_CHILDREN_TO_CREATE = 20

IdList = Annotated[list[NonEmptyStr], Field(max_length=MAX_CHILDREN)]

# Create fields a grouped_invoicing child refuses: its lines are priced on the parent's invoice,
# which is discounted, taxed and committed as the parent's, on the parent's schedule.
_NOT_ON_GROUPED = {
    "subscription_coupons": "coupons of a grouped_invoicing child would not apply on its parent's invoice",
    "coupons": "coupons of a grouped_invoicing child would not apply on its parent's invoice",
    "line_item_coupons": "coupons of a grouped_invoicing child would not apply on its parent's invoice",
    "tax_rate_overrides": "a grouped_invoicing child's lines are taxed as its parent's invoice",
    "commitment_amount": "a grouped_invoicing child's lines count toward its parent's commitment only",
    "overage_factor": "a grouped_invoicing child's lines count toward its parent's commitment only",
    "commitment_duration": "a grouped_invoicing child's lines count toward its parent's commitment only",
    "line_item_commitments": "line commitments are not supported on grouped_invoicing children",
    "auto_invoice_threshold": "auto_invoice_threshold is for standalone subscriptions only",
    "billing_anchor": "a grouped_invoicing child follows its parent's billing anchor",
    "end_date": "a grouped_invoicing child ends with its parent or when it leaves the group",
}


class GroupedInvoicingChildRequest(InputModel):
    """One grouped child created with its parent (the reference's ``GroupedInvoicingChildRequest``):
    ``plan_id`` and ``external_customer_id`` (required), and the create request's own fields for
    its lines (``line_items``, ``override_line_items``, ``addons``, ``phases``,
    ``override_entitlements``, ``credit_grants``...), read as :class:`SubscriptionCreate` reads
    them. Currency, billing period, count, cycle and start are the parent's."""

    plan_id: NonEmptyStr
    external_customer_id: NonEmptyStr
    addons: Any = None
    commitment_amount: Any = None
    commitment_duration: Any = None
    coupons: Any = None
    credit_grants: Any = None
    enable_true_up: Any = None
    line_item_commitments: Any = None
    line_item_coupons: Any = None
    line_items: Any = None
    overage_factor: Any = None
    override_entitlements: Any = None
    override_line_items: Any = None
    phases: Any = None
    subscription_coupons: Any = None
    tax_rate_overrides: Any = None
    trial_period_days: Any = None


class SubscriptionInheritanceConfig(InputModel):
    """The reference's ``SubscriptionInheritanceConfig`` (see the module doc)."""

    external_customer_ids_to_inherit_subscription: IdList | None = None
    grouped_invoicing_children_to_create: (
        Annotated[list[GroupedInvoicingChildRequest], Field(max_length=MAX_CHILDREN_TO_CREATE)] | None
    ) = None
    invoicing_customer_external_id: NonEmptyStr | None = None
    parent_subscription_id: NonEmptyStr | None = None
    subscriptions_ids_for_grouped_invoicing: IdList | None = None
    # The parent being created in the same request (its grouped_invoicing_children_to_create):
    # not stored yet, so it cannot be read back. Set in process only, never from JSON.
    _parent: Subscription | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _no_repeats(self) -> Self:
        for name in (
            "external_customer_ids_to_inherit_subscription",
            "subscriptions_ids_for_grouped_invoicing",
        ):
            _unique(getattr(self, name) or [], f"inheritance.{name}")
        return self

    @property
    def has_children(self) -> bool:
        return bool(
            self.external_customer_ids_to_inherit_subscription
            or self.grouped_invoicing_children_to_create
            or self.subscriptions_ids_for_grouped_invoicing
        )


def _unique(values: Sequence[str], field: str) -> None:
    seen: set[str] = set()
    for index, value in enumerate(values):
        if value in seen:
            raise ValidationError(f"{value} is named twice", field=f"{field}[{index}]")
        seen.add(value)


def find_customers(uow: UnitOfWork, external_ids: Sequence[str], field: str) -> list[Customer]:
    """The live customers with these external ids, in order (one read); a ``ValidationError`` on
    ``<field>[i]`` for one that does not exist."""
    found = {c.external_id: c for c in list_where_in(uow.customers, "external_id", external_ids)}
    missing = next((i for i, external_id in enumerate(external_ids) if external_id not in found), None)
    if missing is not None:
        raise ValidationError(
            f"no customer with external id {external_ids[missing]!r}", field=f"{field}[{missing}]"
        )
    return [found[external_id] for external_id in external_ids]


def children_of(uow: UnitOfWork, parent_id: str) -> list[Subscription]:
    """The parent's live children (both kinds, any status), oldest first."""
    found = list_where_in(uow.subscriptions, "parent_subscription_id", [parent_id])
    return sorted(found, key=lambda sub: (sub.created_at, sub.id))


def promote(uow: UnitOfWork, ctx: Context, parent: Subscription) -> Subscription:
    """``parent`` as a ``parent`` subscription: a stored standalone or delegated one is saved as
    such (version checked, ``subscription.updated`` recorded)."""
    if parent.subscription_type is SubscriptionType.PARENT:
        return parent
    updated = uow.subscriptions.update(
        parent.model_copy(update={"subscription_type": SubscriptionType.PARENT, **ctx.touch()}),
        expected_version=parent.version,
    )
    notifications.notify(uow, ctx, "subscription.updated", updated, uow.customers.find(updated.customer_id))
    return updated


def _check_parent(parent: Subscription | None, parent_id: str, field: str) -> Subscription:
    if parent is None or parent.status is not Status.PUBLISHED:
        raise ValidationError(f"parent subscription {parent_id} not found", field=field)
    if parent.subscription_type not in PARENTABLE_TYPES:
        raise ValidationError(
            f"subscription {parent.id} is {parent.subscription_type.value}: a child cannot have children "
            "(hierarchies are one level deep)",
            field=field,
        )
    if parent.subscription_status not in BILLED_WITH_PARENT:
        raise ValidationError(
            f"subscription {parent.id} is {parent.subscription_status.value}; only an active or trialing "
            "subscription can have children",
            field=field,
        )
    return parent


def _check_same_terms(child: Subscription, parent: Subscription, fields: tuple[str, str, str]) -> None:
    """Currency, billing period and count must be the parent's (its invoices are in one currency,
    and a child follows its periods)."""
    for name, field in zip(("currency", "billing_period", "billing_period_count"), fields, strict=True):
        mine, theirs = getattr(child, name), getattr(parent, name)
        if mine != theirs:
            shown = getattr(theirs, "value", theirs)
            raise ValidationError(
                f"{name} must be the parent subscription's ({shown}) for subscription {child.id}",
                field=field,
            )


def inherit(
    uow: UnitOfWork, ctx: Context, parent: Subscription, customers: Sequence[Customer], *, start: datetime
) -> list[Subscription]:
    """One ``inherited`` skeleton child of ``parent`` per customer, starting at ``start``: the
    parent's plan, currency, schedule, status and end, no line items; stored, each with its
    ``subscription.created``."""
    made = []
    for customer in customers:
        child = build(
            Subscription,
            {
                "id": ctx.ids.new("subs"),
                **ctx.stamp(),
                "plan_id": parent.plan_id,
                "customer_id": customer.id,
                "parent_subscription_id": parent.id,
                "subscription_type": SubscriptionType.INHERITED,
                "billing_cadence": parent.billing_cadence,
                "billing_period": parent.billing_period,
                "billing_period_count": parent.billing_period_count,
                "currency": parent.currency,
                "start_date": start,
                "end_date": parent.end_date,
                "collection_method": parent.collection_method,
                "payment_behavior": parent.payment_behavior,
                "payment_terms": parent.payment_terms,
                "synced_price_sequence": parent.synced_price_sequence,
                **child_standing(parent, start=start),
            },
        )
        uow.subscriptions.add(child)
        notifications.notify(uow, ctx, "subscription.created", child, customer)
        made.append(child)
    return made


def check_inheriting(
    uow: UnitOfWork, parent: Subscription, customers: Sequence[Customer], field: str
) -> None:
    """Refuse the parent's own customer and customers that already inherit from it."""
    taken = {
        child.customer_id
        for child in children_of(uow, parent.id)
        if child.subscription_type is SubscriptionType.INHERITED
        and child.subscription_status is not SubscriptionStatus.CANCELLED
    }
    for index, customer in enumerate(customers):
        if customer.id == parent.customer_id:
            raise ValidationError(
                f"customer {customer.external_id!r} is the parent subscription's own customer",
                field=f"{field}[{index}]",
            )
        if customer.id in taken:
            raise ValidationError(
                f"customer {customer.external_id!r} already inherits subscription {parent.id}",
                field=f"{field}[{index}]",
            )


def _close_out(uow: UnitOfWork, ctx: Context, sub: Subscription) -> tuple[Subscription, Invoice | None]:
    """``sub`` with its usage (ARREAR charges) of its current period up to now invoiced on its own
    (``SUBSCRIPTION_UPDATE``, FIXED ARREAR fees prorated), so its parent's invoices bill it from
    now on: its current period then starts now. No lines: no invoice."""
    now = ctx.now
    if now <= sub.current_period_start:
        return sub, None
    lines = tuple(
        line
        if line.end_date is not None and line.end_date <= now
        else line.model_copy(update={"end_date": now})
        for line in sub.line_items
    )
    period = Period(sub.current_period_start, sub.current_period_end)
    charge = Charge(
        sub.model_copy(update={"line_items": lines}), BillingReason.SUBSCRIPTION_UPDATE, "period_end", period
    )
    snapshot = load_snapshot(uow, [sub], at=now)
    (computed,) = compute_invoices(uow, [charge], snapshot, as_of=now)
    sequence, invoice = sub.billing_sequence, None
    if computed.draft.lines:
        sequence += 1
        built = build_invoice(ctx, computed, snapshot, billing_sequence=sequence)
        invoice = issue_invoice(uow, ctx, built, computed=computed, snapshot=snapshot)
        record_applications(uow, ctx, count_applications(computed.draft.coupon_applications))
    return sub.model_copy(update={"current_period_start": now, "billing_sequence": sequence}), invoice


def _check_convertible(uow: UnitOfWork, sub: Subscription, parent: Subscription, field: str) -> None:
    if sub.subscription_type is not SubscriptionType.STANDALONE or sub.id == parent.id:
        raise ValidationError(
            f"subscription {sub.id} is {sub.subscription_type.value}; only a standalone subscription other "
            "than the parent can join a group",
            field=field,
        )
    if sub.subscription_status is not SubscriptionStatus.ACTIVE or parent.subscription_status is not (
        SubscriptionStatus.ACTIVE
    ):
        raise ValidationError(
            f"subscription {sub.id} ({sub.subscription_status.value}) can join parent {parent.id} "
            f"({parent.subscription_status.value}) only when both are active",
            field=field,
        )
    _check_same_terms(sub, parent, (field, field, field))
    # Its ADVANCE charges are billed through its own period end; the parent's invoices go on from
    # there, so that end must lie within the parent's current or next period.
    following = parent.schedule().first_period(parent.current_period_end, end_date=parent.end_date)
    if not parent.current_period_start <= sub.current_period_end <= following.end:
        raise ValidationError(
            f"subscription {sub.id}'s current period ends {sub.current_period_end.isoformat()}, outside the "
            f"parent's current and next periods; it can join when its periods meet the parent's",
            field=field,
        )
    if sub.commitment_amount is not None or any(line.commitment_type for line in sub.line_items):
        raise ValidationError(f"subscription {sub.id} has a commitment; it cannot join a group", field=field)
    coupons = list_where_in(uow.coupon_associations, "subscription_id", [sub.id])
    if coupons:
        raise ValidationError(
            f"subscription {sub.id} has coupons; remove them before it joins a group", field=field
        )
    taxes = list_where_in(
        uow.tax_associations,
        "entity_id",
        [sub.id],
        Filter("entity_type", Op.EQ, TaxRateEntityType.SUBSCRIPTION),
    )
    if taxes:
        raise ValidationError(
            f"subscription {sub.id} has its own tax rates; remove them before it joins a group", field=field
        )


def convert_to_grouped(
    uow: UnitOfWork, ctx: Context, parent: Subscription, ids: Sequence[str], field: str
) -> tuple[list[Subscription], list[Invoice]]:
    """Make the standalone subscriptions ``ids`` grouped children of ``parent`` (checked first, all
    of them): each one's usage so far is invoiced on its own (:func:`_close_out`), then it is saved
    linked to the parent, with no due work of its own. Returns the children and those invoices."""
    found = {sub.id: sub for sub in uow.subscriptions.find_many(ids) if sub.status is Status.PUBLISHED}
    subs = []
    for index, sub_id in enumerate(ids):
        sub = found.get(sub_id)
        if sub is None:
            raise ValidationError(f"subscription {sub_id} not found", field=f"{field}[{index}]")
        _check_convertible(uow, sub, parent, f"{field}[{index}]")
        subs.append(sub)
    children, invoices = [], []
    for sub in subs:
        closed, invoice = _close_out(uow, ctx, sub)
        if invoice is not None:
            invoices.append(invoice)
        linked = closed.model_copy(
            update={
                "subscription_type": SubscriptionType.GROUPED_INVOICING,
                "parent_subscription_id": parent.id,
                "next_run_at": None,
                "renewal_notice_for": None,
                **ctx.touch(),
            }
        )
        child = uow.subscriptions.update(linked, expected_version=sub.version)
        notifications.notify(uow, ctx, "subscription.updated", child, uow.customers.find(child.customer_id))
        children.append(child)
    return children, invoices


def _check_grouped_request(data: SubscriptionCreate, parent: Subscription) -> None:
    given = data.model_fields_set
    for name, reason in _NOT_ON_GROUPED.items():
        if name in given and getattr(data, name) not in (None, [], {}):
            raise ValidationError(reason, field=name)
    if data.trial_period_days:
        raise ValidationError(
            "a grouped_invoicing child has no trial of its own; it follows its parent's",
            field="trial_period_days",
        )
    for name in ("subscription_status", "billing_cycle", "timezone"):
        value = getattr(data, name)
        if name in given and value is not None and value != getattr(parent, name):
            raise ValidationError(f"{name} of a grouped_invoicing child is its parent's", field=name)
    if data.start_date is not None and data.start_date < parent.current_period_start:
        raise ValidationError(
            f"a grouped_invoicing child cannot start before its parent's current period "
            f"({parent.current_period_start.isoformat()})",
            field="start_date",
        )


def _link_grouped(uow: UnitOfWork, ctx: Context, sub: Subscription, data: SubscriptionCreate) -> Subscription:
    config = data.inheritance
    assert config is not None and config.parent_subscription_id is not None
    field = "inheritance.parent_subscription_id"
    parent_id = config.parent_subscription_id
    pending = config._parent
    found = pending if pending is not None and pending.id == parent_id else uow.subscriptions.find(parent_id)
    parent = _check_parent(found, parent_id, field)
    _check_same_terms(sub, parent, ("currency", "billing_period", "billing_period_count"))
    _check_grouped_request(data, parent)
    if pending is None:
        promote(uow, ctx, parent)
    return sub.model_copy(
        update={
            "subscription_type": SubscriptionType.GROUPED_INVOICING,
            "parent_subscription_id": parent.id,
            "billing_anchor_requested": False,
            **child_standing(parent, start=sub.start_date),
        }
    )


def _prefixed(error: ValidationError, path: str) -> ValidationError:
    field = f"{path}.{error.field}" if error.field else path
    details = {**error.details, "field": field}
    return ValidationError(f"{path}: {error.message}", field=field, details=details)


def _create_grouped(
    uow: UnitOfWork,
    ctx: Context,
    parent: Subscription,
    data: SubscriptionCreate,
    create: Callable[..., Subscription],
) -> list[Subscription]:
    config = data.inheritance
    assert config is not None
    made = []
    for index, child in enumerate(config.grouped_invoicing_children_to_create or ()):
        path = f"inheritance.grouped_invoicing_children_to_create[{index}]"
        request = {
            **child.model_dump(exclude_none=True),
            "currency": parent.currency,
            "billing_period": parent.billing_period,
            "billing_period_count": parent.billing_period_count,
            "billing_cycle": parent.billing_cycle,
            "start_date": parent.start_date,
            "inheritance": {"parent_subscription_id": parent.id},
        }
        try:
            child_data = parse_input(type(data), request)
            assert child_data.inheritance is not None
            child_data.inheritance._parent = parent
            made.append(create(uow, ctx, data=child_data))
        except ValidationError as exc:
            raise _prefixed(exc, path) from None
    return made


def apply_inheritance(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    data: SubscriptionCreate,
    *,
    create: Callable[..., Subscription],
) -> Subscription:
    """``sub`` (being created from ``data``, not stored yet) with its ``inheritance`` carried out
    (see the module doc): its type, invoicing customer, parent link and standing; its children
    made or converted. ``create(uow, ctx, data=...)`` creates one subscription (the grouped
    children to create).
    Raises ``ValidationError`` naming the field."""
    config = data.inheritance
    if config is None:
        return sub
    kind = implied_type(
        has_parent=config.parent_subscription_id is not None,
        has_children=config.has_children,
        has_invoicing_customer=config.invoicing_customer_external_id is not None,
    )
    if kind is not SubscriptionType.STANDALONE and data.auto_invoice_threshold is not None:
        raise ValidationError(
            "auto_invoice_threshold is for standalone subscriptions only", field="auto_invoice_threshold"
        )
    update: dict[str, Any] = {"subscription_type": kind}
    if config.invoicing_customer_external_id is not None:
        field = "inheritance.invoicing_customer_external_id"
        payer = uow.customers.find_one(external_id=config.invoicing_customer_external_id)
        if payer is None:
            raise ValidationError(
                f"no customer with external id {config.invoicing_customer_external_id!r}", field=field
            )
        if payer.id == sub.customer_id:
            raise ValidationError("the invoicing customer is the subscription's own customer", field=field)
        update["invoicing_customer_id"] = payer.id
    if kind is SubscriptionType.GROUPED_INVOICING:
        return _link_grouped(uow, ctx, sub, data).model_copy(update=update)
    sub = sub.model_copy(update=update)
    if kind is not SubscriptionType.PARENT:
        return sub
    if sub.subscription_status is SubscriptionStatus.DRAFT:
        raise ValidationError("a draft cannot have children; activate it first", field="inheritance")
    inheriting = config.external_customer_ids_to_inherit_subscription or []
    field = "inheritance.external_customer_ids_to_inherit_subscription"
    customers = find_customers(uow, inheriting, field)
    check_inheriting(uow, sub, customers, field)
    inherit(uow, ctx, sub, customers, start=sub.start_date)
    if config.subscriptions_ids_for_grouped_invoicing:
        field = "inheritance.subscriptions_ids_for_grouped_invoicing"
        convert_to_grouped(uow, ctx, sub, config.subscriptions_ids_for_grouped_invoicing, field)
    _create_grouped(uow, ctx, sub, data, create)
    return sub
