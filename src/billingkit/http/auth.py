"""Who is calling: ``x-api-key`` or ``Authorization: Bearer <session token>``.

``X-Environment-ID`` must match an API key's own environment (else 401); a session token may use it
to pick any environment of its tenant (one it cannot see is 403). An empty or blank header (either
one) counts as absent.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from billingkit.errors import PermissionDenied
from billingkit.facade import Billing, Scoped

__all__ = ["Caller", "EnvCaller", "authenticate"]


def _billing(request: Request) -> Billing:
    billing: Billing = request.app.state.billing
    return billing


async def authenticate(
    request: Request,
    x_api_key: Annotated[str | None, Header()] = None,
    authorization: Annotated[str | None, Header()] = None,
    x_environment_id: Annotated[str | None, Header()] = None,
) -> Scoped:
    billing = _billing(request)
    if x_api_key is not None and not x_api_key.strip():
        x_api_key = None  # an empty header is no header
    if x_api_key is None and authorization and authorization.lower().startswith("bearer "):
        return billing.authenticate_token(authorization[7:].strip(), environment_id=x_environment_id)
    return billing.authenticate(x_api_key, environment_id=x_environment_id)


async def authenticate_in_environment(scoped: Annotated[Scoped, Depends(authenticate)]) -> Scoped:
    if scoped.environment_id is None:
        raise PermissionDenied("no environment selected: send X-Environment-ID")
    return scoped


Caller = Annotated[Scoped, Depends(authenticate)]
EnvCaller = Annotated[Scoped, Depends(authenticate_in_environment)]
