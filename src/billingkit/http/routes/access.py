"""``/v1/secrets/api/keys``, ``/v1/users``, ``/v1/environments``, ``/v1/auth/login``,
``/v1/rbac/roles``, ``/v1/tenants``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from pydantic import Field

from billingkit.domain.access import AccountType
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
    ListRolesResponse,
    ListSecretsResponse,
    ListUsersResponse,
    LoginResponse,
    RoleResponse,
    TenantResponse,
    UserResponse,
)
from billingkit.services.access import AccountCreate, ApiKeyCreate
from billingkit.services.access_management import (
    RolesUpdate,
    ServiceAccountUpdate,
    TenantUpdate,
    UserSearch,
    UserUpdate,
)

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


@router.put("/users/me")
def update_me(caller: Caller, body: UserUpdate) -> UserResponse:
    return UserResponse.model_validate(caller.users.update_me(body).to_dict())


@router.post("/users/search")
def search_users(caller: Caller, body: UserSearch) -> ListUsersResponse:
    return ListUsersResponse.model_validate(caller.users.search(body).to_dict())


@router.put("/users/{user_id}")
def update_service_account(caller: Caller, user_id: str, body: ServiceAccountUpdate) -> UserResponse:
    return UserResponse.model_validate(caller.users.update(user_id, body).to_dict())


@router.delete("/users/{user_id}", status_code=204)
def delete_service_account(caller: Caller, user_id: str) -> Response:
    caller.users.delete(user_id)
    return Response(status_code=204)


@router.put("/users/{user_id}/roles")
def update_user_roles(caller: Caller, user_id: str, body: RolesUpdate) -> UserResponse:
    return UserResponse.model_validate(caller.users.update_roles(user_id, body).to_dict())


@router.post("/users/{user_id}/remove", status_code=204)
def remove_user(caller: Caller, user_id: str) -> Response:
    caller.users.remove(user_id)
    return Response(status_code=204)


@router.get("/rbac/roles")
def list_roles(caller: Caller, user_type: Annotated[AccountType | None, Query()] = None) -> ListRolesResponse:
    return ListRolesResponse(items=[RoleResponse(**r.to_dict()) for r in caller.roles.list(user_type)])


@router.get("/rbac/roles/{role_id}")
def get_role(caller: Caller, role_id: str) -> RoleResponse:
    return RoleResponse(**caller.roles.get(role_id).to_dict())


@router.put("/tenants/update")
def update_tenant(caller: Caller, body: TenantUpdate) -> TenantResponse:
    return TenantResponse.model_validate(caller.tenants.update(body).to_dict())


@router.get("/tenants/{tenant_id}")
def get_tenant(caller: Caller, tenant_id: str) -> TenantResponse:
    return TenantResponse.model_validate(caller.tenants.get(tenant_id).to_dict())


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
