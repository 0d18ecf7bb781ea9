"""Webhook signing secrets: made, and kept encrypted at rest.

A secret is ``whsec_`` + the base64 of 24 random bytes (the Standard Webhooks form the
``standardwebhooks`` library reads). The store holds it only as a Fernet token (AES-128-CBC with
an HMAC-SHA256 tag: authenticated, so a tampered or foreign ciphertext is refused, never
misread) under ``Settings.webhook_secret_key``. Several comma-separated keys rotate the key: the
first encrypts, any of them decrypts. Without a configured key each ``Billing`` draws a random
one (docs/decisions.md).
"""

from __future__ import annotations

import base64
import os
import secrets
from typing import TYPE_CHECKING

from billingkit.errors import ConfigurationError, InvalidOperation, ValidationError

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

__all__ = ["SECRET_PREFIX", "SecretBox", "new_key", "new_secret"]

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A new signing secret: ``whsec_`` + base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def new_key() -> str:
    """A new random key in Fernet's form (what ``BILLINGKIT_WEBHOOK_SECRET_KEY`` holds)."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


class SecretBox:
    """Encrypts and decrypts endpoint secrets with ``keys`` (comma-separated Fernet keys).

    Needs the ``cryptography`` package (``pip install 'billingkit[webhooks]'``) when used, not
    when made. The keys never appear in its repr."""

    def __init__(self, keys: str) -> None:
        self._keys = [key.strip() for key in keys.split(",") if key.strip()]
        if not self._keys:
            raise ValidationError("webhook_secret_key holds no key", field="webhook_secret_key")
        self._fernet: MultiFernet | None = None

    def _box(self) -> MultiFernet:
        if self._fernet is None:
            try:
                from cryptography.fernet import Fernet, MultiFernet
            except ModuleNotFoundError:
                raise ConfigurationError(
                    "webhook endpoints need the 'webhooks' extra: pip install 'billingkit[webhooks]'"
                ) from None
            try:
                self._fernet = MultiFernet([Fernet(key.encode()) for key in self._keys])
            except ValueError:
                raise ValidationError(
                    "webhook_secret_key must be Fernet keys (32 url-safe base64-encoded bytes), "
                    "comma-separated",
                    field="webhook_secret_key",
                ) from None
        return self._fernet

    def seal(self, secret: str) -> str:
        """``secret`` encrypted under the first key."""
        return self._box().encrypt(secret.encode()).decode()

    def open(self, ciphertext: str) -> str:
        """The secret ``ciphertext`` holds; :class:`InvalidOperation` when no key opens it (it was
        sealed under another key, or changed): the endpoint's secret must then be rotated."""
        from cryptography.fernet import InvalidToken

        try:
            return self._box().decrypt(ciphertext.encode()).decode()
        except InvalidToken:
            raise InvalidOperation(
                "the endpoint's secret cannot be decrypted with the configured webhook_secret_key; "
                "rotate the endpoint's secret"
            ) from None

    def __repr__(self) -> str:
        return f"SecretBox({len(self._keys)} key(s))"
