"""Answers of ``/v1/secrets/api/keys``, ``/v1/users``, ``/v1/environments`` and ``/v1/auth/login``."""

from __future__ import annotations

from typing import Literal

from billingkit import AccountType, EnvironmentType, Role, Status
from billingkit.http.schemas.base import PaginationResponse, TenantRecordResponse, Timestamp, WireModel

__all__ = [
    "CreateAPIKeyResponse",
    "CreateUserResponse",
    "EnvironmentResponse",
    "ListEnvironmentsResponse",
    "ListSecretsResponse",
    "LoginResponse",
    "SecretResponse",
    "UserResponse",
]


class SecretResponse(WireModel):
    """An API key's metadata; its plain value is never stored, so never shown again.
    ``user_id`` / ``user_type`` are the account the key acts as; ``roles`` were copied from it."""

    id: str
    name: str
    type: str
    display_id: str
    roles: list[Role]
    user_id: str
    user_type: AccountType
    expires_at: Timestamp | None
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
