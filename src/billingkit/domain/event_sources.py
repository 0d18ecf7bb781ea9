"""Which operations emit each notification kind, as the webhook guide (docs/webhooks.md) and the
OpenAPI document's ``webhooks`` describe them: the library call, the REST route, or the scheduler.
A test drives each of them (``tests/event_kinds.py``) and checks the routes named exist."""

from __future__ import annotations

__all__ = ["EMITTED_BY"]

#: Who evaluates alerts (docs/alerts.md): the worker, or ingestion asked to.
_EVALUATED = (
    "evaluated by the scheduler (`billing.run_due`, the worker) or by ingestion asked to "
    "(`events.ingest_bulk(..., evaluate_alerts_immediately=True)`, `POST /events/bulk`)"
)


def _alert(watched: str, change: str) -> str:
    """Who emits an alert kind: the alert configured on ``watched``, on its ``change`` of state."""
    return f"the alert of {watched}, {_EVALUATED}, on {change}"


_SETTING = "`POST /alerts/setting`"
_WALLET = "`alert_settings` (`POST /wallets`, `PUT /wallets/{id}`)"

#: Where a checkout session's payment is confirmed or refused: the sandbox page's buttons, or
#: Razorpay's webhook (docs/checkout.md).
_SANDBOX_PAGE = "the sandbox page `/v1/checkout/sandbox/{id}`"
_RAZORPAY = (
    "Razorpay's webhook (`checkout.razorpay_webhook`, `POST /webhooks/razorpay/{tenant_id}/{environment_id}`)"
)

#: What emits each kind: the library call(s) and the REST route(s), or the scheduler.
EMITTED_BY: dict[str, str] = {
    "subscription.created": (
        "`subscriptions.create` (`POST /subscriptions`), a child created by "
        '`subscriptions.modify(type="inheritance")`, the new subscription of `subscriptions.replace_plan`'
        " (v1 plan change)"
    ),
    "subscription.draft.created": (
        '`subscriptions.create(subscription_status="draft")` (`POST /subscriptions`)'
    ),
    "subscription.activated": (
        "`subscriptions.activate` (`POST /subscriptions/{id}/activate`); an incomplete subscription whose"
        " opening invoice is paid"
    ),
    "subscription.updated": (
        "every change of a subscription: line items, quantities, phases, pauses, plan changes, "
        "cancellation (scheduled or immediate), trial end changes, add-ons, coupons, inheritance; the "
        "billing run when a period advances into a status change"
    ),
    "subscription.paused": (
        "`subscriptions.pause` taking effect now (`POST /subscriptions/{id}/pause`), or the scheduler "
        "when a scheduled or period-end pause starts"
    ),
    "subscription.cancelled": (
        "`subscriptions.cancel` when it takes effect (`POST /subscriptions/{id}/cancel`), the scheduler "
        "at a scheduled end, the auto-cancellation of unpaid subscriptions, the old subscription of a v1 "
        "plan change"
    ),
    "subscription.resumed": (
        "`subscriptions.resume` (`POST /subscriptions/{id}/resume`), or the scheduler when a pause ends"
    ),
    "subscription.plan_changed": (
        "`subscriptions.change_plan` (`POST /subscriptions/{id}/change/v2/execute`), "
        "`subscriptions.replace_plan` (`POST /subscriptions/{id}/change/execute`)"
    ),
    "subscription.phase.created": (
        "`subscriptions.add_phase` (`POST /subscriptions/{id}/phases`), phases given at creation"
    ),
    "subscription.phase.updated": "`subscriptions.update_phase` (`PUT /subscriptions/phases/{id}`)",
    "subscription.phase.deleted": "`subscriptions.delete_phase` (`DELETE /subscriptions/phases/{id}`)",
    "subscription.renewal.due": (
        "the scheduler (`billing.run_due`, the worker), once per period, `Settings.renewal_notice` (3 "
        "days) before the period ends"
    ),
    **{
        f"subscription.{kind}.threshold_{change}": _alert(
            f"a `{setting}` alert setting ({_SETTING}: {value})",
            "a change to a state other than `ok`" if change == "reached" else "a change back to `ok`",
        )
        for kind, setting, value in (
            ("spend", "subscription", "the current period's usage spend"),
            ("line_item_spend", "subscription_line_item", "the line item's spend"),
            ("group_spend", "group", "the spend of the group's lines"),
        )
        for change in ("reached", "recovered")
    },
    "feature.created": "`features.create` (`POST /features`), `features.clone`",
    "feature.updated": "`features.update` (`PUT /features/{id}`), a feature joining or leaving a group",
    "feature.deleted": "`features.delete` (`DELETE /features/{id}`)",
    "feature.wallet_balance.alert": _alert(
        "a feature's `alert_settings` (`PUT /features/{id}`: the real-time balance of each alerting "
        "wallet of a customer whose active subscription meters it)",
        "every change of state, either way",
    ),
    "entitlement.grant.exhausted": _alert(
        f"an `entitlement_grant` alert setting ({_SETTING}: the customer's usage of the entitled "
        "feature in the current window)",
        "reaching the limit (once per usage window)",
    ),
    "entitlement.created": (
        "`entitlements.create` (`POST /entitlements`), `entitlements.create_bulk` (`POST "
        "/entitlements/bulk`), overrides of a subscription's entitlements"
    ),
    "entitlement.updated": "`entitlements.update` (`PUT /entitlements/{id}`)",
    "entitlement.deleted": (
        "`entitlements.delete` (`DELETE /entitlements/{id}`), an owner (plan, add-on) deleted with its "
        "entitlements"
    ),
    "wallet.created": "`wallets.create` (`POST /wallets`), a PRE_PAID wallet made for a refund",
    "wallet.updated": "`wallets.update` (`PUT /wallets/{id}`)",
    "wallet.terminated": "`wallets.terminate` (`POST /wallets/{id}/terminate`)",
    "wallet.transaction.created": (
        "every row written to a wallet: `wallets.top_up` (`POST /wallets/{id}/top-up`), initial credits, "
        "invoice payments from credits, refunds, expiries, termination"
    ),
    "wallet.transaction.updated": (
        "a pending purchase settled: its invoice paid (completed) or voided (failed)"
    ),
    "wallet.credit_balance.dropped": _alert(
        f"a wallet's {_WALLET} on its credit balance", "a change to a state other than `ok`"
    ),
    "wallet.credit_balance.recovered": _alert(
        f"a wallet's {_WALLET} on its credit balance", "a change back to `ok`"
    ),
    "wallet.ongoing_balance.dropped": _alert(
        f"a wallet's {_WALLET} on its real-time balance", "a change from `ok` to another state"
    ),
    "wallet.ongoing_balance.recovered": _alert(
        f"a wallet's {_WALLET} on its real-time balance", "a change back to `ok`"
    ),
    "wallet.ongoing_balance.updated": _alert(
        f"a wallet's {_WALLET} on its real-time balance",
        "a change between two states other than `ok` (`warning` to `in_alarm`, or back)",
    ),
    "payment.created": "`payments.create` (`POST /payments`), `invoices.attempt_payment`",
    "payment.updated": "`payments.update` (`PUT /payments/{id}`)",
    "payment.failed": "a payment collected and refused (`payments.create`, `payments.process`)",
    "payment.success": (
        "a payment collected (`payments.create`, `payments.process`), an OFFLINE payment marked SUCCEEDED"
    ),
    "payment.pending": "a payment left pending at the provider (payment links)",
    "customer.created": "`customers.create` (`POST /customers`)",
    "customer.updated": "`customers.update` (`PUT /customers/{id}`)",
    "customer.deleted": "`customers.delete` (`DELETE /customers/{id}`)",
    "invoice.update.finalized": (
        "`invoices.finalize` (`POST /invoices/{id}/finalize`), a finalized direct invoice (`POST "
        "/invoices`), the opening invoice of a subscription, the billing run and the scheduler's "
        "finalization of renewal drafts"
    ),
    "invoice.update.payment": (
        "`invoices.update_payment` (`PUT /invoices/{id}/payment`), a payment applied to the invoice, a "
        "credit note that changed its payment status"
    ),
    "invoice.update.voided": "`invoices.void` (`POST /invoices/{id}/void`)",
    "invoice.update": (
        "`invoices.update` (`PUT /invoices/{id}`), a draft direct invoice created, a credit note that "
        "changed the invoice's figures, a skipped (zero) invoice"
    ),
    "invoice.payment.overdue": (
        "the scheduler (`billing.run_due`, the worker), once per invoice: FINALIZED, something remaining,"
        " due date passed"
    ),
    "invoice.communication.triggered": (
        "`invoices.trigger_communication` (`POST /invoices/{id}/comms/trigger`), FINALIZED invoices only"
    ),
    "credit_note.created": "`credit_notes.create` (`POST /creditnotes`)",
    "credit_note.updated": (
        "`credit_notes.finalize` (`POST /creditnotes/{id}/finalize`), `credit_notes.void` (`POST "
        "/creditnotes/{id}/void`)"
    ),
    "event.rejected": (
        "`events.ingest` / `events.ingest_bulk` (`POST /events`, `POST /events/bulk`) of an event no "
        "meter takes"
    ),
    "checkout.session.initiated": (
        "a checkout session opened: `checkout.create` (`POST /checkout/sessions`), "
        "`subscriptions.create(..., checkout={...})` (`POST /subscriptions`), "
        "`wallets.top_up(..., checkout={...})` (`POST /wallets/{id}/top-up`)"
    ),
    "checkout.session.completed": (
        f"the payment confirmed: `checkout.pay_sandbox` (the Pay button of {_SANDBOX_PAGE}), {_RAZORPAY} "
        "with `payment_link.paid` or `payment.captured`"
    ),
    "checkout.session.failed": (
        f"an open session ended unpaid: `checkout.decline_sandbox` (the Decline button of {_SANDBOX_PAGE}), "
        "`checkout.delete` (`DELETE /checkout/sessions/{id}`), "
        f"{_RAZORPAY} with `payment_link.cancelled` or `payment_link.expired`"
    ),
    "checkout.session.expired": (
        "the scheduler (`billing.run_due`, the worker) once `expires_at` has passed on an open session, "
        "or `checkout.pay_sandbox` called after it"
    ),
}
