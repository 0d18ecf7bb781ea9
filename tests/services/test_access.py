"""Tenants, environments, accounts, API keys and sessions, on every store."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from billingkit import (
    Actor,
    Billing,
    ListQuery,
    NotFound,
    PermissionDenied,
    Role,
    Scoped,
    TestClock,
    TooManyRequests,
    Unauthorized,
    ValidationError,
)
from billingkit.domain.access import ROLES, Action, role_covers
from billingkit.domain.credentials import hash_api_key
from billingkit.services.access import BootstrapResult
from billingkit.storage.memory import MemoryStorage
from billingkit.storage.sql import SqlStorage


@pytest.fixture
def owner_password() -> str:
    return "correct horse"


def test_bootstrap_creates_tenant_environments_owner_and_keys(
    billing: Billing, setup: BootstrapResult
) -> None:
    assert [(env.name, env.type.value) for env, _ in setup.environments] == [
        ("test", "development"),
        ("production", "production"),
    ]
    for env, issued in setup.environments:
        scoped = billing.authenticate(issued.api_key)
        assert (scoped.tenant_id, scoped.environment_id) == (setup.tenant.id, env.id)
        assert scoped.actor.roles == (Role.SUPER_ADMIN,)
        assert scoped.actor.id == setup.owner.id
    envs = billing.scope(setup.tenant.id).environments.list()
    assert envs.total == 2


def test_role_table_matches_the_spec() -> None:
    ingest = Actor("a", (Role.EVENT_INGESTOR,))
    read = Actor("b", (Role.EVENT_READER,))
    both = Actor("c", (Role.EVENT_INGESTOR, Role.EVENT_READER))
    assert ingest.can("event", Action.WRITE) and not ingest.can("event", Action.READ)
    assert read.can("event", Action.READ) and not read.can("event", Action.WRITE)
    assert both.can("event", Action.READ) and both.can("event", Action.WRITE)
    assert not ingest.can("customer", Action.WRITE)
    reader = Actor("d", (Role.ALL_READER,))
    assert reader.can("plan", Action.READ) and not reader.can("plan", Action.WRITE)
    assert Actor("e", (Role.ALL_WRITER,)).can("invoice", Action.WRITE)
    assert set(ROLES) == set(Role)
    assert role_covers([Role.ALL_WRITER], Role.EVENT_INGESTOR)
    assert not role_covers([Role.ALL_READER], Role.EVENT_INGESTOR)
    assert not role_covers([Role.ALL_WRITER], Role.SUPER_ADMIN)


def test_service_account_key_copies_roles_once(billing: Billing, test_env: Scoped) -> None:
    svc, password = test_env.users.create(type="service_account", name="ingest", roles=["event_ingestor"])
    assert password is None
    issued = test_env.api_keys.create(name="ingest key", service_account_id=svc.id)
    assert issued.key.roles == (Role.EVENT_INGESTOR,)
    # Widen the account's roles afterwards: the key keeps what it was issued with.
    with billing.storage.unit_of_work(test_env.tenant_id, None) as uow:
        uow.accounts.update(svc.model_copy(update={"roles": (Role.ALL_WRITER,)}))
        uow.commit()
    as_key = billing.authenticate(issued.api_key)
    assert as_key.actor.roles == (Role.EVENT_INGESTOR,)
    with pytest.raises(PermissionDenied):
        as_key.customers.list()


def test_key_is_stored_only_as_a_hash(billing: Billing, owner: Scoped, test_env: Scoped) -> None:
    issued = owner.api_keys.create(name="mine")
    assert issued.api_key.startswith("sk_") and len(issued.api_key) == 46
    stored = test_env.api_keys.list().items
    assert all(issued.api_key not in repr(k) for k in stored)
    assert any(k.key_hash == hash_api_key(issued.api_key) for k in stored)
    assert issued.key.display_id == issued.api_key[:5] + "***" + issued.api_key[-2:]
    if isinstance(billing.storage, SqlStorage):
        with billing.storage.engine.connect() as conn:
            rows = conn.execute(text("SELECT * FROM api_keys")).all()
        assert rows and all(issued.api_key not in str(tuple(r)) for r in rows)
    else:
        assert isinstance(billing.storage, MemoryStorage)
        assert issued.api_key not in repr(billing.storage._rows)


def test_expired_deleted_and_foreign_keys_are_unauthorized(
    billing: Billing, owner: Scoped, prod_env: Scoped, clock: TestClock
) -> None:
    test_env = owner
    short = test_env.api_keys.create(name="short", expires_at=clock.now() + timedelta(hours=1))
    billing.authenticate(short.api_key)
    clock.advance(hours=1)
    with pytest.raises(Unauthorized, match="expired"):
        billing.authenticate(short.api_key)

    doomed = test_env.api_keys.create(name="doomed")
    test_env.api_keys.delete(doomed.key.id)
    with pytest.raises(Unauthorized, match="deleted"):
        billing.authenticate(doomed.api_key)
    with pytest.raises(NotFound):
        test_env.api_keys.delete(doomed.key.id)

    good = test_env.api_keys.create(name="good")
    assert billing.authenticate(good.api_key, environment_id=test_env.environment_id)
    with pytest.raises(Unauthorized, match="another environment"):
        billing.authenticate(good.api_key, environment_id=prod_env.environment_id)
    for bad in (None, "", "nonsense", "sk_" + "A" * 43):
        with pytest.raises(Unauthorized):
            billing.authenticate(bad)
    with pytest.raises(NotFound):
        prod_env.api_keys.delete(good.key.id)


def test_key_validation(owner: Scoped, test_env: Scoped, clock: TestClock) -> None:
    with pytest.raises(ValidationError) as info:
        owner.api_keys.create(name="past", expires_at=clock.now() - timedelta(seconds=1))
    assert info.value.field == "expires_at"
    with pytest.raises(ValidationError) as info:
        owner.api_keys.create(name="k", type="integration")  # the reference's third-party kind
    assert info.value.field == "type"
    with pytest.raises(ValidationError):
        owner.api_keys.create(name="")
    # the host (system actor) has no account of its own
    with pytest.raises(Exception, match="service_account_id"):
        test_env.api_keys.create(name="for whom?")
    assert test_env.api_keys.list().total == 1  # only this environment's bootstrap key


def test_callers_grant_only_roles_they_cover(billing: Billing, test_env: Scoped) -> None:
    writer_account, _ = test_env.users.create(type="service_account", name="w", roles=["all_writer"])
    writer_key = test_env.api_keys.create(name="w", service_account_id=writer_account.id)
    writer = billing.authenticate(writer_key.api_key)
    made, _ = writer.users.create(type="service_account", name="i", roles=["event_ingestor"])
    assert made.roles == (Role.EVENT_INGESTOR,)
    with pytest.raises(PermissionDenied):
        writer.users.create(type="service_account", name="s", roles=["super_admin"])
    with pytest.raises(PermissionDenied, match="super_admin"):
        writer.api_keys.create(name="x", service_account_id=made.id)
    own = writer.api_keys.create(name="own key")  # a key for its own account is fine
    assert own.key.account_id == writer_account.id
    with pytest.raises(ValidationError) as info:
        test_env.users.create(type="service_account", name="bad", roles=["root"])
    assert info.value.details["allowed_values"][0] == "super_admin"
    with pytest.raises(ValidationError):
        test_env.users.create(type="service_account", name="mixed", roles=["super_admin", "all_reader"])
    with pytest.raises(ValidationError):
        test_env.users.create(type="user", name="no email")


def test_login_issues_a_token_with_environment_claim(
    billing: Billing, setup: BootstrapResult, clock: TestClock
) -> None:
    token, account = billing.login("OWNER@acme.test", "correct horse")
    assert account.id == setup.owner.id
    scoped = billing.authenticate_token(token)
    assert scoped.environment_id == setup.environments[0][0].id  # the test environment
    assert scoped.users.me().email == "owner@acme.test"
    prod = billing.authenticate_token(token, environment_id=setup.environments[1][0].id)
    assert prod.environment_id == setup.environments[1][0].id
    other = billing.bootstrap(tenant_name="Other", owner_email="x@other.test")
    with pytest.raises(PermissionDenied):
        billing.authenticate_token(token, environment_id=other.environments[0][0].id)
    with pytest.raises(Unauthorized):
        billing.login("owner@acme.test", "wrong")
    with pytest.raises(Unauthorized):
        billing.login("nobody@acme.test", "correct horse")
    with pytest.raises(Unauthorized):
        billing.authenticate_token(token[:-2] + ("AA" if token[-2:] != "AA" else "BB"))
    with pytest.raises(Unauthorized):
        Billing(billing.storage, clock, token_secret=b"another secret").authenticate_token(token)
    clock.advance(days=31)
    with pytest.raises(Unauthorized, match="expired"):
        billing.authenticate_token(token)


def test_generated_password_logs_in(billing: Billing, test_env: Scoped) -> None:
    user, password = test_env.users.create(type="user", email="new@acme.test", roles=["all_reader"])
    assert password and user.password_hash and password not in user.password_hash
    token, _ = billing.login("new@acme.test", password)
    reader = billing.authenticate_token(token)
    assert reader.actor.roles == (Role.ALL_READER,)
    with pytest.raises(PermissionDenied):
        reader.customers.create(external_id="x", name="X")


def test_only_the_host_creates_tenants(billing: Billing, setup: BootstrapResult) -> None:
    tenant = billing.create_tenant("Extra")
    assert tenant.id.startswith("tenant_")
    env = billing.scope(tenant.id).environments.create(name="staging", type="development")
    assert env.tenant_id == tenant.id
    with pytest.raises(ValidationError):
        billing.scope(tenant.id).environments.create(name="x", type="qa")


# -- acting on keys and accounts needs the roles they hold (issue 13) ----------------------------


def _account_count(billing: Billing, scoped: Scoped) -> int:
    with billing.storage.unit_of_work(scoped.tenant_id, None) as uow:
        return uow.accounts.list(ListQuery(limit=100)).total


def _key_for(billing: Billing, test_env: Scoped, roles: list[str]) -> Scoped:
    """A scope authenticated by a new service account's key holding ``roles``."""
    account, _ = test_env.users.create(type="service_account", name="+".join(roles), roles=roles)
    return billing.authenticate(test_env.api_keys.create(name="k", service_account_id=account.id).api_key)


def test_deleting_a_key_needs_every_role_it_holds(
    billing: Billing, setup: BootstrapResult, owner: Scoped, test_env: Scoped
) -> None:
    owner_key = setup.environments[0][1]
    writer = _key_for(billing, test_env, ["all_writer"])
    # Listing shows every key's metadata, the owner's too, but never a plain value.
    listed = {k.id: k for k in writer.api_keys.list().items}
    assert owner_key.key.id in listed and listed[owner_key.key.id].roles == (Role.SUPER_ADMIN,)
    assert all(owner_key.api_key not in repr(k) for k in listed.values())
    with pytest.raises(PermissionDenied, match="super_admin") as info:
        writer.api_keys.delete(owner_key.key.id)
    assert info.value.details == {"roles": ["super_admin"]}
    assert billing.authenticate(owner_key.api_key).actor.roles == (Role.SUPER_ADMIN,)
    assert test_env.api_keys.list().total == 2
    # Keys the writer's roles cover: an ingestor's, another writer's, its own.
    ingestor = test_env.api_keys.create(
        name="i",
        service_account_id=test_env.users.create(type="service_account", name="i", roles=["event_ingestor"])[
            0
        ].id,
    )
    writer.api_keys.delete(ingestor.key.id)
    own = writer.api_keys.create(name="own")
    writer.api_keys.delete(own.key.id)
    with pytest.raises(Unauthorized):
        billing.authenticate(ingestor.api_key)
    # Without secret:write no key can be deleted, whatever the roles cover.
    narrow = _key_for(billing, test_env, ["all_reader"])
    with pytest.raises(PermissionDenied):
        narrow.api_keys.delete(own.key.id)
    assert owner.api_keys.delete(owner_key.key.id).status.value == "archived"  # the owner may


def test_issuing_a_key_for_ones_own_account_needs_the_accounts_roles(
    billing: Billing, test_env: Scoped
) -> None:
    account, _ = test_env.users.create(type="service_account", name="w", roles=["all_writer"])
    writer = billing.authenticate(test_env.api_keys.create(name="w", service_account_id=account.id).api_key)
    # The account gains super_admin later; the old all_writer key must not mint a super_admin key.
    with billing.storage.unit_of_work(test_env.tenant_id, None) as uow:
        uow.accounts.update(account.model_copy(update={"roles": (Role.SUPER_ADMIN,)}))
        uow.commit()
    before = test_env.api_keys.list().total
    with pytest.raises(PermissionDenied, match="super_admin"):
        writer.api_keys.create(name="escalate")
    assert test_env.api_keys.list().total == before
    # Narrowed instead: a key for the account copies the narrower roles, which is fine.
    with billing.storage.unit_of_work(test_env.tenant_id, None) as uow:
        uow.accounts.update(account.model_copy(update={"roles": (Role.EVENT_INGESTOR,)}))
        uow.commit()
    assert writer.api_keys.create(name="narrow").key.roles == (Role.EVENT_INGESTOR,)


def test_reading_accounts(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    ingestor = _key_for(billing, test_env, ["event_ingestor"])
    assert ingestor.users.me().roles == (Role.EVENT_INGESTOR,)  # one's own account: always
    with pytest.raises(PermissionDenied, match="read on user"):
        ingestor.users.get(setup.owner.id)
    reader = _key_for(billing, test_env, ["all_reader"])
    seen = reader.users.get(setup.owner.id)
    assert seen.email == "owner@acme.test" and seen.password_hash is None  # never the hash
    assert test_env.users.get(setup.owner.id).password_hash is None
    with pytest.raises(NotFound):
        reader.users.get("user_nope")


def test_an_all_writer_cannot_escalate_through_accounts_or_environments(
    billing: Billing, setup: BootstrapResult, test_env: Scoped
) -> None:
    user, password = test_env.users.create(type="user", email="dev@acme.test", roles=["all_writer"])
    assert password
    token, _ = billing.login("dev@acme.test", password)
    writer = billing.authenticate_token(token)
    accounts_before = _account_count(billing, test_env)
    for roles in (["super_admin"], ["all_writer", "super_admin"]):
        with pytest.raises((PermissionDenied, ValidationError)):
            writer.users.create(type="user", email="boss@acme.test", roles=roles)
    with pytest.raises(PermissionDenied):
        writer.users.create(type="service_account", name="root", roles=["super_admin"])
    with pytest.raises(ValidationError):
        writer.environments.create(name="qa", type="qa")
    assert _account_count(billing, test_env) == accounts_before  # refused requests wrote nothing
    assert test_env.environments.list().total == 2
    # A new environment grants nothing: the writer's key there copies all_writer, and login still
    # lands in the tenant's first development environment.
    staging = writer.environments.create(name="staging", type="development")
    in_staging = billing.authenticate_token(token, environment_id=staging.id)
    issued = in_staging.api_keys.create(name="staging key")
    assert issued.key.roles == (Role.ALL_WRITER,) and issued.key.environment_id == staging.id
    with pytest.raises(PermissionDenied):
        in_staging.api_keys.create(name="x", service_account_id=user.id)
    assert billing.authenticate_token(billing.login("dev@acme.test", password)[0]).environment_id == (
        setup.environments[0][0].id
    )


def test_an_email_in_two_tenants_neither_blocks_nor_reveals_the_other(
    billing: Billing, setup: BootstrapResult
) -> None:
    other = billing.bootstrap(tenant_name="Other", owner_email="OWNER@acme.test", owner_password="other pass")
    _, account = billing.login("owner@acme.test", "correct horse")  # no tenant_id needed
    assert account.id == setup.owner.id and account.password_hash is None
    assert billing.login("owner@acme.test", "other pass")[1].id == other.owner.id
    with pytest.raises(Unauthorized):  # not "several tenants": that would reveal the other one
        billing.login("owner@acme.test", "wrong")
    with pytest.raises(Unauthorized):
        billing.login("owner@acme.test", "correct horse", tenant_id=other.tenant.id)
    same = billing.bootstrap(
        tenant_name="Same", owner_email="owner@acme.test", owner_password="correct horse"
    )
    with pytest.raises(ValidationError) as info:
        billing.login("owner@acme.test", "correct horse")
    assert info.value.field == "tenant_id"
    assert billing.login("owner@acme.test", "correct horse", tenant_id=same.tenant.id)[1].id == same.owner.id


# -- sign-in throttling --------------------------------------------------------------------------


def _fail(billing: Billing, email: str, times: int) -> None:
    for _ in range(times):
        with pytest.raises(Unauthorized):
            billing.login(email, "wrong password")


def test_login_locks_an_email_out_after_five_failures_until_the_promised_time(
    billing: Billing, setup: BootstrapResult, clock: TestClock
) -> None:
    _fail(billing, "owner@acme.test", 5)
    with pytest.raises(TooManyRequests) as info:
        billing.login("owner@acme.test", "correct horse")  # even the right password
    assert info.value.retry_after == 15 * 60 and info.value.http_status == 429
    assert info.value.code == "too_many_requests" and info.value.details == {"retry_after": 900}
    clock.advance(seconds=899.5)
    with pytest.raises(TooManyRequests) as info:
        billing.login("OWNER@acme.test", "correct horse")  # the key is the lowercased email
    assert info.value.retry_after == 1
    clock.advance(seconds=0.5)
    token, _ = billing.login("owner@acme.test", "correct horse")
    assert billing.authenticate_token(token).actor.id == setup.owner.id


def test_lockouts_grow_until_capped_and_success_resets(
    billing: Billing, setup: BootstrapResult, clock: TestClock
) -> None:
    for expected in (15, 30, 60, 60):
        _fail(billing, "owner@acme.test", 5)
        with pytest.raises(TooManyRequests) as info:
            billing.login("owner@acme.test", "wrong password")
        assert info.value.retry_after == expected * 60
        clock.advance(minutes=expected)
    billing.login("owner@acme.test", "correct horse")  # success forgets the record, level included
    _fail(billing, "owner@acme.test", 5)
    with pytest.raises(TooManyRequests) as info:
        billing.login("owner@acme.test", "correct horse")
    assert info.value.retry_after == 15 * 60
    # A success between failures resets the count: 4 + 4 failures lock nothing.
    clock.advance(minutes=15)
    _fail(billing, "owner@acme.test", 4)
    billing.login("owner@acme.test", "correct horse")
    _fail(billing, "owner@acme.test", 4)
    billing.login("owner@acme.test", "correct horse")


def test_failures_outside_the_window_do_not_add_up(
    billing: Billing, setup: BootstrapResult, clock: TestClock
) -> None:
    _fail(billing, "owner@acme.test", 4)
    clock.advance(minutes=15)
    _fail(billing, "owner@acme.test", 4)
    billing.login("owner@acme.test", "correct horse")


def test_unknown_emails_are_throttled_like_known_ones(billing: Billing, setup: BootstrapResult) -> None:
    _fail(billing, "nobody@acme.test", 5)
    with pytest.raises(TooManyRequests) as unknown:
        billing.login("Nobody@Acme.test", "anything")
    _fail(billing, "owner@acme.test", 5)
    with pytest.raises(TooManyRequests) as known:
        billing.login("owner@acme.test", "anything")
    assert (unknown.value.retry_after, unknown.value.message) == (
        known.value.retry_after,
        known.value.message,
    )
    # Another email is untouched.
    other, password = billing.scope(setup.tenant.id).users.create(type="user", email="dev@acme.test")
    assert password and billing.login("dev@acme.test", password)[1].id == other.id


def test_each_billing_object_throttles_on_its_own(
    billing: Billing, setup: BootstrapResult, clock: TestClock
) -> None:
    _fail(billing, "owner@acme.test", 5)
    with pytest.raises(TooManyRequests):
        billing.login("owner@acme.test", "correct horse")
    twin = Billing(billing.storage, clock, token_secret=b"test-secret")
    assert twin.login("owner@acme.test", "correct horse")[1].email == "owner@acme.test"
