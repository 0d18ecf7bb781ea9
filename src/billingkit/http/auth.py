"""Who is calling: ``x-api-key`` or ``Authorization: Bearer <session token>``.

``X-Environment-ID`` must match an API key's own environment (else 401); a session token may use it
to pick any environment of its tenant (one it cannot see is 403). An empty or blank header (either
one) counts as absent.

Both credentials are read through FastAPI security dependencies, so the OpenAPI document shows them
as the ``ApiKeyAuth`` and ``BearerAuth`` security schemes of every authenticated operation rather
than as optional header parameters; neither scheme refuses a request by itself
(``auto_error=False``): :func:`authenticate` decides, with billingkit's own errors.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request, Security
from fastapi.security import APIKeyHeader, HTTPBearer
from starlette.concurrency import run_in_threadpool

from billingkit.errors import PermissionDenied
from billingkit.facade import Billing, Scoped
from billingkit.services import access

__all__ = ["Caller", "EnvCaller", "authenticate"]


class _BearerHeader(HTTPBearer):
    """The ``BearerAuth`` scheme, handing :func:`authenticate` the raw ``Authorization`` header:
    FastAPI's own parsing would turn a malformed one (``Bearer`` with no token) into "no header",
    which answers a different 401 than billingkit always has."""

    async def __call__(self, request: Request) -> str | None:  # type: ignore[override]
        return request.headers.get("authorization")


_API_KEY = APIKeyHeader(name="x-api-key", scheme_name="ApiKeyAuth", auto_error=False)
_SESSION = _BearerHeader(
    scheme_name="BearerAuth", auto_error=False, description="a session token from /v1/auth/login"
)


def _billing(request: Request) -> Billing:
    billing: Billing = request.app.state.billing
    return billing


async def authenticate(
    request: Request,
    x_api_key: Annotated[str | None, Security(_API_KEY)],
    authorization: Annotated[str | None, Security(_SESSION)],
    x_environment_id: Annotated[str | None, Header()] = None,
) -> Scoped:
    billing = _billing(request)
    if x_api_key is not None and not x_api_key.strip():
        x_api_key = None  # an empty header is no header
    if x_api_key is None and authorization and authorization.lower().startswith("bearer "):
        return billing.authenticate_token(authorization[7:].strip(), environment_id=x_environment_id)
    # A key authenticated moments ago is answered here, on the event loop, without the store; the
    # store is read (one query) on a worker thread, so a slow database never stalls the loop.
    principal = access.cached_api_key(
        billing.api_key_cache,
        api_key=x_api_key,
        now=billing.clock.now(),
        ttl=billing.settings.api_key_cache_ttl,
        environment_id=x_environment_id,
    )
    if principal is not None:
        return billing.scope(principal.tenant_id, principal.environment_id, actor=principal.actor)
    return await run_in_threadpool(billing.authenticate, x_api_key, environment_id=x_environment_id)


async def authenticate_in_environment(scoped: Annotated[Scoped, Depends(authenticate)]) -> Scoped:
    if scoped.environment_id is None:
        raise PermissionDenied("no environment selected: send X-Environment-ID")
    return scoped


Caller = Annotated[Scoped, Depends(authenticate)]
EnvCaller = Annotated[Scoped, Depends(authenticate_in_environment)]
