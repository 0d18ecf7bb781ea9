"""The areas of ``Scoped`` outside the catalogue: access (API keys, users, environments), customers,
notifications, subscriptions and invoices.

Operations are declared (see :mod:`billingkit.facade.operations`) and take their request model or
its fields as keyword arguments; the models live in ``billingkit.services.<area>``. Methods written
out here do more than forward the call.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from billingkit.display import InvoiceView
from billingkit.documents import render_invoice_pdf
from billingkit.domain.access import Account, AccountType, ApiKey, Environment, Tenant
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import Filter, ListQuery, Op, Page, Sort
from billingkit.domain.validation import InputModel, parse_input
from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp
from billingkit.services import (
    access,
    access_management,
    checkout_flows,
    credit_grant_applications,
    credit_notes,
    customer_usage,
    customers,
    direct_invoices,
    environment_clone,
    invoice_communications,
    invoice_documents,
    invoice_lifecycle,
    invoice_recalculation,
    invoice_recompute,
    invoice_summary,
    invoice_updates,
    invoices,
    line_item_requests,
    line_item_search,
    notifications,
    payment_attempts,
    payments,
    plan_change_in_place,
    plan_change_replace,
    subscription_addon_removal,
    subscription_addons,
    subscription_cancel,
    subscription_entitlements,
    subscription_line_items,
    subscription_modify,
    subscription_pauses,
    subscription_phases,
    subscription_schedules,
    subscription_updates,
    subscription_usage,
    subscriptions,
    wallet_balances,
    wallet_topups,
    wallet_transactions,
    wallets,
)

if TYPE_CHECKING:
    from billingkit.facade.scoped import Scoped

__all__ = [
    "ApiKeys",
    "CreditNotes",
    "Customers",
    "Environments",
    "Invoices",
    "Notifications",
    "Payments",
    "Roles",
    "Subscriptions",
    "Tenants",
    "Users",
    "Wallets",
]


class ApiKeys(Area):
    """API keys of this environment. The plain key is in ``.api_key`` of what ``create`` returns,
    and nowhere else, ever."""

    create = RequestOp(access.issue_api_key, access.ApiKeyCreate)

    def delete(self, key_id: str, /) -> ApiKey:
        """Revoke a key: refused from now on by this ``Billing`` (other processes sharing the
        store refuse it within ``settings.api_key_cache_ttl``)."""
        revoked = self._s.run(access.delete_api_key, key_id=key_id)
        self._s.billing.api_key_cache.forget(revoked.key_hash)
        return revoked

    def list(self, query: ListQuery | None = None) -> Page[ApiKey]:
        return self._s.read(access.list_api_keys, query=query or ListQuery())


class Users(Area):
    """Users (``type="user"``) and service accounts (``type="service_account"``). ``create`` returns
    the account and, for a user given no password, the generated one (shown once)."""

    create = RequestOp(access.create_account, access.AccountCreate)
    get = IdOp(access.get_account, read_only=True)
    #: The tenant's accounts by ``user_ids``, ``type``, ``roles`` (any of), paged.
    search = RequestOp(access_management.search_users, access_management.UserSearch, read_only=True)
    #: Rename a service account (``name``, ``metadata``); needs roles covering the account's.
    update = IdRequestOp(access_management.update_service_account, access_management.ServiceAccountUpdate)
    #: Replace a user account's roles: a human super admin only, never its own, no usable keys.
    update_roles = IdRequestOp(access_management.update_user_roles, access_management.RolesUpdate)
    #: The caller's own ``name`` and ``metadata``.
    update_me = RequestOp(access_management.update_me, access_management.UserUpdate)

    def me(self) -> Account:
        """The caller's own account."""
        return self.get(self._s.actor.id)

    def delete(self, account_id: str, /) -> access_management.AccountDeletion:
        """Delete (archive) a service account and revoke its API keys in every environment;
        they are refused from now on by this ``Billing`` (other processes sharing the store
        refuse them within ``settings.api_key_cache_ttl``)."""
        return self._forget_keys(self._s.run(access_management.delete_service_account, account_id=account_id))

    def remove(self, account_id: str, /) -> access_management.AccountDeletion:
        """Remove a human user from the tenant (a human super admin only, not oneself): the
        account is archived, its sessions and API keys stop working."""
        return self._forget_keys(self._s.run(access_management.remove_user, account_id=account_id))

    def _forget_keys(self, deleted: access_management.AccountDeletion) -> access_management.AccountDeletion:
        for key in deleted.revoked_keys:
            self._s.billing.api_key_cache.forget(key.key_hash)
        return deleted


class Roles(Area):
    """The role catalogue: what each role is called and grants."""

    def list(self, user_type: AccountType | str | None = None) -> list[access_management.RoleDescription]:
        """Every role (``user_type``, ``user`` or ``service_account``, narrows nothing: both
        may hold every role)."""
        kind = None if user_type is None else parse_input(_UserTypeQuery, {"user_type": user_type}).user_type
        return self._s.read(access_management.list_roles, user_type=kind)

    def get(self, role_id: str, /) -> access_management.RoleDescription:
        """One role (``NotFound`` for an unknown id)."""
        return self._s.read(access_management.get_role, role_id=role_id)


class Tenants(Area):
    """The caller's own tenant (another tenant's id is ``NotFound``)."""

    get = IdOp(access_management.get_tenant, read_only=True)
    #: ``name``, ``billing_details``, ``metadata``: each given one replaces the stored one.
    update = RequestOp(access_management.update_tenant, access_management.TenantUpdate)

    def mine(self) -> Tenant:
        """The caller's tenant."""
        return self.get(self._s.tenant_id)


class _UserTypeQuery(InputModel):
    user_type: AccountType


class Environments(Area):
    create = RequestOp(access.create_environment, access.EnvironmentCreate)
    #: Copy an environment's catalogue (meters, price units, groups, features, plans, add-ons,
    #: their prices, entitlements and credit grants, coupons, tax rates, tenant tax associations;
    #: no customers and no money) with new ids and every reference remapped, in one unit of work:
    #: ``clone(source_id, name="staging", type="development")`` into a new environment, or
    #: ``clone(source_id, target_environment_id=...)`` into an existing empty one. Answers a
    #: ``ClonedEnvironment`` (the target, counts per kind, the id map).
    clone = IdRequestOp(environment_clone.clone_environment, environment_clone.EnvironmentClone)

    def list(self) -> Page[Environment]:
        return self._s.read(access.list_environments)


class Customers(Area):
    """Customers. ``update`` changes the given fields only (``None`` clears an optional one);
    ``delete`` archives."""

    create = RequestOp(customers.create_customer, customers.CustomerCreate)
    get = IdOp(customers.get_customer, read_only=True)
    get_by_external_id = IdOp(customers.get_customer_by_external_id, read_only=True)
    update = IdRequestOp(customers.update_customer, customers.CustomerUpdate)
    delete = IdOp(customers.delete_customer)
    search = RequestOp(customers.search_customers, customers.CustomerSearch, read_only=True)
    #: The customer's pending credit grant applications (credits still to come), soonest first.
    upcoming_grants = IdOp(credit_grant_applications.customer_upcoming_grants, read_only=True)
    #: Each granted feature's usage in its current window against the aggregated limit:
    #: ``usage_summary(customer_id=... | customer_lookup_key=..., feature_ids=[...],
    #: feature_lookup_keys=[...], subscription_ids=[...])`` -> ``CustomerUsageSummary``.
    usage_summary = RequestOp(
        customer_usage.get_customer_usage_summary, customer_usage.CustomerUsageRequest, read_only=True
    )
    #: The customer's FINALIZED invoices counted and summed per currency (outstanding, overdue,
    #: unpaid usage and fixed charges): ``invoice_summary(customer_id)`` -> ``CustomerInvoiceSummary``.
    invoice_summary = IdOp(invoice_summary.get_customer_invoice_summary, read_only=True)

    def get_many(self, customer_ids: Collection[str]) -> dict[str, Customer]:
        """The customers with these ids by id, archived ones too (unknown ids are left out), in
        one read: what ``page.to_pandas(customers=scoped)`` joins external ids from."""
        return self._s.read(customers.get_customers, customer_ids=list(customer_ids))

    def list(
        self, query: ListQuery | customers.CustomerSearch | None = None, /, **fields: Any
    ) -> Page[Customer]:
        """A page of customers: ``list(ListQuery(...))`` (the store's own filters), or what
        :attr:`search` takes (a ``CustomerSearch`` or its fields)."""
        if query is None:
            return self.search(**fields)
        if fields:
            raise TypeError(f"pass a {type(query).__name__} or search fields as keyword arguments, not both")
        if isinstance(query, ListQuery):
            return self._s.read(customers.list_customers, query=query)
        return self.search(query)


class Notifications(Area):
    def list(
        self, *, event_type: str | None = None, entity_id: str | None = None, limit: int = 50, offset: int = 0
    ) -> Page[NotificationEvent]:
        """Recorded events, oldest first, optionally of one type or one resource."""
        filters = []
        if event_type:
            filters.append(Filter("event_type", Op.EQ, event_type))
        if entity_id:
            filters.append(Filter("entity_id", Op.EQ, entity_id))
        query = ListQuery(
            filters=tuple(filters), sort=(Sort("created_at", descending=False),), limit=limit, offset=offset
        )
        return self._s.read(notifications.list_notifications, query=query)


def _preview(
    area: Area,
    subscription_id: str,
    period_start: datetime | str | None,
    period_end: datetime | str | None,
    hide_zero_charges_line_items: bool,
) -> Invoice:
    data = parse_input(
        invoices.InvoicePreview,
        {
            "subscription_id": subscription_id,
            "period_start": period_start,
            "period_end": period_end,
            "hide_zero_charges_line_items": hide_zero_charges_line_items,
        },
    )
    return area._s.read(invoices.preview_invoice, request=data)


def _renewal_notice(scoped: Scoped) -> dict[str, Any]:
    return {"renewal_notice": scoped.billing.renewal_notice}


class Subscriptions(Area):
    """Subscriptions. An active subscription gets its opening invoice (the first period's ADVANCE
    charges) when it is created or a draft is activated (``activate(id, start_date=...)``; only a
    draft can be activated). ``create(..., checkout={...})`` creates a draft activated only once
    its checkout session is paid (``scoped.checkout.for_subscription(id)``)."""

    create = RequestOp(
        checkout_flows.create_subscription_checked,
        subscriptions.SubscriptionCreate,
        scope_arguments=_renewal_notice,
    )
    activate = IdRequestOp(
        subscriptions.activate_subscription,
        subscriptions.SubscriptionActivate,
        scope_arguments=_renewal_notice,
    )
    get = IdOp(subscriptions.get_subscription, read_only=True)
    list = RequestOp(subscriptions.search_subscriptions, subscriptions.SubscriptionSearch, read_only=True)
    search = list
    for_customer = IdOp(subscriptions.customer_subscriptions, read_only=True)
    #: The subscription's pending credit grant applications (credits still to come), soonest first.
    upcoming_grants = IdOp(credit_grant_applications.subscription_upcoming_grants, read_only=True)
    #: Change a subscription in place: ``modify(id, type="coupon", coupon_params={"action": "add",
    #: "coupon_code": "..."})``; ``type="inheritance"`` (``inheritance_params``) and
    #: ``type="grouped_invoicing"`` (``grouped_invoicing_params``) add or remove children;
    #: ``type="quantity_change"`` (``quantity_change_params={"line_items": [{"id": ..., "quantity":
    #: "8"}]}``) replaces lines at new quantities, prorated; ``type="trial_end"``
    #: (``trial_end_params={"action": "immediate" | "scheduled_date", "new_trial_end": ...}``).
    #: A quantity change with ``checkout={...}`` changes nothing until its ``modify_subscription``
    #: checkout session is paid (the answer's ``checkout_session``).
    #: ``tax`` and ``addon`` are refused by this version.
    modify = IdRequestOp(
        checkout_flows.modify_subscription_checked,
        subscription_modify.ExecuteSubscriptionModifyRequest,
        scope_arguments=_renewal_notice,
    )
    #: What ``modify`` would answer for the same request, with nothing written (the invoices and
    #: wallet credits it would make shown with ``status: preview``). A write unit of work, not a
    #: read: it carries the change out and rolls it back, so it takes the write lock.
    preview_modify = IdRequestOp(
        subscription_modify.preview_modify,
        subscription_modify.ExecuteSubscriptionModifyRequest,
        scope_arguments=_renewal_notice,
    )
    #: ``cancel(id, cancellation_type="immediate" | "end_of_period" | "scheduled_date", cancel_at=,
    #: proration_behavior=, cancel_immediately_invoice_policy=, reason=)``: a ``CancellationResult``.
    cancel = IdRequestOp(
        subscription_cancel.cancel_subscription, subscription_cancel.CancelSubscriptionRequest
    )
    #: Change plan in place: ``change_plan(id, target_plan_id=..., proration_behavior=
    #: "create_prorations" | "none", change_at="immediate" | "end_of_period", idempotency_key=...,
    #: entity_policies={"addons": {"default_behaviour": "carry" | "drop"}})`` -> ``PlanChangeResult``;
    #: ``preview_plan_change(id, ...)`` answers the same and writes nothing.
    change_plan = IdRequestOp(
        plan_change_in_place.change_plan, plan_change_in_place.PlanChangeRequest, conflict_retries=1
    )
    preview_plan_change = IdRequestOp(
        plan_change_in_place.preview_plan_change, plan_change_in_place.PlanChangeRequest, read_only=True
    )
    #: Plan change v1 (a new subscription replaces this one): ``replace_plan(id, target_plan_id=...,
    #: billing_cadence="RECURRING", billing_cycle="anniversary", billing_period="MONTHLY",
    #: proration_behavior="create_prorations", change_at="immediate" | "end_of_period")`` →
    #: ``PlanChangeResult``; ``preview_replace_plan(id, ...)`` → ``PlanChangePreview``, writes nothing
    #: (but runs as a write: it carries the change out and rolls it back, so it takes the write lock).
    replace_plan = IdRequestOp(plan_change_replace.change_plan, plan_change_replace.PlanChangeRequest)
    preview_replace_plan = IdRequestOp(
        plan_change_replace.preview_plan_change, plan_change_replace.PlanChangeRequest
    )
    #: The usage charges of the current period so far, as its invoice will price them:
    #: ``usage(subscription_id=..., start_time=..., end_time=...)`` -> ``SubscriptionUsage``.
    usage = RequestOp(
        subscription_usage.get_subscription_usage, subscription_usage.SubscriptionUsageRequest, read_only=True
    )
    #: The raw update through the lifecycle: ``update(id, cancel_at=... | cancel_at_period_end=True |
    #: False, version=...)`` schedules or withdraws a cancellation; ``status`` and
    #: ``parent_subscription_id`` only when unchanged (their own operations change them).
    update = IdRequestOp(subscription_updates.update_subscription, subscription_updates.SubscriptionUpdate)
    #: One subscription's schedules (``ScheduleList``), newest first.
    schedules = IdOp(subscription_schedules.list_subscription_schedules, read_only=True)
    #: Schedules of any subscription: ``list_schedules(pending_only=True, subscription_ids=[...])``.
    list_schedules = RequestOp(
        subscription_schedules.search_schedules, subscription_schedules.ScheduleSearch, read_only=True
    )
    get_schedule = IdOp(subscription_schedules.get_schedule, read_only=True)
    #: Withdraw a pending schedule; a cancellation's subscription gets its dates back.
    cancel_schedule = IdRequestOp(
        subscription_schedules.cancel_schedule, subscription_schedules.CancelScheduleRequest
    )
    #: Line items beyond the plan's: ``add_line_item(id, price_id=... | price={...})``,
    #: ``update_line_item(line_id, amount=..., effective_from=...)`` (ends the line and starts a
    #: replacement), ``update_line_item(line_id, end_date=...)``, ``delete_line_item(line_id)``
    #: (each answers a ``LineItemChange``); ``line_items(**filters)`` searches them.
    add_line_item = IdRequestOp(subscription_line_items.add_line_item, line_item_requests.LineItemCreate)
    update_line_item = IdRequestOp(
        subscription_line_items.update_line_item, line_item_requests.LineItemUpdate
    )
    delete_line_item = IdRequestOp(
        subscription_line_items.delete_line_item, line_item_requests.LineItemDelete
    )
    line_items = RequestOp(
        line_item_search.search_line_items, line_item_search.LineItemSearch, read_only=True
    )
    #: Phases: ``add_phase(id, start_date=..., override_line_items=[...])``, ``update_phase(phase_id,
    #: end_date=...)``, ``delete_phase(phase_id)`` (a phase not started), ``phases(id)``, ``get_phase``.
    add_phase = IdRequestOp(subscription_phases.add_phase, subscription_phases.SubscriptionPhaseCreate)
    update_phase = IdRequestOp(subscription_phases.update_phase, subscription_phases.SubscriptionPhaseUpdate)
    delete_phase = IdOp(subscription_phases.delete_phase)
    phases = IdOp(subscription_phases.list_phases, read_only=True)
    get_phase = IdOp(subscription_phases.get_phase, read_only=True)

    #: Pause: ``pause(id, pause_mode="immediate" | "scheduled" | "period_end", pause_start=...,
    #: pause_end=... | pause_days=..., reason=..., metadata=..., dry_run=False)`` → ``PauseResult``
    #: (subscription, pause, billing_impact); ``resume(id)`` resumes now or withdraws a scheduled
    #: pause; ``pauses(id)``: every pause, newest first.
    pause = IdRequestOp(
        subscription_pauses.pause_subscription, subscription_pauses.PauseRequest, conflict_retries=1
    )
    resume = IdRequestOp(
        subscription_pauses.resume_subscription, subscription_pauses.ResumeRequest, conflict_retries=1
    )
    pauses = IdOp(subscription_pauses.list_pauses, read_only=True)

    #: ``search`` with each subscription's aggregated features (``expand=entitlements`` over HTTP).
    search_with_entitlements = RequestOp(
        subscription_entitlements.search_subscriptions_with_entitlements,
        subscriptions.SubscriptionSearch,
        read_only=True,
    )

    def entitlements(
        self, subscription_id: str, *, feature_ids: Sequence[str] | None = None
    ) -> subscription_entitlements.SubscriptionEntitlements:
        """The subscription's features, each aggregated from its sources (plan, add-ons,
        overrides), optionally only ``feature_ids``."""
        return self._s.read(
            subscription_entitlements.get_subscription_entitlements,
            subscription_id=subscription_id,
            feature_ids=feature_ids,
        )

    #: Attach an add-on: ``add_addon(subscription_id=..., addon_id=..., start_date=..., cadence=...)``.
    #: A concurrent change of the subscription (a billing run) makes it decide again on the new state.
    #: With ``checkout={...}`` the association stays ``pending`` until its ``add_addon`` checkout
    #: session is paid (the answer's ``checkout_session``).
    add_addon = RequestOp(
        checkout_flows.add_addon_checked, subscription_addons.AddAddonRequest, conflict_retries=2
    )
    #: End an add-on: ``remove_addon(addon_association_id=..., effective_date=...)``.
    remove_addon = RequestOp(
        subscription_addon_removal.remove_addon,
        subscription_addon_removal.RemoveAddonRequest,
        conflict_retries=2,
    )
    #: The subscription's add-on associations in force now or later, oldest first.
    addon_associations = IdOp(subscription_addons.addon_associations, read_only=True)

    def get_v2(self, subscription_id: str, *, expand: str | None = None) -> subscriptions.SubscriptionV2:
        """The v2 read: ``expand`` names optional parts (``subscription_line_items``, ...)."""
        return self._s.read(subscriptions.get_subscription_v2, subscription_id=subscription_id, expand=expand)

    def preview_invoice(
        self,
        subscription_id: str,
        *,
        period_start: datetime | str | None = None,
        period_end: datetime | str | None = None,
        hide_zero_charges_line_items: bool = False,
    ) -> Invoice:
        """The invoice the subscription's current period (or ``period_start``..``period_end``)
        will produce, computed now and not stored."""
        return _preview(self, subscription_id, period_start, period_end, hide_zero_charges_line_items)


class Invoices(Area):
    """Invoices: issued by subscriptions and billing runs, or created directly (``create``);
    ``finalize`` a draft, ``void`` one, edit it (``update``, ``apply_discount=True`` recomputes a
    draft's coupons and taxes), record a payment by hand (``update_payment``), ask the host to send
    one to its customer (``trigger_communication``)."""

    get = IdOp(invoices.get_invoice, read_only=True)
    list = RequestOp(invoices.search_invoices, invoices.InvoiceSearch, read_only=True)
    search = list
    create = RequestOp(direct_invoices.create_invoice, direct_invoices.InvoiceCreate)
    update = IdRequestOp(invoice_updates.update_invoice, invoice_updates.InvoiceUpdate)
    finalize = IdOp(invoice_lifecycle.finalize_invoice)
    void = IdOp(invoice_lifecycle.void_invoice)
    update_payment = IdRequestOp(invoice_lifecycle.update_payment_status, invoice_lifecycle.PaymentUpdate)
    #: Collect what remains with the customer's methods (the subscription's card, then POST_PAID
    #: wallets); answers the invoice as it stands afterwards.
    attempt_payment = IdOp(payment_attempts.attempt_payment)
    #: Price a stored subscription invoice again from its inputs as stored now (line items,
    #: prices, usage), through the billing run's code, writing nothing: the ``InvoiceDiff``
    #: says line by line what changed (empty when nothing did). One-off, manual, change and
    #: threshold invoices are refused (``InvalidOperation``).
    recompute = IdOp(invoice_recompute.recompute_invoice, read_only=True)
    #: Price a DRAFT subscription invoice again from its inputs as stored now and store the result
    #: in place (version bumped, ``invoice.update``); ``recalculate(id, finalize=True)`` then
    #: finalizes it. Refuses other statuses and hand-edited drafts (``InvalidOperation``).
    recalculate = IdRequestOp(
        invoice_recalculation.recalculate_invoice, invoice_recalculation.InvoiceRecalculation
    )
    #: Record ``invoice.communication.triggered`` for a FINALIZED invoice (the host sends it to the
    #: customer); answers the notification, whose payload embeds the customer and subscription.
    trigger_communication = IdOp(invoice_communications.trigger_communication)

    def preview(
        self,
        subscription_id: str,
        *,
        period_start: datetime | str | None = None,
        period_end: datetime | str | None = None,
        hide_zero_charges_line_items: bool = False,
    ) -> Invoice:
        """Same as ``scoped.subscriptions.preview_invoice``: the next invoice, not stored."""
        return _preview(self, subscription_id, period_start, period_end, hide_zero_charges_line_items)

    def display(self, invoice_id: str, *, locale: str | None = None) -> InvoiceView:
        """The invoice with its customer, for display (``_repr_html_``, ``str()``, ``show()``):
        the customer's name, money and dates in its locale, as on the PDF (``locale`` overrides
        it). Raises ``NotFound`` for an unknown invoice."""
        document = self._s.read(invoice_documents.load_invoice_document, invoice_id=invoice_id)
        return InvoiceView(document.invoice, document.customer, locale)

    def pdf(self, invoice_id: str, *, locale: str | None = None) -> bytes:
        """The invoice's document as PDF bytes (``application/pdf``): seller (the tenant's name),
        customer, number (``DRAFT`` before one is given), dates, lines with their periods and
        quantities, discounts, taxes and totals, money written in the customer's locale (its
        ``metadata["locale"]``, else its ``address_country``, else ``en_US``; ``locale`` overrides it).

        Raises ``NotFound`` for an unknown invoice, ``ValidationError`` for an unknown ``locale``
        and ``ConfigurationError`` naming ``pip install 'billingkit[pdf]'`` without the ``pdf``
        extra. The invoice is read in one unit of work and drawn after it ends.
        """
        document = self._s.read(invoice_documents.load_invoice_document, invoice_id=invoice_id)
        return render_invoice_pdf(
            document.invoice, customer=document.customer, seller=document.seller, locale=locale
        )


class Payments(Area):
    """Payments of invoices: ``create`` records one (``OFFLINE``, ``CREDITS`` from a wallet, or a
    card and other methods through the payment provider) and collects it unless
    ``process_payment=False``; the same request twice is one payment. ``process`` collects an
    INITIATED payment, retries a FAILED one, or asks the provider how a PENDING one ended;
    ``update`` changes metadata (and an OFFLINE payment's status); ``delete`` archives a payment
    that moved no money."""

    create = RequestOp(payments.create_payment, payments.PaymentCreate)
    get = IdOp(payments.get_payment, read_only=True)
    list = RequestOp(payments.list_payments, payments.PaymentSearch, read_only=True)
    update = IdRequestOp(payments.update_payment, payments.PaymentUpdate)
    delete = IdOp(payments.delete_payment)
    process = IdOp(payments.process_payment)


#: How many times a credit note call reruns after a ``VersionConflict`` (a concurrent change of
#: its invoice or wallet) before the conflict is answered: each rerun rechecks the capacity.
CREDIT_NOTE_CONFLICT_RETRIES = 3


class CreditNotes(Area):
    """Credit notes on finalized invoices: ``create`` (finalized at once unless
    ``process_credit_note=False``; the same request twice answers the first note), ``finalize`` a
    draft, ``void`` a draft, ``get``, ``list``. ``REFUND`` notes pay the customer's PRE_PAID
    wallet; ``ADJUSTMENT`` notes lower what the invoice asks. ``create`` and ``finalize`` rerun
    on a concurrent change of the invoice, and the rerun's recheck refuses what no longer fits
    (``InvalidOperation``, "exceeds the refundable amount"): never an over-refund."""

    create = RequestOp(
        credit_notes.create_credit_note,
        credit_notes.CreditNoteCreate,
        conflict_retries=CREDIT_NOTE_CONFLICT_RETRIES,
    )
    get = IdOp(credit_notes.get_credit_note, read_only=True)
    list = RequestOp(credit_notes.list_credit_notes, credit_notes.CreditNoteSearch, read_only=True)
    finalize = IdRequestOp(
        credit_notes.finalize_credit_note,
        credit_notes.CreditNoteFinalize,
        conflict_retries=CREDIT_NOTE_CONFLICT_RETRIES,
    )
    void = IdOp(credit_notes.void_credit_note)


class Wallets(Area):
    """Customers' wallets of credits: ``create(customer_id=..., currency="usd",
    initial_credits_to_load="50")``, ``top_up(id, credits_to_add="100",
    transaction_reason="PURCHASED_CREDIT_DIRECT")``, ``transactions(id)`` (newest first),
    ``terminate(id)`` (debits what is left and closes it). ``real_time_balance(id)``: the wallet's
    balance less its customer's unpaid invoices and current-period usage charges, within its
    allowed price types (:class:`~billingkit.services.wallet_balances.RealTimeBalance`)."""

    create = RequestOp(wallets.create_wallet, wallets.WalletCreate)
    get = IdOp(wallets.get_wallet, read_only=True)
    #: Every wallet of one customer (by customer id), oldest first.
    list_for_customer = IdOp(wallets.wallets_of_customer, read_only=True)
    #: Every wallet of one customer named by ``id`` or ``lookup_key`` (its external id).
    for_customer = RequestOp(wallets.customer_wallets, wallets.CustomerWalletsQuery, read_only=True)
    search = RequestOp(wallets.search_wallets, wallets.WalletSearch, read_only=True)
    update = IdRequestOp(wallets.update_wallet, wallets.WalletUpdate)
    terminate = IdOp(wallets.terminate_wallet)
    top_up = IdRequestOp(checkout_flows.top_up_wallet_checked, wallet_topups.TopUpRequest)
    transactions = IdRequestOp(
        wallet_transactions.list_wallet_transactions,
        wallet_transactions.WalletTransactionSearch,
        read_only=True,
    )
    search_transactions = RequestOp(
        wallet_transactions.search_wallet_transactions,
        wallet_transactions.WalletTransactionSearch,
        read_only=True,
    )
    real_time_balance = IdOp(wallet_balances.get_real_time_balance, read_only=True)
