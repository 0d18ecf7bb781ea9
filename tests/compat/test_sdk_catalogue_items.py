"""Entitlements, add-ons, credit grants, coupons and tax rates through the official SDK."""

from __future__ import annotations

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def test_entitlements_and_addons(sdk: Flexprice, env: Scoped) -> None:
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    api = sdk.features.create_feature(name="API", type_="metered", meter_id=calls.id, lookup_key="api")
    sso = sdk.features.create_feature(name="SSO", type_="boolean", lookup_key="sso")
    seats = sdk.features.create_feature(name="Seats", type_="static", lookup_key="seats")
    plan = sdk.plans.create_plan(name="Pro", lookup_key="pro")

    metered = known(
        sdk.entitlements.create_entitlement(
            feature_id=api.id,
            feature_type="metered",
            entity_type="PLAN",
            entity_id=plan.id,
            usage_limit=100_000,
            usage_reset_period="MONTHLY",
            is_soft_limit=True,
        )
    )
    assert isinstance(metered, models.EntitlementResponse)
    assert (
        metered.feature_id,
        metered.feature_type,
        metered.entity_type,
        metered.entity_id,
        metered.plan_id,
    ) == (
        api.id,
        "metered",
        "PLAN",
        plan.id,
        plan.id,
    )
    assert (metered.usage_limit, metered.usage_reset_period, metered.is_soft_limit, metered.is_enabled) == (
        100_000,
        "MONTHLY",
        True,
        True,
    )
    bulk = known(
        sdk.entitlements.create_entitlements_bulk(
            items=[
                {
                    "feature_id": sso.id,
                    "feature_type": "boolean",
                    "entity_type": "PLAN",
                    "entity_id": plan.id,
                    "is_enabled": True,
                },
                {
                    "feature_id": seats.id,
                    "feature_type": "static",
                    "entity_type": "PLAN",
                    "entity_id": plan.id,
                    "static_value": "10",
                },
            ]
        )
    )
    assert isinstance(bulk, models.CreateBulkEntitlementResponse)
    assert [(e.feature_id, e.is_enabled, e.static_value) for e in bulk.items] == [
        (sso.id, True, None),
        (seats.id, True, "10"),
    ]

    fetched = known(sdk.entitlements.get_entitlement(id=metered.id))
    assert fetched.model_dump(exclude={"feature"}) == metered.model_dump(exclude={"feature"})
    raised = known(
        sdk.entitlements.update_entitlement(id=metered.id, usage_limit=250_000, is_soft_limit=False)
    )
    assert (raised.usage_limit, raised.is_soft_limit, raised.usage_reset_period) == (
        250_000,
        False,
        "MONTHLY",
    )
    found = known(sdk.entitlements.query_entitlement(entity_ids=[plan.id], feature_type="static"))
    assert isinstance(found, models.ListEntitlementsResponse)
    assert [e.feature_id for e in found.items] == [seats.id]
    of_plan = known(sdk.entitlements.get_plan_entitlements(id=plan.id))
    assert {e.feature_id for e in of_plan.items} == {api.id, sso.id, seats.id}
    (expanded,) = known(
        sdk.plans.query_plan(plan_ids=[plan.id], expand="prices,entitlements,credit_grants")
    ).items
    assert {e.id for e in expanded.entitlements} == {e.id for e in of_plan.items}
    assert (expanded.prices, expanded.credit_grants) == ([], [])
    assert known(sdk.entitlements.delete_entitlement(id=bulk.items[0].id)).message
    assert {e.feature_id for e in sdk.entitlements.get_plan_entitlements(id=plan.id).items} == {
        api.id,
        seats.id,
    }
    with pytest.raises(errors.FlexpriceError) as twice:
        sdk.entitlements.create_entitlement(
            feature_id=api.id, feature_type="metered", entity_type="PLAN", entity_id=plan.id
        )
    assert status_and_code(twice.value) == (409, "already_exists")

    addon = known(
        sdk.addons.create_addon(
            lookup_key="priority", name="Priority support", description="4h SLA", metadata={"tier": 1}
        )
    )
    assert isinstance(addon, models.CreateAddonResponse)
    assert (addon.lookup_key, addon.name, addon.description, addon.metadata) == (
        "priority",
        "Priority support",
        "4h SLA",
        {"tier": 1},
    )
    granted = known(
        sdk.entitlements.create_entitlement(
            feature_id=api.id,
            feature_type="metered",
            entity_type="ADDON",
            entity_id=addon.id,
            usage_limit=500,
            usage_reset_period="MONTHLY",
            grant_quota="200",
            grant_duration_unit="day",
            grant_duration_value=30,
        )
    )
    assert (granted.entity_type, granted.entity_id, granted.grant_quota) == ("ADDON", addon.id, "200")
    assert (granted.grant_duration_unit, granted.grant_duration_value) == ("day", 30)
    assert [e.id for e in known(sdk.entitlements.get_addon_entitlements(id=addon.id)).items] == [granted.id]

    fetched_addon = known(sdk.addons.get_addon(id=addon.id))
    assert isinstance(fetched_addon, models.AddonResponse)
    assert (fetched_addon.name, [e.id for e in fetched_addon.entitlements]) == (
        "Priority support",
        [granted.id],
    )
    assert known(sdk.addons.get_addon_by_lookup_key(lookup_key="priority")).id == addon.id
    renamed = known(sdk.addons.update_addon(id=addon.id, name="Priority", metadata={"tier": 2}))
    assert (renamed.name, renamed.description, renamed.metadata) == ("Priority", "4h SLA", {"tier": 2})
    listed = known(sdk.addons.query_addon(lookup_keys=["priority"]))
    assert isinstance(listed, models.ListAddonsResponse) and [a.id for a in listed.items] == [addon.id]
    assert known(sdk.addons.delete_addon(id=addon.id)).message
    assert sdk.addons.query_addon(lookup_keys=["priority"]).items == []


def test_credit_grants(sdk: Flexprice) -> None:
    plan = sdk.plans.create_plan(name="Pro", lookup_key="pro")
    addon = sdk.addons.create_addon(lookup_key="boost", name="Boost")
    monthly = known(
        sdk.credit_grants.create_credit_grant(
            name="Monthly credits",
            scope="PLAN",
            plan_id=plan.id,
            credits="100.50",
            cadence="RECURRING",
            period="MONTHLY",
            period_count=1,
            expiration_type="BILLING_CYCLE",
            priority=1,
            metadata={"m": "n"},
        )
    )
    assert isinstance(monthly, models.CreditGrantResponse)
    assert (monthly.name, monthly.scope, monthly.plan_id, monthly.credits, monthly.cadence) == (
        "Monthly credits",
        "PLAN",
        plan.id,
        "100.50",
        "RECURRING",
    )
    assert (
        monthly.period,
        monthly.period_count,
        monthly.expiration_type,
        monthly.priority,
        monthly.metadata,
    ) == (
        "MONTHLY",
        1,
        "BILLING_CYCLE",
        1,
        {"m": "n"},
    )
    once = known(
        sdk.credit_grants.create_credit_grant(
            name="Welcome",
            scope="ADDON",
            addon_id=addon.id,
            credits="25",
            cadence="ONETIME",
            expiration_type="DURATION",
            expiration_duration=30,
            expiration_duration_unit="DAY",
        )
    )
    assert (once.scope, once.addon_id, once.expiration_duration, once.expiration_duration_unit) == (
        "ADDON",
        addon.id,
        30,
        "DAY",
    )
    assert known(sdk.credit_grants.get_credit_grant(id=monthly.id)).model_dump() == monthly.model_dump()
    renamed = known(sdk.credit_grants.update_credit_grant(id=monthly.id, name="Credits", metadata={"m": "o"}))
    assert (renamed.name, renamed.metadata, renamed.credits) == ("Credits", {"m": "o"}, "100.50")
    of_plan = known(sdk.credit_grants.get_plan_credit_grants(id=plan.id))
    assert isinstance(of_plan, models.ListCreditGrantsResponse) and [g.id for g in of_plan.items] == [
        monthly.id
    ]
    assert [g.id for g in known(sdk.credit_grants.get_addon_credit_grants(id=addon.id)).items] == [once.id]
    assert known(sdk.credit_grants.delete_credit_grant(id=once.id)).message
    assert sdk.credit_grants.get_addon_credit_grants(id=addon.id).items == []
    with pytest.raises(errors.FlexpriceError) as bad:
        sdk.credit_grants.create_credit_grant(
            name="X", scope="PLAN", plan_id=plan.id, credits="-1", cadence="ONETIME"
        )
    assert status_and_code(bad.value) == (400, "validation_error")


def test_coupons_and_tax_rates(sdk: Flexprice) -> None:
    launch = known(
        sdk.coupons.create_coupon(
            name="Launch",
            coupon_code="LAUNCH20",
            type_="percentage",
            cadence="repeated",
            percentage_off="20",
            duration_in_periods=3,
            max_redemptions=100,
            redeem_before="2026-12-31T00:00:00Z",
            metadata={"c": "d"},
        )
    )
    assert isinstance(launch, models.CouponResponse)
    assert (launch.name, launch.coupon_code, launch.type, launch.cadence, launch.percentage_off) == (
        "Launch",
        "LAUNCH20",
        "percentage",
        "repeated",
        "20",
    )
    assert (
        launch.duration_in_periods,
        launch.max_redemptions,
        launch.total_redemptions,
        launch.metadata,
    ) == (
        3,
        100,
        0,
        {"c": "d"},
    )
    assert launch.redeem_before == "2026-12-31T00:00:00Z"  # a string in the reference and the SDK
    five = known(
        sdk.coupons.create_coupon(
            name="Five off", type_="fixed", cadence="once", amount_off="5", currency="usd"
        )
    )
    assert (five.type, five.amount_off, five.currency, five.cadence) == ("fixed", "5", "usd", "once")

    assert known(sdk.coupons.get_coupon(id=launch.id)).model_dump() == launch.model_dump()
    assert known(sdk.coupons.get_coupon_by_code(code="LAUNCH20")).id == launch.id
    renamed = known(sdk.coupons.update_coupon(id=launch.id, name="Launch week", metadata={"c": "e"}))
    assert (renamed.name, renamed.metadata, renamed.percentage_off) == ("Launch week", {"c": "e"}, "20")
    found = known(sdk.coupons.query_coupon(coupon_codes=["LAUNCH20"]))
    assert isinstance(found, models.ListCouponsResponse) and [c.id for c in found.items] == [launch.id]
    deleted = sdk.coupons.delete_coupon(id=five.id)
    assert isinstance(deleted, dict) and all(isinstance(v, str) for v in deleted.values())
    assert {c.id for c in sdk.coupons.query_coupon().items} == {launch.id}
    with pytest.raises(errors.FlexpriceError) as taken:
        sdk.coupons.create_coupon(
            name="Again", coupon_code="LAUNCH20", type_="percentage", cadence="once", percentage_off="5"
        )
    assert status_and_code(taken.value) == (409, "already_exists")

    vat = known(
        sdk.tax_rates.create_tax_rate(
            name="VAT",
            code="VAT19",
            percentage_value="19",
            description="German VAT",
            tax_rate_type="percentage",
            scope="EXTERNAL",
            metadata={"country": "DE"},
        )
    )
    assert isinstance(vat, models.TaxRateResponse)
    assert (vat.name, vat.code, vat.percentage_value, vat.tax_rate_type, vat.scope) == (
        "VAT",
        "VAT19",
        "19",
        "percentage",
        "EXTERNAL",
    )
    assert (vat.description, vat.metadata, vat.tax_rate_status) == ("German VAT", {"country": "DE"}, "ACTIVE")
    assert known(sdk.tax_rates.get_tax_rate(id=vat.id)).model_dump() == vat.model_dump()
    renamed_vat = known(sdk.tax_rates.update_tax_rate(id=vat.id, name="VAT DE", tax_rate_status="INACTIVE"))
    assert (renamed_vat.name, renamed_vat.tax_rate_status, renamed_vat.percentage_value) == (
        "VAT DE",
        "INACTIVE",
        "19",
    )
    reduced = sdk.tax_rates.create_tax_rate(name="Reduced", code="VAT7", percentage_value="7")
    listed = known(sdk.tax_rates.get_tax_rates(taxrate_codes=["VAT7"]))
    assert isinstance(listed, models.ListTaxRatesResponse) and [t.id for t in listed.items] == [reduced.id]
    assert sdk.tax_rates.delete_tax_rate(id=reduced.id) is None
    assert [t.id for t in sdk.tax_rates.get_tax_rates().items] == [vat.id]
