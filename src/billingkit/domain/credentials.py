"""Secrets: API key values, password hashes and signed session tokens (pure functions).

- API keys are ``sk_`` (private) or ``pk_`` (publishable) plus 43
  base64url characters (256 random bits); stored as SHA-256 hex.
- Passwords are hashed with scrypt and a random salt: ``scrypt$<n>$<r>$<p>$<salt>$<hash>``.
- Session tokens are JWTs signed with HMAC-SHA256 carrying ``tenant_id``, ``user_id``, optional
  ``environment_id``, ``iat`` and ``exp`` (seconds since the epoch).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from billingkit.errors import Unauthorized

__all__ = [
    "SessionClaims",
    "display_id",
    "hash_api_key",
    "hash_password",
    "is_well_formed_api_key",
    "issue_token",
    "new_api_key",
    "sign_claims",
    "verify_claims",
    "verify_password",
    "verify_token",
]

_KEY_RE = re.compile(r"^[sp]k_[A-Za-z0-9_-]{43}$")
_SCRYPT = (2**14, 8, 1)


def new_api_key(prefix: str = "sk_") -> str:
    """A fresh API key value (shown to its owner once): ``sk_`` private, ``pk_`` publishable."""
    if prefix not in ("sk_", "pk_"):
        raise ValueError(f"unknown API key prefix {prefix!r}")
    return prefix + secrets.token_urlsafe(32)


def is_well_formed_api_key(value: str) -> bool:
    return bool(_KEY_RE.match(value))


def hash_api_key(value: str) -> str:
    """SHA-256 hex of the key: keys carry 256 random bits, so a fast hash is safe here."""
    return hashlib.sha256(value.encode()).hexdigest()


def display_id(value: str) -> str:
    """A recognisable, non-secret form of a key: first 5 characters, ``***``, last 2."""
    return f"{value[:5]}***{value[-2:]}"


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    n, r, p = _SCRYPT
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=32)
    return f"scrypt${n}${r}${p}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        actual = hashlib.scrypt(
            password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), dklen=32
        )
    except ValueError:
        return False
    return hmac.compare_digest(actual.hex(), digest)


@dataclass(frozen=True, slots=True)
class SessionClaims:
    tenant_id: str
    user_id: str
    environment_id: str | None
    issued_at: datetime
    expires_at: datetime


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def issue_token(
    secret: bytes,
    *,
    tenant_id: str,
    user_id: str,
    environment_id: str | None,
    now: datetime,
    lifetime: timedelta = timedelta(days=30),
) -> str:
    """A signed HS256 JWT for a dashboard session."""
    header = {"alg": "HS256", "typ": "JWT"}
    claims: dict[str, Any] = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "iat": int(now.timestamp()),
        "exp": int((now + lifetime).timestamp()),
    }
    if environment_id:
        claims["environment_id"] = environment_id
    signing_input = (
        _b64(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + _b64(json.dumps(claims, separators=(",", ":")).encode())
    )
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + _b64(signature)


def verify_token(secret: bytes, token: str, *, now: datetime) -> SessionClaims:
    """Check signature and expiry; raise :class:`Unauthorized` on any defect."""
    try:
        header_b64, claims_b64, signature_b64 = token.split(".")
        expected = hmac.new(secret, f"{header_b64}.{claims_b64}".encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, _unb64(signature_b64)):
            raise Unauthorized("invalid token")
        header = json.loads(_unb64(header_b64))
        claims = json.loads(_unb64(claims_b64))
        if header.get("alg") != "HS256":
            raise Unauthorized("invalid token")
        result = SessionClaims(
            tenant_id=str(claims["tenant_id"]),
            user_id=str(claims["user_id"]),
            environment_id=claims.get("environment_id"),
            issued_at=datetime.fromtimestamp(int(claims["iat"]), UTC),
            expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
        )
    except Unauthorized:
        raise
    except (ValueError, KeyError, TypeError, AttributeError):
        raise Unauthorized("invalid token") from None
    if now >= result.expires_at:
        raise Unauthorized("token expired")
    return result


def sign_claims(secret: bytes, claims: dict[str, Any]) -> str:
    """``claims`` as a compact HS256 JWT signed with ``secret`` (for tokens other than the
    dashboard session's, which :func:`issue_token` makes)."""
    header = {"alg": "HS256", "typ": "JWT"}
    signing_input = (
        _b64(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + _b64(json.dumps(claims, separators=(",", ":")).encode())
    )
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + _b64(signature)


def verify_claims(secret: bytes, token: str) -> dict[str, Any]:
    """The claims of an HS256 JWT signed with ``secret``; :class:`Unauthorized` when the token is
    malformed, of another algorithm or signed otherwise. Expiry is the caller's to check."""
    try:
        header_b64, claims_b64, signature_b64 = token.split(".")
        expected = hmac.new(secret, f"{header_b64}.{claims_b64}".encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, _unb64(signature_b64)):
            raise Unauthorized("invalid token")
        header = json.loads(_unb64(header_b64))
        claims = json.loads(_unb64(claims_b64))
    except Unauthorized:
        raise
    except (ValueError, TypeError, AttributeError):
        raise Unauthorized("invalid token") from None
    if not isinstance(header, dict) or header.get("alg") != "HS256" or not isinstance(claims, dict):
        raise Unauthorized("invalid token")
    return claims
