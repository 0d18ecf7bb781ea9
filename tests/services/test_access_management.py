"""Access management through the library: searching, updating and deleting accounts, changing
roles, the caller's profile, the role catalogue, the tenant, publishable keys and ``expires_at:
never``. Logic only, on the memory store (what storage must keep: tests/services/test_access_stores.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from billingkit import (
    Billing,
    InvalidOperation,
    NotFound,
    PermissionDenied,
    Role,
    Scoped,
    TestClock,
    Unauthorized,
    ValidationError,
)
from billingkit.domain.access import ROLES, AccountType, ApiKeyType
from billingkit.services.access import BootstrapResult
from billingkit.services.access_management import SUPER_ADMIN_MESSAGE, set_tenant_suspended
from billingkit.storage.memory import MemoryStorage


@pytest.fixture
def storage() -> Iterator[MemoryStorage]:
    """Memory only (overrides the store-parametrised fixture of tests/conftest.py)."""
    store = MemoryStorage()
    yield store
    store.close()


@pytest.fixture
def owner(billing: Billing, setup: BootstrapResult) -> Scoped:
    """The owner (a human super admin) through the test environment's bootstrap key."""
    return billing.authenticate(setup.environments[0][1].api_key)


def _service_account(owner: Scoped, name: str, *roles: str) -> tuple[str, str]:
    """A service account with ``roles`` and a key for it in the owner's environment."""
    account, _ = owner.users.create(type="service_account", name=name, roles=list(roles))
    issued = owner.api_keys.create(name=f"{name} key", service_account_id=account.id)
    return account.id, issued.api_key


def _user(owner: Scoped, email: str, *roles: str) -> str:
    account, _ = owner.users.create(type="user", email=email, password="long enough", roles=list(roles))
    return account.id


# -- search --------------------------------------------------------------------------------------


def test_search_filters_by_ids_type_and_any_of_roles(owner: Scoped, setup: BootstrapResult) -> None:
    ingest, _ = _service_account(owner, "ingest", "event_ingestor")
    both, _ = _service_account(owner, "both", "event_ingestor", "event_reader")
    reader = _user(owner, "reader@acme.test", "all_reader")

    services = owner.users.search(type="service_account")
    assert {a.id for a in services.items} == {ingest, both} and services.total == 2
    assert all(a.password_hash is None for a in owner.users.search().items)
    assert [a.id for a in owner.users.search(user_ids=[reader, setup.owner.id], order="asc").items] == [
        setup.owner.id,
        reader,
    ]
    holders = owner.users.search(roles=["event_reader", "all_reader"], order="asc")
    assert [a.id for a in holders.items] == [both, reader] and holders.total == 2
    # paging applies after the roles filter, and the total counts every match
    second = owner.users.search(roles=["event_ingestor"], order="asc", limit=1, offset=1)
    assert [a.id for a in second.items] == [both] and (second.total, second.offset) == (2, 1)
    with pytest.raises(ValidationError) as unknown:
        owner.users.search(roles=["owner"])
    assert unknown.value.field == "roles"


def test_search_needs_user_read(billing: Billing, owner: Scoped) -> None:
    _, key = _service_account(owner, "ingest", "event_ingestor")
    with pytest.raises(PermissionDenied):
        billing.authenticate(key).users.search()


# -- service accounts: update and delete ---------------------------------------------------------


def test_update_service_account_renames_and_replaces_metadata(owner: Scoped, setup: BootstrapResult) -> None:
    account, _ = _service_account(owner, "ingest", "event_ingestor")
    renamed = owner.users.update(account, name="ingestion", metadata={"team": "data"})
    assert (renamed.name, renamed.metadata, renamed.roles) == (
        "ingestion",
        {"team": "data"},
        (Role.EVENT_INGESTOR,),
    )
    kept = owner.users.update(account, name="ingestion 2")
    assert kept.metadata == {"team": "data"} and owner.users.get(account).name == "ingestion 2"
    with pytest.raises(ValidationError) as human:
        owner.users.update(setup.owner.id, name="me")
    assert human.value.field == "id"
    with pytest.raises(NotFound):
        owner.users.update("user_missing", name="x")


def test_acting_on_a_service_account_needs_roles_covering_it(billing: Billing, owner: Scoped) -> None:
    admin, _ = _service_account(owner, "admin", "super_admin")
    _, writer_key = _service_account(owner, "writer", "all_writer")
    writer = billing.authenticate(writer_key)
    with pytest.raises(PermissionDenied, match="super_admin"):
        writer.users.update(admin, name="mine now")
    with pytest.raises(PermissionDenied):
        writer.users.delete(admin)
    assert owner.users.get(admin).name == "admin"


def test_deleting_a_service_account_revokes_its_keys_everywhere(
    billing: Billing, owner: Scoped, setup: BootstrapResult
) -> None:
    account, key = _service_account(owner, "ingest", "event_ingestor")
    production = billing.authenticate(setup.environments[1][1].api_key)
    prod_key = production.api_keys.create(name="prod", service_account_id=account).api_key
    billing.authenticate(key)  # cached now: revocation must reach the cache too
    deleted = owner.users.delete(account)
    assert deleted.account.status.value == "archived"
    assert len(deleted.revoked_keys) == 2 and all(k.status.value == "archived" for k in deleted.revoked_keys)
    for gone in (key, prod_key):
        with pytest.raises(Unauthorized):
            billing.authenticate(gone)
    assert owner.users.search(user_ids=[account]).total == 0
    with pytest.raises(NotFound):
        owner.users.delete(account)
    # the owner's own keys are untouched
    assert billing.authenticate(setup.environments[1][1].api_key).actor.id == setup.owner.id


# -- roles ---------------------------------------------------------------------------------------


def test_changing_roles_needs_a_human_super_admin(billing: Billing, owner: Scoped) -> None:
    target = _user(owner, "ada@acme.test", "all_reader")
    _, robot_key = _service_account(owner, "robot", "super_admin")
    writer_id = _user(owner, "w@acme.test", "all_writer")
    writer = billing.scope(owner.tenant_id, owner.environment_id, actor=_actor(owner, writer_id))
    for caller in (billing.authenticate(robot_key), writer):
        with pytest.raises(PermissionDenied) as refused:
            caller.users.update_roles(target, roles=["all_writer"])
        assert refused.value.message == SUPER_ADMIN_MESSAGE
    assert owner.users.get(target).roles == (Role.ALL_READER,)


def _actor(owner: Scoped, account_id: str):  # type: ignore[no-untyped-def]
    from billingkit import Actor

    account = owner.users.get(account_id)
    return Actor(id=account.id, roles=account.roles, account_type=account.type.value)


def test_role_changes_follow_the_reference_rules(owner: Scoped, setup: BootstrapResult) -> None:
    target = _user(owner, "ada@acme.test", "all_reader")
    changed = owner.users.update_roles(target, roles=["event_ingestor", "event_reader"])
    assert changed.roles == (Role.EVENT_INGESTOR, Role.EVENT_READER)
    assert owner.users.get(target).roles == changed.roles
    with pytest.raises(ValidationError, match="super_admin cannot be combined"):
        owner.users.update_roles(target, roles=["super_admin", "all_reader"])
    with pytest.raises(ValidationError):
        owner.users.update_roles(target, roles=[])
    with pytest.raises(ValidationError):
        owner.users.update_roles(target, roles=["owner"])
    with pytest.raises(PermissionDenied, match="your own roles"):
        owner.users.update_roles(setup.owner.id, roles=["all_reader"])
    robot, _ = _service_account(owner, "robot", "all_reader")
    with pytest.raises(ValidationError, match="fixed at creation"):
        owner.users.update_roles(robot, roles=["all_writer"])
    with pytest.raises(NotFound):
        owner.users.update_roles("user_missing", roles=["all_reader"])
    assert owner.users.update_roles(target, roles=["super_admin"]).roles == (Role.SUPER_ADMIN,)


def test_a_user_with_a_usable_key_keeps_its_roles_until_the_key_goes(
    billing: Billing, owner: Scoped, clock: TestClock
) -> None:
    target = _user(owner, "ada@acme.test", "all_writer")
    as_target = billing.scope(owner.tenant_id, owner.environment_id, actor=_actor(owner, target))
    key = as_target.api_keys.create(name="ada's key")
    as_target.api_keys.create(name="expiring", expires_at=clock.now() + timedelta(hours=1))
    with pytest.raises(InvalidOperation) as blocked:
        owner.users.update_roles(target, roles=["all_reader"])
    active = blocked.value.details["active_keys"]
    assert list(active) == [owner.environment_id] and key.key.id in active[owner.environment_id]
    assert len(active[owner.environment_id]) == 2
    owner.api_keys.delete(key.key.id)
    clock.advance(timedelta(hours=2))  # the other one has expired: no longer usable
    assert owner.users.update_roles(target, roles=["all_reader"]).roles == (Role.ALL_READER,)


# -- the caller's own account, and removing users ------------------------------------------------


def test_update_me_changes_only_name_and_metadata(
    billing: Billing, owner: Scoped, setup: BootstrapResult
) -> None:
    me = owner.users.update_me(name="Boss", metadata={"desk": "3"})
    assert (me.id, me.name, me.metadata, me.roles) == (
        setup.owner.id,
        "Boss",
        {"desk": "3"},
        (Role.SUPER_ADMIN,),
    )
    assert owner.users.me().name == "Boss"
    with pytest.raises(ValidationError) as privileged:
        owner.users.update_me(roles=["all_reader"])
    assert privileged.value.field == "roles"
    _, key = _service_account(owner, "ingest", "event_ingestor")
    assert billing.authenticate(key).users.update_me(name="self-named").name == "self-named"
    with pytest.raises(InvalidOperation):  # the host has no account
        billing.scope(owner.tenant_id).users.update_me(name="host")


def test_removing_a_user_ends_its_sessions_and_keys(
    billing: Billing, owner: Scoped, setup: BootstrapResult
) -> None:
    target = _user(owner, "ada@acme.test", "all_writer")
    token, _ = billing.login("ada@acme.test", "long enough")
    as_target = billing.scope(owner.tenant_id, owner.environment_id, actor=_actor(owner, target))
    key = as_target.api_keys.create(name="ada's key").api_key
    removed = owner.users.remove(target)
    assert removed.account.status.value == "archived" and len(removed.revoked_keys) == 1
    with pytest.raises(Unauthorized):
        billing.authenticate_token(token)
    with pytest.raises(Unauthorized):
        billing.authenticate(key)
    with pytest.raises(PermissionDenied, match="yourself"):
        owner.users.remove(setup.owner.id)
    robot, _ = _service_account(owner, "robot", "all_reader")
    with pytest.raises(ValidationError, match="service account"):
        owner.users.remove(robot)


# -- the role catalogue --------------------------------------------------------------------------


def test_role_catalogue_lists_every_role_with_its_permissions(owner: Scoped) -> None:
    roles = owner.roles.list()
    assert [r.id for r in roles] == [r.value for r in Role]
    for described in roles:
        granted = ROLES[Role(described.id)]
        assert described.permissions == {e: sorted(a.value for a in acts) for e, acts in granted.items()}
        assert described.name and described.description
    assert owner.roles.list("service_account") == roles == owner.roles.list(AccountType.USER)
    assert owner.roles.get("event_ingestor").permissions == {"event": ["write"]}
    with pytest.raises(NotFound):
        owner.roles.get("owner")
    with pytest.raises(ValidationError):
        owner.roles.list("robot")


# -- the tenant ----------------------------------------------------------------------------------


def test_tenant_reads_and_updates_only_the_callers_own(
    billing: Billing, owner: Scoped, setup: BootstrapResult
) -> None:
    other = billing.bootstrap(tenant_name="Other", owner_email="o@other.test")
    assert owner.tenants.mine().name == "Acme"
    with pytest.raises(NotFound):
        owner.tenants.get(other.tenant.id)
    updated = owner.tenants.update(
        name="Acme Ltd",
        billing_details={
            "email": "billing@acme.test",
            "phone": "+44 1",
            "address": {"address_city": "London"},
        },
    )
    assert updated.name == "Acme Ltd" and updated.billing_details is not None
    assert (
        updated.billing_details.address is not None
        and updated.billing_details.address.address_city == "London"
    )
    renamed_only = owner.tenants.update(metadata={"tier": "gold"})
    assert (renamed_only.name, renamed_only.billing_details, renamed_only.metadata) == (
        "Acme Ltd",
        updated.billing_details,
        {"tier": "gold"},
    )
    assert billing.tenant(other.tenant.id).name == "Other"  # untouched
    _, reader_key = _service_account(owner, "reader", "all_reader")
    with pytest.raises(PermissionDenied):
        billing.authenticate(reader_key).tenants.update(name="mine")
    with pytest.raises(ValidationError):
        owner.tenants.update(billing_details={"fax": "1"})


def test_only_the_host_suspends_and_suspension_blocks_writes_not_reads(
    billing: Billing, owner: Scoped, setup: BootstrapResult
) -> None:
    owner.customers.create(external_id="c-1", name="One")
    suspended = billing.suspend_tenant(setup.tenant.id)
    assert suspended.suspended and suspended.to_dict()["status"] == "suspended"
    assert billing.suspend_tenant(setup.tenant.id).suspended_at == suspended.suspended_at  # idempotent
    for caller in (owner, billing.scope(setup.tenant.id, owner.environment_id)):
        with pytest.raises(PermissionDenied, match=r"^tenant account is suspended$"):
            caller.customers.create(external_id="c-2", name="Two")
    with pytest.raises(PermissionDenied, match="suspended"):
        owner.tenants.update(name="Unsuspend me")
    assert [c.external_id for c in owner.customers.list().items] == ["c-1"]
    assert owner.tenants.mine().suspended
    other = billing.bootstrap(tenant_name="Other", owner_email="o@other.test")
    billing.scope(other.tenant.id, other.environments[0][0].id).customers.create(external_id="x", name="X")
    billing.reactivate_tenant(setup.tenant.id)
    assert owner.customers.create(external_id="c-2", name="Two").external_id == "c-2"
    with pytest.raises(PermissionDenied, match="embedding host"):  # a tenant's caller cannot
        owner.run(set_tenant_suspended, suspended=True)
    assert not billing.tenant(setup.tenant.id).suspended


# -- API keys ------------------------------------------------------------------------------------


def test_expires_at_never_means_no_expiry(owner: Scoped) -> None:
    for never in ("never", "NEVER"):
        assert owner.api_keys.create(name=f"forever {never}", expires_at=never).key.expires_at is None
    with pytest.raises(ValidationError) as bad:
        owner.api_keys.create(name="k", expires_at="sometime")
    assert bad.value.field == "expires_at"


def test_a_publishable_key_only_ingests_events(billing: Billing, owner: Scoped) -> None:
    issued = owner.api_keys.create(name="browser", type="publishable_key")
    assert issued.api_key.startswith("pk_") and issued.key.display_id.startswith("pk_")
    assert (issued.key.type, issued.key.roles) == (ApiKeyType.PUBLISHABLE_KEY, (Role.EVENT_INGESTOR,))
    public = billing.authenticate(issued.api_key)
    assert public.actor.publishable
    assert public.events.ingest(event_name="page_view", external_customer_id="c-1").accepted_ids
    for read in (public.customers.list, public.users.me, public.roles.list, public.tenants.mine):
        with pytest.raises(PermissionDenied, match="publishable"):
            read()
    for write in (
        lambda: public.customers.create(external_id="c", name="C"),
        lambda: public.users.update_me(name="x"),
        lambda: public.api_keys.create(name="more"),
    ):
        with pytest.raises(PermissionDenied):
            write()
    # an account that may not ingest events cannot have one
    _, reader_key = _service_account(owner, "reader", "all_reader")
    reader_account = billing.authenticate(reader_key).actor.id
    with pytest.raises(ValidationError) as refused:
        owner.api_keys.create(name="pk", type="publishable_key", service_account_id=reader_account)
    assert refused.value.field == "type"
