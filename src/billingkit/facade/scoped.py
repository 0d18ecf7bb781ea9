"""``Scoped``: one tenant and environment, seen by one actor. Every area hangs off it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from billingkit.domain.access import Actor
from billingkit.domain.catalog import Plan
from billingkit.domain.customers import Customer
from billingkit.domain.validation import parse_input
from billingkit.errors import PermissionDenied, ServiceUnavailable
from billingkit.facade import alerting, areas, catalog, checkout, costs, metering, portal, webhooks
from billingkit.facade import tasks as task_areas
from billingkit.ports import UnitOfWork
from billingkit.services import backtest as backtests
from billingkit.services.access_management import require_writable

if TYPE_CHECKING:
    from billingkit.facade.billing import Billing

__all__ = ["Scoped"]

R = TypeVar("R")


class Scoped:
    """``billing.scope(tenant_id, environment_id)``: reach every area from here, e.g.
    ``scoped.customers.create(external_id="c-1", name="Ada")``. Each call is one unit of work."""

    def __init__(self, billing: Billing, tenant_id: str, environment_id: str | None, actor: Actor) -> None:
        self.billing = billing
        self.tenant_id = tenant_id
        self.environment_id = environment_id
        self.actor = actor

    def run(self, fn: Callable[..., R], /, **kwargs: Any) -> R:
        """Run service ``fn(uow, ctx, **kwargs)`` in one unit of work, commit, then deliver the
        notifications it recorded to in-process subscribers."""
        ctx = self.billing.context(self.tenant_id, self.environment_id, self.actor)
        uow: UnitOfWork
        billing = self.billing
        with billing.storage.unit_of_work(self.tenant_id, self.environment_id) as uow:
            # The one place a suspended tenant's writes are refused (library and HTTP alike).
            require_writable(
                uow,
                self.tenant_id,
                now=ctx.now,
                cache=billing.tenant_status,
                ttl=billing.settings.tenant_status_ttl,
            )
            result = fn(uow, ctx, **kwargs)
            uow.commit()
        self.billing._dispatch(ctx.recorded)
        return result

    def read(self, fn: Callable[..., R], /, **kwargs: Any) -> R:
        """Run service ``fn(uow, ctx, **kwargs)``, which only reads, in a read-only unit of work
        (``storage.unit_of_work(..., read_only=True)``): on SQLite it answers while a billing run
        holds the write lock, and a write it attempts raises ``ReadOnlyTransaction``. Operations
        declared ``read_only=True`` (gets, lists, searches, usage, entitlement checks, previews
        that compute without writing) come here. A publishable key's caller reads nothing
        (it may only ingest events)."""
        if self.actor.publishable:
            raise PermissionDenied("a publishable key may only ingest events")
        ctx = self.billing.context(self.tenant_id, self.environment_id, self.actor)
        uow: UnitOfWork
        for attempt in range(2):
            try:
                with self.billing.storage.unit_of_work(
                    self.tenant_id, self.environment_id, read_only=True
                ) as uow:
                    return fn(uow, ctx, **kwargs)
            except ServiceUnavailable:
                # A connection the server dropped (PostgreSQL's read pool pings none on
                # checkout): a read writes nothing, so it runs once more on a fresh one.
                if attempt:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    # One line per area: the area's class, made once per Scoped on first use.
    customers = cached_property(areas.Customers)
    api_keys = cached_property(areas.ApiKeys)
    users = cached_property(areas.Users)
    environments = cached_property(areas.Environments)
    notifications = cached_property(areas.Notifications)
    subscriptions = cached_property(areas.Subscriptions)
    invoices = cached_property(areas.Invoices)
    payments = cached_property(areas.Payments)
    credit_notes = cached_property(areas.CreditNotes)
    wallets = cached_property(areas.Wallets)
    checkout = cached_property(checkout.Checkout)
    plans = cached_property(catalog.Plans)
    addons = cached_property(catalog.Addons)
    prices = cached_property(catalog.Prices)
    price_units = cached_property(catalog.PriceUnits)
    groups = cached_property(catalog.Groups)
    meters = cached_property(catalog.Meters)
    features = cached_property(catalog.Features)
    entitlements = cached_property(catalog.Entitlements)
    credit_grants = cached_property(catalog.CreditGrants)
    coupons = cached_property(catalog.Coupons)
    tax_rates = cached_property(catalog.TaxRates)
    tax_associations = cached_property(catalog.TaxAssociations)
    events = cached_property(metering.Events)
    usage = cached_property(metering.Usage)
    alerts = cached_property(alerting.Alerts)
    roles = cached_property(areas.Roles)
    tenants = cached_property(areas.Tenants)
    costs = cached_property(costs.Costs)
    tasks = cached_property(task_areas.Tasks)
    scheduled_tasks = cached_property(task_areas.ScheduledTasks)

    def backtest(
        self,
        candidate: str | Plan | Sequence[Mapping[str, Any]],
        *,
        customers: Sequence[str | Customer] | None = None,
        periods: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        subscribed_plan_id: str | None = None,
    ) -> backtests.Backtest:
        """Re-price the usage already stored for completed billing periods under ``candidate``
        (a stored plan, its id, or a list of price requests as ``plans.create(prices=...)`` takes)
        and compare with what was billed; writes nothing.

        ``customers`` (ids or :class:`Customer` objects; default every subscribed customer),
        ``subscribed_plan_id`` (only subscriptions to that plan), ``since``/``until`` (periods
        inside that range) and ``periods`` (the last N of each subscription) choose what is
        re-priced. Returns a :class:`~billingkit.services.backtest.Backtest`: one row per
        customer-period with ``billed``, ``candidate`` and ``difference`` (exact ``Decimal``),
        ``.summary()`` and ``.to_pandas()``. Raises ``ValidationError`` (a bad candidate price,
        a candidate without prices in a subscription's currency and period), ``NotFound``
        (unknown plan).
        """
        fields: dict[str, Any] = {
            "customer_ids": None if customers is None else [_customer_id(c) for c in customers],
            "periods": periods,
            "since": since,
            "until": until,
            "subscribed_plan_id": subscribed_plan_id,
        }
        if isinstance(candidate, str):
            fields["plan_id"] = candidate
        elif isinstance(candidate, Plan):
            fields["plan_id"] = candidate.id
        else:
            fields["prices"] = list(candidate)
        request = parse_input(backtests.BacktestRequest, fields)
        return self.read(backtests.backtest, request=request)

    webhooks = cached_property(webhooks.Webhooks)
    customer_portal = cached_property(portal.CustomerPortalSessions)

    def __repr__(self) -> str:
        return f"<Scoped tenant={self.tenant_id} environment={self.environment_id} actor={self.actor.id}>"


def _customer_id(customer: str | Customer) -> str:
    return customer if isinstance(customer, str) else customer.id
