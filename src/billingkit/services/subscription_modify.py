"""Changing a live subscription in place (the reference's ``/subscriptions/{id}/modify/execute``
and ``/modify/preview``).

This version carries out:

* ``type: coupon``: ``add`` attaches a coupon (by ``coupon_code``) to the subscription or one of
  its line items with the same checks and atomic redemption limit as subscription create;
  ``remove`` archives an association, so later invoices lose its discount (invoices already
  issued keep theirs). A change bumps the subscription's ``version`` and records
  ``subscription.updated``.
* ``type: inheritance`` (``inheritance_params``) and ``type: grouped_invoicing``
  (``grouped_invoicing_params``): children added to or taken from a parent
  (:mod:`billingkit.services.inheritance_modify`); the answer lists the other subscriptions and
  the invoices the change touched in ``changed_resources``.
* ``type: quantity_change`` (``quantity_change_params``): FIXED lines at new quantities, each
  replaced at the effective date, the difference prorated and settled at once
  (:mod:`billingkit.services.quantity_changes`); with ``checkout``, only once paid
  (:func:`billingkit.services.checkout_flows.modify_subscription_checked`).
* ``type: trial_end`` (``trial_end_params``): a trial ended now or moved
  (:mod:`billingkit.services.trial_end_changes`).

``tax`` and ``addon`` are refused with a 400 on ``type``. :func:`preview_modify` answers what a
modification would do and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, Self

from pydantic import model_validator

from billingkit.domain.access import Action
from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.validation import InputModel, NonEmptyStr, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.checkout_requests import CheckoutRequest
from billingkit.services.context import Context
from billingkit.services.coupon_associations import CouponRequest, attach_coupons
from billingkit.services.inheritance_modify import (
    Changes,
    SubModifyGroupedInvoicingParams,
    SubModifyInheritanceRequest,
    modify_grouped_invoicing,
    modify_inheritance,
)
from billingkit.services.modify_resources import ChangedResources
from billingkit.services.quantity_changes import SubModifyQuantityChangeRequest, change_quantities
from billingkit.services.records import archive, get_live
from billingkit.services.trial_end_changes import SubModifyTrialEndRequest, change_trial_end

__all__ = [
    "ExecuteSubscriptionModifyRequest",
    "SubModifyCouponAction",
    "SubModifyCouponParams",
    "SubscriptionModifyResult",
    "SubscriptionModifyType",
    "modify_subscription",
    "preview_modify",
]

ENTITY = "subscription"
LABEL = "subscription"


class SubscriptionModifyType(StrEnum):
    INHERITANCE = "inheritance"
    QUANTITY_CHANGE = "quantity_change"
    GROUPED_INVOICING = "grouped_invoicing"
    TRIAL_END = "trial_end"
    COUPON = "coupon"
    TAX = "tax"
    ADDON = "addon"


class SubModifyCouponAction(StrEnum):
    ADD = "add"
    REMOVE = "remove"


class SubModifyCouponParams(InputModel):
    """``add``: ``coupon_code`` (required), on ``subscription_line_item_id`` (else the whole
    subscription), from ``start_date`` (default now) until ``end_date``. ``remove``:
    ``coupon_association_id`` (required). ``subscription_id``, when given, must be the path's."""

    action: SubModifyCouponAction
    coupon_code: NonEmptyStr | None = None
    coupon_association_id: NonEmptyStr | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    subscription_id: NonEmptyStr | None = None
    subscription_line_item_id: NonEmptyStr | None = None

    @model_validator(mode="after")
    def _required_by_action(self) -> Self:
        if self.action is SubModifyCouponAction.ADD and self.coupon_code is None:
            raise ValidationError(
                "coupon_code is required to add a coupon", field="coupon_params.coupon_code"
            )
        if self.action is SubModifyCouponAction.REMOVE and self.coupon_association_id is None:
            raise ValidationError(
                "coupon_association_id is required to remove a coupon",
                field="coupon_params.coupon_association_id",
            )
        if self.subscription_id is not None and self.subscription_line_item_id is not None:
            raise ValidationError(
                "subscription_id and subscription_line_item_id exclude each other",
                field="coupon_params.subscription_line_item_id",
            )
        return self


# The types this version carries out, and the params each one takes.
_PARAMS = {
    SubscriptionModifyType.COUPON: "coupon_params",
    SubscriptionModifyType.INHERITANCE: "inheritance_params",
    SubscriptionModifyType.GROUPED_INVOICING: "grouped_invoicing_params",
    SubscriptionModifyType.QUANTITY_CHANGE: "quantity_change_params",
    SubscriptionModifyType.TRIAL_END: "trial_end_params",
}


class ExecuteSubscriptionModifyRequest(InputModel):
    """The reference's ``ExecuteSubscriptionModifyRequest``; this version carries out the types
    ``coupon`` (``coupon_params``), ``inheritance`` (``inheritance_params``),
    ``grouped_invoicing`` (``grouped_invoicing_params``), ``quantity_change``
    (``quantity_change_params``, and ``checkout`` to change only once paid) and ``trial_end``
    (``trial_end_params``)."""

    type: SubscriptionModifyType
    coupon_params: SubModifyCouponParams | None = None
    addon_params: dict[str, Any] | None = None
    checkout: CheckoutRequest = None
    grouped_invoicing_params: SubModifyGroupedInvoicingParams | None = None
    inheritance_params: SubModifyInheritanceRequest | None = None
    quantity_change_params: SubModifyQuantityChangeRequest | None = None
    tax_params: dict[str, Any] | None = None
    trial_end_params: SubModifyTrialEndRequest | None = None

    @model_validator(mode="after")
    def _params_of_type(self) -> Self:
        wanted = _PARAMS.get(self.type)
        if wanted is None:
            raise ValidationError(
                f"modify type {self.type.value} is not supported by this version of billingkit", field="type"
            )
        if getattr(self, wanted) is None:
            raise ValidationError(f"{wanted} is required for type {self.type.value}", field=wanted)
        if self.checkout is not None and self.type is not SubscriptionModifyType.QUANTITY_CHANGE:
            raise ValidationError(
                f"checkout goes with type quantity_change, not {self.type.value}", field="checkout"
            )
        for name in (
            "addon_params",
            "coupon_params",
            "grouped_invoicing_params",
            "inheritance_params",
            "quantity_change_params",
            "tax_params",
            "trial_end_params",
        ):
            if name != wanted and getattr(self, name) is not None:
                raise ValidationError(f"{name} does not go with type {self.type.value}", field=name)
        return self


@dataclass(frozen=True, slots=True)
class SubscriptionModifyResult:
    """The reference's ``SubscriptionModifyResponse``: the subscription after the change (for a
    preview: as it would be) and the other resources it changed (``changed_resources``; none for
    a coupon change); ``checkout_session``: the session a pay-first change waits on (the
    subscription then unchanged)."""

    subscription: Subscription
    changed: ChangedResources | None = field(default=None)
    checkout_session: CheckoutSession | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"subscription": self.subscription.to_dict()}
        if self.changed is not None:
            data["changed_resources"] = self.changed.to_dict()
        if self.checkout_session is not None:
            data["checkout_session"] = self.checkout_session.to_dict()
        return data


def _hierarchy(sub: Subscription, changes: Changes) -> SubscriptionModifyResult:
    resources = ChangedResources(subscriptions=tuple(changes.subscriptions), invoices=tuple(changes.invoices))
    return SubscriptionModifyResult(sub, resources)


def _add(uow: UnitOfWork, ctx: Context, sub: Subscription, params: SubModifyCouponParams) -> None:
    if params.subscription_id is not None and params.subscription_id != sub.id:
        raise ValidationError(
            f"subscription_id {params.subscription_id} is not subscription {sub.id}",
            field="coupon_params.subscription_id",
        )
    request = CouponRequest(
        coupon_field="coupon_params.coupon_code",
        coupon_code=params.coupon_code,
        line_item_id=params.subscription_line_item_id,
        price_field="coupon_params.subscription_line_item_id",
        start_date=params.start_date,
        end_date=params.end_date,
        path="coupon_params.",
    )
    attach_coupons(uow, ctx, sub, [request], default_start=ctx.now, new_subscription=False)


def _remove(uow: UnitOfWork, ctx: Context, sub: Subscription, association_id: str) -> None:
    association = uow.coupon_associations.find(association_id)
    if (
        association is None
        or association.status is not Status.PUBLISHED
        or association.subscription_id != sub.id
    ):
        raise ValidationError(
            f"subscription {sub.id} has no coupon association {association_id}",
            field="coupon_params.coupon_association_id",
        )
    archive(uow.coupon_associations, association, ctx)


def modify_subscription(
    uow: UnitOfWork,
    ctx: Context,
    *,
    subscription_id: str,
    data: ExecuteSubscriptionModifyRequest,
    renewal_notice: timedelta | None = None,
) -> SubscriptionModifyResult:
    """Carry out ``data`` on the subscription (see the module doc). Raises ``NotFound``,
    ``InvalidOperation`` for a cancelled subscription (or a change its state refuses),
    ``ValidationError`` naming the field (then nothing is written, the redemption taken
    included), ``VersionConflict`` when a subscription changed meanwhile. ``renewal_notice``:
    the billing run's, for a subscription that leaves a group and has due work again."""
    ctx.require(ENTITY, Action.WRITE)
    if data.checkout is not None:
        raise ValidationError(
            "checkout is carried out by checkout_flows.modify_subscription_checked", field="checkout"
        )
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    if sub.subscription_status is SubscriptionStatus.CANCELLED:
        raise InvalidOperation(f"subscription {sub.id} is cancelled")
    if data.inheritance_params is not None:
        return _hierarchy(*modify_inheritance(uow, ctx, sub, data.inheritance_params))
    if data.grouped_invoicing_params is not None:
        return _hierarchy(
            *modify_grouped_invoicing(
                uow, ctx, sub, data.grouped_invoicing_params, renewal_notice=renewal_notice
            )
        )
    if data.quantity_change_params is not None:
        return SubscriptionModifyResult(*change_quantities(uow, ctx, sub, data.quantity_change_params))
    if data.trial_end_params is not None:
        return SubscriptionModifyResult(
            *change_trial_end(uow, ctx, sub, data.trial_end_params, renewal_notice=renewal_notice)
        )
    params = data.coupon_params
    assert params is not None  # the request model requires it for type coupon
    if params.action is SubModifyCouponAction.ADD:
        _add(uow, ctx, sub, params)
    else:
        _remove(uow, ctx, sub, params.coupon_association_id or "")
    updated = uow.subscriptions.update(sub.model_copy(update=ctx.touch()), expected_version=sub.version)
    notifications.notify(uow, ctx, "subscription.updated", updated, uow.customers.find(updated.customer_id))
    return SubscriptionModifyResult(updated)


def preview_modify(
    uow: UnitOfWork,
    ctx: Context,
    *,
    subscription_id: str,
    data: ExecuteSubscriptionModifyRequest,
    renewal_notice: timedelta | None = None,
) -> SubscriptionModifyResult:
    """What :func:`modify_subscription` would answer for ``data``, with nothing written: the
    modification is carried out in ``uow`` by the same code, then rolled back, and nothing it
    recorded is delivered (no payment provider is called by a modification). The answer shows the
    subscription as it would be and ``changed_resources`` with ``status: preview`` (invoices
    unnumbered). Raises what :func:`modify_subscription` raises (the same checks, the same
    permission: a preview runs the change). A ``checkout`` is left aside: the preview shows the
    change as it will be once paid."""
    result = modify_subscription(
        uow,
        ctx,
        subscription_id=subscription_id,
        data=data.model_copy(update={"checkout": None}),
        renewal_notice=renewal_notice,
    )
    uow.rollback()
    ctx.recorded.clear()
    changed = result.changed.as_preview() if result.changed is not None else None
    return SubscriptionModifyResult(result.subscription, changed)
