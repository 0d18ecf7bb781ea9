"""Prices through the library, on every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import AlreadyExists, Billing, NotFound, PermissionDenied, Scoped, TestClock, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.catalog import Price, PriceEntityType, PriceTier, PriceTransform
from billingkit.domain.pricing import price_quantity
from billingkit.services import prices as svc
from billingkit.services.access import BootstrapResult
from tests.services.conftest import stored

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)  # the clock fixture's start


@pytest.fixture
def plan_id(test_env: Scoped) -> str:
    return str(stored(test_env, "plans").id)


@pytest.fixture
def meter_id(test_env: Scoped) -> str:
    return str(stored(test_env, "meters").id)


def fixed(plan_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "entity_type": "PLAN",
        "entity_id": plan_id,
        "currency": "USD",
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "amount": "10",
        **fields,
    }


def usage(plan_id: str, meter_id: str, **fields: Any) -> dict[str, Any]:
    return fixed(plan_id, type="USAGE", invoice_cadence="ARREAR", meter_id=meter_id, **fields)


TIERS = [
    {"up_to": 100, "unit_amount": "0.10"},
    {"up_to": 200, "unit_amount": "0.08", "flat_amount": "1"},
    {"up_to": None, "unit_amount": "0.05"},
]


def count_all(scoped: Scoped) -> int:
    return scoped.prices.list(status=None, allow_expired_prices=True).total


def test_create_reads_back_every_field(test_env: Scoped, plan_id: str) -> None:
    group = stored(test_env, "groups", entity_type="price")
    start, end = NOW + timedelta(days=1), NOW + timedelta(days=90)
    price = test_env.prices.create(
        **fixed(
            plan_id,
            amount="12.50",
            billing_period="ANNUAL",
            billing_period_count=2,
            min_quantity=3,
            display_name="Seats",
            description="per seat",
            lookup_key="seat-annual",
            group_id=group.id,
            start_date=start,
            end_date=end,
            trial_period_days=14,
            metadata={"k": "v"},
        )
    )
    assert price.id.startswith("price_") and price.status.value == "published"
    assert (price.entity_type, price.entity_id, price.type.value, price.billing_model.value) == (
        PriceEntityType.PLAN,
        plan_id,
        "FIXED",
        "FLAT_FEE",
    )
    assert (price.currency, price.amount, price.billing_cadence.value, price.billing_period.value) == (
        "usd",
        Decimal("12.50"),
        "RECURRING",
        "ANNUAL",
    )
    assert (price.billing_period_count, price.invoice_cadence.value, price.min_quantity) == (2, "ADVANCE", 3)
    assert (price.display_name, price.description, price.lookup_key, price.group_id) == (
        "Seats",
        "per seat",
        "seat-annual",
        group.id,
    )
    assert (price.start_date, price.end_date, price.trial_period_days, price.metadata) == (
        start,
        end,
        14,
        {"k": "v"},
    )
    assert (price.sequence, price.parent_price_id, price.price_unit_type.value, price.meter_id) == (
        1,
        None,
        "FIAT",
        None,
    )
    assert (price.created_by, price.updated_by, price.created_at) == ("system", "system", NOW)
    got = test_env.prices.get(price.id)
    assert got.price() == price and got.meter is None and got.pricing_unit is None
    wire = got.to_dict()
    assert (wire["amount"], wire["display_amount"], wire["min_quantity"]) == ("12.50", "$12.50", "3")
    assert wire["meter"] is None and wire["pricing_unit"] is None and "group" not in wire
    # every price added to the owner takes the next sequence
    assert test_env.prices.create(**fixed(plan_id)).sequence == 2


def test_usage_package_price(test_env: Scoped, plan_id: str, meter_id: str) -> None:
    price = test_env.prices.create(
        **usage(
            plan_id, meter_id, billing_model="PACKAGE", amount="5", transform_quantity={"divide_by": 1000}
        )
    )
    assert (price.meter_id, price.transform_quantity) == (
        meter_id,
        PriceTransform(divide_by=1000, round="up"),
    )
    assert price_quantity(price.to_spec(), Decimal(2500)).amount == Decimal("15.00")
    down = test_env.prices.create(
        **usage(
            plan_id,
            meter_id,
            billing_model="PACKAGE",
            amount="5",
            transform_quantity={"divide_by": 1000, "round": "down"},
        )
    )
    assert price_quantity(down.to_spec(), Decimal(2500)).amount == Decimal("10.00")


@pytest.mark.parametrize(("mode", "cost"), [("VOLUME", "13.00"), ("SLAB", "15.00")])
def test_tiered_prices(test_env: Scoped, plan_id: str, meter_id: str, mode: str, cost: str) -> None:
    price = test_env.prices.create(
        **usage(plan_id, meter_id, billing_model="TIERED", tier_mode=mode, tiers=TIERS, amount=None)
    )
    assert (price.amount, price.tier_mode.value if price.tier_mode else None) == (0, mode)
    assert price.tiers == (
        PriceTier(up_to=100, unit_amount=Decimal("0.10")),
        PriceTier(up_to=200, unit_amount=Decimal("0.08"), flat_amount=Decimal(1)),
        PriceTier(up_to=None, unit_amount=Decimal("0.05")),
    )
    assert test_env.prices.get(price.id).tiers == price.tiers
    # VOLUME: 150 * 0.08 + 1; SLAB: 100 * 0.10 + 50 * 0.08 + 1
    assert price_quantity(price.to_spec(), Decimal(150)).amount == Decimal(cost)


def test_custom_pricing_unit_converts_amounts(test_env: Scoped, plan_id: str, meter_id: str) -> None:
    unit = test_env.price_units.create(
        code="credits", name="Credits", symbol="CR", base_currency="USD", conversion_rate="0.01"
    )
    config = {"price_unit": "credits", "amount": "5"}
    flat = test_env.prices.create(
        **fixed(plan_id, amount=None, price_unit_type="CUSTOM", price_unit_config=config)
    )
    assert (flat.amount, flat.price_unit_amount, flat.price_unit, flat.price_unit_id) == (
        Decimal("0.05"),
        Decimal(5),
        "credits",
        unit.id,
    )
    assert (flat.conversion_rate, flat.price_unit_type.value) == (Decimal("0.01"), "CUSTOM")
    assert flat.to_dict()["display_price_unit_amount"] == "5 credits"
    tiered = test_env.prices.create(
        **usage(
            plan_id,
            meter_id,
            amount=None,
            billing_model="TIERED",
            tier_mode="SLAB",
            price_unit_type="CUSTOM",
            price_unit_config={
                "price_unit": "credits",
                "price_unit_tiers": [
                    {"up_to": 10, "unit_amount": "3", "flat_amount": "7"},
                    {"unit_amount": "1"},
                ],
            },
        )
    )
    assert tiered.tiers == (
        PriceTier(up_to=10, unit_amount=Decimal("0.03"), flat_amount=Decimal("0.07")),
        PriceTier(up_to=None, unit_amount=Decimal("0.01")),
    )
    assert tiered.price_unit_tiers is not None and tiered.price_unit_tiers[0].unit_amount == 3
    got = test_env.prices.get(tiered.id)
    assert got.pricing_unit == unit and got.meter is not None and got.meter.id == meter_id
    assert got.to_dict()["pricing_unit"]["code"] == "credits"


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"type": "USAGE", "invoice_cadence": "ARREAR"}, "meter_id"),
        ({"type": "USAGE", "meter_id": "METER"}, "invoice_cadence"),
        ({"meter_id": "METER"}, "meter_id"),
        ({"type": "USAGE", "invoice_cadence": "ARREAR", "meter_id": "meter_missing"}, "meter_id"),
        ({"billing_model": "TIERED", "tier_mode": "VOLUME", "amount": None}, "tiers"),
        ({"billing_model": "TIERED", "tiers": TIERS}, "tier_mode"),
        (
            {
                "billing_model": "TIERED",
                "tier_mode": "SLAB",
                "tiers": [
                    {"up_to": 100, "unit_amount": "1"},
                    {"up_to": 50, "unit_amount": "1"},
                    {"unit_amount": "1"},
                ],
            },
            "tiers[1].up_to",
        ),
        (
            {
                "billing_model": "TIERED",
                "tier_mode": "SLAB",
                "tiers": [{"up_to": 5, "unit_amount": "-1"}, {"unit_amount": "1"}],
            },
            "tiers[0].unit_amount",
        ),
        ({"billing_model": "PACKAGE"}, "transform_quantity.divide_by"),
        (
            {"billing_model": "PACKAGE", "transform_quantity": {"divide_by": 0}},
            "transform_quantity.divide_by",
        ),
        (
            {"billing_model": "PACKAGE", "transform_quantity": {"divide_by": 5, "round": "half"}},
            "transform_quantity.round",
        ),
        ({"amount": "-0.01"}, "amount"),
        ({"amount": None}, "amount"),
        ({"amount": 1.5}, "amount"),
        ({"min_quantity": "-1"}, "min_quantity"),
        ({"tiers": TIERS}, "tiers"),
        ({"type": "ONE_OFF"}, "type"),
        ({"billing_model": "STAIRCASE"}, "billing_model"),
        ({"billing_model": "TIERED", "tier_mode": "GRADUATED", "tiers": TIERS}, "tier_mode"),
        ({"billing_cadence": "SOMETIMES"}, "billing_cadence"),
        ({"billing_cadence": "ONETIME"}, "billing_cadence"),
        ({"billing_period": "FORTNIGHTLY"}, "billing_period"),
        ({"invoice_cadence": "LATER"}, "invoice_cadence"),
        ({"entity_type": "CUSTOMER"}, "entity_type"),
        ({"entity_type": "SUBSCRIPTION"}, "entity_type"),
        ({"entity_id": "plan_missing"}, "entity_id"),
        ({"entity_type": "ADDON"}, "entity_id"),
        ({"currency": "US"}, "currency"),
        ({"group_id": "group_missing"}, "group_id"),
        ({"price_unit_type": "CUSTOM", "amount": None}, "price_unit_config"),
        (
            {
                "price_unit_type": "CUSTOM",
                "amount": None,
                "price_unit_config": {"price_unit": "nope", "amount": "1"},
            },
            "price_unit_config.price_unit",
        ),
        ({"price_unit_config": {"price_unit": "credits", "amount": "1"}}, "price_unit_config"),
        ({"start_date": NOW + timedelta(days=2), "end_date": NOW + timedelta(days=1)}, "end_date"),
        ({"start_date": "2026-05-01T00:00:00"}, "start_date"),
        ({"trial_period_days": -1}, "trial_period_days"),
        ({"billing_period_count": 0}, "billing_period_count"),
        ({"lookup_key": ""}, "lookup_key"),
    ],
)
def test_inconsistent_prices_are_rejected_naming_the_field(
    test_env: Scoped, plan_id: str, meter_id: str, patch: dict[str, Any], field: str
) -> None:
    if patch.get("meter_id") == "METER":
        patch = {**patch, "meter_id": meter_id}
    with pytest.raises(ValidationError) as caught:
        test_env.prices.create(**fixed(plan_id, **patch))
    assert caught.value.field == field, caught.value.message
    assert count_all(test_env) == 0


@pytest.mark.parametrize(
    ("tiers", "field", "message"),
    [
        # Two tiers going down: once reported as "the last tier must have no up_to".
        ([100, 50], "tiers[1].up_to", "tiers[1].up_to must be greater than tiers[0].up_to (50 <= 100)"),
        (
            [100, 100, None],
            "tiers[1].up_to",
            "tiers[1].up_to must be greater than tiers[0].up_to (100 <= 100)",
        ),
        (
            [10, 20, 15, None],
            "tiers[2].up_to",
            "tiers[2].up_to must be greater than tiers[1].up_to (15 <= 20)",
        ),
        ([10, 20], "tiers[1].up_to", "the last tier must have no up_to (it is open-ended)"),
        ([None, 10], "tiers[0].up_to", "only the last tier may have no up_to"),
    ],
)
def test_tier_order_errors_name_the_tier_that_breaks_it(
    test_env: Scoped, plan_id: str, tiers: list[int | None], field: str, message: str
) -> None:
    body = fixed(
        plan_id,
        billing_model="TIERED",
        tier_mode="VOLUME",
        tiers=[{"up_to": up_to, "unit_amount": "1"} for up_to in tiers],
    )
    with pytest.raises(ValidationError) as caught:
        test_env.prices.create(**body)
    assert (caught.value.field, caught.value.message) == (field, message)
    # A custom unit's tiers are named as the caller sent them, in the field and the message.
    test_env.price_units.create(
        code="credits", name="Credits", symbol="CR", base_currency="USD", conversion_rate="0.01"
    )
    custom = {**body, "amount": None, "tiers": None, "price_unit_type": "CUSTOM"}
    custom["price_unit_config"] = {"price_unit": "credits", "price_unit_tiers": body["tiers"]}
    with pytest.raises(ValidationError) as caught:
        test_env.prices.create(**custom)
    prefix = "price_unit_config.price_unit_"
    assert (caught.value.field, caught.value.message) == (
        prefix + field,
        message.replace("tiers[", prefix + "tiers["),
    )
    assert count_all(test_env) == 0


def test_custom_unit_rules(test_env: Scoped, plan_id: str) -> None:
    test_env.price_units.create(
        code="credits", name="Credits", symbol="CR", base_currency="USD", conversion_rate="0.01"
    )
    custom = {"amount": None, "price_unit_type": "CUSTOM"}
    for patch, field in (
        ({"currency": "EUR", "price_unit_config": {"price_unit": "credits", "amount": "1"}}, "currency"),
        (
            {"amount": "1", "price_unit_type": "CUSTOM", "price_unit_config": {"price_unit": "credits"}},
            "amount",
        ),
        ({"price_unit_config": {"price_unit": "credits"}}, "price_unit_config.amount"),
        ({"price_unit_config": {"price_unit": "credits", "amount": "-1"}}, "price_unit_config.amount"),
        (
            {
                "billing_model": "TIERED",
                "tier_mode": "VOLUME",
                "price_unit_config": {
                    "price_unit": "credits",
                    "price_unit_tiers": [{"up_to": 5, "unit_amount": "1"}],
                },
            },
            "price_unit_config.price_unit_tiers[0].up_to",
        ),
    ):
        with pytest.raises(ValidationError) as caught:
            test_env.prices.create(**fixed(plan_id, **{**custom, **patch}))
        assert caught.value.field == field, caught.value.message
    assert count_all(test_env) == 0


def test_addon_owner_and_archived_owner(test_env: Scoped) -> None:
    addon = stored(test_env, "addons")
    price = test_env.prices.create(**fixed(addon.id, entity_type="ADDON"))
    assert (price.entity_type, price.entity_id) == (PriceEntityType.ADDON, addon.id)
    archived = stored(test_env, "plans", status="archived")
    with pytest.raises(ValidationError) as caught:
        test_env.prices.create(**fixed(archived.id))
    assert caught.value.field == "entity_id"


def test_lookup_key_unique_among_live_prices(test_env: Scoped, prod_env: Scoped, plan_id: str) -> None:
    price = test_env.prices.create(**fixed(plan_id, lookup_key="pro"))
    assert test_env.prices.get_by_lookup_key("pro").id == price.id
    with pytest.raises(AlreadyExists):
        test_env.prices.create(**fixed(plan_id, lookup_key="pro"))
    prod_plan = stored(prod_env, "plans")
    assert prod_env.prices.create(**fixed(prod_plan.id, lookup_key="pro")).lookup_key == "pro"
    other = test_env.prices.create(**fixed(plan_id, lookup_key="other"))
    with pytest.raises(AlreadyExists):
        test_env.prices.update(other.id, lookup_key="pro")
    test_env.prices.delete(price.id)
    with pytest.raises(NotFound):
        test_env.prices.get_by_lookup_key("pro")
    again = test_env.prices.create(**fixed(plan_id, lookup_key="pro"))
    assert test_env.prices.get_by_lookup_key("pro").id == again.id


def test_expansions(test_env: Scoped, plan_id: str, meter_id: str) -> None:
    group = stored(test_env, "groups", entity_type="price")
    price = test_env.prices.create(**usage(plan_id, meter_id, group_id=group.id))
    got = test_env.prices.get(price.id, expand="groups,plan")
    assert got.meter is not None and got.meter.id == meter_id
    assert got.group == group and got.plan is not None and got.plan.id == plan_id
    wire = got.to_dict()
    assert wire["meter"]["id"] == meter_id and wire["group"]["entity_ids"] == [price.id]
    assert wire["plan"]["id"] == plan_id and wire["pricing_unit"] is None and "addon" not in wire
    plain = test_env.prices.list().items[0].to_dict()
    assert "meter" not in plain and "plan" not in plain
    listed = test_env.prices.list(expand="meters,addon").items[0].to_dict()
    assert listed["meter"]["id"] == meter_id and listed["addon"] is None


def test_descriptive_update_in_place(
    billing: Billing, setup: BootstrapResult, test_env: Scoped, clock: TestClock, plan_id: str
) -> None:
    group = stored(test_env, "groups", entity_type="price")
    price = test_env.prices.create(**fixed(plan_id, lookup_key="a", group_id=group.id))
    clock.advance(minutes=5)
    alice = billing.scope(
        setup.tenant.id, setup.environments[0][0].id, actor=Actor("alice", (Role.ALL_WRITER,))
    )
    changed = alice.prices.update(
        price.id, display_name="Base", description="d", lookup_key="b", metadata={"x": "y"}, group_id=""
    )
    assert changed.id == price.id and changed.sequence == price.sequence == 1
    assert (
        changed.display_name,
        changed.description,
        changed.lookup_key,
        changed.metadata,
        changed.group_id,
    ) == (
        "Base",
        "d",
        "b",
        {"x": "y"},
        None,
    )
    assert (changed.updated_at, changed.updated_by) == (NOW + timedelta(minutes=5), "alice")
    assert (changed.created_at, changed.created_by) == (NOW, "system")
    # the same amount is not a change
    assert test_env.prices.update(price.id, amount="10.00").id == price.id
    assert test_env.prices.get(price.id).end_date is None
    with pytest.raises(ValidationError) as caught:
        test_env.prices.update(price.id, group_id="group_missing")
    assert caught.value.field == "group_id"
    with pytest.raises(ValidationError) as caught:
        test_env.prices.update(price.id, metadata=None)
    assert caught.value.field == "metadata"


def test_value_change_makes_a_new_version(test_env: Scoped, clock: TestClock, plan_id: str) -> None:
    price = test_env.prices.create(**fixed(plan_id, lookup_key="pro", display_name="Pro"))
    test_env.prices.create(**fixed(plan_id, amount="1"))  # sequence 2
    effective = NOW + timedelta(days=10)
    successor = test_env.prices.update(price.id, amount="12", effective_from=effective, description="new")
    old = test_env.prices.get(price.id)
    assert (old.end_date, old.lookup_key, old.sequence, old.amount, old.description) == (
        effective,
        None,
        3,
        Decimal(10),
        None,
    )
    assert successor.id != price.id
    assert (successor.start_date, successor.end_date, successor.parent_price_id, successor.sequence) == (
        effective,
        None,
        price.id,
        3,
    )
    assert (successor.amount, successor.lookup_key, successor.display_name, successor.description) == (
        Decimal(12),
        "pro",
        "Pro",
        "new",
    )
    assert test_env.prices.get_by_lookup_key("pro").id == successor.id
    # which versions apply when
    at = test_env.run(
        lambda uow, ctx: [
            [p.id for p in svc.prices_of(uow, PriceEntityType.PLAN, plan_id, at=when)]
            for when in (NOW, effective)
        ]
    )
    assert price.id in at[0] and successor.id not in at[0]
    assert successor.id in at[1] and price.id not in at[1]
    # a further version links to the first one; the default effective_from is now
    clock.set(effective + timedelta(days=1))
    third = test_env.prices.update(successor.id, billing_model="TIERED", tier_mode="VOLUME", tiers=TIERS)
    assert (third.parent_price_id, third.start_date, third.sequence, third.billing_model.value) == (
        price.id,
        clock.now(),
        4,
        "TIERED",
    )
    assert test_env.prices.get(successor.id).end_date == clock.now()
    # ended versions are left out of lists unless asked for
    listed = {p.id for p in test_env.prices.list(plan_ids=[plan_id]).items}
    assert price.id not in listed and third.id in listed
    assert price.id in {p.id for p in test_env.prices.list(allow_expired_prices=True).items}
    assert {
        p.id for p in test_env.prices.list(parent_price_id=price.id, allow_expired_prices=True).items
    } == {
        successor.id,
        third.id,
    }


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"amount": "5", "effective_from": NOW - timedelta(seconds=1)}, "effective_from"),
        ({"amount": "5", "effective_from": NOW + timedelta(days=400)}, "effective_from"),
        ({"amount": "-5"}, "amount"),
        ({"billing_model": "PACKAGE"}, "transform_quantity.divide_by"),
        ({"billing_model": "TIERED", "tier_mode": "SLAB"}, "tiers"),
        ({"price_unit_amount": "5"}, "price_unit_amount"),
        ({"amount": None}, "amount"),
        ({"tiers": [{"up_to": 5, "unit_amount": "1"}]}, "tiers"),
    ],
)
def test_invalid_versions_write_nothing(
    test_env: Scoped, plan_id: str, patch: dict[str, Any], field: str
) -> None:
    price = test_env.prices.create(**fixed(plan_id, end_date=NOW + timedelta(days=365)))
    with pytest.raises(ValidationError) as caught:
        test_env.prices.update(price.id, **patch)
    assert caught.value.field == field, caught.value.message
    assert count_all(test_env) == 1 and test_env.prices.get(price.id).price() == price


def test_custom_price_versions_convert_unit_values(test_env: Scoped, plan_id: str) -> None:
    test_env.price_units.create(
        code="cr", name="Credits", symbol="CR", base_currency="usd", conversion_rate="0.5"
    )
    price = test_env.prices.create(
        **fixed(
            plan_id,
            amount=None,
            price_unit_type="CUSTOM",
            price_unit_config={"price_unit": "cr", "amount": "4"},
        )
    )
    assert price.amount == 2
    with pytest.raises(ValidationError) as caught:
        test_env.prices.update(price.id, amount="3")
    assert caught.value.field == "amount"
    successor = test_env.prices.update(price.id, price_unit_amount="7")
    assert (successor.price_unit_amount, successor.amount, successor.parent_price_id) == (
        7,
        Decimal("3.5"),
        price.id,
    )
    with pytest.raises(ValidationError) as caught:
        test_env.prices.update(successor.id, price_unit_amount="-1")
    assert caught.value.field == "price_unit_amount"


def test_delete_now_or_later(test_env: Scoped, clock: TestClock, plan_id: str) -> None:
    later = test_env.prices.create(**fixed(plan_id, lookup_key="later"))
    now = test_env.prices.create(**fixed(plan_id, lookup_key="now"))
    end = NOW + timedelta(days=3)
    ended = test_env.prices.delete(later.id, end_date=end)
    assert (ended.status.value, ended.end_date, ended.sequence) == ("published", end, 3)
    assert test_env.prices.get(later.id).end_date == end
    archived = test_env.prices.delete(now.id)
    assert (archived.status.value, archived.end_date, archived.sequence) == ("archived", NOW, 4)
    with pytest.raises(NotFound):
        test_env.prices.get(now.id)
    assert test_env.prices.create(**fixed(plan_id, lookup_key="now")).sequence == 5
    for when, field in ((NOW - timedelta(days=1), "end_date"), (end + timedelta(days=1), "end_date")):
        with pytest.raises(ValidationError) as caught:
            test_env.prices.delete(later.id, end_date=when)
        assert caught.value.field == field
    assert later.id in {p.id for p in test_env.prices.list().items}
    clock.set(end)
    assert later.id not in {p.id for p in test_env.prices.list().items}
    assert test_env.prices.list(allow_expired_prices=True, price_ids=[later.id]).total == 1


def test_bulk_create_is_all_or_nothing(test_env: Scoped, plan_id: str, meter_id: str) -> None:
    good = fixed(plan_id, lookup_key="a")
    for items, field, error in (
        ([good, usage(plan_id, "meter_missing")], "items[1].meter_id", ValidationError),
        ([good, {**good, "currency": None}], "items[1].currency", ValidationError),
        ([good, fixed("plan_missing")], "items[1].entity_id", ValidationError),
        ([good, fixed(plan_id, lookup_key="a")], "items[1].lookup_key", AlreadyExists),
        ([], "items", ValidationError),
    ):
        with pytest.raises(error) as caught:
            test_env.prices.create_bulk(items)
        assert caught.value.details["field"] == field, caught.value.message
        assert count_all(test_env) == 0
    created = test_env.prices.create_bulk([good, usage(plan_id, meter_id), fixed(plan_id, amount="3")])
    assert [p.sequence for p in created] == [1, 2, 3] and created[2].amount == 3
    assert count_all(test_env) == 3


def test_shared_owner_functions(test_env: Scoped, plan_id: str) -> None:
    first = test_env.prices.create(**fixed(plan_id, lookup_key="k"))
    # A USAGE price without a meter is refused by the model itself; one naming a meter that does
    # not exist gets as far as add_owned_price, which names the field under the owner's prefix.
    with pytest.raises(ValidationError) as caught:
        svc.PriceInput.model_validate(fixed(plan_id, type="USAGE", invoice_cadence="ARREAR"))
    assert caught.value.field == "meter_id"
    data = svc.PriceInput.model_validate(
        fixed(plan_id, type="USAGE", invoice_cadence="ARREAR", meter_id="meter_missing")
    )
    with pytest.raises(ValidationError) as caught:
        test_env.run(
            svc.add_owned_price,
            data=data,
            entity_type=PriceEntityType.PLAN,
            entity_id=plan_id,
            field_prefix="prices[2].",
        )
    assert caught.value.field == "prices[2].meter_id"
    assert caught.value.details["field"] == "prices[2].meter_id"
    other_plan = stored(test_env, "plans").id

    def copy(uow: Any, ctx: Any) -> tuple[Price, int, int]:
        copied = svc.copy_price(uow, ctx, first, entity_type=PriceEntityType.PLAN, entity_id=other_plan)
        return (
            copied,
            svc.next_sequence(uow, PriceEntityType.PLAN, plan_id),
            svc.next_sequence(uow, PriceEntityType.PLAN, other_plan),
        )

    copied, next_source, next_target = test_env.run(copy)
    assert copied.id != first.id and (copied.entity_id, copied.lookup_key, copied.sequence) == (
        other_plan,
        None,
        1,
    )
    assert (copied.amount, copied.currency, copied.parent_price_id) == (first.amount, "usd", None)
    assert (next_source, next_target) == (2, 2)
    rendered = test_env.run(lambda uow, ctx: svc.price_to_dict(uow, copied, expand={"plan", "meters"}))
    assert rendered["plan"]["id"] == other_plan and rendered["meter"] is None and rendered["id"] == copied.id


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped, plan_id: str) -> None:
    price = test_env.prices.create(**fixed(plan_id, lookup_key="x"))
    for call in (prod_env.prices.get, prod_env.prices.delete):
        with pytest.raises(NotFound):
            call(price.id)
    with pytest.raises(NotFound):
        prod_env.prices.update(price.id, description="x")
    with pytest.raises(NotFound):
        prod_env.prices.get_by_lookup_key("x")
    assert prod_env.prices.list().total == 0
    # a plan of another environment is not an owner here
    with pytest.raises(ValidationError) as caught:
        prod_env.prices.create(**fixed(plan_id))
    assert caught.value.field == "entity_id"


def test_reader_reads_but_cannot_write(
    billing: Billing, setup: BootstrapResult, test_env: Scoped, plan_id: str
) -> None:
    price = test_env.prices.create(**fixed(plan_id))
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.prices.get(price.id).id == price.id and reader.prices.list().total == 1
    for call in (
        lambda: reader.prices.create(**fixed(plan_id)),
        lambda: reader.prices.create_bulk([fixed(plan_id)]),
        lambda: reader.prices.update(price.id, description="x"),
        lambda: reader.prices.delete(price.id),
    ):
        with pytest.raises(PermissionDenied):
            call()
    assert test_env.prices.get(price.id).description is None
