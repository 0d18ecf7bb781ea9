"""The OpenAPI document describes every notification kind under ``webhooks`` (OpenAPI 3.1), each
with a payload schema that the payloads billingkit really sends satisfy."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from billingkit.domain.event_types import EVENT_TYPES
from billingkit.http.schemas.webhooks import PAYLOADS
from tests.event_kinds import tell


@pytest.fixture(scope="module")
def examples() -> dict[str, dict[str, Any]]:
    return tell()


def test_every_kind_is_a_webhook_with_its_payload_schema(client: TestClient) -> None:
    doc = client.get("/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    assert list(doc["webhooks"]) == list(EVENT_TYPES)
    schemas = doc["components"]["schemas"]
    for name, item in doc["webhooks"].items():
        body = item["post"]["requestBody"]["content"]["application/json"]["schema"]
        payload = schemas[body["$ref"].removeprefix("#/components/schemas/")]
        declared = EVENT_TYPES[name]
        assert payload["properties"]["event_type"]["const"] == name
        keys = {"event_type", *([declared.resource] if declared.resource else []), *declared.fields}
        assert set(payload["properties"]) == keys, name
        assert payload["additionalProperties"] is False
    # Webhooks are not operations to call: the paths stay the adapter's routes.
    assert not [path for path in doc["paths"] if "webhook-events" in path]
    overdue = doc["webhooks"]["invoice.payment.overdue"]["post"]
    assert "scheduler" in overdue["description"]


def test_the_payloads_sent_satisfy_their_schema(examples: dict[str, dict[str, Any]]) -> None:
    for name, payload in examples.items():
        PAYLOADS[name].model_validate(payload)
    # A payload that drifts from the schema is refused: an unknown key, a missing one.
    subscription = dict(examples["subscription.created"]["subscription"])
    with pytest.raises(ValidationError):
        PAYLOADS["subscription.created"].model_validate(
            {"event_type": "subscription.created", "subscription": {**subscription, "extra": 1}}
        )
    del subscription["customer"]
    with pytest.raises(ValidationError):
        PAYLOADS["subscription.created"].model_validate(
            {"event_type": "subscription.created", "subscription": subscription}
        )
    with pytest.raises(ValidationError):
        PAYLOADS["customer.created"].model_validate({**examples["customer.updated"]})
