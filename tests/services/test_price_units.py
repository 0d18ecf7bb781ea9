"""Custom pricing units through the library, on every store."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import (
    AlreadyExists,
    Billing,
    InvalidOperation,
    NotFound,
    PermissionDenied,
    Scoped,
    ValidationError,
)
from billingkit.domain.access import Actor, Role
from billingkit.services.access import BootstrapResult
from billingkit.testing.contracts.storage import sample

CREDITS = {
    "code": "credits",
    "name": "Credits",
    "symbol": "CR",
    "base_currency": "USD",
    "conversion_rate": "0.01",
    "metadata": {"a": "b"},
}


def test_create_read_update_delete(test_env: Scoped) -> None:
    unit = test_env.price_units.create(**{**CREDITS, "code": "  credits "})
    assert unit.id.startswith("priceunit_") and unit.status.value == "published"
    assert (unit.code, unit.name, unit.symbol, unit.base_currency, unit.conversion_rate, unit.metadata) == (
        "credits",
        "Credits",
        "CR",
        "usd",
        Decimal("0.01"),
        {"a": "b"},
    )
    assert (unit.created_by, unit.created_at) == ("system", datetime(2026, 5, 1, 9, 30, tzinfo=UTC))
    assert unit.to_dict()["conversion_rate"] == "0.01"
    assert test_env.price_units.get(unit.id) == unit
    assert test_env.price_units.get_by_code("credits") == unit
    with pytest.raises(NotFound):
        test_env.price_units.get_by_code("Credits")  # codes are exact

    with pytest.raises(ValidationError) as refused:  # the rate is fixed at creation
        test_env.price_units.update(unit.id, name="Tokens", conversion_rate="5")
    assert refused.value.field == "conversion_rate"
    assert test_env.price_units.get(unit.id) == unit
    changed = test_env.price_units.update(unit.id, name="Tokens", metadata={"x": "y"})
    assert (changed.name, changed.metadata, changed.conversion_rate, changed.code) == (
        "Tokens",
        {"x": "y"},
        Decimal("0.01"),
        "credits",
    )
    with pytest.raises(ValidationError) as caught:
        test_env.price_units.update(unit.id, name=None)
    assert caught.value.field == "name"

    tokens = test_env.price_units.create(**{**CREDITS, "code": "tokens"})
    listed = test_env.price_units.list(order="asc")
    assert [u.code for u in listed.items] == ["credits", "tokens"] and listed.total == 2
    assert [u.id for u in test_env.price_units.search(price_unit_ids=[tokens.id]).items] == [tokens.id]
    assert [u.id for u in test_env.price_units.list(codes=["credits"]).items] == [unit.id]

    assert test_env.price_units.delete(unit.id).status.value == "archived"
    with pytest.raises(NotFound):
        test_env.price_units.get(unit.id)
    with pytest.raises(NotFound):
        test_env.price_units.get_by_code("credits")
    assert test_env.price_units.list(status="archived").total == 1
    # a deleted unit's code can be used again
    assert test_env.price_units.create(**CREDITS).code == "credits"


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"code": ""}, "code"),
        ({"code": "   "}, "code"),
        ({"code": "x" * 33}, "code"),
        ({"name": None}, "name"),
        ({"symbol": ""}, "symbol"),
        ({"base_currency": "dollars"}, "base_currency"),
        ({"conversion_rate": "0"}, "conversion_rate"),
        ({"conversion_rate": "-1"}, "conversion_rate"),
        ({"conversion_rate": 0.5}, "conversion_rate"),
        ({"conversion_rate": None}, "conversion_rate"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, patch: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.price_units.create(**{**CREDITS, **patch})
    assert caught.value.field == field
    assert test_env.price_units.list(status=None).total == 0


def test_code_unique_among_live_units_of_an_environment(test_env: Scoped, prod_env: Scoped) -> None:
    test_env.price_units.create(**CREDITS)
    with pytest.raises(AlreadyExists):
        test_env.price_units.create(**CREDITS)
    assert prod_env.price_units.create(**CREDITS).code == "credits"


def test_unit_in_use_cannot_be_deleted(test_env: Scoped) -> None:
    unit = test_env.price_units.create(**CREDITS)
    plan = sample("plans", test_env.tenant_id, str(test_env.environment_id))
    with test_env.billing.storage.unit_of_work(test_env.tenant_id, test_env.environment_id) as uow:
        uow.plans.add(plan)
        uow.commit()
    price = test_env.prices.create(
        entity_type="PLAN",
        entity_id=plan.id,
        currency="usd",
        type="FIXED",
        billing_model="FLAT_FEE",
        billing_period="MONTHLY",
        invoice_cadence="ADVANCE",
        price_unit_type="CUSTOM",
        price_unit_config={"price_unit": "credits", "amount": "100"},
    )
    with pytest.raises(InvalidOperation):
        test_env.price_units.delete(unit.id)
    assert test_env.price_units.get(unit.id) == unit
    test_env.prices.delete(price.id)
    assert test_env.price_units.delete(unit.id).status.value == "archived"


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped) -> None:
    unit = test_env.price_units.create(**CREDITS)
    for call in (prod_env.price_units.get, prod_env.price_units.delete):
        with pytest.raises(NotFound):
            call(unit.id)
    with pytest.raises(NotFound):
        prod_env.price_units.get_by_code("credits")
    with pytest.raises(NotFound):
        prod_env.price_units.update(unit.id, name="x")
    assert prod_env.price_units.list().total == 0


def test_reader_reads_but_cannot_write(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    unit = test_env.price_units.create(**CREDITS)
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.price_units.get(unit.id) == unit and reader.price_units.list().total == 1
    for call in (
        lambda: reader.price_units.create(**{**CREDITS, "code": "other"}),
        lambda: reader.price_units.update(unit.id, name="x"),
        lambda: reader.price_units.delete(unit.id),
    ):
        with pytest.raises(PermissionDenied):
            call()
