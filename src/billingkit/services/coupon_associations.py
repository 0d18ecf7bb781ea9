"""Coupons attached to subscriptions: attaching them (subscription create and modify share
:func:`attach_coupons`), loading them for invoicing, and counting the invoices they discounted.

Rules (``docs/billing-rules.md`` has a worked example):

* A coupon is named by ``coupon_code`` (``subscription_coupons``, modify) or by id (the deprecated
  ``coupons`` and ``line_item_coupons``); a ``price_id`` must be the price of one of the
  subscription's line items, and the association is then on that line item.
* Checks, in the reference's order, each a 400 naming the request field: the coupon is live
  (``published``) -> now lies in ``[redeem_after, redeem_before]`` -> a fixed coupon's currency is the
  subscription's -> a redemption is left (``total_redemptions < max_redemptions``) -> cadence (a
  ``once`` coupon the subscription already used, or a ``repeated`` one used
  ``duration_in_periods`` times, cannot be attached again).
* Redemptions count once per attachment, atomically: the environment's counter
  ``coupon_redemptions:<coupon id>`` is a row-locked upsert, so concurrent attachments queue on it
  and a rolled-back one gives its number back; the coupon's ``total_redemptions`` is kept equal to it.
* Window: ``start_date`` defaults to the subscription's start (create) or now (modify);
  ``end_date`` to, for a ``repeated`` coupon, ``duration_in_periods`` billing periods of the
  subscription's schedule later, else open. ``end_date == start_date`` is allowed and discounts
  nothing.
* Invoices: ``once`` discounts one invoice, ``repeated`` ``duration_in_periods`` invoices,
  ``forever`` every one; ``applications`` counts them (one per invoice per association).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from billingkit.domain import coupons as core
from billingkit.domain.catalog import Coupon, CouponCadence, CouponType
from billingkit.domain.coupon_associations import CouponAssociation
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.validation import InputModel, NonEmptyStr, UtcDatetime
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import list_where_in

__all__ = [
    "CouponRequest",
    "SubscriptionCouponInput",
    "applied_association_ids",
    "attach_coupons",
    "count_applications",
    "coupon_requests",
    "load_coupon_associations",
    "move_with_activation",
    "record_applications",
    "redeem",
    "with_applications",
]

_PAGE = 1000


@dataclass(frozen=True, slots=True)
class CouponRequest:
    """One coupon to attach, however it was asked for. ``coupon_field`` is the request field that
    names the coupon (``subscription_coupons[1].coupon_code``, ``coupons[0]``); ``price_field``
    the one that names ``price_id``; ``path`` prefixes the date fields (``subscription_coupons[1].``)."""

    coupon_field: str
    coupon_code: str | None = None
    coupon_id: str | None = None
    price_id: str | None = None
    price_field: str = "price_id"
    line_item_id: str | None = None
    start_date: datetime | None = None
    end_date: datetime | None = None
    path: str = ""


class SubscriptionCouponInput(InputModel):
    """The reference's ``SubscriptionCouponInput``: the coupon with ``coupon_code``, on the line item
    of ``price_id`` (else the whole subscription), from ``start_date`` until ``end_date``."""

    coupon_code: NonEmptyStr
    price_id: NonEmptyStr | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None


def coupon_requests(
    subscription_coupons: Sequence[SubscriptionCouponInput] | None,
    coupons: Sequence[str] | None,
    line_item_coupons: Mapping[str, Sequence[str]] | None,
) -> list[CouponRequest]:
    """The three ways a new subscription names its coupons, as one list: ``subscription_coupons``,
    then the deprecated ``coupons`` (ids, on the whole subscription) and ``line_item_coupons``
    (price id -> coupon ids)."""
    requests = [
        CouponRequest(
            coupon_field=f"subscription_coupons[{i}].coupon_code",
            coupon_code=item.coupon_code,
            price_id=item.price_id,
            price_field=f"subscription_coupons[{i}].price_id",
            start_date=item.start_date,
            end_date=item.end_date,
            path=f"subscription_coupons[{i}].",
        )
        for i, item in enumerate(subscription_coupons or ())
    ]
    requests += [
        CouponRequest(coupon_field=f"coupons[{i}]", coupon_id=cid) for i, cid in enumerate(coupons or ())
    ]
    for price_id, ids in (line_item_coupons or {}).items():
        requests += [
            CouponRequest(
                coupon_field=f"line_item_coupons.{price_id}[{i}]",
                coupon_id=cid,
                price_id=price_id,
                price_field=f"line_item_coupons.{price_id}",
            )
            for i, cid in enumerate(ids)
        ]
    return requests


def _find_coupon(uow: UnitOfWork, request: CouponRequest) -> Coupon:
    """The coupon the request names; a 400 on its field when there is no live one."""
    if request.coupon_code is not None:
        coupon = uow.coupons.find_one(coupon_code=request.coupon_code)
        named = f"with code {request.coupon_code!r}"
    else:
        coupon = uow.coupons.find(request.coupon_id or "")
        named = str(request.coupon_id)
    if coupon is None or coupon.status is not Status.PUBLISHED:
        raise ValidationError(f"no published coupon {named}", field=request.coupon_field)
    return coupon


def _line_item_id(sub: Subscription, request: CouponRequest) -> str | None:
    if request.line_item_id is not None:
        if not any(line.id == request.line_item_id for line in sub.line_items):
            raise ValidationError(
                f"subscription {sub.id} has no line item {request.line_item_id}", field=request.price_field
            )
        return request.line_item_id
    if request.price_id is None:
        return None
    for line in sub.line_items:
        if line.price_id == request.price_id:
            return line.id
    raise ValidationError(
        f"price {request.price_id} is not a price of the subscription's line items", field=request.price_field
    )


def _window(
    sub: Subscription, coupon: Coupon, request: CouponRequest, default_start: datetime
) -> tuple[datetime, datetime | None]:
    start = request.start_date or default_start
    end = request.end_date
    if end is None and coupon.cadence is CouponCadence.REPEATED and coupon.duration_in_periods:
        end = sub.schedule().boundary_after_periods(start, coupon.duration_in_periods)
    if end is not None and end < start:
        raise ValidationError("end_date must not be before start_date", field=f"{request.path}end_date")
    return start, end


def _check_redeemable(coupon: Coupon, sub: Subscription, now: datetime, field: str) -> None:
    """Redeem window, then currency (the reference's order)."""
    if coupon.redeem_after is not None and now < coupon.redeem_after:
        raise ValidationError(
            f"coupon {coupon.id} cannot be redeemed before {coupon.redeem_after.isoformat()}", field=field
        )
    if coupon.redeem_before is not None and now > coupon.redeem_before:
        raise ValidationError(
            f"coupon {coupon.id} could be redeemed until {coupon.redeem_before.isoformat()}", field=field
        )
    if coupon.type is CouponType.FIXED and coupon.currency and coupon.currency != sub.currency:
        raise ValidationError(
            f"coupon {coupon.id} is in {coupon.currency}, the subscription in {sub.currency}", field=field
        )


def redeem(uow: UnitOfWork, ctx: Context, coupon: Coupon, *, field: str, count: int = 1) -> Coupon:
    """Take ``count`` redemptions of ``coupon`` (atomic, see the module doc) and store the new
    total; ``ValidationError`` naming ``field`` when fewer are left (nothing is taken then: the
    caller's unit of work rolls back, and the counter with it)."""
    name = f"coupon_redemptions:{coupon.id}"
    taken = uow.counters.next(name, count=count) + count - 1
    # Holding the counter's lock now: read the coupon again, and catch the counter up with a
    # total the coupon row holds beyond it (a total stored before the counter existed).
    coupon = uow.coupons.get(coupon.id)
    if taken - count < coupon.total_redemptions:
        behind = coupon.total_redemptions + count - taken
        taken = uow.counters.next(name, count=behind) + behind - 1
    if coupon.max_redemptions is not None and taken > coupon.max_redemptions:
        left = max(coupon.max_redemptions - (taken - count), 0)
        raise ValidationError(
            f"coupon {coupon.id} has {left} redemptions left (max_redemptions {coupon.max_redemptions}); "
            f"{count} asked",
            field=field,
        )
    return uow.coupons.update(coupon.model_copy(update={"total_redemptions": taken, **ctx.touch()}))


def _check_cadence(coupon: Coupon, used: int, field: str) -> None:
    """``used``: the invoices this coupon already discounted on the subscription."""
    if coupon.cadence is CouponCadence.ONCE and used >= 1:
        raise ValidationError(
            f"once coupon {coupon.id} was already applied to this subscription", field=field
        )
    if coupon.cadence is CouponCadence.REPEATED and used >= (coupon.duration_in_periods or 0):
        raise ValidationError(
            f"repeated coupon {coupon.id} was already applied {used} times to this subscription", field=field
        )


def _used(uow: UnitOfWork, sub_id: str, coupon_id: str) -> int:
    """Invoices ``coupon`` discounted on ``sub_id`` through any association, removed ones too."""
    query = ListQuery(
        filters=(Filter("subscription_id", Op.EQ, sub_id), Filter("coupon_id", Op.EQ, coupon_id)),
        sort=(),
        limit=_PAGE,
        status=None,
    )
    return sum(item.applications for item in uow.coupon_associations.list(query).items)


def attach_coupons(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    requests: Sequence[CouponRequest],
    *,
    default_start: datetime,
    new_subscription: bool,
) -> list[CouponAssociation]:
    """Check and store one association per request (see the module doc); ``new_subscription``:
    ``sub`` is being created, so no coupon has been used on it yet. Raises ``ValidationError``
    naming the request field; the caller's unit of work then writes nothing."""
    added: list[CouponAssociation] = []
    for request in requests:
        coupon = _find_coupon(uow, request)
        line_item_id = _line_item_id(sub, request)
        start, end = _window(sub, coupon, request, default_start)
        _check_redeemable(coupon, sub, ctx.now, request.coupon_field)
        redeem(uow, ctx, coupon, field=request.coupon_field)
        if not new_subscription:
            _check_cadence(coupon, _used(uow, sub.id, coupon.id), request.coupon_field)
        added.append(
            CouponAssociation(
                id=ctx.ids.new("coupon_assoc"),
                **ctx.stamp(),
                coupon_id=coupon.id,
                subscription_id=sub.id,
                subscription_line_item_id=line_item_id,
                start_date=start,
                end_date=end,
            )
        )
    uow.coupon_associations.add_many(added)
    return added


def move_with_activation(uow: UnitOfWork, ctx: Context, draft: Subscription, activated: Subscription) -> None:
    """A draft activated at a new start: its associations that began at the draft's start move
    with it (their end by the same amount), so a ``repeated`` window is not spent before billing
    begins. Associations given another start keep it."""
    moved = activated.start_date - draft.start_date
    if not moved:
        return
    query = ListQuery(filters=(Filter("subscription_id", Op.EQ, draft.id),), sort=(), limit=_PAGE)
    touched = ctx.touch()
    changes = [
        (
            item,
            item.model_copy(
                update={
                    "start_date": activated.start_date,
                    "end_date": None if item.end_date is None else item.end_date + moved,
                    **touched,
                }
            ),
        )
        for item in uow.coupon_associations.list(query).items
        if item.start_date == draft.start_date
    ]
    if changes:
        uow.coupon_associations.update_many(changes)


def _live_associations(uow: UnitOfWork, subscription_ids: Sequence[str]) -> list[CouponAssociation]:
    return list_where_in(uow.coupon_associations, "subscription_id", subscription_ids)


def load_coupon_associations(
    uow: UnitOfWork, subscriptions: Sequence[Subscription]
) -> tuple[dict[str, tuple[core.CouponAssociation, ...]], dict[str, Coupon]]:
    """The live associations of ``subscriptions`` as the billing core applies them (subscription
    id -> associations) and their coupons (coupon id -> stored coupon). An association whose coupon
    was deleted discounts nothing more. One statement per 500 subscriptions, one for the coupons."""
    stored = _live_associations(uow, [sub.id for sub in subscriptions])
    if not stored:
        return {}, {}
    coupons = {c.id: c for c in uow.coupons.find_many({a.coupon_id for a in stored})}
    cores = {c.id: c.to_core() for c in coupons.values() if c.status is Status.PUBLISHED}
    by_sub: dict[str, list[core.CouponAssociation]] = {}
    for association in stored:
        coupon = cores.get(association.coupon_id)
        if coupon is not None:
            by_sub.setdefault(association.subscription_id, []).append(association.to_core(coupon))
    return {sub_id: tuple(items) for sub_id, items in by_sub.items()}, coupons


def applied_association_ids(applications: Iterable[core.CouponApplication]) -> set[str]:
    """The associations an invoice's coupon applications came from (each counts once per invoice)."""
    return {app.coupon_association_id for app in applications if app.coupon_association_id}


def with_applications(
    associations: tuple[core.CouponAssociation, ...], applied: set[str]
) -> tuple[core.CouponAssociation, ...]:
    """``associations`` after one more invoice discounted by those in ``applied``: the next
    invoice computed in the same batch then sees the new counts."""
    return tuple(
        replace(item, applications=item.applications + 1) if item.id in applied else item
        for item in associations
    )


def record_applications(uow: UnitOfWork, ctx: Context, counts: Mapping[str, int]) -> None:
    """Add ``counts`` (association id -> invoices it discounted) to the stored associations, one
    read and one ``update_many`` for all of them."""
    if not counts:
        return
    touched = ctx.touch()
    changes = [
        (item, item.model_copy(update={"applications": item.applications + counts[item.id], **touched}))
        for item in uow.coupon_associations.find_many(counts)
    ]
    uow.coupon_associations.update_many(changes)


def count_applications(applications: Iterable[core.CouponApplication]) -> Counter[str]:
    """One per association an invoice's applications came from."""
    return Counter(applied_association_ids(applications))
