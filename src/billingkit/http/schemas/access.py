"""Answers of ``/v1/secrets/api/keys``, ``/v1/users``, ``/v1/environments``, ``/v1/auth/login``,
``/v1/rbac/roles`` and ``/v1/tenants``."""

from __future__ import annotations

from typing import Literal

from billingkit import AccountType, EnvironmentType, Role, Status
from billingkit.domain.access import ApiKeyType
from billingkit.http.schemas.base import PaginationResponse, TenantRecordResponse, Timestamp, WireModel

__all__ = [
    "AddressResponse",
    "CreateAPIKeyResponse",
    "CreateUserResponse",
    "EnvironmentResponse",
    "ListEnvironmentsResponse",
    "ListRolesResponse",
    "ListSecretsResponse",
    "ListUsersResponse",
    "LoginResponse",
    "RoleResponse",
    "SecretResponse",
    "TenantBillingDetailsResponse",
    "TenantResponse",
    "UserResponse",
]


class SecretResponse(WireModel):
    """An API key's metadata; its plain value is never stored, so never shown again.
    ``user_id`` / ``user_type`` are the account the key acts as; ``roles`` were copied from it."""

    id: str
    name: str
    type: ApiKeyType
    display_id: str
    roles: list[Role]
    user_id: str
    user_type: AccountType
    expires_at: Timestamp | None
    last_used_at: Timestamp | None
    status: Status
    provider: Literal["flexprice"]
    created_at: Timestamp
    updated_at: Timestamp


class CreateAPIKeyResponse(WireModel):
    """A new key: ``api_key`` is the plain value, shown this once."""

    id: str
    name: str
    api_key: str
    roles: list[Role]
    created_at: Timestamp
    secret: SecretResponse


class ListSecretsResponse(WireModel):
    items: list[SecretResponse]
    pagination: PaginationResponse


class UserResponse(TenantRecordResponse):
    """A user (``email``) or a service account (``email`` null); the password hash never leaves."""

    type: AccountType
    name: str
    email: str | None
    roles: list[Role]
    metadata: dict[str, str]


class CreateUserResponse(UserResponse):
    """A new account; ``password`` is present, once, when billingkit generated it."""

    password: str | None = None


class EnvironmentResponse(TenantRecordResponse):
    name: str
    type: EnvironmentType


class ListEnvironmentsResponse(WireModel):
    items: list[EnvironmentResponse]
    pagination: PaginationResponse


class LoginResponse(WireModel):
    """A session ``token`` for ``Authorization: Bearer <token>``."""

    token: str
    user_id: str
    tenant_id: str


class ListUsersResponse(WireModel):
    items: list[UserResponse]
    pagination: PaginationResponse


class RoleResponse(WireModel):
    """A role of the catalogue: ``permissions`` maps an entity (``*``: every one) to actions."""

    id: str
    name: str
    description: str
    permissions: dict[str, list[str]]


class ListRolesResponse(WireModel):
    items: list[RoleResponse]


class AddressResponse(WireModel):
    address_line1: str | None
    address_line2: str | None
    address_city: str | None
    address_state: str | None
    address_postal_code: str | None
    address_country: str | None


class TenantBillingDetailsResponse(WireModel):
    address: AddressResponse | None
    email: str | None
    help_email: str | None
    phone: str | None


class TenantResponse(WireModel):
    """The caller's tenant. ``status``: ``published``, or ``suspended`` while the operator has
    suspended it (reads work, writes are refused)."""

    id: str
    status: Literal["published", "suspended", "archived", "deleted"]
    created_at: Timestamp
    updated_at: Timestamp
    created_by: str
    updated_by: str
    name: str
    metadata: dict[str, str]
    billing_details: TenantBillingDetailsResponse | None
