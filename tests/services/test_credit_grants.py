"""Credit grants through the library, on every store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, NotFound, PermissionDenied, Scoped, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.catalog import CreditGrantScope
from billingkit.domain.resources import Status
from billingkit.services.access import BootstrapResult
from billingkit.services.credit_grants import (
    CreditGrantInput,
    add_owned_credit_grant,
    copy_credit_grant,
    credit_grants_of,
)
from tests.services.conftest import stored


@dataclass
class Owners:
    plan: str
    addon: str
    archived_plan: str
    prod_plan: str


def _add(billing: Billing, tenant_id: str, env_id: str, kind: str, **fields: Any) -> str:
    return str(stored(billing.scope(tenant_id, env_id), kind, **fields).id)


@pytest.fixture
def owners(billing: Billing, setup: BootstrapResult) -> Owners:
    t = setup.tenant.id
    env = setup.environments[0][0].id
    return Owners(
        plan=_add(billing, t, env, "plans"),
        addon=_add(billing, t, env, "addons"),
        archived_plan=_add(billing, t, env, "plans", status=Status.ARCHIVED),
        prod_plan=_add(billing, t, setup.environments[1][0].id, "plans"),
    )


def _grant(owners: Owners, **fields: Any) -> dict[str, Any]:
    return {
        "name": "Monthly credits",
        "scope": "PLAN",
        "plan_id": owners.plan,
        "credits": "100.50",
        "cadence": "ONETIME",
        **fields,
    }


def test_create_reads_back_every_field(test_env: Scoped, owners: Owners, clock: Any) -> None:
    start = datetime(2026, 6, 1, tzinfo=UTC)
    end = datetime(2027, 6, 1, tzinfo=UTC)
    g = test_env.credit_grants.create(
        **_grant(
            owners,
            cadence="RECURRING",
            period="MONTHLY",
            period_count=2,
            expiration_type="DURATION",
            expiration_duration=30,
            expiration_duration_unit="DAY",
            priority=1,
            conversion_rate="0.5",
            topup_conversion_rate="2",
            start_date=start,
            end_date=end,
            metadata={"k": "v"},
        )
    )
    assert g.id.startswith("cg_") and g.owner_id == owners.plan
    assert (g.name, g.scope.value, g.plan_id, g.addon_id, g.subscription_id) == (
        "Monthly credits",
        "PLAN",
        owners.plan,
        None,
        None,
    )
    assert (g.credits, g.cadence.value, g.period, g.period_count) == (
        Decimal("100.50"),
        "RECURRING",
        "MONTHLY",
        2,
    )
    assert (g.expiration_type.value, g.expiration_duration, g.expiration_duration_unit) == (
        "DURATION",
        30,
        "DAY",
    )
    assert (g.priority, g.conversion_rate, g.topup_conversion_rate) == (1, Decimal("0.5"), Decimal(2))
    assert (g.start_date, g.end_date, g.metadata, g.created_at) == (start, end, {"k": "v"}, clock.now())
    assert g.to_dict()["credits"] == "100.50"
    assert test_env.credit_grants.get(g.id) == g

    addon = test_env.credit_grants.create(
        **_grant(owners, scope="ADDON", plan_id=None, addon_id=owners.addon)
    )
    assert (addon.scope.value, addon.addon_id, addon.plan_id, addon.expiration_type.value) == (
        "ADDON",
        owners.addon,
        None,
        "NEVER",
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"credits": "0"}, "credits"),
        ({"credits": "-1"}, "credits"),
        ({"credits": 1.5}, "credits"),
        ({"name": ""}, "name"),
        ({"cadence": "WEEKLY"}, "cadence"),
        ({"cadence": "RECURRING"}, "period"),
        ({"period": "MONTHLY"}, "period"),
        ({"cadence": "RECURRING", "period": "MONTHLY", "period_count": 0}, "period_count"),
        ({"expiration_type": "DURATION"}, "expiration_duration"),
        ({"expiration_type": "DURATION", "expiration_duration": 3}, "expiration_duration_unit"),
        ({"conversion_rate": "0"}, "conversion_rate"),
        ({"topup_conversion_rate": "-2"}, "topup_conversion_rate"),
        ({"priority": -1}, "priority"),
        (
            {"start_date": datetime(2026, 2, 1, tzinfo=UTC), "end_date": datetime(2026, 1, 1, tzinfo=UTC)},
            "end_date",
        ),
        ({"scope": "SUBSCRIPTION", "plan_id": None, "subscription_id": "subs_1"}, "scope"),
        ({"scope": "GLOBAL"}, "scope"),
        ({"plan_id": None}, "plan_id"),
        ({"plan_id": "plan_missing"}, "plan_id"),
        ({"plan_id": "@archived"}, "plan_id"),
        ({"plan_id": "@prod"}, "plan_id"),
        ({"addon_id": "@addon"}, "addon_id"),
        ({"scope": "ADDON"}, "plan_id"),
        ({"scope": "ADDON", "plan_id": None}, "addon_id"),
        ({"scope": "ADDON", "plan_id": None, "addon_id": "@plan"}, "addon_id"),
        ({"subscription_id": "subs_1"}, "subscription_id"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, owners: Owners, fields: dict[str, Any], field: str
) -> None:
    refs = {
        "@archived": owners.archived_plan,
        "@prod": owners.prod_plan,
        "@addon": owners.addon,
        "@plan": owners.plan,
    }
    body = {k: refs.get(v, v) if isinstance(v, str) else v for k, v in _grant(owners, **fields).items()}
    with pytest.raises(ValidationError) as caught:
        test_env.credit_grants.create(**{k: v for k, v in body.items() if v is not None})
    assert caught.value.field == field
    assert test_env.credit_grants.list(status=None).total == 0


def test_update_changes_name_metadata_and_end_date_only(test_env: Scoped, owners: Owners, clock: Any) -> None:
    g = test_env.credit_grants.create(**_grant(owners, start_date=datetime(2026, 6, 1, tzinfo=UTC)))
    assert test_env.credit_grants.update(g.id) == g
    clock.advance(minutes=1)
    end = datetime(2026, 12, 1, tzinfo=UTC)
    with pytest.raises(ValidationError) as refused:  # the amount is fixed at creation
        test_env.credit_grants.update(g.id, name="Renamed", credits="5")
    assert refused.value.field == "credits"
    assert refused.value.details["accepted_fields"] == ["end_date", "metadata", "name"]
    changed = test_env.credit_grants.update(g.id, name="Renamed", metadata={"a": "b"}, end_date=end)
    assert (changed.name, changed.metadata, changed.end_date, changed.credits) == (
        "Renamed",
        {"a": "b"},
        end,
        Decimal("100.50"),
    )
    assert changed.updated_at == clock.now()
    for fields, field in (
        ({"name": None}, "name"),
        ({"metadata": None}, "metadata"),
        ({"end_date": datetime(2026, 1, 1, tzinfo=UTC)}, "end_date"),
    ):
        with pytest.raises(ValidationError) as caught:
            test_env.credit_grants.update(g.id, **fields)
        assert caught.value.field == field
    assert test_env.credit_grants.update(g.id, end_date=None).end_date is None


def test_list_filters_and_delete(test_env: Scoped, owners: Owners) -> None:
    a = test_env.credit_grants.create(**_grant(owners))
    b = test_env.credit_grants.create(**_grant(owners, scope="ADDON", plan_id=None, addon_id=owners.addon))

    def ids(**fields: Any) -> list[str]:
        return [g.id for g in test_env.credit_grants.list(order="asc", **fields).items]

    assert ids() == [a.id, b.id]
    assert ids(plan_ids=[owners.plan]) == [a.id]
    assert ids(addon_ids=[owners.addon]) == [b.id]
    assert ids(scope="ADDON") == [b.id]
    assert ids(credit_grant_ids=[a.id]) == [a.id]
    deleted = test_env.credit_grants.delete(a.id)
    assert deleted.status is Status.ARCHIVED
    with pytest.raises(NotFound):
        test_env.credit_grants.get(a.id)
    with pytest.raises(NotFound):
        test_env.credit_grants.delete(a.id)
    assert ids() == [b.id]


def test_shared_functions_for_plans_and_addons(
    billing: Billing, setup: BootstrapResult, owners: Owners, clock: Any
) -> None:
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    data = CreditGrantInput(name="G", credits="10", cadence="ONETIME")
    first = scoped.run(
        lambda uow, ctx: add_owned_credit_grant(
            uow, ctx, data, scope=CreditGrantScope.PLAN, owner_id=owners.plan
        )
    )
    clock.advance(seconds=1)

    def run(uow: Any, ctx: Any) -> Any:
        second = add_owned_credit_grant(
            uow, ctx, data.model_copy(update={"name": "H"}), scope=CreditGrantScope.PLAN, owner_id=owners.plan
        )
        copied = copy_credit_grant(uow, ctx, first, scope=CreditGrantScope.ADDON, owner_id=owners.addon)
        return second, copied, credit_grants_of(uow, CreditGrantScope.PLAN, owners.plan)

    second, copied, owned = scoped.run(run)
    assert [g.id for g in owned] == [first.id, second.id]
    assert {g.name for g in owned} == {"G", "H"}
    assert (copied.scope.value, copied.addon_id, copied.plan_id, copied.credits) == (
        "ADDON",
        owners.addon,
        None,
        Decimal(10),
    )
    assert copied.id not in (first.id, second.id)
    assert scoped.run(lambda uow, ctx: credit_grants_of(uow, CreditGrantScope.ADDON, owners.addon)) == [
        copied
    ]

    def failing(uow: Any, ctx: Any) -> Any:
        bad = CreditGrantInput(name="G", credits="0", cadence="ONETIME")
        return add_owned_credit_grant(
            uow, ctx, bad, scope=CreditGrantScope.PLAN, owner_id=owners.plan, field_prefix="credit_grants[0]."
        )

    with pytest.raises(ValidationError) as caught:
        scoped.run(failing)
    assert caught.value.field == "credit_grants[0].credits"


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped, owners: Owners) -> None:
    g = test_env.credit_grants.create(**_grant(owners))
    for call in (prod_env.credit_grants.get, prod_env.credit_grants.delete):
        with pytest.raises(NotFound):
            call(g.id)
    with pytest.raises(NotFound):
        prod_env.credit_grants.update(g.id, name="x")
    assert prod_env.credit_grants.list().total == 0


def test_reader_reads_but_cannot_write(
    billing: Billing, setup: BootstrapResult, test_env: Scoped, owners: Owners
) -> None:
    g = test_env.credit_grants.create(**_grant(owners))
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.credit_grants.get(g.id) == g
    assert reader.credit_grants.list().total == 1
    with pytest.raises(PermissionDenied):
        reader.credit_grants.create(**_grant(owners))
    with pytest.raises(PermissionDenied):
        reader.credit_grants.update(g.id, name="x")
    with pytest.raises(PermissionDenied):
        reader.credit_grants.delete(g.id)
