"""Groups through the library, on every store."""

from __future__ import annotations

from typing import Any

import pytest

from billingkit import AlreadyExists, Billing, NotFound, PermissionDenied, Scoped, TestClock, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.catalog import Price
from billingkit.services.access import BootstrapResult


def stored_price(scoped: Scoped, **fields: Any) -> Price:
    """A live price written straight to storage (the prices service is tested on its own)."""
    now = scoped.billing.clock.now()
    price = Price.model_validate(
        {
            "id": scoped.billing.ids.new("price"),
            "tenant_id": scoped.tenant_id,
            "environment_id": scoped.environment_id,
            "created_at": now,
            "updated_at": now,
            "created_by": "test",
            "updated_by": "test",
            "entity_type": "PLAN",
            "entity_id": "plan_x",
            "type": "USAGE" if fields.get("meter_id") else "FIXED",
            "billing_model": "FLAT_FEE",
            "billing_period": "MONTHLY",
            "invoice_cadence": "ARREAR",
            "currency": "usd",
            "amount": "1",
            **fields,
        }
    )
    with scoped.billing.storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
        uow.prices.add(price)
        uow.commit()
    return price


def read_price(scoped: Scoped, price_id: str) -> Price:
    with scoped.billing.storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
        return uow.prices.get(price_id)


def test_create_read_every_field(test_env: Scoped) -> None:
    group = test_env.groups.create(name="AI", lookup_key="ai", entity_type="feature", metadata={"a": "b"})
    g = group.group
    assert (g.id[:6], g.name, g.lookup_key, g.entity_type.value, g.metadata, g.status.value) == (
        "group_",
        "AI",
        "ai",
        "feature",
        {"a": "b"},
        "published",
    )
    assert group.entity_ids == ()
    assert test_env.groups.get(g.id) == group
    body = group.to_dict()
    assert body["entity_ids"] == [] and body["lookup_key"] == "ai" and body["entity_type"] == "feature"


def test_feature_members_join_and_leave(test_env: Scoped, clock: TestClock) -> None:
    a = test_env.features.create(name="A", type="boolean")
    clock.advance(seconds=1)
    b = test_env.features.create(name="B", type="static")
    group = test_env.groups.create(
        name="G", lookup_key="g", entity_type="feature", entity_ids=[b.id, a.id, b.id]
    )
    assert group.entity_ids == (a.id, b.id)
    assert test_env.features.get(a.id).group_id == group.group.id
    assert test_env.groups.get(group.group.id).to_dict()["entity_ids"] == [a.id, b.id]

    # a member moves when it joins another group
    other = test_env.groups.create(name="H", lookup_key="h", entity_type="feature")
    assert test_env.groups.add_members(other.group.id, [a.id]).entity_ids == (a.id,)
    assert test_env.groups.get(group.group.id).entity_ids == (b.id,)

    # archived features are not members any more
    test_env.features.delete(b.id)
    assert test_env.groups.get(group.group.id).entity_ids == ()

    deleted = test_env.groups.delete(other.group.id)
    assert deleted.status.value == "archived"
    assert test_env.features.get(a.id).group_id is None
    with pytest.raises(NotFound):
        test_env.groups.get(other.group.id)
    # the lookup key of a deleted group can be used again
    assert test_env.groups.create(name="H2", lookup_key="h", entity_type="feature").group.name == "H2"


def test_price_members(test_env: Scoped) -> None:
    p1 = stored_price(test_env)
    p2 = stored_price(test_env, lookup_key="p2")
    group = test_env.groups.create(name="P", lookup_key="p", entity_type="price", entity_ids=[p1.id])
    assert group.entity_ids == (p1.id,) and read_price(test_env, p1.id).group_id == group.group.id
    assert test_env.groups.add_members(group.group.id, [p2.id]).entity_ids == (p1.id, p2.id)
    test_env.groups.delete(group.group.id)
    assert read_price(test_env, p1.id).group_id is None and read_price(test_env, p2.id).group_id is None


def test_membership_changes_record_feature_updated(test_env: Scoped) -> None:
    f = test_env.features.create(name="A", type="boolean")
    group = test_env.groups.create(name="G", lookup_key="g", entity_type="feature", entity_ids=[f.id])
    test_env.groups.delete(group.group.id)
    events = test_env.notifications.list(entity_id=f.id).items
    assert [e.event_type for e in events] == ["feature.created", "feature.updated", "feature.updated"]
    assert [e.payload["feature"]["group_id"] for e in events] == [None, group.group.id, None]


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"entity_type": "plan"}, "entity_type"),
        ({"lookup_key": ""}, "lookup_key"),
        ({"name": None}, "name"),
        ({"entity_ids": ["feat_missing"]}, "entity_ids[0]"),
        ({"metadata": {"k": 1}}, "metadata.k"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, patch: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.groups.create(**{"name": "G", "lookup_key": "g", "entity_type": "feature", **patch})
    assert caught.value.field == field
    assert test_env.groups.list(status=None).total == 0


def test_members_must_be_live_entities_of_the_group_type(test_env: Scoped) -> None:
    f = test_env.features.create(name="A", type="boolean")
    gone = test_env.features.create(name="B", type="boolean")
    test_env.features.delete(gone.id)
    price = stored_price(test_env)
    for entity_type, ids, field in (
        ("feature", [f.id, price.id], "entity_ids[1]"),
        ("price", [price.id, f.id], "entity_ids[1]"),
        ("feature", [gone.id], "entity_ids[0]"),
    ):
        with pytest.raises(ValidationError) as caught:
            test_env.groups.create(name="G", lookup_key="g", entity_type=entity_type, entity_ids=ids)
        assert caught.value.field == field
    assert test_env.groups.list().total == 0
    assert test_env.features.get(f.id).group_id is None and read_price(test_env, price.id).group_id is None
    group = test_env.groups.create(name="G", lookup_key="g", entity_type="feature")
    with pytest.raises(ValidationError) as caught:
        test_env.groups.add_members(group.group.id, [f.id, "feat_nope"])
    assert caught.value.field == "entity_ids[1]"
    assert test_env.features.get(f.id).group_id is None


def test_lookup_key_unique_among_live_groups(test_env: Scoped, prod_env: Scoped) -> None:
    test_env.groups.create(name="A", lookup_key="k", entity_type="feature")
    with pytest.raises(AlreadyExists):
        test_env.groups.create(name="B", lookup_key="k", entity_type="price")
    prod_env.groups.create(name="A", lookup_key="k", entity_type="feature")
    assert test_env.groups.list().total == 1


def test_list_and_search(test_env: Scoped, clock: TestClock) -> None:
    f = test_env.features.create(name="A", type="boolean")
    a = test_env.groups.create(name="Compute", lookup_key="compute", entity_type="feature", entity_ids=[f.id])
    clock.advance(seconds=1)
    b = test_env.groups.create(name="Storage", lookup_key="storage", entity_type="price")
    page = test_env.groups.list()
    assert [d.group.id for d in page.items] == [b.group.id, a.group.id] and page.total == 2
    assert page.items[1].entity_ids == (f.id,) and page.items[0].entity_ids == ()
    assert [d.group.id for d in test_env.groups.search(entity_type="price").items] == [b.group.id]
    assert [d.group.id for d in test_env.groups.search(name="comp").items] == [a.group.id]
    assert [d.group.id for d in test_env.groups.search(lookup_key="storage").items] == [b.group.id]
    assert [d.group.id for d in test_env.groups.search(group_ids=[a.group.id]).items] == [a.group.id]


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped) -> None:
    group = test_env.groups.create(name="A", lookup_key="k", entity_type="feature")
    for call in (prod_env.groups.get, prod_env.groups.delete):
        with pytest.raises(NotFound):
            call(group.group.id)
    with pytest.raises(NotFound):
        prod_env.groups.add_members(group.group.id, [])
    assert prod_env.groups.list().total == 0


def test_reader_reads_but_cannot_write(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    group = test_env.groups.create(name="A", lookup_key="k", entity_type="feature")
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.groups.get(group.group.id) == group
    for call in (
        lambda: reader.groups.create(name="B", lookup_key="b", entity_type="feature"),
        lambda: reader.groups.add_members(group.group.id, []),
        lambda: reader.groups.delete(group.group.id),
    ):
        with pytest.raises(PermissionDenied):
            call()
