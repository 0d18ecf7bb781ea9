"""Which operations emit each notification kind, as the webhook guide (docs/webhooks.md) and the
OpenAPI document's ``webhooks`` describe them: the library call, the REST route, or the scheduler.
A test drives each of them (``tests/event_kinds.py``) and checks the routes named exist."""

from __future__ import annotations

__all__ = ["EMITTED_BY"]

#: What emits each kind: the library call(s) and the REST route(s), or the scheduler. Kinds of
#: parts still to come (alerts, checkout sessions) are added with them.
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
    "feature.created": "`features.create` (`POST /features`), `features.clone`",
    "feature.updated": "`features.update` (`PUT /features/{id}`), a feature joining or leaving a group",
    "feature.deleted": "`features.delete` (`DELETE /features/{id}`)",
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
}
