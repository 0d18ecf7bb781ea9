"""Tax associations through the library, and the rates a direct invoice is taxed with
(``resolve_invoice_tax_rates``, through the service layer), on every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from billingkit import Billing, NotFound, PermissionDenied, Scoped, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.services.access import BootstrapResult
from billingkit.services.tax_resolution import TaxRateOverride, resolve_invoice_tax_rates


@pytest.fixture
def world(test_env: Scoped) -> Scoped:
    test_env.customers.create(external_id="c1", name="Ada")
    test_env.tax_rates.create(name="VAT", code="VAT20", percentage_value="20")
    test_env.tax_rates.create(name="GST", code="GST10", percentage_value="10")
    test_env.tax_rates.create(name="Fee", code="FEE", tax_rate_type="fixed", fixed_value="1.50")
    return test_env


def customer_id(s: Scoped) -> str:
    (customer,) = s.customers.list().items
    return customer.id


def test_create_read_update_delete(world: Scoped) -> None:
    cid = customer_id(world)
    created = world.tax_associations.create(
        tax_rate_code="VAT20",
        entity_type="customer",
        entity_id=cid,
        priority=3,
        currency="EUR",
        end_date=datetime(2030, 1, 1, tzinfo=UTC),
        metadata={"k": "v"},
    )
    assert created.id.startswith("taxassoc_")
    assert (created.entity_type.value, created.entity_id, created.priority, created.currency) == (
        "customer",
        cid,
        3,
        "eur",
    )
    assert created.auto_apply is True and created.start_date == world.billing.clock.now()
    assert created.tax_rate is not None and created.tax_rate.code == "VAT20"
    assert created.to_dict()["tax_rate"]["code"] == "VAT20"
    assert world.tax_associations.get(created.id) == created

    updated = world.tax_associations.update(created.id, priority=1, auto_apply=False, metadata={})
    assert (updated.priority, updated.auto_apply, updated.metadata) == (1, False, {})
    assert (updated.tax_rate_id, updated.start_date, updated.end_date) == (
        created.tax_rate_id,
        created.start_date,
        created.end_date,
    )
    with pytest.raises(ValidationError) as raised:
        world.tax_associations.update(created.id, priority=None)
    assert raised.value.field == "priority"
    with pytest.raises(ValidationError) as raised:
        world.tax_associations.update(created.id, entity_id="x")
    assert raised.value.field == "entity_id"

    deleted = world.tax_associations.delete(created.id)
    assert deleted.status.value == "archived" and deleted.tax_rate is not None
    with pytest.raises(NotFound):
        world.tax_associations.get(created.id)


def test_entities_by_external_id_and_the_tenant(world: Scoped) -> None:
    by_external = world.tax_associations.create(tax_rate_code="GST10", external_customer_id="c1")
    assert (by_external.entity_type.value, by_external.entity_id) == ("customer", customer_id(world))
    tenant = world.tax_associations.create(tax_rate_code="VAT20", entity_type="tenant")
    assert (tenant.entity_type.value, tenant.entity_id) == ("tenant", world.tenant_id)
    same = world.tax_associations.create(tax_rate_code="FEE", entity_type="tenant", entity_id=world.tenant_id)
    assert same.entity_id == world.tenant_id


def test_list_filters(world: Scoped) -> None:
    cid = customer_id(world)
    vat = world.tax_associations.create(tax_rate_code="VAT20", external_customer_id="c1")
    gst = world.tax_associations.create(tax_rate_code="GST10", entity_type="tenant")
    assert {a.id for a in world.tax_associations.list().items} == {vat.id, gst.id}
    assert [a.id for a in world.tax_associations.list(entity_type="tenant").items] == [gst.id]
    assert [a.id for a in world.tax_associations.list(entity_id=cid).items] == [vat.id]
    assert [a.id for a in world.tax_associations.list(tax_rate_id=gst.tax_rate_id).items] == [gst.id]
    assert [a.id for a in world.tax_associations.list(external_customer_id="c1").items] == [vat.id]
    assert world.tax_associations.list(external_customer_id="nobody").total == 0
    page = world.tax_associations.list(limit=1, offset=1)
    assert (len(page.items), page.total, page.items[0].tax_rate is not None) == (1, 2, True)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"tax_rate_code": "NOPE", "entity_type": "tenant"}, "tax_rate_code"),
        ({"tax_rate_code": "OFF", "entity_type": "tenant"}, "tax_rate_code"),
        ({"tax_rate_code": "VAT20"}, "entity_type"),
        ({"tax_rate_code": "VAT20", "entity_type": "customer"}, "entity_id"),
        ({"tax_rate_code": "VAT20", "entity_type": "customer", "entity_id": "cust_x"}, "entity_id"),
        ({"tax_rate_code": "VAT20", "entity_type": "subscription", "entity_id": "subs_x"}, "entity_id"),
        ({"tax_rate_code": "VAT20", "entity_type": "tenant", "entity_id": "tenant_x"}, "entity_id"),
        ({"tax_rate_code": "VAT20", "entity_type": "invoice", "entity_id": "inv_x"}, "entity_type"),
        ({"tax_rate_code": "VAT20", "external_customer_id": "nobody"}, "external_customer_id"),
        ({"tax_rate_code": "VAT20", "external_customer_id": "c1", "entity_type": "tenant"}, "entity_type"),
        ({"tax_rate_code": "VAT20", "entity_type": "tenant", "priority": -1}, "priority"),
        ({"tax_rate_code": "VAT20", "entity_type": "tenant", "currency": "usdx"}, "currency"),
        (
            {
                "tax_rate_code": "VAT20",
                "entity_type": "tenant",
                "start_date": "2027-01-01T00:00:00Z",
                "end_date": "2026-01-01T00:00:00Z",
            },
            "end_date",
        ),
        ({"tax_rate_code": "VAT20", "entity_type": "tenant", "end_date": "2020-01-01T00:00:00Z"}, "end_date"),
        ({"tax_rate_code": "VAT20", "entity_type": "tenant", "colour": "red"}, "colour"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(
    world: Scoped, fields: dict[str, Any], field: str
) -> None:
    world.tax_rates.create(name="Off", code="OFF", percentage_value="1")
    (off,) = world.tax_rates.list(tax_rate_codes=["OFF"]).items
    world.tax_rates.update(off.id, tax_rate_status="INACTIVE")
    with pytest.raises(ValidationError) as raised:
        world.tax_associations.create(**fields)
    assert raised.value.field == field
    assert world.tax_associations.list().total == 0


def test_a_subscription_association_must_be_in_the_subscriptions_currency(world: Scoped) -> None:
    plan = world.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "10",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    sub = world.subscriptions.create(
        external_customer_id="c1", plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    with pytest.raises(ValidationError) as raised:
        world.tax_associations.create(
            tax_rate_code="VAT20", entity_type="subscription", entity_id=sub.id, currency="eur"
        )
    assert raised.value.field == "currency"
    made = world.tax_associations.create(tax_rate_code="VAT20", entity_type="subscription", entity_id=sub.id)
    assert (made.entity_type.value, made.entity_id) == ("subscription", sub.id)


def test_permissions(billing: Billing, setup: BootstrapResult, world: Scoped) -> None:
    reader = billing.scope(
        setup.tenant.id, setup.environments[0][0].id, actor=Actor(id="r", roles=(Role.ALL_READER,))
    )
    with pytest.raises(PermissionDenied):
        reader.tax_associations.create(tax_rate_code="VAT20", entity_type="tenant")
    assert reader.tax_associations.list().total == 0


def test_another_environment_sees_nothing(world: Scoped, prod_env: Scoped) -> None:
    made = world.tax_associations.create(tax_rate_code="VAT20", entity_type="tenant")
    with pytest.raises(NotFound):
        prod_env.tax_associations.get(made.id)
    assert prod_env.tax_associations.list().total == 0


# -- the rates of a direct invoice ------------------------------------------------------------------


def resolve(s: Scoped, **kwargs: Any) -> list[tuple[str, str | None]]:
    """(rate code, association id) of each rate ``resolve_invoice_tax_rates`` picks."""
    kwargs.setdefault("customer_id", customer_id(s))
    kwargs.setdefault("currency", "usd")
    kwargs.setdefault("at", s.billing.clock.now())
    with s.billing.storage.unit_of_work(s.tenant_id, s.environment_id) as uow:
        applied = resolve_invoice_tax_rates(uow, **kwargs)
    return [(a.rate.code, a.association_id) for a in applied]


def test_invoice_rates_named_on_the_invoice_win(world: Scoped) -> None:
    world.tax_associations.create(tax_rate_code="GST10", external_customer_id="c1")
    (fee,) = world.tax_rates.list(tax_rate_codes=["FEE"]).items
    overrides = [
        TaxRateOverride(tax_rate_code="VAT20", currency="usd", priority=5),
        TaxRateOverride(tax_rate_code="GST10", currency="usd", priority=1, auto_apply=False),
    ]
    # tax_rates by id or code in the order given, then the auto_apply overrides; each rate once
    picked = resolve(world, tax_rates=[fee.id, "VAT20"], tax_rate_overrides=overrides)
    assert picked == [("FEE", None), ("VAT20", None)]
    assert resolve(world, tax_rate_overrides=overrides) == [("VAT20", None)]


def test_invoice_rates_fall_back_to_the_customer_then_the_tenant(world: Scoped) -> None:
    now = world.billing.clock.now()
    tenant = world.tax_associations.create(tax_rate_code="VAT20", entity_type="tenant")
    assert resolve(world) == [("VAT20", tenant.id)]
    usd = {"external_customer_id": "c1", "currency": "usd"}
    gst = world.tax_associations.create(tax_rate_code="GST10", priority=2, **usd)
    fee = world.tax_associations.create(tax_rate_code="FEE", priority=1, **usd)
    assert resolve(world) == [("FEE", fee.id), ("GST10", gst.id)]
    # the customer's apply only in usd from now on: in eur, or before they began, the tenant's
    assert resolve(world, currency="eur") == [("VAT20", tenant.id)]
    assert resolve(world, at=now - timedelta(seconds=1)) == []  # the tenant's began now too


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tax_rates": ["VAT20", "NOPE"]}, "tax_rates[1]"),
        ({"tax_rate_overrides": [TaxRateOverride(tax_rate_code="NOPE", currency="usd")]}, None),
        ({"tax_rate_overrides": [TaxRateOverride(tax_rate_code="VAT20", currency="eur")]}, None),
        ({"customer_id": "cust_nobody"}, "customer_id"),
    ],
)
def test_invoice_rates_refuse_bad_input_naming_the_field(
    world: Scoped, kwargs: dict[str, Any], field: str | None
) -> None:
    override = kwargs.get("tax_rate_overrides")
    expected = field or (
        "tax_rate_overrides[0].tax_rate_code"
        if override[0].tax_rate_code == "NOPE"
        else "tax_rate_overrides[0].currency"
    )
    with pytest.raises(ValidationError) as raised:
        resolve(world, **kwargs)
    assert raised.value.field == expected
