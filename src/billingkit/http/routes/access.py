"""``/v1/secrets/api/keys``, ``/v1/users``, ``/v1/environments``, ``/v1/auth/login``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request, Response
from pydantic import Field

from billingkit.domain.queries import ListQuery
from billingkit.domain.validation import InputModel
from billingkit.facade import Billing
from billingkit.http.auth import Caller, EnvCaller
from billingkit.http.params import Limit, Offset
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.access import (
    CreateAPIKeyResponse,
    CreateUserResponse,
    ListEnvironmentsResponse,
    ListSecretsResponse,
    LoginResponse,
    UserResponse,
)
from billingkit.services.access import AccountCreate, ApiKeyCreate

router = APIRouter(tags=["access"], route_class=WireRoute)


@router.post("/secrets/api/keys", status_code=201)
def create_api_key(caller: EnvCaller, body: ApiKeyCreate) -> CreateAPIKeyResponse:
    return CreateAPIKeyResponse.model_validate(caller.api_keys.create(body).to_dict())


@router.get("/secrets/api/keys")
def list_api_keys(caller: EnvCaller, limit: Limit = 50, offset: Offset = 0) -> ListSecretsResponse:
    page = caller.api_keys.list(ListQuery(limit=limit, offset=offset))
    return ListSecretsResponse.model_validate(page.to_dict())


@router.delete("/secrets/api/keys/{key_id}", status_code=204)
def delete_api_key(caller: EnvCaller, key_id: str) -> Response:
    caller.api_keys.delete(key_id)
    return Response(status_code=204)


@router.post("/users", status_code=201)
def create_user(caller: Caller, body: AccountCreate) -> CreateUserResponse:
    account, password = caller.users.create(body)
    data = account.to_dict()
    if password is not None:
        data["password"] = password
    return CreateUserResponse.model_validate(data)


@router.get("/users/me")
def get_me(caller: Caller) -> UserResponse:
    return UserResponse.model_validate(caller.users.me().to_dict())


@router.get("/environments")
def list_environments(caller: Caller) -> ListEnvironmentsResponse:
    return ListEnvironmentsResponse.model_validate(caller.environments.list().to_dict())


class LoginRequest(InputModel):
    email: Annotated[str, Field(min_length=3, max_length=254)]
    password: Annotated[str, Field(min_length=1, max_length=200)]
    tenant_id: str | None = None
    environment_id: str | None = None


@router.post(
    "/auth/login",
    responses={429: {"description": "too many failed sign-ins for this email; see the Retry-After header"}},
)
def login(request: Request, body: LoginRequest) -> LoginResponse:
    billing: Billing = request.app.state.billing
    token, account = billing.login(
        body.email, body.password, tenant_id=body.tenant_id, environment_id=body.environment_id
    )
    return LoginResponse(token=token, user_id=account.id, tenant_id=account.tenant_id)
