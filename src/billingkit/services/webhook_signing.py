"""A webhook request, signed in the Standard Webhooks scheme (decision D8).

The body is the stored envelope ``{"event_type": ..., "<resource>": {...}}`` as compact JSON. The
headers are the endpoint's static ones, ``content-type: application/json`` and:

- ``webhook-id``: the event's id, the same on every attempt and replay (receivers deduplicate by it);
- ``webhook-timestamp``: the instant of this attempt, in whole seconds since the epoch;
- ``webhook-signature``: ``v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>``, made by
  the ``standardwebhooks`` library (receivers verify with the same library).
"""

from __future__ import annotations

import json
from datetime import datetime
from math import floor
from typing import Any

from billingkit.domain.gateways import WebhookRequest
from billingkit.domain.webhooks import WebhookEndpoint
from billingkit.errors import ConfigurationError

__all__ = ["envelope_body", "signed_request"]

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)


def envelope_body(payload: dict[str, Any]) -> str:
    """The JSON text a receiver gets for ``payload`` (compact; decimals as strings)."""
    return _ENCODER.encode(payload)


def signed_request(
    endpoint: WebhookEndpoint,
    secret: str,
    *,
    message_id: str,
    payload: dict[str, Any],
    at: datetime,
    timeout: float,
) -> WebhookRequest:
    """The request delivering ``payload`` to ``endpoint``, signed with ``secret`` at ``at``."""
    try:
        from standardwebhooks import Webhook
    except ModuleNotFoundError:
        raise ConfigurationError(
            "webhook delivery needs the 'webhooks' extra: pip install 'billingkit[webhooks]'"
        ) from None
    body = envelope_body(payload)
    signature = Webhook(secret).sign(message_id, at, body)
    headers = {
        **endpoint.headers,
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(floor(at.timestamp())),
        "webhook-signature": signature,
    }
    return WebhookRequest(url=endpoint.url, body=body.encode(), headers=headers, timeout=timeout)
