"""What access management must keep on every store: tenant billing details and suspension (seen
by another ``Billing`` on the same store), API keys' coarse ``last_used_at``, and a service
account's deletion revoking its keys in every environment."""

from __future__ import annotations

from datetime import timedelta

import pytest

from billingkit import Billing, PermissionDenied, Settings, TestClock, Unauthorized
from billingkit.domain.resources import Status
from billingkit.services import access
from billingkit.services.access import BootstrapResult

INTERVAL = Settings().api_key_last_used_interval


def test_tenant_details_and_suspension_are_stored_and_shared(
    billing: Billing, setup: BootstrapResult, clock: TestClock
) -> None:
    owner = billing.authenticate(setup.environments[0][1].api_key)
    owner.tenants.update(
        billing_details={"help_email": "help@acme.test", "address": {"address_country": "GB"}}
    )
    # a second process on the same store, reading the tenant's status on every write
    other = Billing(billing.storage, clock, settings=Settings(tenant_status_ttl=timedelta(0)))
    seen = other.tenant(setup.tenant.id)
    assert seen.billing_details is not None and seen.billing_details.help_email == "help@acme.test"
    assert seen.billing_details.address is not None and seen.billing_details.address.address_country == "GB"
    env = other.scope(setup.tenant.id, setup.environments[0][0].id)
    env.customers.create(external_id="before", name="Before")

    billing.suspend_tenant(setup.tenant.id)
    assert other.tenant(setup.tenant.id).suspended_at == clock.now()
    with pytest.raises(PermissionDenied, match="tenant account is suspended"):
        env.customers.create(external_id="during", name="During")
    assert [c.external_id for c in env.customers.list().items] == ["before"]
    billing.reactivate_tenant(setup.tenant.id)
    assert env.customers.create(external_id="after", name="After").external_id == "after"


def test_last_used_at_is_written_at_most_once_per_interval(
    billing: Billing, setup: BootstrapResult, clock: TestClock
) -> None:
    billing.settings = billing.settings.replace(api_key_cache_ttl=timedelta(0))  # every use reads
    env, issued = setup.environments[0]
    scoped = billing.scope(setup.tenant.id, env.id)

    def last_used():  # type: ignore[no-untyped-def]
        return next(k for k in scoped.api_keys.list().items if k.id == issued.key.id).last_used_at

    assert last_used() is None
    first = clock.now()
    billing.authenticate(issued.api_key)
    assert last_used() == first
    clock.advance(INTERVAL - timedelta(seconds=1))
    billing.authenticate(issued.api_key)
    assert last_used() == first  # within the interval: no write
    clock.advance(timedelta(seconds=1))
    billing.authenticate(issued.api_key)
    assert last_used() == clock.now()


def test_recording_a_use_never_revives_a_revoked_key(billing: Billing, setup: BootstrapResult) -> None:
    env, issued = setup.environments[0]
    with billing.storage.unit_of_work(read_only=True) as uow:
        principal = access.authenticate_api_key(
            uow, api_key=issued.api_key, now=billing.clock.now(), last_used_interval=INTERVAL
        )
    assert principal.stale_key is not None
    billing.scope(setup.tenant.id, env.id).api_keys.delete(issued.key.id)
    billing._record_key_use(principal.stale_key, billing.clock.now())
    with billing.storage.unit_of_work(setup.tenant.id, env.id) as uow:
        stored = uow.api_keys.get(issued.key.id)
    assert stored.status is Status.ARCHIVED and stored.last_used_at == billing.clock.now()
    with pytest.raises(Unauthorized):
        billing.authenticate(issued.api_key)


def test_deleting_a_service_account_revokes_keys_of_every_environment(
    billing: Billing, setup: BootstrapResult
) -> None:
    (test_env, test_key), (prod_env, prod_key) = setup.environments
    owner = billing.authenticate(test_key.api_key)
    account, _ = owner.users.create(type="service_account", name="robot", roles=["event_ingestor"])
    keys = [
        billing.authenticate(k.api_key).api_keys.create(name="robot", service_account_id=account.id).api_key
        for k in (test_key, prod_key)
    ]
    assert owner.users.search(type="service_account").total == 1
    assert len(owner.users.delete(account.id).revoked_keys) == 2
    for key in keys:
        with pytest.raises(Unauthorized):
            billing.authenticate(key)
    for env in (test_env, prod_env):
        listed = billing.scope(setup.tenant.id, env.id).api_keys.list().items
        assert [k.name for k in listed] == [f"{env.name} super admin key"]
    assert owner.users.search(type="service_account").total == 0
