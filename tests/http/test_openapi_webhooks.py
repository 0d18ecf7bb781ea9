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


def test_the_alert_payloads_satisfy_their_schemas_strictly(examples: dict[str, dict[str, Any]]) -> None:
    alert_kinds = [name for name, kind in EVENT_TYPES.items() if {"alert", "alert_type"} & set(kind.fields)]
    assert len(alert_kinds) == 13
    for name in alert_kinds:
        PAYLOADS[name].model_validate(examples[name])
    # A threshold may be null (a recovery whose level was removed from the configuration).
    recovered = examples["subscription.spend.threshold_recovered"]
    PAYLOADS["subscription.spend.threshold_recovered"].model_validate({**recovered, "threshold": None})
    refused = [
        # another kind's alert type, an unknown state
        ("subscription.spend.threshold_reached", {"alert_type": "subscription_group_spend"}),
        ("subscription.spend.threshold_reached", {"alert_status": "on_fire"}),
        # the wallet's alert is required and is WalletAlertInfo
        ("wallet.ongoing_balance.updated", {"alert": None}),
        ("wallet.ongoing_balance.updated", {"alert": {"state": "in_alarm"}}),
        # the flat feature alert has no resource
        ("feature.wallet_balance.alert", {"feature": {}}),
        ("entitlement.grant.exhausted", {"usage": None}),
    ]
    for name, change in refused:
        with pytest.raises(ValidationError):
            PAYLOADS[name].model_validate({**examples[name], **change})
    missing = dict(examples["entitlement.grant.exhausted"])
    del missing["usage_limit"]
    with pytest.raises(ValidationError):
        PAYLOADS["entitlement.grant.exhausted"].model_validate(missing)
    # Wallet events that are not alerts carry no alert.
    with pytest.raises(ValidationError):
        PAYLOADS["wallet.created"].model_validate(
            {**examples["wallet.created"], "alert": examples["wallet.ongoing_balance.updated"]["alert"]}
        )


def test_the_checkout_payloads_satisfy_their_schema_strictly(
    client: TestClient, examples: dict[str, dict[str, Any]]
) -> None:
    kinds = [name for name, kind in EVENT_TYPES.items() if kind.resource == "checkout_session"]
    assert kinds == [f"checkout.session.{k}" for k in ("initiated", "completed", "failed", "expired")]
    for name in kinds:
        PAYLOADS[name].model_validate(examples[name])
    # The document describes the session, not an open object: its fields, its enums.
    schemas = client.get("/v1/openapi.json").json()["components"]["schemas"]
    session = schemas["WebhookCheckoutSession"]
    assert session["additionalProperties"] is False
    assert (
        set(session["required"]) == set(session["properties"]) == set(examples[kinds[0]]["checkout_session"])
    )
    status = schemas[session["properties"]["checkout_status"]["$ref"].rsplit("/", 1)[1]]
    assert status["enum"] == ["initiated", "pending", "completed", "failed", "expired"]
    completed = examples["checkout.session.completed"]
    body = dict(completed["checkout_session"])
    refused = [
        {**body, "extra": 1},  # an unknown key
        {**body, "checkout_status": "refunded"},  # an unknown status
        {**body, "action": "buy_everything"},  # an unknown action
        {**body, "payment_action": {"type": "checkout_url"}},  # where to pay without the url
        {k: v for k, v in body.items() if k != "expires_at"},  # a missing field
    ]
    for session_body in refused:
        with pytest.raises(ValidationError):
            PAYLOADS["checkout.session.completed"].model_validate(
                {**completed, "checkout_session": session_body}
            )
    # Another kind's name is refused.
    with pytest.raises(ValidationError):
        PAYLOADS["checkout.session.failed"].model_validate(completed)
