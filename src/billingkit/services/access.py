"""Access: tenants, environments, accounts, API keys and their authentication (signing in with a
password and session tokens: :mod:`billingkit.services.sessions`).

- An API key is bound to one environment, copies its account's roles at creation (they never
  change), is stored only as a SHA-256 hash, and its plain value is returned once.
- A session token (from :func:`billingkit.services.sessions.login`) carries ``tenant_id``, ``user_id`` and an
  ``environment_id`` claim; roles are read from the account at each request.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from billingkit.domain.access import (
    Account,
    AccountType,
    Action,
    Actor,
    ApiKey,
    ApiKeyType,
    Environment,
    EnvironmentType,
    Role,
    Tenant,
    role_covers,
    uncovered_roles,
    validate_roles,
)
from billingkit.domain.credentials import (
    display_id,
    hash_api_key,
    hash_password,
    is_well_formed_api_key,
    new_api_key,
)
from billingkit.domain.queries import ListQuery, Page
from billingkit.domain.resources import Status, iso
from billingkit.domain.validation import (
    Email,
    InputModel,
    Metadata,
    Name,
    UtcDatetime,
    parse_input,
)
from billingkit.errors import (
    InvalidOperation,
    NotFound,
    PermissionDenied,
    Unauthorized,
    ValidationError,
)
from billingkit.ports import UnitOfWork
from billingkit.services.api_key_cache import ApiKeyCache, CachedKey
from billingkit.services.context import Context

__all__ = [
    "AccountCreate",
    "ApiKeyCreate",
    "BootstrapResult",
    "EnvironmentCreate",
    "IssuedKey",
    "Principal",
    "authenticate_api_key",
    "bootstrap",
    "cached_api_key",
    "create_account",
    "create_environment",
    "create_tenant",
    "delete_api_key",
    "get_account",
    "issue_api_key",
    "list_api_keys",
    "list_environments",
    "record_key_use",
]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: its tenant, its environment (if any) and its roles.
    ``stale_key``: the API key as just read from the store when its ``last_used_at`` is due to be
    written (see :func:`authenticate_api_key`); ``None`` otherwise."""

    tenant_id: str
    environment_id: str | None
    actor: Actor
    stale_key: ApiKey | None = None


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A new API key. ``api_key`` is the only time the plain value is available."""

    key: ApiKey
    api_key: str

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.key.id,
            "name": self.key.name,
            "api_key": self.api_key,
            "roles": [r.value for r in self.key.roles],
            "created_at": iso(self.key.created_at),
            "secret": self.key.to_dict(),
        }


def _require_covered(ctx: Context, roles: tuple[Role, ...], what: str) -> None:
    """Acting on a key or an account needs every role it holds (the rule for granting them), so
    nobody can remove or copy the power of someone above them."""
    missing = uncovered_roles(ctx.actor.roles, roles)
    if missing:
        names = ", ".join(r.value for r in missing)
        raise PermissionDenied(
            f"you cannot {what}: it holds {names}, which your roles do not cover",
            details={"roles": [r.value for r in missing]},
        )


def _tenant_stamp(ctx: Context) -> dict[str, object]:
    return {
        "tenant_id": ctx.tenant_id,
        "created_at": ctx.now,
        "updated_at": ctx.now,
        "created_by": ctx.actor.id,
        "updated_by": ctx.actor.id,
    }


# -- tenants and environments ------------------------------------------------------------------


def create_tenant(uow: UnitOfWork, ctx: Context, *, name: str) -> Tenant:
    """Create a tenant (``ctx.tenant_id`` is the new tenant's id). System operation."""
    if Role.SUPER_ADMIN not in ctx.actor.roles or ctx.actor.account_type != "system":
        raise PermissionDenied("only the embedding host (system actor) can create tenants")
    if not name.strip():
        raise ValidationError("name must not be empty", field="name")
    stamp = _tenant_stamp(ctx)
    stamp.pop("tenant_id")
    tenant = Tenant(id=ctx.tenant_id, name=name.strip(), **stamp)
    uow.tenants.add(tenant)
    return tenant


class EnvironmentCreate(InputModel):
    name: Name
    type: EnvironmentType


def create_environment(uow: UnitOfWork, ctx: Context, *, data: EnvironmentCreate) -> Environment:
    ctx.require("environment", Action.WRITE)
    env = Environment(
        id=ctx.ids.new("env"),
        name=data.name,
        type=data.type,
        **_tenant_stamp(ctx),
    )
    uow.environments.add(env)
    return env


def list_environments(uow: UnitOfWork, ctx: Context) -> Page[Environment]:
    from billingkit.domain.queries import Sort

    return uow.environments.list(ListQuery(sort=(Sort("created_at", descending=False),)))


# -- accounts ----------------------------------------------------------------------------------


class AccountCreate(InputModel):
    """``POST /users``: a user (email required; a password is generated when none is given) or a
    service account (roles required)."""

    type: AccountType
    name: Name | None = None
    email: Email | None = None
    password: Annotated[str, Field(min_length=8, max_length=200)] | None = None
    roles: list[str] = []
    metadata: Metadata = {}

    @model_validator(mode="after")
    def _by_type(self) -> AccountCreate:
        if self.type is AccountType.USER and not self.email:
            raise ValueError("email is required for a user account")
        if self.type is AccountType.SERVICE_ACCOUNT:
            if not self.roles:
                raise ValueError("roles are required for a service account")
            if self.password:
                raise ValueError("service accounts have no password; they use API keys")
        return self


def create_account(uow: UnitOfWork, ctx: Context, *, data: AccountCreate) -> tuple[Account, str | None]:
    """Create an account; returns it and, for users, the plain password (shown once).

    The caller may only grant roles its own roles cover. Users default to ``all_reader``.
    """
    ctx.require("user", Action.WRITE)
    roles = validate_roles(data.roles or [Role.ALL_READER.value])
    for role in roles:
        if not role_covers(ctx.actor.roles, role):
            raise PermissionDenied(f"you cannot grant role {role.value}: your roles do not cover it")
    password: str | None = None
    password_hash: str | None = None
    if data.type is AccountType.USER:
        password = data.password or secrets.token_urlsafe(18)
        password_hash = hash_password(password)
    email = data.email.lower() if data.email else None
    account = Account(
        id=ctx.ids.new("user"),
        type=data.type,
        name=data.name or email or "service account",
        email=email,
        password_hash=password_hash,
        roles=roles,
        metadata=data.metadata,
        **_tenant_stamp(ctx),
    )
    uow.accounts.add(account)
    return account, (password if data.password is None else None)


def get_account(uow: UnitOfWork, ctx: Context, *, account_id: str) -> Account:
    """An account of the tenant. The caller's own account needs no permission (``users.me``);
    another one needs ``user:read``. The password hash is never returned."""
    if account_id != ctx.actor.id:
        ctx.require("user", Action.READ)
    account = uow.accounts.find(account_id)
    if account is None or account.status is not Status.PUBLISHED:
        raise NotFound(f"user {account_id} not found")
    return account.model_copy(update={"password_hash": None})


# -- API keys ----------------------------------------------------------------------------------


class ApiKeyCreate(InputModel):
    """``POST /secrets/api/keys``. ``expires_at``: an instant, or ``"never"`` (or absent) for a
    key that does not expire. ``type``: ``private_key`` (``sk_``, acts with the account's roles)
    or ``publishable_key`` (``pk_``, may only ingest events)."""

    name: Name
    type: ApiKeyType = ApiKeyType.PRIVATE_KEY
    expires_at: UtcDatetime | None = None
    service_account_id: str | None = None

    @field_validator("expires_at", mode="before")
    @classmethod
    def _never(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "never":
            return None
        return value


def issue_api_key(uow: UnitOfWork, ctx: Context, *, data: ApiKeyCreate) -> IssuedKey:
    """Issue a key in the caller's environment for the caller's own account, or (super admins
    only) for a service account. The key copies the account's roles now, so the caller's roles
    must cover them: an old narrow key cannot mint a key with roles its account gained later."""
    ctx.require("secret", Action.WRITE)
    if data.expires_at is not None and data.expires_at <= ctx.now:
        raise ValidationError("expires_at must be in the future", field="expires_at")
    if data.service_account_id is not None:
        if Role.SUPER_ADMIN not in ctx.actor.roles:
            raise PermissionDenied("only a super_admin can issue keys for service accounts")
        account = uow.accounts.find(data.service_account_id)
        if account is None or account.status is not Status.PUBLISHED:
            raise NotFound(f"service account {data.service_account_id} not found")
        if account.type is not AccountType.SERVICE_ACCOUNT:
            raise ValidationError(
                "service_account_id must name a service account", field="service_account_id"
            )
    else:
        account = uow.accounts.find(ctx.actor.id)
        if account is None or account.status is not Status.PUBLISHED:
            raise InvalidOperation(
                "the caller has no account; pass service_account_id to issue a key for one"
            )
    _require_covered(ctx, account.roles, f"issue a key for account {account.id}")
    roles = account.roles
    if data.type is ApiKeyType.PUBLISHABLE_KEY:
        # A publishable key ends up in client code: it only ever ingests events.
        if not role_covers(account.roles, Role.EVENT_INGESTOR):
            raise ValidationError(
                "a publishable key ingests events: its account must hold a role covering event_ingestor",
                field="type",
            )
        roles = (Role.EVENT_INGESTOR,)
    plain = new_api_key("pk_" if data.type is ApiKeyType.PUBLISHABLE_KEY else "sk_")
    key = ApiKey(
        id=ctx.ids.new("secret"),
        name=data.name,
        type=data.type,
        key_hash=hash_api_key(plain),
        display_id=display_id(plain),
        account_id=account.id,
        account_type=account.type,
        roles=roles,
        expires_at=data.expires_at,
        **ctx.stamp(),
    )
    uow.api_keys.add(key)
    return IssuedKey(key=key, api_key=plain)


def list_api_keys(uow: UnitOfWork, ctx: Context, *, query: ListQuery) -> Page[ApiKey]:
    """Every key of the environment, including keys the caller could not delete: an inventory
    shows what exists. Keys are metadata only (``display_id``, roles, owner); the plain value is
    never stored, so it cannot be listed."""
    ctx.require("secret", Action.READ)
    return uow.api_keys.list(query)


def delete_api_key(uow: UnitOfWork, ctx: Context, *, key_id: str) -> ApiKey:
    """Revoke a key: it stops authenticating at once. The caller's roles must cover every role
    of the key (an ``all_writer`` cannot revoke the owner's ``super_admin`` key)."""
    ctx.require("secret", Action.WRITE)
    key = uow.api_keys.find(key_id)
    if key is None or key.status is not Status.PUBLISHED:
        raise NotFound(f"api key {key_id} not found")
    _require_covered(ctx, key.roles, f"delete api key {key_id}")
    revoked = key.model_copy(update={"status": Status.ARCHIVED, **ctx.touch()})
    uow.api_keys.update(revoked)
    return revoked


# -- authentication ----------------------------------------------------------------------------


def environment_choice(environment_id: str | None) -> str | None:
    """An empty or blank ``X-Environment-ID`` is the same as none at all."""
    if environment_id is None:
        return None
    return environment_id.strip() or None


def live_account(uow: UnitOfWork, tenant_id: str, account_id: str) -> Account | None:
    account = uow.for_scope(tenant_id, None).accounts.find(account_id)
    if account is None or account.status is not Status.PUBLISHED:
        return None
    return account


def _check_key_use(
    environment_id: str | None, key_environment: str, expires_at: datetime | None, now: datetime
) -> None:
    """The checks of every use of a key, cached or read: expiry, then the environment."""
    if expires_at is not None and now >= expires_at:
        raise Unauthorized("this API key has expired")
    if environment_id is not None and environment_id != key_environment:
        raise Unauthorized("this API key belongs to another environment")


def _principal(entry: CachedKey, stale_key: ApiKey | None = None) -> Principal:
    return Principal(
        tenant_id=entry.tenant_id, environment_id=entry.environment_id, actor=entry.actor, stale_key=stale_key
    )


def cached_api_key(
    cache: ApiKeyCache,
    *,
    api_key: str | None,
    now: datetime,
    ttl: timedelta,
    environment_id: str | None = None,
) -> Principal | None:
    """The principal of ``api_key`` from ``cache`` (read within ``ttl``), checked for expiry and
    environment like :func:`authenticate_api_key` (raises :class:`Unauthorized` the same way);
    ``None`` when the cache cannot answer (absent, malformed or unknown keys included): then call
    :func:`authenticate_api_key`. Reads no store, so it may run on an event loop."""
    if not api_key or not ttl or not is_well_formed_api_key(api_key):
        return None
    entry = cache.get(hash_api_key(api_key), now, ttl)
    if entry is None:
        return None
    _check_key_use(environment_choice(environment_id), entry.environment_id, entry.expires_at, now)
    return _principal(entry)


def authenticate_api_key(
    uow: UnitOfWork,
    *,
    api_key: str | None,
    now: datetime,
    environment_id: str | None = None,
    cache: ApiKeyCache | None = None,
    last_used_interval: timedelta | None = None,
) -> Principal:
    """Resolve an ``x-api-key`` value with one read of the store (the key and whether its account
    is live). Every failure is :class:`Unauthorized`: missing, malformed, unknown, expired or
    deleted keys, keys of deleted accounts, and a key used against another environment
    (``environment_id`` names one other than the key's; empty counts as absent). A usable key is
    kept in ``cache`` (see :mod:`billingkit.services.api_key_cache`).

    With ``last_used_interval``, a key whose stored ``last_used_at`` is absent or at least that
    old comes back as ``Principal.stale_key``: the caller writes the use
    (:func:`record_key_use`). Only this store read decides, so a key answered from the cache
    costs nothing, and a busy key is written about once per interval."""
    environment_id = environment_choice(environment_id)
    if not api_key:
        raise Unauthorized("missing API key: send it in the x-api-key header")
    if not is_well_formed_api_key(api_key):
        raise Unauthorized("malformed API key")
    key_hash = hash_api_key(api_key)
    found = uow.find_api_key_with_account(key_hash)
    if found is None:
        raise Unauthorized("invalid API key")
    key, account_live = found
    if key.status is not Status.PUBLISHED:
        raise Unauthorized("this API key has been deleted")
    _check_key_use(environment_id, key.environment_id, key.expires_at, now)
    if not account_live:
        raise Unauthorized("the account of this API key no longer exists")
    actor = Actor(
        id=key.account_id,
        roles=key.roles,
        account_type=key.account_type.value,
        publishable=key.type is ApiKeyType.PUBLISHABLE_KEY,
    )
    entry = CachedKey(key.tenant_id, key.environment_id, actor, key.expires_at, now)
    if cache is not None:
        cache.put(key_hash, entry)
    stale = last_used_interval is not None and (
        key.last_used_at is None or now - key.last_used_at >= last_used_interval
    )
    return _principal(entry, key if stale else None)


def record_key_use(uow: UnitOfWork, *, key: ApiKey, now: datetime) -> None:
    """Write ``last_used_at = now`` on ``key`` (as read by :func:`authenticate_api_key`) and
    nothing else: a key revoked meanwhile stays revoked. ``uow`` is any write unit of work."""
    keys = uow.for_scope(key.tenant_id, key.environment_id).api_keys
    keys.update_many([(key, key.model_copy(update={"last_used_at": now}))])


# -- bootstrap ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BootstrapResult:
    """A new tenant with an owner (``super_admin``), a test and a production environment, and
    one ``super_admin`` key per environment. Plain secrets appear here only."""

    tenant: Tenant
    owner: Account
    owner_password: str
    environments: tuple[tuple[Environment, IssuedKey], ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "tenant_id": self.tenant.id,
            "owner": {"id": self.owner.id, "email": self.owner.email, "password": self.owner_password},
            "environments": [
                {"id": env.id, "name": env.name, "type": env.type.value, "api_key": issued.api_key}
                for env, issued in self.environments
            ],
        }


def bootstrap(
    uow: UnitOfWork,
    ctx: Context,
    *,
    tenant_name: str,
    owner_email: str,
    owner_password: str | None = None,
) -> BootstrapResult:
    """Create a tenant ready to use, in one unit of work (all or nothing)."""
    tenant = create_tenant(uow, ctx, name=tenant_name)
    tenant_uow = uow.for_scope(tenant.id, None)
    owner, generated = create_account(
        tenant_uow,
        ctx,
        data=parse_input(
            AccountCreate,
            {
                "type": AccountType.USER,
                "name": "Owner",
                "email": owner_email,
                "password": owner_password,
                "roles": [Role.SUPER_ADMIN.value],
            },
        ),
    )
    environments = []
    for name, env_type in (("test", EnvironmentType.DEVELOPMENT), ("production", EnvironmentType.PRODUCTION)):
        env = create_environment(tenant_uow, ctx, data=EnvironmentCreate(name=name, type=env_type))
        env_ctx = Context(
            tenant_id=tenant.id,
            environment_id=env.id,
            actor=Actor(id=owner.id, roles=owner.roles, account_type=owner.type.value),
            now=ctx.now,
            ids=ctx.ids,
            settings=ctx.settings,
            providers=ctx.providers,
        )
        issued = issue_api_key(
            uow.for_scope(tenant.id, env.id), env_ctx, data=ApiKeyCreate(name=f"{name} super admin key")
        )
        environments.append((env, issued))
    return BootstrapResult(
        tenant=tenant,
        owner=owner,
        owner_password=owner_password or generated or "",
        environments=tuple(environments),
    )
