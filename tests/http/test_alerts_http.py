"""``/v1/alerts/setting`` and ``/v1/alerts/search`` over HTTP, on every store: the reference's
bodies, 400 for bad settings, 404 for what the environment cannot see, and an alert fired by
``POST /v1/events/bulk`` with ``evaluate_alerts_immediately``."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from billingkit.http.schemas.base import EnvironmentRecordResponse
from billingkit.services.access import BootstrapResult
from tests.alert_story import AlertStory, build_story
from tests.http.conftest import assert_error
from tests.http.test_subscription_pauses_http import ok

SETTING_FIELDS = [
    *EnvironmentRecordResponse.model_fields,
    "entity_type",
    "entity_id",
    "parent_entity_type",
    "parent_entity_id",
    "config",
    "enabled",
    "alert_state",
]


@pytest.fixture
def story(billing: Billing, setup: BootstrapResult) -> AlertStory:
    return build_story(billing.scope(setup.tenant.id, setup.environments[0][0].id))


def test_create_get_update_search_delete(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], story: AlertStory
) -> None:
    sub_id = story.subscription.id
    body = {
        "entity_type": "subscription",
        "entity_id": sub_id,
        "config": {"critical": {"threshold": "100.00", "condition": "above"}},
    }
    created = ok(client.post("/v1/alerts/setting", json=body, headers=test_key), 201)
    assert list(created) == SETTING_FIELDS
    assert created["config"] == {
        "alert_enabled": True,
        "critical": {"threshold": "100.00", "condition": "above"},
        "warning": None,
        "info": None,
    }
    assert (created["enabled"], created["alert_state"], created["parent_entity_id"]) == (True, "ok", None)
    setting_id = created["id"]
    assert ok(client.get(f"/v1/alerts/setting/{setting_id}", headers=test_key)) == created

    changed = ok(
        client.put(
            f"/v1/alerts/setting/{setting_id}",
            json={"config": {"warning": {"threshold": "50", "condition": "above"}}},
            headers=test_key,
        )
    )
    assert changed["config"]["critical"] == {"threshold": "100.00", "condition": "above"}
    assert changed["config"]["warning"] == {"threshold": "50", "condition": "above"}

    line = ok(
        client.post(
            "/v1/alerts/setting",
            json={
                "entity_type": "subscription_line_item",
                "entity_id": story.line_item_id,
                "parent_entity_id": sub_id,
                "parent_entity_type": "subscription",
                "config": {"critical": {"threshold": "10", "condition": "above"}},
            },
            headers=test_key,
        ),
        201,
    )
    found = ok(
        client.post("/v1/alerts/setting/search", json={"parent_entity_ids": [sub_id]}, headers=test_key)
    )
    assert [item["id"] for item in found["items"]] == [line["id"]]
    assert found["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    everything = ok(client.post("/v1/alerts/setting/search", json={}, headers=test_key))
    assert {item["id"] for item in everything["items"]} == {setting_id, line["id"]}

    # Another environment's key sees none of it.
    assert_error(client.get(f"/v1/alerts/setting/{setting_id}", headers=prod_key), 404, "not_found")
    assert_error(client.delete(f"/v1/alerts/setting/{setting_id}", headers=prod_key), 404, "not_found")
    assert ok(client.post("/v1/alerts/setting/search", json={}, headers=prod_key))["items"] == []

    deleted = client.delete(f"/v1/alerts/setting/{setting_id}", headers=test_key)
    assert deleted.status_code == 204 and deleted.content == b""
    assert_error(client.get(f"/v1/alerts/setting/{setting_id}", headers=test_key), 404, "not_found")
    assert_error(client.put(f"/v1/alerts/setting/{setting_id}", json={}, headers=test_key), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {"entity_type": "wallet", "entity_id": "w", "config": {"critical": {"threshold": "1"}}},
            "entity_type",
        ),
        ({"entity_type": "planet", "entity_id": "x", "config": {}}, "entity_type"),
        ({"entity_type": "subscription", "config": {}}, "entity_id"),
        ({"entity_type": "subscription", "entity_id": "SUB", "config": {"alert_enabled": True}}, "config"),
        (
            {
                "entity_type": "subscription",
                "entity_id": "SUB",
                "config": {"critical": {"threshold": "ten", "condition": "above"}},
            },
            "config.critical.threshold",
        ),
        (
            {
                "entity_type": "subscription",
                "entity_id": "SUB",
                "config": {
                    "warning": {"threshold": "10", "condition": "above"},
                    "critical": {"threshold": "5", "condition": "below"},
                },
            },
            "config.critical.condition",
        ),
        (
            {"entity_type": "group", "entity_id": "g", "config": {"critical": {"threshold": "1"}}},
            "parent_entity_id",
        ),
        ({"entity_type": "subscription", "entity_id": "SUB", "config": {}, "colour": "red"}, "colour"),
    ],
)
def test_bad_settings_are_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], story: AlertStory, body: dict[str, Any], field: str
) -> None:
    sent = {key: (story.subscription.id if value == "SUB" else value) for key, value in body.items()}
    error = assert_error(
        client.post("/v1/alerts/setting", json=sent, headers=test_key), 400, "validation_error"
    )
    assert error["details"]["field"] == field
    assert ok(client.post("/v1/alerts/setting/search", json={}, headers=test_key))["items"] == []


def test_unknown_entities_are_404(client: TestClient, test_key: dict[str, str], story: AlertStory) -> None:
    config = {"critical": {"threshold": "1", "condition": "above"}}
    missing_sub = {"entity_type": "subscription", "entity_id": "subs_nope", "config": config}
    assert_error(client.post("/v1/alerts/setting", json=missing_sub, headers=test_key), 404, "not_found")
    missing_group = {
        "entity_type": "group",
        "entity_id": "group_nope",
        "parent_entity_id": story.subscription.id,
        "config": config,
    }
    assert_error(client.post("/v1/alerts/setting", json=missing_group, headers=test_key), 404, "not_found")
    assert_error(client.get("/v1/alerts/setting/alert_nope", headers=test_key), 404, "not_found")


def test_bulk_ingestion_with_immediate_evaluation_logs_and_notifies(
    client: TestClient, test_key: dict[str, str], story: AlertStory, clock: TestClock
) -> None:
    created = ok(
        client.post(
            "/v1/alerts/setting",
            json={
                "entity_type": "subscription",
                "entity_id": story.subscription.id,
                "config": {"critical": {"threshold": "100.00", "condition": "above"}},
            },
            headers=test_key,
        ),
        201,
    )
    event = {
        "event_name": "llm.tokens",
        "external_customer_id": "ada",
        "timestamp": clock.now().isoformat(),
        "properties": {"tokens": 120},
    }
    ok(
        client.post(
            "/v1/events/bulk", json={"events": [event], "evaluate_alerts_immediately": True}, headers=test_key
        ),
        202,
    )
    logs = ok(client.post("/v1/alerts/search", json={"entity_id": story.subscription.id}, headers=test_key))
    (log,) = logs["items"]
    assert log["alert_type"] == "subscription_spend" and log["alert_status"] == "in_alarm"
    assert log["entity_type"] == "subscription" and log["customer_id"] == story.customer_id
    assert log["alert_info"]["value"] == "120.00"
    assert log["alert_info"]["alert_settings"]["critical"] == {"threshold": "100.00", "condition": "above"}
    assert (
        ok(client.get(f"/v1/alerts/setting/{created['id']}", headers=test_key))["alert_state"] == "in_alarm"
    )
    assert ok(client.post("/v1/alerts/search", json={"alert_status": "ok"}, headers=test_key))["items"] == []
    assert_error(
        client.post("/v1/alerts/search", json={"alert_status": "red"}, headers=test_key),
        400,
        "validation_error",
    )
