"""Users, roles, the role catalogue, tenants and API key options through the official SDK."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import Billing
from billingkit.services.access import BootstrapResult
from tests.compat.conftest import known, sdk_with_key, status_and_code


def test_users_searched_updated_deleted_and_roles_changed(
    sdk: Flexprice, http: TestClient, setup: BootstrapResult
) -> None:
    robot = sdk.users.create_user(type_="service_account", name="robot", roles=["event_ingestor"])
    person = sdk.users.create_user(type_="user", email="grace@acme.test", name="Grace", roles=["all_reader"])

    found = known(sdk.users.query_user(type_="service_account"))
    assert isinstance(found, models.ListUsersResponse)
    assert [u.id for u in found.items] == [robot.id] and found.pagination.total == 1
    by_role = sdk.users.query_user(roles=["all_reader", "super_admin"], order="asc")
    assert [u.id for u in by_role.items] == [setup.owner.id, person.id]

    renamed = known(sdk.users.update_service_account(id=robot.id, name="ingestion"))
    assert isinstance(renamed, models.UpdateServiceAccountResponse)
    assert (renamed.id, renamed.name, renamed.roles) == (robot.id, "ingestion", ["event_ingestor"])

    changed = known(sdk.users.update_user_roles(id=person.id, roles=["all_writer"]))
    assert isinstance(changed, models.UpdateUserRolesResponse)
    assert (changed.id, changed.roles) == (person.id, ["all_writer"])
    with pytest.raises(errors.ErrorResponse) as fixed:  # a service account's roles are fixed
        sdk.users.update_user_roles(id=robot.id, roles=["all_writer"])
    assert status_and_code(fixed.value) == (400, "validation_error")

    me = known(sdk.users.update_user(name="The Owner", metadata={"desk": "3"}))
    assert isinstance(me, models.UpdateUserResponse)
    assert (me.id, me.name, me.metadata) == (setup.owner.id, "The Owner", {"desk": "3"})

    key = sdk.secrets.create_api_key(name="robot key", type_="private_key", service_account_id=robot.id)
    assert sdk.users.delete_service_account(id=robot.id) is None
    with pytest.raises(errors.FlexpriceError) as revoked:
        sdk_with_key(http, key.api_key).users.get_user_info()
    assert status_and_code(revoked.value) == (401, "unauthorized")
    assert sdk.users.query_user(user_ids=[robot.id]).items == []

    assert sdk.users.remove_user(id=person.id) is None
    assert sdk.users.query_user(user_ids=[person.id]).items == []
    with pytest.raises(errors.FlexpriceError) as gone:
        sdk.users.remove_user(id=person.id)
    assert status_and_code(gone.value) == (404, "not_found")


def test_role_changes_need_a_human_super_admin(sdk: Flexprice, http: TestClient) -> None:
    person = sdk.users.create_user(type_="user", email="grace@acme.test", roles=["all_reader"])
    robot = sdk.users.create_user(type_="service_account", name="admin robot", roles=["super_admin"])
    key = sdk.secrets.create_api_key(name="robot", type_="private_key", service_account_id=robot.id)
    with pytest.raises(errors.FlexpriceError) as refused:
        sdk_with_key(http, key.api_key).users.update_user_roles(id=person.id, roles=["all_writer"])
    assert status_and_code(refused.value) == (403, "permission_denied")
    assert refused.value.raw_response.json()["message"] == (
        "This action requires a user account with Super Admin access"
    )


def test_role_catalogue(sdk: Flexprice) -> None:
    listed = sdk.rbac.list_rbac_roles(user_type="service_account")
    assert [r["id"] for r in listed["items"]] == [
        "super_admin",
        "all_reader",
        "all_writer",
        "event_ingestor",
        "event_reader",
    ]
    role = sdk.rbac.get_rbac_role(id="event_reader")
    assert (role["id"], role["permissions"]) == ("event_reader", {"event": ["read"]})
    assert role["name"] and role["description"]
    with pytest.raises(errors.FlexpriceError) as unknown:
        sdk.rbac.get_rbac_role(id="owner")
    assert status_and_code(unknown.value) == (404, "not_found")


def test_tenant_read_update_and_suspension(
    sdk: Flexprice, http: TestClient, billing: Billing, setup: BootstrapResult
) -> None:
    tenant = known(sdk.tenants.get_tenant_by_id(id=setup.tenant.id))
    assert isinstance(tenant, models.TenantResponse)
    assert (tenant.id, tenant.name, tenant.status) == (setup.tenant.id, "Acme", "published")
    other = billing.bootstrap(tenant_name="Other", owner_email="o@other.test")
    with pytest.raises(errors.FlexpriceError) as hidden:
        sdk.tenants.get_tenant_by_id(id=other.tenant.id)
    assert status_and_code(hidden.value) == (404, "not_found")

    updated = known(
        sdk.tenants.update_tenant(
            name="Acme Ltd",
            billing_details={
                "email": "billing@acme.test",
                "help_email": "help@acme.test",
                "phone": "+44 20 0000",
                "address": {"address_line1": "1 Road", "address_city": "London", "address_country": "GB"},
            },
            metadata={"tier": "gold"},
        )
    )
    assert updated.name == "Acme Ltd" and updated.metadata == {"tier": "gold"}
    assert updated.billing_details is not None and updated.billing_details.address is not None
    assert (updated.billing_details.help_email, updated.billing_details.address.address_city) == (
        "help@acme.test",
        "London",
    )

    billing.suspend_tenant(setup.tenant.id)
    assert sdk.tenants.get_tenant_by_id(id=setup.tenant.id).status == "suspended"  # reads work
    with pytest.raises(errors.FlexpriceError) as blocked:
        sdk.customers.create_customer(external_id="c-1", name="One")
    assert status_and_code(blocked.value) == (403, "permission_denied")
    assert blocked.value.raw_response.json()["message"] == "tenant account is suspended"
    billing.reactivate_tenant(setup.tenant.id)
    assert sdk.customers.create_customer(external_id="c-1", name="One").external_id == "c-1"


def test_keys_never_expire_publishable_keys_ingest_and_last_use_is_listed(
    sdk: Flexprice, http: TestClient, setup: BootstrapResult
) -> None:
    headers = {"x-api-key": setup.environments[0][1].api_key}
    # the SDK types expires_at as a date-time; "never" is the spec's word, sent as JSON
    forever = http.post(
        "/v1/secrets/api/keys", json={"name": "forever", "expires_at": "never"}, headers=headers
    )
    assert forever.status_code == 201 and forever.json()["secret"]["expires_at"] is None

    public = known(sdk.secrets.create_api_key(name="browser", type_="publishable_key"))
    assert public.api_key.startswith("pk_")
    assert (public.secret.type, public.secret.roles) == ("publishable_key", ["event_ingestor"])
    as_browser = sdk_with_key(http, public.api_key)
    as_browser.events.ingest_event(event_name="page_view", external_customer_id="c-1")
    with pytest.raises(errors.FlexpriceError) as denied:
        as_browser.customers.query_customer()
    assert status_and_code(denied.value) == (403, "permission_denied")

    listed = known(sdk.secrets.list_api_keys())
    used = {s.id: s.last_used_at for s in listed.items}
    assert used[public.secret.id] is not None and used[setup.environments[0][1].key.id] is not None
