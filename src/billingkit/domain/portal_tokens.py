"""Customer portal session tokens (pure functions).

A portal token is an HS256 JWT carrying ``customer_id``, ``external_customer_id``, ``tenant_id``,
``environment_id``, ``aud`` (``customer_portal``), ``iat`` and ``exp`` (seconds since the epoch).
It is signed with a key derived from the session secret for this purpose only
(HMAC-SHA256(secret, ``"billingkit customer portal v1"``)), so a portal token never verifies as a
dashboard session token, nor a dashboard token as a portal token, whatever claims either carries.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from billingkit.domain.credentials import sign_claims, verify_claims
from billingkit.errors import Unauthorized

__all__ = ["PORTAL_AUDIENCE", "PortalClaims", "issue_portal_token", "verify_portal_token"]

#: The ``aud`` claim of every portal token.
PORTAL_AUDIENCE = "customer_portal"
_PURPOSE = b"billingkit customer portal v1"


def _portal_key(secret: bytes) -> bytes:
    return hmac.new(secret, _PURPOSE, hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class PortalClaims:
    """Whose portal a token opens, and for how long."""

    tenant_id: str
    environment_id: str
    customer_id: str
    external_customer_id: str
    issued_at: datetime
    expires_at: datetime


def issue_portal_token(
    secret: bytes,
    *,
    tenant_id: str,
    environment_id: str,
    customer_id: str,
    external_customer_id: str,
    now: datetime,
    lifetime: timedelta,
) -> tuple[str, PortalClaims]:
    """A signed portal token for one customer, valid from ``now`` for ``lifetime`` (whole
    seconds: ``exp`` is ``iat`` plus the lifetime, truncated), and its claims."""
    issued = int(now.timestamp())
    expires = issued + int(lifetime.total_seconds())
    claims: dict[str, Any] = {
        "aud": PORTAL_AUDIENCE,
        "tenant_id": tenant_id,
        "environment_id": environment_id,
        "customer_id": customer_id,
        "external_customer_id": external_customer_id,
        "iat": issued,
        "exp": expires,
    }
    token = sign_claims(_portal_key(secret), claims)
    return token, PortalClaims(
        tenant_id=tenant_id,
        environment_id=environment_id,
        customer_id=customer_id,
        external_customer_id=external_customer_id,
        issued_at=datetime.fromtimestamp(issued, UTC),
        expires_at=datetime.fromtimestamp(expires, UTC),
    )


def verify_portal_token(secret: bytes, token: str, *, now: datetime) -> PortalClaims:
    """The claims of a portal token; :class:`Unauthorized` when it is malformed, signed with
    another key (a dashboard token included), of another audience, incomplete or expired."""
    claims = verify_claims(_portal_key(secret), token)
    if claims.get("aud") != PORTAL_AUDIENCE:
        raise Unauthorized("invalid token")
    try:
        result = PortalClaims(
            tenant_id=_text(claims["tenant_id"]),
            environment_id=_text(claims["environment_id"]),
            customer_id=_text(claims["customer_id"]),
            external_customer_id=_text(claims["external_customer_id"]),
            issued_at=datetime.fromtimestamp(int(claims["iat"]), UTC),
            expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
        )
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        raise Unauthorized("invalid token") from None
    if now >= result.expires_at:
        raise Unauthorized("token expired")
    return result


def _text(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("a claim is not text")
    return value
