"""How a checkout session ends: completed once the provider confirms the money, failed when the
payment is declined or the provider's link ends unpaid, expired when ``expires_at`` passes.

Completion comes only from the provider: Razorpay's webhook (:func:`receive_razorpay_webhook`:
``payment_link.paid``, or ``payment.captured`` for a mandate's first payment), or the sandbox page's
Pay button (:func:`pay_sandbox_session`), which goes through the very same step
(:func:`complete_session`): the action's apply step (:data:`ACTIONS`), then the claim of
``completed`` saved at the version the session was read at, in one unit of work. Two deliveries
of one event cannot both apply it: the second either waits for the first and finds the session
completed (a terminal session ignores repeats), or its save meets the first's newer version
(``VersionConflict``) and the whole unit of work rolls back; the operation then runs again and
finds it completed.

Failure and expiry (:func:`fail_session`) run the action's cleanup (the draft records archived)
and record ``checkout.session.failed`` or ``checkout.session.expired``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from billingkit.domain.access import Action
from billingkit.domain.checkout_sessions import CheckoutAction, CheckoutSession, CheckoutStatus
from billingkit.domain.razorpay_events import PAID_EVENTS, UNPAID_EVENTS
from billingkit.domain.resources import Record
from billingkit.errors import ConfigurationError, InvalidOperation
from billingkit.ports import UnitOfWork, WebhookVerifier
from billingkit.services import notifications
from billingkit.services.billing_runs import BatchResult
from billingkit.services.checkout_addons import apply_addon, cleanup_addon
from billingkit.services.checkout_providers import RAZORPAY, SANDBOX, SESSION_NOTE
from billingkit.services.checkout_quantities import apply_quantity_change, cleanup_quantity_change
from billingkit.services.checkout_subscriptions import apply_created_subscription, cleanup_subscription
from billingkit.services.checkout_topups import apply_topup, cleanup_topup
from billingkit.services.context import Context, DueRun
from billingkit.services.records import get_live

__all__ = [
    "ACTIONS",
    "complete_session",
    "decline_sandbox_session",
    "expire_due_sessions",
    "fail_session",
    "pay_sandbox_session",
    "receive_razorpay_webhook",
]

ENTITY = "checkout_session"
LABEL = "checkout session"

#: Applies a session's action once paid (the provider's payment id): the session's ``result``.
Apply = Callable[[UnitOfWork, Context, CheckoutSession, str | None], dict[str, Any]]
#: Undoes what a session prepared when it ends unpaid (the reason).
Cleanup = Callable[[UnitOfWork, Context, CheckoutSession, str], None]

#: What a mandate's captured payment tells (kept on the session) -> the payment entity's field.
MANDATE_FIELDS = {"token_id": "token_id", "razorpay_customer_id": "customer_id"}

#: Each action's apply step and cleanup.
ACTIONS: dict[CheckoutAction, tuple[Apply, Cleanup]] = {
    CheckoutAction.CREATE_SUBSCRIPTION: (apply_created_subscription, cleanup_subscription),
    CheckoutAction.WALLET_TOPUP: (apply_topup, cleanup_topup),
    CheckoutAction.MODIFY_SUBSCRIPTION: (apply_quantity_change, cleanup_quantity_change),
    CheckoutAction.ADD_ADDON: (apply_addon, cleanup_addon),
}


def _with_event(
    session: CheckoutSession,
    event_id: str | None,
    payment_id: str | None,
    found: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    result = dict(session.provider_result)
    metadata = {**(result.get("provider_metadata") or {}), **(found or {})}
    if event_id:
        metadata["event_id"] = event_id
    result["provider_metadata"] = metadata
    if payment_id:
        result["provider_payment_intent_id"] = payment_id
    return result


def complete_session(
    uow: UnitOfWork,
    ctx: Context,
    session: CheckoutSession,
    *,
    provider_payment_id: str | None,
    event_id: str | None = None,
    found: Mapping[str, str] | None = None,
) -> CheckoutSession:
    """Apply ``session``'s action and claim ``completed`` (see the module doc); a session that has
    already ended is answered as it stands (nothing applied again). ``found`` is what the
    provider's confirmation told (a mandate's token), kept in ``provider_result.provider_metadata``."""
    if not session.is_open:
        return session
    apply, _cleanup = ACTIONS[session.action]
    result = apply(uow, ctx, session, provider_payment_id)
    completed = session.closed(
        CheckoutStatus.COMPLETED,
        ctx.now,
        result=result,
        checkout_invoice_id=session.invoice_id,
        checkout_payment_id=session.payment_id,
        provider_result=_with_event(session, event_id, provider_payment_id, found),
        **ctx.touch(),
    )
    saved = uow.checkout_sessions.update(completed, expected_version=session.version)
    notifications.notify(uow, ctx, "checkout.session.completed", saved)
    return saved


def fail_session(
    uow: UnitOfWork,
    ctx: Context,
    session: CheckoutSession,
    reason: str,
    *,
    expired: bool = False,
    event_id: str | None = None,
) -> CheckoutSession:
    """End open ``session`` unpaid: its action's cleanup, then ``failed`` with ``reason`` (or
    ``expired``), and the notification. A session that has already ended is answered as it
    stands."""
    if not session.is_open:
        return session
    _apply, cleanup = ACTIONS[session.action]
    cleanup(uow, ctx, session, reason)
    status = CheckoutStatus.EXPIRED if expired else CheckoutStatus.FAILED
    closed = session.closed(
        status,
        ctx.now,
        failure_reason=None if expired else reason,
        provider_result=_with_event(session, event_id, None),
        **ctx.touch(),
    )
    saved = uow.checkout_sessions.update(closed, expected_version=session.version)
    event = "checkout.session.expired" if expired else "checkout.session.failed"
    notifications.notify(uow, ctx, event, saved)
    return saved


def _sandbox_session(uow: UnitOfWork, ctx: Context, session_id: str) -> CheckoutSession:
    session = get_live(uow.checkout_sessions, LABEL, session_id)
    if session.payment_provider != SANDBOX:
        raise InvalidOperation(f"checkout session {session.id} is paid through {session.payment_provider}")
    return session


def pay_sandbox_session(uow: UnitOfWork, ctx: Context, *, session_id: str) -> CheckoutSession:
    """The sandbox page's Pay button: the customer paid; the session completes as a provider's
    confirmation would complete it (a session past ``expires_at`` expires instead). Raises
    ``NotFound``; ``InvalidOperation`` for a session of another provider."""
    ctx.require(ENTITY, Action.WRITE)
    session = _sandbox_session(uow, ctx, session_id)
    if session.is_open and ctx.now >= session.expires_at:
        return fail_session(uow, ctx, session, "expired", expired=True)
    return complete_session(uow, ctx, session, provider_payment_id=f"sbx_pay_{session.id}")


def decline_sandbox_session(uow: UnitOfWork, ctx: Context, *, session_id: str) -> CheckoutSession:
    """The sandbox page's Decline button: the payment was declined; the session fails
    ("payment declined") with its cleanup. Raises as :func:`pay_sandbox_session`."""
    ctx.require(ENTITY, Action.WRITE)
    session = _sandbox_session(uow, ctx, session_id)
    return fail_session(uow, ctx, session, "payment declined")


def _entity(payload: dict[str, Any], name: str) -> dict[str, Any]:
    holder = payload.get(name)
    entity = holder.get("entity") if isinstance(holder, dict) else None
    return entity if isinstance(entity, dict) else {}


def _session_of(uow: UnitOfWork, link: dict[str, Any], payment: dict[str, Any]) -> CheckoutSession | None:
    """The session a Razorpay event is about: named in the notes of its link or payment, or by the
    link's id (a payment link's, or the registration link's invoice id a mandate's payment names)."""
    for entity in (link, payment):
        notes = entity.get("notes")
        if isinstance(notes, dict) and isinstance(notes.get(SESSION_NOTE), str):
            found = uow.checkout_sessions.find(notes[SESSION_NOTE])
            if found is not None and found.payment_provider == RAZORPAY:
                return found
    for provider_id in (link.get("id"), payment.get("invoice_id")):
        if isinstance(provider_id, str) and provider_id:
            return uow.checkout_sessions.find_one(provider_session_id=provider_id, payment_provider=RAZORPAY)
    return None


def receive_razorpay_webhook(
    uow: UnitOfWork, ctx: Context, *, body: bytes, signature: str | None, event_id: str | None
) -> str:
    """Handle one delivery of Razorpay's webhook to this environment, and say what came of it:
    ``applied`` (a session completed or failed), or ``ignored: <why>`` (a bad signature, an
    environment without Razorpay, an event about no session of it, a session that has ended, an
    event that changes nothing). Never raises for what Razorpay sent: the route answers 200
    whatever happened, so Razorpay does not retry what cannot succeed."""
    ctx.require(ENTITY, Action.WRITE)
    provider = ctx.providers.for_environment(ctx.env, RAZORPAY)
    if provider is None or not isinstance(provider, WebhookVerifier):
        return "ignored: Razorpay is not configured for this environment"
    try:
        verified = provider.verify_webhook(body, signature or "")
    except ConfigurationError:
        return "ignored: no webhook secret is configured"
    if not verified:
        return "ignored: the signature does not match"
    try:
        event = json.loads(body)
    except ValueError:
        return "ignored: the body is not JSON"
    if not isinstance(event, dict) or not isinstance(event.get("payload"), dict):
        return "ignored: not a Razorpay event"
    name = str(event.get("event"))
    link, payment = _entity(event["payload"], "payment_link"), _entity(event["payload"], "payment")
    session = _session_of(uow, link, payment)
    if session is None:
        return f"ignored: {name} is about no checkout session"
    if not session.is_open:
        return f"ignored: checkout session {session.id} is {session.checkout_status.value}"
    if name in PAID_EVENTS:
        paid_id = payment.get("id") or link.get("id")
        # A mandate's payment names the token later charges use, and the Razorpay customer owning it.
        token = {key: str(payment[name]) for key, name in MANDATE_FIELDS.items() if payment.get(name)}
        found = token if "token_id" in token else None
        complete_session(uow, ctx, session, provider_payment_id=str(paid_id), event_id=event_id, found=found)
        return "applied"
    if name in UNPAID_EVENTS:
        fail_session(uow, ctx, session, f"payment link {UNPAID_EVENTS[name]}", event_id=event_id)
        return "applied"
    return f"ignored: {name} changes no checkout session"


def expire_due_sessions(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of checkout sessions: the claimed open sessions whose ``expires_at``
    has come are ``expired``, with their cleanup. A session no longer due (a retry re-reads it)
    is left alone."""
    result = BatchResult()
    by_scope: dict[tuple[str, str], list[CheckoutSession]] = defaultdict(list)
    for session in cast("Sequence[CheckoutSession]", items):
        by_scope[(session.tenant_id, session.environment_id)].append(session)
    for (tenant_id, environment_id), group in by_scope.items():
        ctx = run.context(tenant_id, environment_id)
        scoped = uow.for_scope(tenant_id, environment_id)
        for claimed in group:
            current = scoped.checkout_sessions.find(claimed.id)
            if current is None or not current.is_open or current.run_at is None or current.run_at > run.now:
                continue
            fail_session(scoped, ctx, current, "expired", expired=True)
        result.report.notification_count += len(ctx.recorded)
        result.recorded += ctx.recorded
    return result
