"""Unknown body fields are a 400 naming the field and listing the accepted ones, on every route
with a request model, at any depth, and in usage events; nothing is written."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

FEE = {
    "currency": "usd",
    "billing_period": "MONTHLY",
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "49",
    "invoice_cadence": "ADVANCE",
}


def _model_bodies(client: TestClient) -> list[tuple[str, str, list[str]]]:
    """(method, path, the body model's fields) for every route whose body is a request model."""
    doc = client.get("/v1/openapi.json").json()
    out = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            schema = (
                op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            )
            ref = schema.get("$ref") or next(
                (s["$ref"] for s in schema.get("anyOf", []) if "$ref" in s), None
            )
            if ref:
                fields = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
                out.append((method, re.sub(r"\{[^}]+\}", "some_id", path), sorted(fields)))
    return out


def test_every_body_model_refuses_an_unknown_field(client: TestClient, test_key: dict[str, str]) -> None:
    routes = _model_bodies(client)
    assert len(routes) >= 40, routes
    for method, path, fields in routes:
        response = client.request(method, path, json={"zz_unknown": 1}, headers=test_key)
        body = assert_error(response, 400, "validation_error")
        assert body["details"] == {"field": "zz_unknown", "accepted_fields": fields}, (method, path)
        assert body["message"] == f"unknown field 'zz_unknown'; accepted: {', '.join(fields)}"


def test_a_misspelled_field_is_named_with_the_accepted_ones(
    client: TestClient, test_key: dict[str, str]
) -> None:
    rate = {"name": "VAT", "cod": "VAT20", "percentage_value": "20"}
    body = assert_error(client.post("/v1/taxes/rates", json=rate, headers=test_key), 400, "validation_error")
    assert body["message"] == (
        "unknown field 'cod'; accepted: code, description, fixed_value, metadata, name, "
        "percentage_value, scope, tax_rate_type"
    )
    assert body["details"]["field"] == "cod"
    assert client.get("/v1/taxes/rates", headers=test_key).json()["pagination"]["total"] == 0


def test_a_nested_unknown_field_is_named_by_its_path(client: TestClient, test_key: dict[str, str]) -> None:
    plan = {"name": "Pro", "prices": [FEE, {**FEE, "tiers": [{"up_to": 10, "unit_amont": "1"}]}]}
    body = assert_error(client.post("/v1/plans", json=plan, headers=test_key), 400, "validation_error")
    assert body["details"]["field"] == "prices[1].tiers[0].unit_amont"
    assert "unit_amount" in body["details"]["accepted_fields"]
    assert body["message"].startswith("unknown field 'prices[1].tiers[0].unit_amont'; accepted: ")
    search = {"filters": [{"field": "name", "operator": "eq", "value": {"string": "a"}, "op": "x"}]}
    body = assert_error(
        client.post("/v1/customers/search", json=search, headers=test_key), 400, "validation_error"
    )
    assert body["details"] == {
        "field": "filters[0].op",
        "accepted_fields": ["data_type", "field", "operator", "value"],
    }
    assert client.get("/v1/plans", headers=test_key).json()["pagination"]["total"] == 0


def test_an_event_field_is_refused_in_single_and_bulk_ingestion(
    client: TestClient, test_key: dict[str, str]
) -> None:
    event: dict[str, Any] = {"event_name": "call", "external_customer_id": "ada", "event_id": "e1"}
    body = assert_error(
        client.post("/v1/events", json={**event, "propertis": {"a": "b"}}, headers=test_key),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == "events[0].propertis"
    bulk = {"events": [event, {**event, "event_id": "e2", "timestmp": "2026-01-01T00:00:00Z"}]}
    body = assert_error(client.post("/v1/events/bulk", json=bulk, headers=test_key), 400, "validation_error")
    assert body["details"]["field"] == "events[1].timestmp"
    assert "timestamp" in body["details"]["accepted_fields"]
    flag = {"events": [event], "evaluate_alerts_immediatly": True}
    body = assert_error(client.post("/v1/events/bulk", json=flag, headers=test_key), 400, "validation_error")
    assert body["details"]["field"] == "evaluate_alerts_immediatly"
    assert body["details"]["accepted_fields"] == ["evaluate_alerts_immediately", "events"]
    assert client.get("/v1/events/lookup", params={"id": "e1"}, headers=test_key).status_code == 404


def test_reference_fields_this_version_cannot_honour(client: TestClient, test_key: dict[str, str]) -> None:
    customer = {"external_id": "ada", "name": "Ada", "onboarding_workflow_name": "welcome"}
    body = assert_error(
        client.post("/v1/customers", json=customer, headers=test_key), 400, "validation_error"
    )
    assert body["message"] == "onboarding_workflow_name is not supported by this version of billingkit"
    assert body["details"] == {"field": "onboarding_workflow_name"}
    accepted = {**customer, "onboarding_workflow_name": None, "skip_onboarding_workflow": True}
    assert client.post("/v1/customers", json=accepted, headers=test_key).status_code == 201
