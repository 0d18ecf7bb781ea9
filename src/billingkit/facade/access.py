"""``scoped.api_keys``, ``scoped.users`` and ``scoped.environments``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.access import Account, ApiKey, Environment
from billingkit.domain.queries import ListQuery, Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import access as svc

__all__ = ["ApiKeys", "Environments", "Users"]


class ApiKeys:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.ApiKeyCreate | None = None, /, **fields: Any) -> svc.IssuedKey:
        """Issue a key in this environment. Fields: ``name`` (required), ``expires_at``,
        ``service_account_id`` (else the caller's own account). The plain key is in
        ``.api_key`` of the result and nowhere else, ever."""
        data = request or parse_input(svc.ApiKeyCreate, fields)
        return self._s.run(svc.issue_api_key, data=data)

    def list(self, query: ListQuery | None = None) -> Page[ApiKey]:
        return self._s.run(svc.list_api_keys, query=query or ListQuery())

    def delete(self, key_id: str) -> ApiKey:
        return self._s.run(svc.delete_api_key, key_id=key_id)


class Users:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(
        self, request: svc.AccountCreate | None = None, /, **fields: Any
    ) -> tuple[Account, str | None]:
        """Create a user (``type="user"``, ``email``) or a service account
        (``type="service_account"``, ``roles``). Returns the account and, for users without a
        given password, the generated password (shown once)."""
        data = request or parse_input(svc.AccountCreate, fields)
        return self._s.run(svc.create_account, data=data)

    def get(self, account_id: str) -> Account:
        return self._s.run(svc.get_account, account_id=account_id)

    def me(self) -> Account:
        """The caller's own account."""
        return self.get(self._s.actor.id)


class Environments:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def list(self) -> Page[Environment]:
        return self._s.run(svc.list_environments)

    def create(self, request: svc.EnvironmentCreate | None = None, /, **fields: Any) -> Environment:
        """A new environment of the tenant: ``name`` and ``type`` (development|production)."""
        data = request or parse_input(svc.EnvironmentCreate, fields)
        return self._s.run(svc.create_environment, data=data)
