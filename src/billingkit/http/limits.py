"""Request body size limit, enforced before the body is parsed (413 ``payload_too_large``)."""

from __future__ import annotations

import json
from typing import Any

from billingkit.errors import PayloadTooLarge
from billingkit.http.observability import log_request_error

__all__ = ["BodySizeLimit"]

Scope = dict[str, Any]


class BodySizeLimit:
    """ASGI middleware: rejects bodies larger than ``max_bytes`` by header or while streaming."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _reject(self, scope: Scope, send: Any) -> None:
        error = PayloadTooLarge(f"request body exceeds the limit of {self.max_bytes} bytes")
        log_request_error(scope, error.http_status, error.code)
        body = json.dumps(error.to_dict()).encode()
        await send(
            {
                "type": "http.response.start",
                "status": error.http_status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._reject(scope, send)
                return
        received = 0

        async def limited_receive() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise PayloadTooLarge(f"request body exceeds the limit of {self.max_bytes} bytes")
            return message

        await self.app(scope, limited_receive, send)
