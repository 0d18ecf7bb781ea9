"""The rules of an environment clone, on the memory store (the copy itself is proven on every
store by test_environment_clone.py): what is refused, who may clone, what is left out, and that a
failure writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from billingkit import (
    Actor,
    Billing,
    InvalidOperation,
    NotFound,
    PermissionDenied,
    Scoped,
    ValidationError,
)
from billingkit.domain.access import Role
from billingkit.domain.resources import Status
from billingkit.services import environment_clone
from billingkit.services.access import BootstrapResult
from billingkit.storage.memory import MemoryStorage
from tests.services.test_environment_clone import build_catalogue


@pytest.fixture
def storage():  # type: ignore[no-untyped-def]
    store = MemoryStorage()
    yield store
    store.close()


@pytest.fixture
def source(billing: Billing, setup: BootstrapResult) -> Scoped:
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


@pytest.fixture
def made(source: Scoped) -> dict[str, Any]:
    return build_catalogue(source)


def _environment_names(billing: Billing, setup: BootstrapResult) -> list[str]:
    return sorted(e.name for e in billing.scope(setup.tenant.id).environments.list().items)


def test_a_new_environment_needs_a_name_and_a_type(source: Scoped) -> None:
    with pytest.raises(ValidationError, match="name is required"):
        source.environments.clone(source.environment_id, type="development")
    with pytest.raises(ValidationError, match="type is required"):
        source.environments.clone(source.environment_id, name="staging")
    with pytest.raises(ValidationError) as bad_type:
        source.environments.clone(source.environment_id, name="staging", type="sandbox")
    assert bad_type.value.field == "type"


def test_unknown_source_or_target_and_the_source_as_target(
    billing: Billing, setup: BootstrapResult, source: Scoped
) -> None:
    tenant = billing.scope(setup.tenant.id)
    with pytest.raises(NotFound):
        tenant.environments.clone("env_missing", name="x", type="development")
    with pytest.raises(NotFound):
        tenant.environments.clone(str(source.environment_id), target_environment_id="env_missing")
    with pytest.raises(ValidationError) as same:
        tenant.environments.clone(
            str(source.environment_id), target_environment_id=str(source.environment_id)
        )
    assert same.value.field == "target_environment_id"
    # Another tenant's environment is as unknown as a missing one.
    other = billing.bootstrap(tenant_name="Other", owner_email="o@other.test")
    with pytest.raises(NotFound):
        billing.scope(other.tenant.id).environments.clone(
            str(source.environment_id), name="x", type="development"
        )
    assert _environment_names(billing, setup) == ["production", "test"]


def test_a_target_with_customers_is_not_empty(
    billing: Billing, setup: BootstrapResult, source: Scoped
) -> None:
    production = billing.scope(setup.tenant.id, setup.environments[1][0].id)
    production.customers.create(external_id="c-1", name="C")
    with pytest.raises(InvalidOperation) as refused:
        source.environments.clone(
            str(source.environment_id), target_environment_id=str(production.environment_id)
        )
    assert refused.value.details["kinds"] == ["customers"]
    # An environment with API keys only (production has one) is empty.
    production.customers.delete(production.customers.get_by_external_id("c-1").id)
    done = source.environments.clone(
        str(source.environment_id), target_environment_id=str(production.environment_id)
    )
    assert done.environment.id == production.environment_id and not done.created


def test_who_may_clone(
    billing: Billing, setup: BootstrapResult, source: Scoped, made: dict[str, Any]
) -> None:
    test_id, production_id = setup.environments[0][0].id, setup.environments[1][0].id
    reader = billing.scope(setup.tenant.id, test_id, actor=Actor(id="u", roles=(Role.ALL_READER,)))
    with pytest.raises(PermissionDenied):
        reader.environments.clone(test_id, name="x", type="development")
    writer = Actor(id="w", roles=(Role.ALL_WRITER,))
    # A caller bound to the test environment (an API key of it) clones only that environment.
    bound = billing.scope(setup.tenant.id, test_id, actor=writer)
    with pytest.raises(PermissionDenied, match="inaccessible environment"):
        bound.environments.clone(production_id, name="x", type="development")
    assert bound.environments.clone(test_id, name="copy", type="development").copied["plans"] == 1
    # A caller with no environment (a session without one, the host) clones any of the tenant's.
    unbound = billing.scope(setup.tenant.id, actor=writer)
    assert unbound.environments.clone(production_id, name="prod copy", type="production").copied["plans"] == 0
    assert _environment_names(billing, setup) == ["copy", "prod copy", "production", "test"]


def test_customers_subscriptions_and_their_items_stay_behind(source: Scoped, made: dict[str, Any]) -> None:
    customer = source.customers.create(external_id="ada", name="Ada")
    source.subscriptions.create(
        customer_id=customer.id,
        plan_id=made["plan"].id,
        currency="usd",
        billing_period="MONTHLY",
        coupons=[made["coupon"].id],
    )
    source.tax_associations.create(tax_rate_code="VAT20", external_customer_id="ada")
    assert source.coupons.get(made["coupon"].id).total_redemptions == 1
    done = source.environments.clone(str(source.environment_id), name="copy", type="development")
    clone = source.billing.scope(source.tenant_id, done.environment.id)
    assert clone.customers.list().total == 0 and clone.subscriptions.list().total == 0
    assert clone.invoices.list().total == 0 and clone.wallets.search().total == 0
    assert done.copied["tax_associations"] == 1  # the tenant's, not the customer's
    assert clone.coupons.get(done.ids[made["coupon"].id]).total_redemptions == 0
    assert clone.api_keys.list().total == 0


def test_records_whose_required_reference_is_not_copied_are_left_out(
    source: Scoped, made: dict[str, Any]
) -> None:
    # The meter archived behind the services' back: the calls feature, the usage price and the
    # calls entitlement need it, so they are left out; an archived group is only cleared.
    storage = source.billing.storage
    with storage.unit_of_work(source.tenant_id, source.environment_id) as uow:
        meter = uow.meters.get(made["meter"].id)
        uow.meters.update(meter.model_copy(update={"status": Status.ARCHIVED}))
        group = uow.groups.find_one(lookup_key="usage")
        assert group is not None
        uow.groups.update(group.model_copy(update={"status": Status.ARCHIVED}))
        uow.commit()
    done = source.environments.clone(str(source.environment_id), name="copy", type="development")
    assert done.skipped == {"features": 1, "prices": 1, "entitlements": 1}
    assert (done.copied["meters"], done.copied["groups"], done.copied["features"]) == (0, 1, 1)
    clone = source.billing.scope(source.tenant_id, done.environment.id)
    plan = clone.plans.get(done.ids[made["plan"].id])
    assert [p.lookup_key for p in plan.prices] == ["pro-fee"]
    assert [clone.features.get(e.feature_id).lookup_key for e in plan.entitlements] == ["sso"]
    assert made["calls"].id not in done.ids


def test_a_failed_clone_writes_nothing(
    billing: Billing,
    setup: BootstrapResult,
    source: Scoped,
    made: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copy = environment_clone._Copier._copy

    def failing(self: Any, kind: str, item: Any) -> Any:
        if kind == "coupons":
            raise InvalidOperation("the store refused a coupon")
        return copy(self, kind, item)

    monkeypatch.setattr(environment_clone._Copier, "_copy", failing)
    with pytest.raises(InvalidOperation, match="refused a coupon"):
        source.environments.clone(str(source.environment_id), name="copy", type="development")
    assert _environment_names(billing, setup) == ["production", "test"]
    production = billing.scope(setup.tenant.id, setup.environments[1][0].id)
    with pytest.raises(InvalidOperation):
        source.environments.clone(
            str(source.environment_id), target_environment_id=str(production.environment_id)
        )
    assert production.meters.list().total == 0 and production.plans.list().total == 0
