"""Access: tenants, environments, accounts, API keys, roles and permissions.

A role grants (entity, action) permissions; a caller is allowed when any of its roles grants the
permission. ``super_admin`` grants everything; ``event_ingestor`` may write events but not read them,
``event_reader`` the reverse; a key holding both may do both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from billingkit.domain.resources import EnvironmentResource, Record, TenantResource, iso
from billingkit.domain.validation import UtcDatetime
from billingkit.errors import PermissionDenied, ValidationError

__all__ = [
    "ROLES",
    "ROLE_INFO",
    "Account",
    "AccountType",
    "Action",
    "Actor",
    "ApiKey",
    "ApiKeyType",
    "Environment",
    "EnvironmentType",
    "Role",
    "Tenant",
    "TenantAddress",
    "TenantBillingDetails",
    "role_covers",
    "uncovered_roles",
    "validate_roles",
]


class Action(StrEnum):
    READ = "read"
    WRITE = "write"


class Role(StrEnum):
    SUPER_ADMIN = "super_admin"
    ALL_READER = "all_reader"
    ALL_WRITER = "all_writer"
    EVENT_INGESTOR = "event_ingestor"
    EVENT_READER = "event_reader"


ANY = "*"

# role -> {entity: actions}; "*" matches every entity.
ROLES: dict[Role, dict[str, frozenset[Action]]] = {
    Role.SUPER_ADMIN: {ANY: frozenset(Action)},
    Role.ALL_READER: {ANY: frozenset({Action.READ})},
    Role.ALL_WRITER: {ANY: frozenset({Action.READ, Action.WRITE})},
    Role.EVENT_INGESTOR: {"event": frozenset({Action.WRITE})},
    Role.EVENT_READER: {"event": frozenset({Action.READ})},
}


#: The role catalogue's words (``GET /rbac/roles``): a display name and a description per role.
ROLE_INFO: dict[Role, tuple[str, str]] = {
    Role.SUPER_ADMIN: (
        "Super Admin",
        "Every permission on every entity; cannot be combined with other roles.",
    ),
    Role.ALL_READER: ("All Reader", "Read every entity; change nothing."),
    Role.ALL_WRITER: ("All Writer", "Read and write every entity."),
    Role.EVENT_INGESTOR: ("Event Ingestor", "Send usage events; cannot read them."),
    Role.EVENT_READER: ("Event Reader", "Read usage events; cannot send them."),
}


def _grants(role: Role, entity: str, action: Action) -> bool:
    rules = ROLES[role]
    return action in rules.get(entity, frozenset()) or action in rules.get(ANY, frozenset())


def role_covers(roles: Iterable[Role], role: Role) -> bool:
    """True when ``roles`` together grant every permission ``role`` grants (so may hand it out)."""
    held = list(roles)
    if Role.SUPER_ADMIN in held:
        return True
    if role is Role.SUPER_ADMIN:
        return False
    return all(
        any(_grants(r, entity, action) for r in held)
        for entity, actions in ROLES[role].items()
        for action in actions
    )


def uncovered_roles(held: Iterable[Role], roles: Iterable[Role]) -> tuple[Role, ...]:
    """The roles in ``roles`` that ``held`` does not cover. Acting on a key or an account (issuing,
    deleting) needs every role it holds, the same rule as granting them: empty means allowed."""
    mine = tuple(held)
    return tuple(role for role in roles if not role_covers(mine, role))


def validate_roles(values: Iterable[str], *, field: str = "roles") -> tuple[Role, ...]:
    """Parse role names; unknown names and ``super_admin`` combined with others are rejected."""
    roles: list[Role] = []
    for value in values:
        try:
            role = Role(value)
        except ValueError:
            raise ValidationError(
                f"unknown role {value!r}; allowed: {', '.join(r.value for r in Role)}",
                field=field,
                details={"allowed_values": [r.value for r in Role], "provided_value": value},
            ) from None
        if role not in roles:
            roles.append(role)
    if Role.SUPER_ADMIN in roles and len(roles) > 1:
        raise ValidationError("super_admin cannot be combined with other roles", field=field)
    return tuple(roles)


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is calling: an account (or the embedding host itself) with its roles.

    The embedding host acts as :meth:`system` (``super_admin``) unless it passes another actor.
    """

    id: str
    roles: tuple[Role, ...]
    account_type: str = "service_account"
    #: A publishable key's caller: it may ingest events and nothing else, reads included
    #: (``Scoped.read`` refuses it).
    publishable: bool = False

    @classmethod
    def system(cls) -> Actor:
        return cls(id="system", roles=(Role.SUPER_ADMIN,), account_type="system")

    @property
    def is_human_super_admin(self) -> bool:
        """A user account (or its key) holding ``super_admin``, or the embedding host itself."""
        return Role.SUPER_ADMIN in self.roles and self.account_type in ("user", "system")

    def can(self, entity: str, action: Action) -> bool:
        return any(_grants(role, entity, action) for role in self.roles)

    def require(self, entity: str, action: Action) -> None:
        """Raise :class:`PermissionDenied` unless one of the roles grants ``(entity, action)``."""
        if not self.can(entity, action):
            held = ", ".join(r.value for r in self.roles) or "no roles"
            raise PermissionDenied(
                f"insufficient permissions: {action.value} on {entity} is not granted by {held}",
                details={"entity": entity, "action": action.value},
            )


class EnvironmentType(StrEnum):
    DEVELOPMENT = "development"
    PRODUCTION = "production"


class _Details(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TenantAddress(_Details):
    """The reference's ``Address`` (every part optional)."""

    address_line1: Annotated[str, Field(max_length=255)] | None = None
    address_line2: Annotated[str, Field(max_length=255)] | None = None
    address_city: Annotated[str, Field(max_length=100)] | None = None
    address_state: Annotated[str, Field(max_length=100)] | None = None
    address_postal_code: Annotated[str, Field(max_length=20)] | None = None
    address_country: Annotated[str, Field(max_length=100)] | None = None


class TenantBillingDetails(_Details):
    """How the tenant's own customers reach it: shown on its invoices' issuer block."""

    address: TenantAddress | None = None
    email: Annotated[str, Field(max_length=254)] | None = None
    help_email: Annotated[str, Field(max_length=254)] | None = None
    phone: Annotated[str, Field(max_length=50)] | None = None


class Tenant(Record):
    """A tenant. ``suspended_at`` set: suspended by the operator (``Billing.suspend_tenant``):
    its callers may read, every write is refused."""

    name: str
    metadata: dict[str, str] = {}
    billing_details: TenantBillingDetails | None = None
    suspended_at: UtcDatetime | None = None

    @property
    def suspended(self) -> bool:
        return self.suspended_at is not None

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"suspended_at"})
        data["status"] = "suspended" if self.suspended else self.status.value
        return data


class Environment(TenantResource):
    name: str
    type: EnvironmentType

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class AccountType(StrEnum):
    USER = "user"
    SERVICE_ACCOUNT = "service_account"


class Account(TenantResource):
    """A user (logs in with email and password) or a service account (API keys only)."""

    type: AccountType
    name: str
    email: str | None = None
    password_hash: str | None = None
    roles: tuple[Role, ...]
    metadata: dict[str, str] = {}

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"password_hash"})
        data["roles"] = [r.value for r in self.roles]
        return data


class ApiKeyType(StrEnum):
    """``private_key`` (``sk_``): acts with its roles. ``publishable_key`` (``pk_``): may be
    embedded in client code, so it may only ingest events."""

    PRIVATE_KEY = "private_key"
    PUBLISHABLE_KEY = "publishable_key"


class ApiKey(EnvironmentResource):
    """An API key bound to one environment. Only its SHA-256 hash is stored; ``roles`` are a
    copy of the account's roles at creation and never change. ``last_used_at`` is coarse: it is
    written at most once per ``Settings.api_key_last_used_interval`` per key."""

    name: str
    type: ApiKeyType = ApiKeyType.PRIVATE_KEY
    key_hash: str
    display_id: str
    account_id: str
    account_type: AccountType
    roles: tuple[Role, ...]
    expires_at: UtcDatetime | None = None
    last_used_at: UtcDatetime | None = None

    def is_usable(self, now: datetime) -> bool:
        return self.status == "published" and (self.expires_at is None or now < self.expires_at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type.value,
            "display_id": self.display_id,
            "roles": [r.value for r in self.roles],
            "user_id": self.account_id,
            "user_type": self.account_type.value,
            "expires_at": iso(self.expires_at),
            "last_used_at": iso(self.last_used_at),
            "status": self.status.value,
            "provider": "flexprice",  # the reference's SecretProvider for the platform's own keys
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }
