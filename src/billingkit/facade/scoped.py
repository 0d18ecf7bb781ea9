"""``Scoped``: one tenant and environment, seen by one actor. Every area hangs off it."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from billingkit.domain.access import Actor
from billingkit.ports import UnitOfWork

if TYPE_CHECKING:
    from billingkit.facade.access import ApiKeys, Environments, Users
    from billingkit.facade.addons import Addons
    from billingkit.facade.billing import Billing
    from billingkit.facade.coupons import Coupons
    from billingkit.facade.credit_grants import CreditGrants
    from billingkit.facade.customers import Customers
    from billingkit.facade.entitlements import Entitlements
    from billingkit.facade.events import Events
    from billingkit.facade.features import Features
    from billingkit.facade.groups import Groups
    from billingkit.facade.invoices import Invoices
    from billingkit.facade.meters import Meters
    from billingkit.facade.notifications import Notifications
    from billingkit.facade.plans import Plans
    from billingkit.facade.price_units import PriceUnits
    from billingkit.facade.prices import Prices
    from billingkit.facade.subscriptions import Subscriptions
    from billingkit.facade.tax_rates import TaxRates
    from billingkit.facade.usage import Usage

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
        with self.billing.storage.unit_of_work(self.tenant_id, self.environment_id) as uow:
            result = fn(uow, ctx, **kwargs)
            uow.commit()
        self.billing._dispatch(ctx.recorded)
        return result

    @cached_property
    def customers(self) -> Customers:
        from billingkit.facade.customers import Customers

        return Customers(self)

    @cached_property
    def api_keys(self) -> ApiKeys:
        from billingkit.facade.access import ApiKeys

        return ApiKeys(self)

    @cached_property
    def users(self) -> Users:
        from billingkit.facade.access import Users

        return Users(self)

    @cached_property
    def environments(self) -> Environments:
        from billingkit.facade.access import Environments

        return Environments(self)

    @cached_property
    def notifications(self) -> Notifications:
        from billingkit.facade.notifications import Notifications

        return Notifications(self)

    @cached_property
    def plans(self) -> Plans:
        from billingkit.facade.plans import Plans

        return Plans(self)

    @cached_property
    def addons(self) -> Addons:
        from billingkit.facade.addons import Addons

        return Addons(self)

    @cached_property
    def prices(self) -> Prices:
        from billingkit.facade.prices import Prices

        return Prices(self)

    @cached_property
    def price_units(self) -> PriceUnits:
        from billingkit.facade.price_units import PriceUnits

        return PriceUnits(self)

    @cached_property
    def groups(self) -> Groups:
        from billingkit.facade.groups import Groups

        return Groups(self)

    @cached_property
    def meters(self) -> Meters:
        from billingkit.facade.meters import Meters

        return Meters(self)

    @cached_property
    def features(self) -> Features:
        from billingkit.facade.features import Features

        return Features(self)

    @cached_property
    def entitlements(self) -> Entitlements:
        from billingkit.facade.entitlements import Entitlements

        return Entitlements(self)

    @cached_property
    def credit_grants(self) -> CreditGrants:
        from billingkit.facade.credit_grants import CreditGrants

        return CreditGrants(self)

    @cached_property
    def coupons(self) -> Coupons:
        from billingkit.facade.coupons import Coupons

        return Coupons(self)

    @cached_property
    def tax_rates(self) -> TaxRates:
        from billingkit.facade.tax_rates import TaxRates

        return TaxRates(self)

    @cached_property
    def events(self) -> Events:
        from billingkit.facade.events import Events

        return Events(self)

    @cached_property
    def usage(self) -> Usage:
        from billingkit.facade.usage import Usage

        return Usage(self)

    @cached_property
    def subscriptions(self) -> Subscriptions:
        from billingkit.facade.subscriptions import Subscriptions

        return Subscriptions(self)

    @cached_property
    def invoices(self) -> Invoices:
        from billingkit.facade.invoices import Invoices

        return Invoices(self)

    def __repr__(self) -> str:
        return f"<Scoped tenant={self.tenant_id} environment={self.environment_id} actor={self.actor.id}>"
