"""Access management: searching, updating and deleting accounts, changing a user's roles, the
caller's own profile, the role catalogue, and the tenant's own record (read, update, suspension).

Rules (behaviour notes §10 and the reference's operation notes):

- acting on an account (updating or deleting it) needs every role it holds, as granting them
  does (:func:`billingkit.domain.access.uncovered_roles`);
- changing roles needs a human super admin (a user account holding ``super_admin``, or the
  embedding host); only user accounts' roles change (a service account's are fixed at
  creation), never the caller's own, and not while the user has a usable API key, whose roles
  were copied from the old ones;
- a deleted service account's API keys are revoked with it, in every environment;
- a suspended tenant's callers may read, never write (enforced once, for every write, by
  :func:`require_writable`, which ``Scoped.run`` calls).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, ClassVar

from billingkit.domain.access import (
    ROLE_INFO,
    ROLES,
    Account,
    AccountType,
    Action,
    ApiKey,
    Role,
    Tenant,
    TenantBillingDetails,
    uncovered_roles,
    validate_roles,
)
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page
from billingkit.domain.resources import Status
from billingkit.domain.validation import InputModel, Metadata, Name
from billingkit.errors import InvalidOperation, NotFound, PermissionDenied, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "SUPER_ADMIN_MESSAGE",
    "SUSPENDED_MESSAGE",
    "AccountDeletion",
    "RoleDescription",
    "RolesUpdate",
    "ServiceAccountUpdate",
    "TenantStatusCache",
    "TenantUpdate",
    "UserSearch",
    "UserUpdate",
    "delete_service_account",
    "get_role",
    "get_tenant",
    "list_roles",
    "remove_user",
    "require_writable",
    "search_users",
    "set_tenant_suspended",
    "update_me",
    "update_service_account",
    "update_tenant",
    "update_user_roles",
]

#: The reference's 403 message for a suspended tenant's writes.
SUSPENDED_MESSAGE = "tenant account is suspended"
#: The reference's 403 message for operations that need a human super admin.
SUPER_ADMIN_MESSAGE = "This action requires a user account with Super Admin access"


# -- accounts ----------------------------------------------------------------------------------


class UserSearch(SearchRequest):
    """``POST /users/search``: ``user_ids``, ``type`` and ``roles`` (accounts holding any of
    them) narrow the tenant's accounts, with the common paging, sorting and ``status``."""

    kind: ClassVar[str] = "accounts"

    user_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    type: Annotated[AccountType | None, Searches("type", Op.EQ)] = None
    roles: list[str] | None = None


def _without_secret(account: Account) -> Account:
    return account.model_copy(update={"password_hash": None})


def _all_pages(uow: UnitOfWork, query: ListQuery) -> Iterator[Account]:
    offset = 0
    while True:
        page = uow.accounts.list(
            ListQuery(
                filters=query.filters, sort=query.sort, limit=MAX_LIMIT, offset=offset, status=query.status
            )
        )
        yield from page.items
        offset += len(page.items)
        if not page.items or offset >= page.total:
            return


def search_users(uow: UnitOfWork, ctx: Context, *, search: UserSearch) -> Page[Account]:
    """The tenant's accounts matching ``search`` (password hashes never leave). The ``roles``
    filter keeps accounts holding any of the roles; roles are a list per account, which the
    stores do not filter on, so with it the matching accounts are read and paged here (a tenant
    has few accounts)."""
    ctx.require("user", Action.READ)
    query = search.to_query()
    if not search.roles:
        page = uow.accounts.list(query)
        return Page(tuple(_without_secret(a) for a in page.items), page.total, page.limit, page.offset)
    wanted = set(_role_names(search.roles))
    matched = [a for a in _all_pages(uow, query) if wanted.intersection(a.roles)]
    chosen = matched[query.offset : query.offset + query.limit]
    return Page(tuple(_without_secret(a) for a in chosen), len(matched), query.limit, query.offset)


def _role_names(values: list[str]) -> tuple[Role, ...]:
    roles = []
    for value in values:
        try:
            roles.append(Role(value))
        except ValueError:
            raise ValidationError(
                f"unknown role {value!r}; allowed: {', '.join(r.value for r in Role)}",
                field="roles",
                details={"allowed_values": [r.value for r in Role], "provided_value": value},
            ) from None
    return tuple(roles)


def _live_account(uow: UnitOfWork, account_id: str) -> Account:
    account = uow.accounts.find(account_id)
    if account is None or account.status is not Status.PUBLISHED:
        raise NotFound(f"user {account_id} not found")
    return account


def _service_account(uow: UnitOfWork, ctx: Context, account_id: str, what: str) -> Account:
    ctx.require("user", Action.WRITE)
    account = _live_account(uow, account_id)
    if account.type is not AccountType.SERVICE_ACCOUNT:
        raise ValidationError(
            f"user {account_id} is a user account; only service accounts can be {what} here",
            field="id",
        )
    missing = uncovered_roles(ctx.actor.roles, account.roles)
    if missing:
        names = ", ".join(r.value for r in missing)
        raise PermissionDenied(
            f"you cannot change service account {account_id}: "
            f"it holds {names}, which your roles do not cover",
            details={"roles": [r.value for r in missing]},
        )
    return account


class ServiceAccountUpdate(InputModel):
    """``PUT /users/{id}``: a service account's new ``name`` and, when given, its ``metadata``
    (replaced whole)."""

    name: Name
    metadata: Metadata | None = None


def update_service_account(
    uow: UnitOfWork, ctx: Context, *, account_id: str, data: ServiceAccountUpdate
) -> Account:
    """Rename a service account (and replace its metadata). Needs ``user`` write and roles
    covering the account's. Its roles and keys do not change."""
    account = _service_account(uow, ctx, account_id, "updated")
    changes: dict[str, Any] = {"name": data.name, **ctx.touch()}
    if data.metadata is not None:
        changes["metadata"] = data.metadata
    updated = account.model_copy(update=changes)
    (saved,) = uow.accounts.update_many([(account, updated)])  # only the fields changed here
    return _without_secret(saved)


@dataclass(frozen=True, slots=True)
class AccountDeletion:
    """A deleted (archived) service account and the API keys revoked with it."""

    account: Account
    revoked_keys: tuple[ApiKey, ...]


def _keys_of(uow: UnitOfWork, ctx: Context, account_id: str) -> Iterator[tuple[UnitOfWork, ApiKey]]:
    """Every published key of ``account_id`` in every environment of the tenant, with the unit
    of work of its environment (keys belong to environments, accounts to the tenant)."""
    envs = uow.environments.list(ListQuery(limit=MAX_LIMIT, status=None)).items
    for env in envs:
        env_uow = uow.for_scope(ctx.tenant_id, env.id)
        offset = 0
        while True:
            page = env_uow.api_keys.list(
                ListQuery(filters=(Filter("account_id", Op.EQ, account_id),), limit=MAX_LIMIT, offset=offset)
            )
            for key in page.items:
                yield env_uow, key
            offset += len(page.items)
            if not page.items or offset >= page.total:
                break


def delete_service_account(uow: UnitOfWork, ctx: Context, *, account_id: str) -> AccountDeletion:
    """Archive a service account and revoke (archive) every key it has, in every environment:
    they stop authenticating at once (authentication also refuses keys of an archived account).
    Needs ``user`` write and roles covering the account's."""
    account = _service_account(uow, ctx, account_id, "deleted")
    return _archive_with_keys(uow, ctx, account)


def remove_user(uow: UnitOfWork, ctx: Context, *, account_id: str) -> AccountDeletion:
    """``POST /users/{id}/remove``: remove a human user from the tenant: the account is archived
    (its password and sessions stop working) and its API keys revoked in every environment. Like
    changing roles, only a human super admin may, not on its own account; service accounts are
    deleted with :func:`delete_service_account` instead (400 here)."""
    if not ctx.actor.is_human_super_admin:
        raise PermissionDenied(SUPER_ADMIN_MESSAGE)
    ctx.require("user", Action.WRITE)
    if account_id == ctx.actor.id:
        raise PermissionDenied("you cannot remove yourself")
    account = _live_account(uow, account_id)
    if account.type is not AccountType.USER:
        raise ValidationError(
            f"user {account_id} is a service account; delete it with DELETE /users/{{id}}", field="id"
        )
    return _archive_with_keys(uow, ctx, account)


def _archive_with_keys(uow: UnitOfWork, ctx: Context, account: Account) -> AccountDeletion:
    revoked = []
    for env_uow, key in list(_keys_of(uow, ctx, account.id)):
        gone = key.model_copy(update={"status": Status.ARCHIVED, **ctx.touch()})
        env_uow.api_keys.update_many([(key, gone)])
        revoked.append(gone)
    archived = account.model_copy(update={"status": Status.ARCHIVED, **ctx.touch()})
    (saved,) = uow.accounts.update_many([(account, archived)])
    return AccountDeletion(_without_secret(saved), tuple(revoked))


class RolesUpdate(InputModel):
    """``PUT /users/{id}/roles``: the user's complete new list of roles."""

    roles: list[str]


def update_user_roles(uow: UnitOfWork, ctx: Context, *, account_id: str, data: RolesUpdate) -> Account:
    """Replace a user account's roles. Only a human super admin may (403 with the reference's
    message otherwise), not on its own account; ``super_admin`` stands alone; a service
    account's roles are fixed (400); a user with a usable API key in any environment is refused
    (400 listing the keys by environment: a key keeps the roles it copied, so they would silently
    outlive the change; revoke them first)."""
    if not ctx.actor.is_human_super_admin:
        raise PermissionDenied(SUPER_ADMIN_MESSAGE)
    ctx.require("user", Action.WRITE)
    if not data.roles:
        raise ValidationError("roles must name at least one role", field="roles")
    roles = validate_roles(data.roles)
    if account_id == ctx.actor.id:
        raise PermissionDenied("you cannot change your own roles")
    account = _live_account(uow, account_id)
    if account.type is not AccountType.USER:
        raise ValidationError(
            "a service account's roles are fixed at creation; create another service account",
            field="id",
        )
    missing = uncovered_roles(ctx.actor.roles, (*account.roles, *roles))
    if missing:
        raise PermissionDenied(f"you cannot grant or remove {', '.join(r.value for r in missing)}")
    active: dict[str, list[str]] = {}
    for _, key in _keys_of(uow, ctx, account.id):
        if key.is_usable(ctx.now):
            active.setdefault(key.environment_id, []).append(key.id)
    if active:
        listed = "; ".join(f"{env}: {', '.join(ids)}" for env, ids in sorted(active.items()))
        raise InvalidOperation(
            f"user {account_id} has active API keys; delete them first, then change the roles ({listed})",
            details={"active_keys": active},
        )
    updated = account.model_copy(update={"roles": roles, **ctx.touch()})
    (saved,) = uow.accounts.update_many([(account, updated)])  # only the fields changed here
    return _without_secret(saved)


class UserUpdate(InputModel):
    """``PUT /users/me``: the caller's own ``name`` and ``metadata`` (replaced whole); nothing
    that grants anything."""

    name: Name | None = None
    metadata: Metadata | None = None


def update_me(uow: UnitOfWork, ctx: Context, *, data: UserUpdate) -> Account:
    """Update the caller's own account (no permission needed: it is its own profile). A
    publishable key may not (it only ingests events); the embedding host has no account."""
    if ctx.actor.publishable:
        raise PermissionDenied("a publishable key may only ingest events")
    account = uow.accounts.find(ctx.actor.id)
    if account is None or account.status is not Status.PUBLISHED:
        raise InvalidOperation("the caller has no account to update")
    changes: dict[str, Any] = dict(ctx.touch())
    if data.name is not None:
        changes["name"] = data.name
    if data.metadata is not None:
        changes["metadata"] = data.metadata
    updated = account.model_copy(update=changes)
    (saved,) = uow.accounts.update_many([(account, updated)])  # only the fields changed here
    return _without_secret(saved)


# -- the role catalogue ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoleDescription:
    """One role of the catalogue: what it is called and which (entity, actions) it grants
    (``"*"``: every entity)."""

    id: str
    name: str
    description: str
    permissions: dict[str, list[str]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "permissions": {entity: list(actions) for entity, actions in self.permissions.items()},
        }


def _describe(role: Role) -> RoleDescription:
    name, description = ROLE_INFO[role]
    permissions = {
        entity: sorted(action.value for action in actions) for entity, actions in ROLES[role].items()
    }
    return RoleDescription(role.value, name, description, permissions)


def list_roles(
    uow: UnitOfWork, ctx: Context, *, user_type: AccountType | None = None
) -> list[RoleDescription]:
    """Every role, in the catalogue's order. Both account types may hold every role, so
    ``user_type`` narrows nothing (it is checked, like the reference's parameter)."""
    del uow, user_type
    _refuse_publishable(ctx)
    return [_describe(role) for role in Role]


def get_role(uow: UnitOfWork, ctx: Context, *, role_id: str) -> RoleDescription:
    del uow
    _refuse_publishable(ctx)
    try:
        return _describe(Role(role_id))
    except ValueError:
        raise NotFound(f"role {role_id} not found") from None


def _refuse_publishable(ctx: Context) -> None:
    if ctx.actor.publishable:
        raise PermissionDenied("a publishable key may only ingest events")


# -- the tenant --------------------------------------------------------------------------------


def _tenant(uow: UnitOfWork, tenant_id: str) -> Tenant:
    tenant = uow.tenants.find(tenant_id)
    if tenant is None or tenant.status is not Status.PUBLISHED:
        raise NotFound(f"tenant {tenant_id} not found")
    return tenant


def get_tenant(uow: UnitOfWork, ctx: Context, *, tenant_id: str) -> Tenant:
    """The caller's own tenant; any other id is :class:`NotFound` (another tenant does not
    exist for this caller)."""
    _refuse_publishable(ctx)
    if tenant_id != ctx.tenant_id:
        raise NotFound(f"tenant {tenant_id} not found")
    return _tenant(uow, tenant_id)


class TenantUpdate(InputModel):
    """``PUT /tenants/update``: a field given replaces the stored one (``billing_details`` and
    ``metadata`` whole); an absent one is kept."""

    name: Name | None = None
    billing_details: TenantBillingDetails | None = None
    metadata: Metadata | None = None


def update_tenant(uow: UnitOfWork, ctx: Context, *, data: TenantUpdate) -> Tenant:
    """Update the caller's tenant. Needs ``tenant`` write (``all_writer``, ``super_admin``)."""
    ctx.require("tenant", Action.WRITE)
    tenant = _tenant(uow, ctx.tenant_id)
    changes: dict[str, Any] = {"updated_at": ctx.now, "updated_by": ctx.actor.id}
    for field in ("name", "billing_details", "metadata"):
        value = getattr(data, field)
        if value is not None:
            changes[field] = value.strip() if field == "name" else value
    updated = tenant.model_copy(update=changes)
    (saved,) = uow.tenants.update_many([(tenant, updated)])  # never undoes a suspension meanwhile
    return saved


def set_tenant_suspended(uow: UnitOfWork, ctx: Context, *, suspended: bool) -> Tenant:
    """Suspend or reactivate ``ctx.tenant_id``: an operator's operation (the embedding host,
    ``Billing.suspend_tenant``/``reactivate_tenant``), never a tenant's own caller's. Idempotent:
    suspending a suspended tenant keeps its ``suspended_at``."""
    if ctx.actor.account_type != "system":
        raise PermissionDenied("only the embedding host (system actor) can suspend or reactivate tenants")
    tenant = _tenant(uow, ctx.tenant_id)
    if tenant.suspended == suspended:
        return tenant
    updated = tenant.model_copy(
        update={
            "suspended_at": ctx.now if suspended else None,
            "updated_at": ctx.now,
            "updated_by": ctx.actor.id,
        }
    )
    (saved,) = uow.tenants.update_many([(tenant, updated)])  # only suspended_at and the stamp
    return saved


class TenantStatusCache:
    """Whether each tenant is suspended, as last read, by tenant id (one per ``Billing``):
    :func:`require_writable` reads the store at most once per ``Settings.tenant_status_ttl``
    per tenant, so the check costs writes nothing measurable. Guarded by a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, tuple[bool, datetime]] = {}

    def __repr__(self) -> str:
        return f"<TenantStatusCache tenants={len(self._items)}>"

    def get(self, tenant_id: str, now: datetime, ttl: timedelta) -> bool | None:
        """Whether ``tenant_id`` is suspended, if read within ``ttl`` before ``now``."""
        found = self._items.get(tenant_id)
        if found is None or not found[1] <= now < found[1] + ttl:
            return None
        return found[0]

    def put(self, tenant_id: str, suspended: bool, now: datetime) -> None:
        with self._lock:
            self._items[tenant_id] = (suspended, now)

    def forget(self, tenant_id: str) -> None:
        with self._lock:
            self._items.pop(tenant_id, None)


def require_writable(
    uow: UnitOfWork, tenant_id: str, *, now: datetime, cache: TenantStatusCache, ttl: timedelta
) -> None:
    """Raise :class:`PermissionDenied` ("tenant account is suspended") when ``tenant_id`` is
    suspended. Called at the start of every write unit of work of a scope (``Scoped.run``):
    the one place suspension is enforced, for the library and HTTP alike. A tenant id with no
    stored tenant (a host's own scoping) is never suspended."""
    suspended = cache.get(tenant_id, now, ttl) if ttl else None
    if suspended is None:
        tenant = uow.tenants.find(tenant_id)
        suspended = tenant is not None and tenant.suspended
        if ttl:
            cache.put(tenant_id, suspended, now)
    if suspended:
        raise PermissionDenied(SUSPENDED_MESSAGE)
