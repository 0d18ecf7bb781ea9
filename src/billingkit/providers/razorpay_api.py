"""Razorpay's REST API on the wire: HTTP Basic auth, JSON bodies, Razorpay's error body mapped to
billingkit errors. :class:`RazorpayPaymentProvider` speaks through one :class:`RazorpayApi`.

Only the standard library is used (``urllib.request``); a host or a test may pass any callable
with :class:`HttpTransport`'s shape instead.
"""

from __future__ import annotations

import base64
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from billingkit.errors import (
    BillingError,
    ConfigurationError,
    InvalidOperation,
    NotFound,
    ServiceUnavailable,
    ValidationError,
)

__all__ = ["HttpAnswer", "HttpTransport", "RazorpayApi", "urllib_transport"]

#: Razorpay answers an unknown id with 400 and this description, not with 404.
UNKNOWN_ID = "The id provided does not exist"


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """What a server answered: its status code and raw body."""

    status: int
    body: bytes


class HttpTransport(Protocol):
    """Sends one HTTP request and returns the answer, whatever its status. Raises ``OSError``
    (or ``http.client.HTTPException``) when no answer came: refused, reset, timed out."""

    def __call__(
        self, method: str, url: str, *, headers: Mapping[str, str], body: bytes | None, timeout: float
    ) -> HttpAnswer: ...


def urllib_transport(
    method: str, url: str, *, headers: Mapping[str, str], body: bytes | None, timeout: float
) -> HttpAnswer:
    """The default transport: one request through ``urllib.request``, error statuses included."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return HttpAnswer(status=response.status, body=response.read())
    except urllib.error.HTTPError as answer:  # an error status is an answer, not a failure
        with answer:
            return HttpAnswer(status=answer.code, body=answer.read())


class RazorpayApi:
    """Calls ``{base_url}/v1/...`` with the key pair; answers the decoded JSON object.

    Errors: no answer, 429 or 5xx -> :class:`ServiceUnavailable` (retrying later may work);
    401 -> :class:`ConfigurationError` (the key pair is wrong); 404, or 400 "The id provided does
    not exist" -> :class:`NotFound`; any other 4xx -> :class:`ValidationError` naming Razorpay's
    ``field`` when it gives one, else :class:`InvalidOperation`, with Razorpay's description as the
    message. Every error's ``details`` carry ``provider="razorpay"`` and Razorpay's ``code`` and
    ``reason``. Neither messages nor ``repr`` ever carry the key secret.
    """

    def __init__(
        self, key_id: str, key_secret: str, *, base_url: str, timeout: float, transport: HttpTransport
    ) -> None:
        if not key_id or not key_secret:
            raise ConfigurationError("Razorpay needs a key id and a key secret")
        self.key_id = key_id
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._transport = transport
        token = base64.b64encode(f"{key_id}:{key_secret}".encode()).decode("ascii")
        self._headers = {
            "Authorization": f"Basic {token}",
            "Accept": "application/json",
            "User-Agent": "billingkit",
        }

    def get(self, path: str, query: Mapping[str, str | int] | None = None) -> dict[str, Any]:
        """``GET /v1/<path>[?query]``."""
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        return self._call("GET", path, None)

    def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /v1/<path>`` with a JSON body."""
        return self._call("POST", path, json.dumps(body, separators=(",", ":")).encode())

    def _call(self, method: str, path: str, body: bytes | None) -> dict[str, Any]:
        url = f"{self.base_url}/v1/{path}"
        headers = dict(self._headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            answer = self._transport(method, url, headers=headers, body=body, timeout=self.timeout)
        except (OSError, http.client.HTTPException) as exc:
            raise ServiceUnavailable(
                f"Razorpay did not answer {method} /v1/{_route(path)} ({type(exc).__name__}); "
                "it may or may not have acted: retry with the same idempotency key",
                details={"provider": "razorpay"},
            ) from None
        if 200 <= answer.status < 300:
            decoded = _json(answer.body)
            if decoded is None:
                raise ServiceUnavailable(
                    f"Razorpay answered {method} /v1/{_route(path)} with a body that is not a JSON object",
                    details={"provider": "razorpay", "status": answer.status},
                )
            return decoded
        raise self._error(method, path, answer)

    def _error(self, method: str, path: str, answer: HttpAnswer) -> BillingError:
        decoded = _json(answer.body) or {}
        raw_error = decoded.get("error")
        error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
        description = str(error.get("description") or f"HTTP {answer.status}")
        details: dict[str, Any] = {"provider": "razorpay", "status": answer.status}
        for key in ("code", "reason"):
            if error.get(key):
                details[f"provider_{key}"] = str(error[key])
        message = f"Razorpay refused {method} /v1/{_route(path)}: {description}"
        if answer.status == 401:
            return ConfigurationError(
                f"Razorpay refused the key pair of key id {self.key_id!r}: {description}", details=details
            )
        if answer.status == 429 or answer.status >= 500:
            return ServiceUnavailable(message, details=details)
        if answer.status == 404 or description.strip().rstrip(".") == UNKNOWN_ID:
            return NotFound(message, details=details)
        field = error.get("field")
        if isinstance(field, str) and field:
            return ValidationError(message, field=field, details=details)
        return InvalidOperation(message, details=details)

    def __repr__(self) -> str:
        return f"RazorpayApi(key_id={self.key_id!r}, base_url={self.base_url!r})"


def _json(body: bytes) -> dict[str, Any] | None:
    try:
        decoded = json.loads(body or b"null")
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def _route(path: str) -> str:
    """``path`` without its query string (it may carry a receipt)."""
    return path.split("?", 1)[0]
