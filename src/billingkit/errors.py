"""One error hierarchy for the whole library.

Every error has a stable ``code`` and the HTTP status the REST adapter answers with. Services raise
these; the HTTP adapter renders them as ``{code, http_status_code, message}``. This module imports
nothing from billingkit, so every layer (including the pure domain core) may raise these errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "AlreadyExists",
    "AppendOnly",
    "BillingError",
    "ConfigurationError",
    "IdempotencyConflict",
    "InternalError",
    "InvalidOperation",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "ReadOnlyTransaction",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "ValidationError",
    "VersionConflict",
]


class BillingError(Exception):
    """Base of every error billingkit raises on purpose.

    ``code`` is stable and machine-readable; ``message`` is for people; ``details`` carries
    structured context (for validation errors, ``{"field": "<json name>", ...}``).
    """

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        """The wire shape of this error: ``{code, http_status_code, message[, details]}``."""
        body: dict[str, Any] = {
            "code": self.code,
            "http_status_code": self.http_status,
            "message": self.message,
        }
        if self.details:
            body["details"] = self.details
        return body

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class ValidationError(BillingError):
    """Invalid input. ``field`` names the offending field in JSON (snake_case) terms."""

    code = "validation_error"
    http_status = 400

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        merged = dict(details or {})
        if field is not None:
            merged.setdefault("field", field)
        super().__init__(message, details=merged)
        self.field = field


class InvalidOperation(BillingError):
    """A well-formed request that the resource's current state does not allow."""

    code = "invalid_operation"
    http_status = 400


class Unauthorized(BillingError):
    """Missing, malformed, unknown, expired or revoked credentials."""

    code = "unauthorized"
    http_status = 401


class PermissionDenied(BillingError):
    """Authenticated, but the caller's roles do not grant the permission."""

    code = "permission_denied"
    http_status = 403


class NotFound(BillingError):
    """No such resource in the caller's tenant and environment."""

    code = "not_found"
    http_status = 404


class AlreadyExists(BillingError):
    """A uniqueness rule (external id, lookup key, code, ...) would be broken."""

    code = "already_exists"
    http_status = 409


class AppendOnly(BillingError):
    """A change to a stored row of an append-only kind (a ledger such as wallet transactions):
    rows are only added; a correction is a new row."""

    code = "append_only"
    http_status = 409


class IdempotencyConflict(BillingError):
    """An idempotency key was reused with a different request."""

    code = "idempotency_conflict"
    http_status = 409


class VersionConflict(BillingError):
    """An update named a stale ``version`` of the resource (optimistic locking)."""

    code = "version_conflict"
    http_status = 409


class PayloadTooLarge(BillingError):
    """A request body above the configured size limit."""

    code = "payload_too_large"
    http_status = 413


class TooManyRequests(BillingError):
    """Too many failed attempts (sign-in throttling). ``retry_after`` is the number of whole
    seconds until an attempt is accepted again (the HTTP ``Retry-After`` header)."""

    code = "too_many_requests"
    http_status = 429

    def __init__(self, message: str, *, retry_after: int, details: Mapping[str, Any] | None = None) -> None:
        merged = dict(details or {})
        merged.setdefault("retry_after", retry_after)
        super().__init__(message, details=merged)
        self.retry_after = retry_after


class InternalError(BillingError):
    """An unexpected failure. Its message never carries internals."""

    code = "internal_error"
    http_status = 500


class ReadOnlyTransaction(InternalError):
    """A write was attempted in a read-only unit of work (``storage.unit_of_work(...,
    read_only=True)``, which every read of the facade opens). A bug in the caller, never in the
    data: nothing was written, and the write lock was not taken. Answered as a 500, as any
    :class:`InternalError`."""

    code = "read_only_transaction"
    http_status = 500


class ServiceUnavailable(BillingError):
    """A dependency (the database) does not answer right now; retrying later may work."""

    code = "service_unavailable"
    http_status = 503


class ConfigurationError(BillingError):
    """The installation or configuration cannot work (e.g. a database driver is not installed)."""

    code = "configuration_error"
    http_status = 500
