"""Customers through the public API, on every store."""

from __future__ import annotations

from datetime import timedelta

import pytest

from billingkit import (
    Actor,
    AlreadyExists,
    Billing,
    NotFound,
    PermissionDenied,
    Role,
    Scoped,
    Status,
    TestClock,
    ValidationError,
)
from billingkit.services.customers import CustomerCreate


def test_create_then_read_back_every_field(test_env: Scoped) -> None:
    created = test_env.customers.create(
        external_id="  acme-1 ",
        name="Acme Corp",
        email="billing@acme.test",
        contact="+1 555 0100",
        timezone="America/New_York",
        address_line1="1 Main St",
        address_line2="Floor 2",
        address_city="Springfield",
        address_state="IL",
        address_postal_code="62701",
        address_country="us",
        metadata={"segment": "smb"},
    )
    assert created.id.startswith("cust_")
    assert created.external_id == "acme-1"  # surrounding whitespace is stripped
    assert created.address_country == "US"
    loaded = test_env.customers.get(created.id)
    assert loaded == created
    assert test_env.customers.get_by_external_id("acme-1") == created
    assert loaded.tenant_id == test_env.tenant_id and loaded.environment_id == test_env.environment_id
    assert loaded.created_by == "system" and loaded.status is Status.PUBLISHED


def test_typed_request_model_is_accepted(test_env: Scoped) -> None:
    created = test_env.customers.create(CustomerCreate(external_id="x", name="X"))
    assert created.timezone == "UTC" and created.metadata == {}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": "No external id"}, "external_id"),
        ({"external_id": "a"}, "name"),
        ({"external_id": "", "name": "Empty"}, "external_id"),
        ({"external_id": "a", "name": "A", "email": "not-an-email"}, "email"),
        ({"external_id": "a", "name": "A", "timezone": "Mars/Olympus"}, "timezone"),
        ({"external_id": "a", "name": "A", "address_country": "USA"}, "address_country"),
        ({"external_id": "a", "name": "A", "metadata": {"k": 1}}, "metadata.k"),
        ({"external_id": 7, "name": "A"}, "external_id"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, fields: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        test_env.customers.create(**fields)
    assert info.value.field == field
    assert info.value.code == "validation_error"
    assert test_env.customers.list().total == 0
    assert test_env.notifications.list().total == 0


def test_external_id_unique_among_live_customers(test_env: Scoped, prod_env: Scoped) -> None:
    first = test_env.customers.create(external_id="dup", name="First")
    with pytest.raises(AlreadyExists):
        test_env.customers.create(external_id="dup", name="Second")
    prod_env.customers.create(external_id="dup", name="Other environment")
    test_env.customers.delete(first.id)
    again = test_env.customers.create(external_id="dup", name="Reused after delete")
    assert test_env.customers.get_by_external_id("dup") == again


def test_update_changes_only_given_fields_and_can_clear(test_env: Scoped, clock: TestClock) -> None:
    c = test_env.customers.create(external_id="u", name="Before", email="a@b.io", metadata={"k": "v"})
    clock.advance(minutes=5)
    updated = test_env.customers.update(c.id, name="After", email=None)
    assert (updated.name, updated.email, updated.metadata) == ("After", None, {"k": "v"})
    assert updated.updated_at == c.updated_at + timedelta(minutes=5)
    assert updated.created_at == c.created_at
    assert test_env.customers.get(c.id) == updated
    with pytest.raises(ValidationError) as info:
        test_env.customers.update(c.id, name=None)
    assert info.value.field == "name"


def test_update_to_a_taken_external_id_is_refused(test_env: Scoped) -> None:
    test_env.customers.create(external_id="a", name="A")
    b = test_env.customers.create(external_id="b", name="B")
    with pytest.raises(AlreadyExists):
        test_env.customers.update(b.id, external_id="a")
    assert test_env.customers.get(b.id).external_id == "b"


def test_delete_is_soft(test_env: Scoped) -> None:
    c = test_env.customers.create(external_id="d", name="D")
    deleted = test_env.customers.delete(c.id)
    assert deleted.status is Status.ARCHIVED
    with pytest.raises(NotFound):
        test_env.customers.get(c.id)
    with pytest.raises(NotFound):
        test_env.customers.get_by_external_id("d")
    with pytest.raises(NotFound):
        test_env.customers.delete(c.id)
    assert test_env.customers.list().total == 0
    archived = test_env.customers.list(status=Status.ARCHIVED)
    assert [x.id for x in archived.items] == [c.id]


def test_list_and_search(test_env: Scoped, clock: TestClock) -> None:
    made = []
    for i in range(7):
        clock.advance(seconds=1)
        made.append(
            test_env.customers.create(
                external_id=f"c{i}",
                name=f"Customer {i}",
                email=f"c{i}@x.io",
                metadata={"region": "eu" if i % 2 else "us"},
            )
        )
    page = test_env.customers.list(limit=3, offset=3)
    assert page.total == 7 and [c.external_id for c in page.items] == ["c3", "c2", "c1"]
    assert [
        c.external_id for c in test_env.customers.search(metadata={"region": "eu"}, order="asc").items
    ] == ["c1", "c3", "c5"]
    assert test_env.customers.search(external_ids=["c0", "c6", "nope"]).total == 2
    assert test_env.customers.search(email="c4@x.io").items[0].id == made[4].id
    found = test_env.customers.search(
        filters=[
            {
                "field": "name",
                "operator": "contains",
                "data_type": "string",
                "value": {"string": "customer 5"},
            }
        ]
    )
    assert [c.external_id for c in found.items] == ["c5"]
    newer = test_env.customers.search(start_time=made[5].created_at)
    assert {c.external_id for c in newer.items} == {"c5", "c6"}
    by_name = test_env.customers.search(sort=[{"field": "name", "direction": "asc"}], limit=2)
    assert [c.name for c in by_name.items] == ["Customer 0", "Customer 1"]
    with pytest.raises(ValidationError):
        test_env.customers.search(sort=[{"field": "password", "direction": "asc"}])
    with pytest.raises(ValidationError):
        test_env.customers.search(limit=1001)


def test_notifications_are_recorded_with_payload(test_env: Scoped, billing: Billing) -> None:
    delivered = []
    unsubscribe = billing.subscribe("customer.updated", delivered.append)
    c = test_env.customers.create(external_id="n", name="N")
    test_env.customers.update(c.id, name="N2")
    test_env.customers.delete(c.id)
    unsubscribe()
    test_env.customers.create(external_id="n2", name="After unsubscribe")
    events = test_env.notifications.list(entity_id=c.id).items
    assert [e.event_type for e in events] == ["customer.created", "customer.updated", "customer.deleted"]
    assert events[1].payload["event_type"] == "customer.updated"
    assert events[1].payload["customer"]["name"] == "N2"
    assert events[2].payload["customer"]["status"] == "archived"
    assert [e.payload["customer"]["name"] for e in delivered] == ["N2"]


def test_failed_call_records_no_notification(test_env: Scoped) -> None:
    test_env.customers.create(external_id="same", name="A")
    with pytest.raises(AlreadyExists):
        test_env.customers.create(external_id="same", name="B")
    assert test_env.notifications.list(event_type="customer.created").total == 1


def test_other_environment_and_tenant_cannot_see(
    billing: Billing, test_env: Scoped, prod_env: Scoped
) -> None:
    c = test_env.customers.create(external_id="secret", name="S")
    other_tenant = billing.bootstrap(tenant_name="Other", owner_email="o@other.test")
    stranger = billing.scope(other_tenant.tenant.id, other_tenant.environments[0][0].id)
    for scope in (prod_env, stranger):
        with pytest.raises(NotFound):
            scope.customers.get(c.id)
        with pytest.raises(NotFound):
            scope.customers.get_by_external_id("secret")
        with pytest.raises(NotFound):
            scope.customers.update(c.id, name="hijack")
        with pytest.raises(NotFound):
            scope.customers.delete(c.id)
        assert scope.customers.list().total == 0
    assert test_env.customers.get(c.id).name == "S"


def test_roles_are_checked_in_process(billing: Billing, test_env: Scoped) -> None:
    c = test_env.customers.create(external_id="r", name="R")
    reader = billing.scope(
        test_env.tenant_id, test_env.environment_id, actor=Actor("user_r", (Role.ALL_READER,))
    )
    assert reader.customers.get(c.id) == c
    with pytest.raises(PermissionDenied):
        reader.customers.create(external_id="r2", name="R2")
    ingestor = billing.scope(
        test_env.tenant_id, test_env.environment_id, actor=Actor("svc", (Role.EVENT_INGESTOR,))
    )
    with pytest.raises(PermissionDenied):
        ingestor.customers.get(c.id)
    assert test_env.customers.list().total == 1


def test_several_billing_objects_share_nothing() -> None:
    one, two = Billing(), Billing()
    a = one.bootstrap()
    b = two.bootstrap()
    one.scope(a.tenant.id, a.environments[0][0].id).customers.create(external_id="x", name="X")
    assert two.scope(b.tenant.id, b.environments[0][0].id).customers.list().total == 0
    with pytest.raises(Exception) as info:
        two.authenticate(a.environments[0][1].api_key)
    assert info.value.__class__.__name__ == "Unauthorized"
