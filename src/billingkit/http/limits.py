"""Request body size limit, enforced before the body is parsed (413 ``payload_too_large``)."""

from __future__ import annotations

import json
from typing import Any

from billingkit.errors import PayloadTooLarge
from billingkit.http.observability import log_request_error

__all__ = ["BodySizeLimit"]

Scope = dict[str, Any]


class BodySizeLimit:
    """ASGI middleware: rejects bodies larger than ``max_bytes``, by their ``Content-Length`` or,
    for a body sent without one (chunked), by reading it up to the limit first."""

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
            if name == b"content-length" and value.isdigit():
                if int(value) > self.max_bytes:
                    await self._reject(scope, send)
                    return
                # The server delivers no more than the declared length.
                await self.app(scope, receive, send)
                return
        # No length given (``Transfer-Encoding: chunked``): read the body up to the limit before
        # the application runs, so an oversized one is a 413 and reaches no route (nothing is
        # written). A failure raised from inside the application's receive would surface as a 400.
        chunks: list[bytes] = []
        received = 0
        first: dict[str, Any]
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first = message  # the client went away: let the application see it
                break
            body = message.get("body", b"")
            received += len(body)
            if received > self.max_bytes:
                await self._reject(scope, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                first = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
                break
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await self.app(scope, replay, send)
