"""The checkout area of ``Scoped``: sessions that apply an action only once a payment provider
confirms the money (:mod:`billingkit.services.checkout_sessions`)."""

from __future__ import annotations

from billingkit.facade.operations import Area, IdOp, RequestOp, run_retrying
from billingkit.services import checkout_completion, checkout_sessions

__all__ = ["CONFLICT_RETRIES", "Checkout"]

#: How many times a completion reruns after a ``VersionConflict`` (a concurrent delivery of the
#: same confirmation saved the session first): the rerun finds it ended and applies nothing.
CONFLICT_RETRIES = 2


class Checkout(Area):
    """Checkout sessions. ``create(customer_external_id="c-1", action="create_subscription",
    configuration={"create_subscription_params": {...}})`` opens a ``pending`` session whose
    ``payment_action["url"]`` is where the customer pays; ``get``; ``delete`` (an open session
    fails first, its drafts archived). The provider's confirmation completes it:
    ``razorpay_webhook(body, signature=..., event_id=...)`` for Razorpay's webhook,
    ``pay_sandbox(id)`` / ``decline_sandbox(id)`` for the sandbox page's buttons."""

    create = RequestOp(checkout_sessions.create_checkout_session, checkout_sessions.CheckoutSessionCreate)
    get = IdOp(checkout_sessions.get_checkout_session, read_only=True)
    #: The newest session that made or pays for a subscription (by its id).
    for_subscription = IdOp(checkout_sessions.get_subscription_session, read_only=True)
    delete = IdOp(checkout_sessions.delete_checkout_session, conflict_retries=CONFLICT_RETRIES)
    pay_sandbox = IdOp(checkout_completion.pay_sandbox_session, conflict_retries=CONFLICT_RETRIES)
    decline_sandbox = IdOp(checkout_completion.decline_sandbox_session, conflict_retries=CONFLICT_RETRIES)

    def razorpay_webhook(self, body: bytes, *, signature: str | None, event_id: str | None = None) -> str:
        """Handle one delivery of Razorpay's webhook to this environment: the raw ``body``, its
        ``X-Razorpay-Signature`` and ``X-Razorpay-Event-Id``. Answers ``applied`` or
        ``ignored: <why>`` (see
        :func:`~billingkit.services.checkout_completion.receive_razorpay_webhook`)."""
        return run_retrying(
            self._s,
            checkout_completion.receive_razorpay_webhook,
            CONFLICT_RETRIES,
            body=body,
            signature=signature,
            event_id=event_id,
        )
