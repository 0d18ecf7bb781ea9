"""The API key cache (``Settings.api_key_cache_ttl``): what a cached key may still do, and for how long.

A second ``Billing`` on the same store plays "another process": its revocations reach this one's
cache only through the TTL.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, Settings, TestClock
from billingkit.errors import Unauthorized, ValidationError
from billingkit.http import create_app
from billingkit.services.access import BootstrapResult
from billingkit.services.api_key_cache import ApiKeyCache
from tests.http.conftest import assert_error

TTL = timedelta(seconds=5)


def _other_process(billing: Billing) -> Billing:
    return Billing(billing.storage, billing.clock)


def _count_key_reads(billing: Billing, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each read of a key from the store, recorded."""
    reads: list[str] = []
    storage = billing.storage
    original = storage.unit_of_work

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        uow = original(*args, **kwargs)
        lookup = uow.find_api_key_with_account

        def find(key_hash: str):  # type: ignore[no-untyped-def]
            reads.append(key_hash)
            return lookup(key_hash)

        uow.find_api_key_with_account = find  # type: ignore[method-assign]
        return uow

    monkeypatch.setattr(storage, "unit_of_work", counting)
    return reads


def test_a_key_is_read_once_per_ttl(
    client: TestClient,
    billing: Billing,
    test_key: dict[str, str],
    clock: TestClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert billing.settings.api_key_cache_ttl == TTL
    reads = _count_key_reads(billing, monkeypatch)
    for _ in range(3):
        assert client.get("/v1/customers", headers=test_key).status_code == 200
    assert len(reads) == 1
    clock.advance(seconds=4)
    assert client.get("/v1/customers", headers=test_key).status_code == 200
    assert len(reads) == 1
    clock.advance(seconds=1)  # read 5 s ago: read again
    assert client.get("/v1/customers", headers=test_key).status_code == 200
    assert len(reads) == 2


def test_a_key_revoked_elsewhere_works_at_most_the_ttl(
    client: TestClient, billing: Billing, test_key: dict[str, str], clock: TestClock
) -> None:
    key = client.post("/v1/secrets/api/keys", json={"name": "doomed"}, headers=test_key).json()
    headers = {"x-api-key": key["api_key"]}
    assert client.get("/v1/customers", headers=headers).status_code == 200  # cached now
    other = _other_process(billing)
    scoped = other.authenticate(test_key["x-api-key"])
    scoped.api_keys.delete(key["id"])
    clock.advance(seconds=4.999)
    assert client.get("/v1/customers", headers=headers).status_code == 200  # within the bound
    clock.advance(seconds=0.001)
    error = assert_error(client.get("/v1/customers", headers=headers), 401, "unauthorized")
    assert "deleted" in error["message"]
    assert client.get("/v1/customers", headers=headers).status_code == 401  # never cached again


def test_a_key_revoked_through_this_billing_is_refused_at_once(
    client: TestClient, test_key: dict[str, str]
) -> None:
    key = client.post("/v1/secrets/api/keys", json={"name": "doomed"}, headers=test_key).json()
    headers = {"x-api-key": key["api_key"]}
    assert client.get("/v1/customers", headers=headers).status_code == 200
    assert client.delete(f"/v1/secrets/api/keys/{key['id']}", headers=test_key).status_code == 204
    assert_error(client.get("/v1/customers", headers=headers), 401, "unauthorized")


def test_a_cached_key_expires_on_time(client: TestClient, test_key: dict[str, str], clock: TestClock) -> None:
    expires = clock.now() + timedelta(seconds=2)
    key = client.post(
        "/v1/secrets/api/keys", json={"name": "soon", "expires_at": expires.isoformat()}, headers=test_key
    ).json()
    headers = {"x-api-key": key["api_key"]}
    assert client.get("/v1/customers", headers=headers).status_code == 200  # cached, TTL 5 s
    clock.advance(seconds=2)
    error = assert_error(client.get("/v1/customers", headers=headers), 401, "unauthorized")
    assert "expired" in error["message"]


def test_a_cached_key_never_answers_in_another_environment(
    client: TestClient, setup: BootstrapResult, test_key: dict[str, str], prod_key: dict[str, str]
) -> None:
    test_env, prod_env = setup.environments[0][0].id, setup.environments[1][0].id
    made = client.post("/v1/customers", json={"external_id": "t-1", "name": "T"}, headers=test_key)
    assert made.status_code == 201
    assert client.get("/v1/customers", headers=test_key).json()["pagination"]["total"] == 1  # cached
    error = assert_error(
        client.get("/v1/customers", headers={**test_key, "X-Environment-ID": prod_env}), 401, "unauthorized"
    )
    assert "another environment" in error["message"]
    # The production key, cached too, sees production only.
    assert client.get("/v1/customers", headers=prod_key).json()["pagination"]["total"] == 0
    assert client.get("/v1/customers", headers={**prod_key, "X-Environment-ID": prod_env}).status_code == 200
    assert_error(
        client.get("/v1/customers", headers={**prod_key, "X-Environment-ID": test_env}), 401, "unauthorized"
    )
    assert client.get("/v1/customers", headers=test_key).json()["pagination"]["total"] == 1


def test_a_key_whose_account_is_removed_elsewhere_works_at_most_the_ttl(
    billing: Billing, test_key: dict[str, str], clock: TestClock
) -> None:
    scoped = billing.authenticate(test_key["x-api-key"])
    account, _ = scoped.users.create(type="service_account", name="bot", roles=["all_reader"])
    plain = scoped.api_keys.create(name="bot", service_account_id=account.id).api_key
    assert billing.authenticate(plain).actor.id == account.id  # cached
    with billing.storage.unit_of_work(scoped.tenant_id, None) as uow:  # removed behind the library
        uow.accounts.update(account.model_copy(update={"status": "archived"}))
        uow.commit()
    assert billing.authenticate(plain).actor.id == account.id
    clock.advance(TTL)
    with pytest.raises(Unauthorized, match="account"):
        billing.authenticate(plain)


def test_ttl_zero_reads_every_time(
    billing: Billing, test_key: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    billing.settings = billing.settings.replace(api_key_cache_ttl=timedelta(0))
    reads = _count_key_reads(billing, monkeypatch)
    client = TestClient(create_app(billing))
    for _ in range(3):
        assert client.get("/v1/customers", headers=test_key).status_code == 200
    assert len(reads) == 3
    assert len(billing.api_key_cache) == 0


def test_lowering_the_ttl_applies_to_keys_already_cached(
    billing: Billing, test_key: dict[str, str], clock: TestClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    billing.authenticate(test_key["x-api-key"])
    reads = _count_key_reads(billing, monkeypatch)
    clock.advance(seconds=2)
    billing.settings = billing.settings.replace(api_key_cache_ttl=timedelta(seconds=1))
    billing.authenticate(test_key["x-api-key"])
    assert len(reads) == 1


def test_the_cache_is_bounded_and_holds_no_plain_key(billing: Billing, test_key: dict[str, str]) -> None:
    billing.authenticate(test_key["x-api-key"])
    assert test_key["x-api-key"] not in repr(vars(billing.api_key_cache))
    cache = ApiKeyCache(max_entries=2)
    entry = next(iter(billing.api_key_cache._items.values()))
    for name in ("a", "b", "c"):
        cache.put(name, entry)
    assert len(cache) == 2 and cache.get("a", entry.read_at, TTL) is None
    assert cache.get("c", entry.read_at, TTL) == entry
    assert cache.get("c", entry.read_at - timedelta(seconds=1), TTL) is None  # the clock went back


def test_the_setting_is_checked() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(api_key_cache_ttl=timedelta(seconds=-1))
    assert caught.value.field == "api_key_cache_ttl"
    with pytest.raises(ValidationError):
        Settings(api_key_cache_ttl=5)  # type: ignore[arg-type]


def test_the_cli_reads_the_ttl_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from billingkit.cli import _settings, build_parser

    parser = build_parser()
    monkeypatch.delenv("BILLINGKIT_API_KEY_CACHE_TTL", raising=False)
    assert _settings(parser.parse_args(["serve"])).api_key_cache_ttl == TTL
    monkeypatch.setenv("BILLINGKIT_API_KEY_CACHE_TTL", "0")
    assert _settings(parser.parse_args(["serve"])).api_key_cache_ttl == timedelta(0)
