"""``MemoryWebhookTransport``: the default webhook transport, and the webhook test double."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from billingkit.domain.gateways import DeliveryResult, WebhookRequest
from billingkit.errors import ValidationError

__all__ = ["MemoryWebhookTransport"]


class MemoryWebhookTransport:
    """A webhook transport that calls no one: each delivery is kept in :attr:`deliveries` (request
    and result, in order) and answered ``200``, or what :meth:`answer` set for its URL. A host that
    wants its receivers called passes an HTTP transport as ``Billing(webhook_transport=...)``.

    Nothing is shared between instances; one instance is safe to use from several threads.
    """

    def __init__(self) -> None:
        self.deliveries: list[tuple[WebhookRequest, DeliveryResult]] = []
        self._answers: dict[str, DeliveryResult] = {}
        self._lock = threading.Lock()

    def deliver(self, request: WebhookRequest) -> DeliveryResult:
        with self._lock:
            result = self._answers.get(request.url, DeliveryResult(200))
            self.deliveries.append((request, result))
        return result

    def deliver_many(self, requests: Sequence[WebhookRequest]) -> list[DeliveryResult]:
        """:meth:`deliver` each request, in order."""
        return [self.deliver(request) for request in requests]

    def answer(self, url: str, *, status_code: int | None = 200, error: str | None = None) -> None:
        """Answer later deliveries to ``url`` with ``status_code``, or with no answer and ``error``
        (``status_code=None, error="connection refused"``), as a failing receiver would."""
        if status_code is None and not error:
            raise ValidationError("a receiver that gives no answer needs an error saying why", field="error")
        with self._lock:
            self._answers[url] = DeliveryResult(status_code, error)

    def __repr__(self) -> str:
        return f"MemoryWebhookTransport({len(self.deliveries)} deliveries)"
