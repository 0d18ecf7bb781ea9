"""The ``add_addon`` checkout action: an add-on attached only once paid (reference notes §8; the
request is opened by :func:`billingkit.services.checkout_flows.add_addon_checked`).

Before: the add-on is checked as ``POST /subscriptions/addon`` checks it and its association is
stored ``pending`` (no lines on the subscription, no credit grants, no allowances: a pending
association counts for nothing). The charge attaching it makes now (a ``onetime`` add-on's fixed
fees in full, a ``recurring`` one's rest of the period with ``create_prorations``) is priced as
the attachment would settle it, without drawing prepaid credits, and stored as a ``DRAFT``
invoice under the attachment's settlement key (``addon_charge|<association>``), with a payment of
it ``INITIATED``. An add-on that charges nothing now (it bills from the next period, or the
subscription is not billing yet) is refused: "checkout requires a non-zero invoice".

Apply (paid): :func:`~billingkit.services.subscription_addons.add_addon` activates the pending
association with the request stored on the session (lines, grants, ``subscription.updated``),
and its settlement issues the stored invoice, which the payment then pays. Cleanup (failed or
expired): the payment ``FAILED``, the invoice and the pending association archived.
"""

from __future__ import annotations

from typing import Any

from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.invoices import Invoice
from billingkit.domain.resources import Status
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services.change_settlements import change_invoice, quote_change
from billingkit.services.checkout_subscriptions import (
    NON_ZERO,
    cleanup_locked,
    lock_invoice,
    pay_checkout_invoice,
)
from billingkit.services.context import Context
from billingkit.services.line_settlements import addon_charge_key
from billingkit.services.records import archive
from billingkit.services.subscription_addons import AddAddonRequest, PendingAddon, add_addon, hold_addon

__all__ = ["addon_configuration", "apply_addon", "cleanup_addon", "prepare_addon"]

PARAMS = "add_addon_params"
#: What the reference's ``AddAddonRef`` does not name but the attachment needs again once paid.
_CARRIED = ("override_line_items", "line_item_commitments", "metadata")


def prepare_addon(uow: UnitOfWork, ctx: Context, data: AddAddonRequest) -> tuple[PendingAddon, Invoice]:
    """Hold add-on ``data`` ``pending`` and store the invoice of its charge as a ``DRAFT`` (see
    the module doc). Raises as ``add_addon``; ``InvalidOperation`` when it charges nothing now."""
    held = hold_addon(uow, ctx, data=data)
    if not held.charged:
        raise InvalidOperation(
            f"{NON_ZERO}: the add-on is billed from the subscription's next invoice, nothing is due now"
        )
    quote = quote_change(
        uow,
        ctx,
        held.subscription,
        ended=(),
        started=held.lines,
        effective=held.effective,
        in_full=held.in_full,
        use_credits=False,
    )
    invoice = change_invoice(ctx, quote, key=addon_charge_key(held.association.id))
    return held, lock_invoice(uow, ctx, invoice, "the add-on charges nothing now")


def addon_configuration(data: AddAddonRequest, held: PendingAddon) -> dict[str, Any]:
    """The ``configuration`` of an ``add_addon`` session: the reference's ``add_addon_params``
    {subscription_id, addons [{addon_id, association_id, cadence, proration_behavior,
    start_date}]}, with the request's overrides, commitments and metadata when it has them."""
    asked = data.model_dump(mode="json", exclude_none=True, include={*_CARRIED, "proration_behavior"})
    ref = {
        "addon_id": data.addon_id,
        "association_id": held.association.id,
        "cadence": data.cadence.value,
        "start_date": held.association.start_date.isoformat().replace("+00:00", "Z"),
        **{k: v for k, v in asked.items() if v not in ({}, [])},
    }
    return {PARAMS: {"subscription_id": data.subscription_id, "addons": [ref]}}


def _stored(session: CheckoutSession) -> tuple[AddAddonRequest, str]:
    params = session.configuration[PARAMS]
    (ref,) = params["addons"]
    fields = {k: v for k, v in ref.items() if k != "association_id"}
    return AddAddonRequest.model_validate({**fields, "subscription_id": params["subscription_id"]}), ref[
        "association_id"
    ]


def apply_addon(
    uow: UnitOfWork, ctx: Context, session: CheckoutSession, provider_payment_id: str | None
) -> dict[str, Any]:
    """Activate the session's pending add-on (issuing its locked invoice) and pay that invoice;
    the session's ``result`` is empty (the reference's result names a created subscription
    only)."""
    request, association_id = _stored(session)
    add_addon(uow, ctx, data=request, pending=association_id)
    pay_checkout_invoice(uow, ctx, session, provider_payment_id)
    return {}


def cleanup_addon(uow: UnitOfWork, ctx: Context, session: CheckoutSession, reason: str) -> None:
    """The payment failed and archived, the invoice archived, the pending association archived."""
    cleanup_locked(uow, ctx, session, reason)
    _request, association_id = _stored(session)
    association = uow.addon_associations.find(association_id)
    if association is not None and association.status is Status.PUBLISHED:
        archive(uow.addon_associations, association, ctx)
