"""``/v1/secrets/api/keys``, ``/v1/users``, ``/v1/environments``, ``/v1/auth/login``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from pydantic import Field

from billingkit.domain.queries import ListQuery
from billingkit.domain.validation import InputModel
from billingkit.facade import Billing
from billingkit.http.auth import Caller, EnvCaller
from billingkit.http.params import Limit, Offset
from billingkit.services.access import AccountCreate, ApiKeyCreate

router = APIRouter(tags=["access"])


@router.post("/secrets/api/keys", status_code=201)
def create_api_key(caller: EnvCaller, body: ApiKeyCreate) -> dict[str, Any]:
    return caller.api_keys.create(body).to_dict()


@router.get("/secrets/api/keys")
def list_api_keys(caller: EnvCaller, limit: Limit = 50, offset: Offset = 0) -> dict[str, Any]:
    return caller.api_keys.list(ListQuery(limit=limit, offset=offset)).to_dict()


@router.delete("/secrets/api/keys/{key_id}", status_code=204)
def delete_api_key(caller: EnvCaller, key_id: str) -> Response:
    caller.api_keys.delete(key_id)
    return Response(status_code=204)


@router.post("/users", status_code=201)
def create_user(caller: Caller, body: AccountCreate) -> dict[str, Any]:
    account, password = caller.users.create(body)
    data = account.to_dict()
    if password is not None:
        data["password"] = password
    return data


@router.get("/users/me")
def get_me(caller: Caller) -> dict[str, Any]:
    return caller.users.me().to_dict()


@router.get("/environments")
def list_environments(caller: Caller) -> dict[str, Any]:
    return caller.environments.list().to_dict()


class LoginRequest(InputModel):
    email: Annotated[str, Field(min_length=3, max_length=254)]
    password: Annotated[str, Field(min_length=1, max_length=200)]
    tenant_id: str | None = None
    environment_id: str | None = None


@router.post(
    "/auth/login",
    responses={429: {"description": "too many failed sign-ins for this email; see the Retry-After header"}},
)
def login(request: Request, body: LoginRequest) -> dict[str, Any]:
    billing: Billing = request.app.state.billing
    token, account = billing.login(
        body.email, body.password, tenant_id=body.tenant_id, environment_id=body.environment_id
    )
    return {"token": token, "user_id": account.id, "tenant_id": account.tenant_id}
