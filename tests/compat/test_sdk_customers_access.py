"""Customers, users, API keys and errors through the official SDK."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.services.access import BootstrapResult
from tests.compat.conftest import known, sdk_with_key, status_and_code


def test_customer_round_trip(sdk: Flexprice) -> None:
    created = known(
        sdk.customers.create_customer(
            external_id="cust-ada",
            name="Ada Lovelace",
            email="ada@example.test",
            address_line1="12 St James's Square",
            address_city="London",
            address_postal_code="SW1Y 4JH",
            address_country="GB",
            metadata={"tier": "gold"},
        )
    )
    assert isinstance(created, models.CustomerResponse)
    assert created.id.startswith("cust_") and created.status == "published"
    assert (created.external_id, created.name, created.email) == (
        "cust-ada",
        "Ada Lovelace",
        "ada@example.test",
    )
    assert (created.address_city, created.address_country, created.metadata) == (
        "London",
        "GB",
        {"tier": "gold"},
    )
    assert created.created_at is not None and created.created_at.tzinfo is not None

    assert known(sdk.customers.get_customer(id=created.id)) == created
    assert known(sdk.customers.get_customer_by_external_id(external_id="cust-ada")) == created

    # PUT /customers?id= and ?external_customer_id=: partial updates
    renamed = known(sdk.customers.update_customer(id=created.id, name="Ada King"))
    assert (renamed.name, renamed.email, renamed.metadata) == (
        "Ada King",
        "ada@example.test",
        {"tier": "gold"},
    )
    moved = known(sdk.customers.update_customer(external_customer_id="cust-ada", address_city="Ockham"))
    assert (moved.id, moved.address_city, moved.name) == (created.id, "Ockham", "Ada King")

    sdk.customers.create_customer(external_id="cust-bob", name="Bob", metadata={"tier": "silver"})
    found = known(sdk.customers.query_customer(metadata={"tier": "gold"}, limit=10))
    assert isinstance(found, models.ListCustomersResponse)
    assert [c.external_id for c in found.items] == ["cust-ada"]
    assert (found.pagination.total, found.pagination.limit, found.pagination.offset) == (1, 10, 0)
    for direction, names in (("asc", ["Ada King", "Bob"]), ("desc", ["Bob", "Ada King"])):
        both = sdk.customers.query_customer(
            external_ids=["cust-ada", "cust-bob"], sort=[{"field": "name", "direction": direction}]
        )
        assert [c.name for c in both.items] == names

    assert sdk.customers.delete_customer(id=created.id) is None
    gone = sdk.customers.query_customer(external_ids=["cust-ada", "cust-bob"])
    assert [c.external_id for c in gone.items] == ["cust-bob"]


def test_errors_carry_our_code_and_status(sdk: Flexprice, http: TestClient) -> None:
    sdk.customers.create_customer(external_id="cust-1", name="One")
    # 400 and 500 are modelled: ErrorResponse with the parsed body
    with pytest.raises(errors.ErrorResponse) as invalid:
        sdk.customers.create_customer(external_id="cust-2", name="Two", email="not an email")
    assert (invalid.value.data.code, invalid.value.data.http_status_code) == ("validation_error", 400)
    assert invalid.value.status_code == 400 and "email" in invalid.value.data.message
    # other statuses: the SDK's default error, with our status and body
    with pytest.raises(errors.FlexpriceDefaultError) as taken:
        sdk.customers.create_customer(external_id="cust-1", name="Again")
    assert taken.value.status_code == 409
    assert taken.value.raw_response.json()["code"] == "already_exists"
    with pytest.raises(errors.FlexpriceDefaultError) as missing:
        sdk.customers.get_customer(id="cust_missing")
    assert missing.value.status_code == 404 and missing.value.raw_response.json()["code"] == "not_found"
    with pytest.raises(errors.FlexpriceError) as anonymous:
        sdk_with_key(http, "sk_wrong").customers.get_customer(id="cust_missing")
    assert status_and_code(anonymous.value) == (401, "unauthorized")
    # both errors are FlexpriceError, the SDK's base
    assert isinstance(invalid.value, errors.FlexpriceError) and isinstance(taken.value, errors.FlexpriceError)


def test_users_and_api_keys(sdk: Flexprice, http: TestClient, setup: BootstrapResult) -> None:
    me = known(sdk.users.get_user_info())
    assert isinstance(me, models.UserResponse)
    assert (me.id, me.email, me.type, me.roles) == (
        setup.owner.id,
        "owner@acme.test",
        "user",
        ["super_admin"],
    )

    reader = known(sdk.users.create_user(type_="service_account", name="reporting", roles=["all_reader"]))
    assert isinstance(reader, models.CreateUserResponse)
    assert (reader.type, reader.name, reader.roles, reader.password) == (
        "service_account",
        "reporting",
        ["all_reader"],
        None,
    )
    person = known(sdk.users.create_user(type_="user", email="grace@acme.test", name="Grace"))
    assert (person.type, person.email) == ("user", "grace@acme.test") and person.password

    issued = known(
        sdk.secrets.create_api_key(name="reporting key", type_="private_key", service_account_id=reader.id)
    )
    assert isinstance(issued, models.CreateAPIKeyResponse)
    assert issued.api_key.startswith("sk_")
    secret = issued.secret
    assert (secret.name, secret.type, secret.provider, secret.roles) == (
        "reporting key",
        "private_key",
        "flexprice",
        ["all_reader"],
    )
    assert (secret.user_id, secret.user_type, secret.status) == (reader.id, "service_account", "published")
    listed = known(sdk.secrets.list_api_keys())
    assert isinstance(listed, models.ListSecretsResponse)
    assert secret.id in {s.id for s in listed.items}
    assert all(not hasattr(s, "api_key") for s in listed.items)

    # the new key works through the SDK, with its account's roles
    as_reader = sdk_with_key(http, issued.api_key)
    assert as_reader.users.get_user_info().id == reader.id
    with pytest.raises(errors.FlexpriceError) as denied:
        as_reader.customers.create_customer(external_id="c", name="C")
    assert status_and_code(denied.value) == (403, "permission_denied")

    assert sdk.secrets.delete_api_key(id=secret.id) is None
    with pytest.raises(errors.FlexpriceError) as revoked:  # /users/me declares 401: ErrorResponse
        as_reader.users.get_user_info()
    assert isinstance(revoked.value, errors.ErrorResponse)
    assert status_and_code(revoked.value) == (401, "unauthorized")
