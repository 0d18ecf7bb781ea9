"""The catalogue areas of ``Scoped``: plans, add-ons, prices, price units, groups, meters, features,
entitlements, credit grants, coupons, tax rates and tax associations.

Each operation is declared (see :mod:`billingkit.facade.operations`): it takes its request model
(``plans.create(PlanCreate(...))``) or that model's fields as keyword arguments
(``plans.create(name="Pro")``); the models live in ``billingkit.services.<area>``, and their fields
are the documentation of each call. Methods written out here do more than forward the call.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from billingkit.domain.catalog import Entitlement, Price
from billingkit.domain.entitlement_checks import EntitlementCheck
from billingkit.domain.validation import parse_input
from billingkit.errors import ValidationError
from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp, run_retrying
from billingkit.services import (
    addons,
    coupon_association_reads,
    coupons,
    credit_grant_applications,
    credit_grants,
    entitlements,
    features,
    groups,
    meters,
    plan_price_sync,
    plans,
    price_units,
    prices,
    tax_associations,
    tax_rates,
)
from billingkit.services.entitlement_checks import check_entitlement
from billingkit.services.entitlements import expand_entitlements
from billingkit.services.plan_price_sync import PlanPriceSync
from billingkit.services.subscription_entitlements import CustomerEntitlements, get_customer_entitlements

__all__ = [
    "Addons",
    "Coupons",
    "CreditGrants",
    "Entitlements",
    "Features",
    "Groups",
    "Meters",
    "Plans",
    "PriceUnits",
    "Prices",
    "TaxAssociations",
    "TaxRates",
]


class Plans(Area):
    """Plans, created with their ``prices``, ``entitlements`` and ``credit_grants`` (all or nothing);
    reads return the plan with its current items. ``delete`` archives the plan and its items."""

    create = RequestOp(plans.create_plan, plans.PlanCreate)
    get = IdOp(plans.get_plan, read_only=True)
    update = IdRequestOp(plans.update_plan, plans.PlanUpdate)
    delete = IdOp(plans.delete_plan)
    clone = IdRequestOp(plans.clone_plan, plans.PlanClone)
    list = RequestOp(plans.search_plans, plans.PlanSearch, read_only=True)
    search = list
    entitlements = IdOp(plans.plan_entitlements, read_only=True)
    credit_grants = IdOp(plans.plan_credit_grants, read_only=True)

    def sync_subscriptions(self, plan_id: str, *, batch_size: int | None = None) -> PlanPriceSync:
        """Bring every live subscription of the plan up to its current prices
        (:mod:`billingkit.services.plan_price_sync`), ``batch_size`` subscriptions per unit of work
        (default ``settings.run_batch_size``); the sync's run id and counts. ``NotFound`` for an
        unknown plan."""
        size = self._s.billing.settings.run_batch_size if batch_size is None else batch_size
        if size < 1:
            raise ValidationError("batch_size must be at least 1", field="batch_size")
        sync = self._s.run(plan_price_sync.start_sync, plan_id=plan_id)
        while not sync.done:
            # A subscription changed meanwhile: the batch is read and done again.
            batch = run_retrying(
                self._s, plan_price_sync.sync_batch, 3, sync=sync, after_id=sync.last_id, limit=size
            )
            sync = sync.with_batch(batch, limit=size)
        return sync


class Addons(Area):
    """Add-ons, shaped like plans: created with their items, archived with them."""

    create = RequestOp(addons.create_addon, addons.AddonCreate)
    get = IdOp(addons.get_addon, read_only=True)
    get_by_lookup_key = IdOp(addons.get_addon_by_lookup_key, read_only=True)
    update = IdRequestOp(addons.update_addon, addons.AddonUpdate)
    delete = IdOp(addons.delete_addon)
    list = RequestOp(addons.search_addons, addons.AddonSearch, read_only=True)
    search = list
    entitlements = IdOp(addons.addon_entitlements, read_only=True)
    credit_grants = IdOp(addons.addon_credit_grants, read_only=True)


class Prices(Area):
    """Prices of plans and add-ons. Changing an amount, model or tiers ends the price and returns
    its successor; reads return :class:`~billingkit.services.prices.PriceDetail` (the price with
    its ``meter``, ``pricing_unit`` and whatever ``expand`` names)."""

    create = RequestOp(prices.create_price, prices.PriceCreate)
    update = IdRequestOp(prices.update_price, prices.PriceUpdate)
    list = RequestOp(prices.list_prices, prices.PriceSearch, read_only=True)
    search = list

    def create_bulk(
        self, items: prices.PriceBulkCreate | Sequence[prices.PriceCreate | Mapping[str, Any]]
    ) -> builtins.list[Price]:
        """Create up to 100 prices, all or none; an error names ``items[i].<field>``."""
        data = (
            items
            if isinstance(items, prices.PriceBulkCreate)
            else parse_input(prices.PriceBulkCreate, {"items": builtins.list(items)})
        )
        return self._s.run(prices.create_prices_bulk, data=data)

    def get(self, price_id: str, *, expand: str | Iterable[str] | None = None) -> prices.PriceDetail:
        """The live price, expanded with ``groups``, ``plan``, ``addon`` when ``expand`` names them."""
        return self._s.read(prices.get_price, price_id=price_id, expand=expand)

    def get_by_lookup_key(
        self, lookup_key: str, *, expand: str | Iterable[str] | None = None
    ) -> prices.PriceDetail:
        return self._s.read(prices.get_price_by_lookup_key, lookup_key=lookup_key, expand=expand)

    def delete(self, price_id: str, end_date: datetime | None = None) -> Price:
        """With a future ``end_date`` the price ends then; without, it is archived now."""
        if end_date is not None:
            end_date = parse_input(prices.PriceDelete, {"end_date": end_date}).end_date
        return self._s.run(prices.delete_price, price_id=price_id, end_date=end_date)


class PriceUnits(Area):
    """Custom pricing units; the rate and base currency are fixed at creation, and a unit a live
    price uses cannot be deleted."""

    create = RequestOp(price_units.create_price_unit, price_units.PriceUnitCreate)
    get = IdOp(price_units.get_price_unit, read_only=True)
    get_by_code = IdOp(price_units.get_price_unit_by_code, read_only=True)
    update = IdRequestOp(price_units.update_price_unit, price_units.PriceUnitUpdate)
    delete = IdOp(price_units.delete_price_unit)
    list = RequestOp(price_units.list_price_units, price_units.PriceUnitSearch, read_only=True)
    search = list


class Groups(Area):
    """Groups of prices or features; reads return :class:`~billingkit.services.groups.GroupDetail`
    (``.group`` and the live members' ``.entity_ids``)."""

    create = RequestOp(groups.create_group, groups.GroupCreate)
    get = IdOp(groups.get_group, read_only=True)
    delete = IdOp(groups.delete_group)
    list = RequestOp(groups.list_groups, groups.GroupSearch, read_only=True)
    search = list

    def add_members(self, group_id: str, entity_ids: Sequence[str]) -> groups.GroupDetail:
        """Move live prices or features (the group's ``entity_type``) into the group."""
        return self._s.run(groups.add_group_members, group_id=group_id, entity_ids=builtins.list(entity_ids))


class Meters(Area):
    """Meters; ``update`` renames and adds filters only, and a meter a live feature or price uses
    cannot be deleted."""

    create = RequestOp(meters.create_meter, meters.MeterCreate)
    get = IdOp(meters.get_meter, read_only=True)
    update = IdRequestOp(meters.update_meter, meters.MeterUpdate)
    delete = IdOp(meters.delete_meter)
    list = RequestOp(meters.list_meters, meters.MeterSearch, read_only=True)
    search = list
    list_for_event = IdOp(meters.list_meters_for_event, read_only=True)


class Features(Area):
    """Features; ``search`` honours ``expand`` (``meters``, ``groups``) where ``list`` returns
    plain features."""

    create = RequestOp(features.create_feature, features.FeatureCreate)
    get = IdOp(features.get_feature, read_only=True)
    update = IdRequestOp(features.update_feature, features.FeatureUpdate)
    delete = IdOp(features.delete_feature)
    clone = IdRequestOp(features.clone_feature, features.FeatureClone)
    list = RequestOp(features.list_features, features.FeatureSearch, read_only=True)
    search = RequestOp(features.list_feature_details, features.FeatureSearch, read_only=True)

    def detail(self, feature_id: str, expand: str | None = None) -> features.FeatureDetail:
        """The feature with its ``meter`` (always, for a metered feature) and, when ``expand``
        contains ``groups``, its ``group``."""
        wanted = features.parse_expand(expand)
        return self._s.read(features.get_feature_detail, feature_id=feature_id, expand=wanted)


class Entitlements(Area):
    """Entitlements of plans and add-ons; ``create_bulk(items=[...])`` creates all or none;
    ``check(customer, feature)`` is the in-process entitlement check, ``for_customer(id)`` what a
    customer is entitled to."""

    create = RequestOp(entitlements.create_entitlement, entitlements.EntitlementCreate)
    create_bulk = RequestOp(entitlements.create_entitlements_bulk, entitlements.EntitlementBulkCreate)
    get = IdOp(entitlements.get_entitlement, read_only=True)
    update = IdRequestOp(entitlements.update_entitlement, entitlements.EntitlementUpdate)
    delete = IdOp(entitlements.delete_entitlement)
    list = RequestOp(entitlements.list_entitlements, entitlements.EntitlementSearch, read_only=True)
    search = list

    def expand(
        self, entitlements: Sequence[Entitlement], expand: str | None
    ) -> builtins.list[dict[str, Any]]:
        """The entitlements as dicts with what ``expand`` names added: ``features`` -> ``feature``,
        ``plans`` -> ``plan``, ``addons`` -> ``addon``."""
        return self._s.read(expand_entitlements, entitlements=entitlements, expand=expand)

    def check(self, customer: str, feature: str) -> EntitlementCheck:
        """May ``customer`` (customer id, else external id) use ``feature`` (feature id, else
        lookup key) now? ``.allowed``, and for a metered feature ``.usage`` in the current window
        (``.window_start`` .. ``.window_end``) against ``.limit`` (``None``: unlimited). Fast enough
        for every request of the host's product: what it reads is reused for
        ``settings.entitlement_cache_ttl`` (see docs/decisions.md for the bounds on staleness).
        ``NotFound`` for an unknown customer or feature."""
        return self._s.read(
            check_entitlement, customer=customer, feature=feature, cache=self._s.billing.entitlement_cache
        )

    def for_customer(
        self,
        customer_id: str,
        *,
        external: bool = False,
        feature_ids: Sequence[str] | None = None,
        subscription_ids: Sequence[str] | None = None,
    ) -> CustomerEntitlements:
        """The features of the customer's granting (active or trialing) subscriptions, aggregated
        together with their sources; ``external=True`` names the customer by external id."""
        return self._s.read(
            get_customer_entitlements,
            customer_id=customer_id,
            external=external,
            feature_ids=feature_ids,
            subscription_ids=subscription_ids,
        )


class CreditGrants(Area):
    """Credit grants of plans, add-ons and subscriptions; ``applications(...)`` lists what they
    granted (credit grant applications; filters ``subscription_ids``, ``credit_grant_ids``,
    ``customer_id``, ``application_status``)."""

    create = RequestOp(credit_grants.create_credit_grant, credit_grants.CreditGrantCreate)
    get = IdOp(credit_grants.get_credit_grant, read_only=True)
    update = IdRequestOp(credit_grants.update_credit_grant, credit_grants.CreditGrantUpdate)
    delete = IdOp(credit_grants.delete_credit_grant)
    list = RequestOp(credit_grants.list_credit_grants, credit_grants.CreditGrantSearch, read_only=True)
    applications = RequestOp(
        credit_grant_applications.list_credit_grant_applications,
        credit_grant_applications.CreditGrantApplicationSearch,
        read_only=True,
    )


class Coupons(Area):
    """Coupons; only ``name`` and ``metadata`` change after creation. ``associations(...)`` lists
    where coupons are attached (filters ``subscription_ids``, ``coupon_ids``, ``active_only``,
    ``expand``), ``association(id)`` reads one with its coupon."""

    create = RequestOp(coupons.create_coupon, coupons.CouponCreate)
    get = IdOp(coupons.get_coupon, read_only=True)
    get_by_code = IdOp(coupons.get_coupon_by_code, read_only=True)
    update = IdRequestOp(coupons.update_coupon, coupons.CouponUpdate)
    delete = IdOp(coupons.delete_coupon)
    list = RequestOp(coupons.list_coupons, coupons.CouponSearch, read_only=True)
    search = list
    #: Coupon associations (coupons attached to subscriptions by create and modify).
    associations = RequestOp(
        coupon_association_reads.list_coupon_associations,
        coupon_association_reads.CouponAssociationSearch,
        read_only=True,
    )
    association = IdOp(coupon_association_reads.get_coupon_association, read_only=True)


class TaxRates(Area):
    """Tax rates; the type and value are fixed at creation."""

    create = RequestOp(tax_rates.create_tax_rate, tax_rates.TaxRateCreate)
    get = IdOp(tax_rates.get_tax_rate, read_only=True)
    update = IdRequestOp(tax_rates.update_tax_rate, tax_rates.TaxRateUpdate)
    delete = IdOp(tax_rates.delete_tax_rate)
    list = RequestOp(tax_rates.list_tax_rates, tax_rates.TaxRateSearch, read_only=True)


class TaxAssociations(Area):
    """Which tax rate applies to a subscription, a customer or the whole environment (``tenant``);
    answers embed the ``tax_rate``. Only ``auto_apply``, ``priority`` and ``metadata`` change;
    ``delete`` archives (invoices computed afterwards are not taxed by it)."""

    create = RequestOp(tax_associations.create_tax_association, tax_associations.TaxAssociationCreate)
    get = IdOp(tax_associations.get_tax_association, read_only=True)
    update = IdRequestOp(tax_associations.update_tax_association, tax_associations.TaxAssociationUpdate)
    delete = IdOp(tax_associations.delete_tax_association)
    list = RequestOp(
        tax_associations.list_tax_associations, tax_associations.TaxAssociationSearch, read_only=True
    )
