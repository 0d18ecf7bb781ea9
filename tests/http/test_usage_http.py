"""``/v1/events/usage`` and ``/v1/events/usage/meter`` over HTTP."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.http.conftest import assert_error, service_key

WINDOW = {"start_time": "2026-04-01T00:00:00Z", "end_time": "2026-05-01T00:00:00Z"}


def _ingest(client: TestClient, headers: dict[str, str]) -> None:
    events = [
        {
            "event_id": f"e{i}",
            "event_name": "llm.call",
            "external_customer_id": "acme" if i < 3 else "globex",
            "timestamp": f"2026-04-0{i + 1}T12:00:00Z",
            "properties": {"tokens": tokens, "model": "m1" if i % 2 else "m2"},
        }
        for i, tokens in enumerate([0.1, 0.2, "1.5", 40])
    ]
    assert client.post("/v1/events/bulk", json={"events": events}, headers=headers).status_code == 202


def test_ad_hoc_usage(client: TestClient, test_key: dict[str, str]) -> None:
    _ingest(client, test_key)
    response = client.post(
        "/v1/events/usage",
        json={
            "event_name": "llm.call",
            "aggregation_type": "SUM",
            "property_name": "tokens",
            "external_customer_id": "acme",
            "window_size": "DAY",
            **WINDOW,
        },
        headers=test_key,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["value"] == "1.8" and body["type"] == "SUM" and body["event_count"] == 3  # 0.1 + 0.2 + 1.5
    assert [(r["window_size"], r["value"]) for r in body["results"]] == [
        ("2026-04-01T00:00:00Z", "0.1"),
        ("2026-04-02T00:00:00Z", "0.2"),
        ("2026-04-03T00:00:00Z", "1.5"),
    ]
    grouped = client.post(
        "/v1/events/usage",
        json={
            "event_name": "llm.call",
            "aggregation_type": "COUNT",
            "group_by": ["properties.model"],
            **WINDOW,
        },
        headers=test_key,
    ).json()
    assert grouped["value"] == "4"
    assert [(g["group"], g["value"]) for g in grouped["groups"]] == [("m1", "2"), ("m2", "2")]


def test_usage_by_meter(client: TestClient, test_key: dict[str, str]) -> None:
    _ingest(client, test_key)
    meter = client.post(
        "/v1/meters",
        json={"name": "Tokens", "event_name": "llm.call", "aggregation": {"type": "MAX", "field": "tokens"}},
        headers=test_key,
    )
    assert meter.status_code == 201, meter.text
    response = client.post(
        "/v1/events/usage/meter", json={"meter_id": meter.json()["id"], **WINDOW}, headers=test_key
    )
    assert response.status_code == 200, response.text
    assert response.json()["value"] == "40" and response.json()["meter_id"] == meter.json()["id"]
    narrowed = client.post(
        "/v1/events/usage/meter",
        json={"meter_id": meter.json()["id"], "filters": {"model": ["m2"]}, **WINDOW},
        headers=test_key,
    )
    assert narrowed.json()["value"] == "1.5"  # e0 (0.1) and e2 (1.5) are m2
    assert_error(
        client.post("/v1/events/usage/meter", json={"meter_id": "meter_nope"}, headers=test_key),
        404,
        "not_found",
    )


def test_bad_input_is_400_naming_the_field(client: TestClient, test_key: dict[str, str]) -> None:
    for body, field in [
        ({"aggregation_type": "SUM"}, "event_name"),
        ({"event_name": "x", "aggregation_type": "SUM"}, "property_name"),
        (
            {"event_name": "x", "aggregation_type": "AVG", "property_name": "t", "window_size": "DAY"},
            "window_size",
        ),
        ({"event_name": "x", "aggregation_type": "COUNT", "start_time": "yesterday"}, "start_time"),
        ({"event_name": "x", "aggregation_type": "COUNT", "timezone": "Europe/Paris"}, "timezone"),
    ]:
        error = assert_error(
            client.post("/v1/events/usage", json=body, headers=test_key), 400, "validation_error"
        )
        assert error["details"]["field"] == field, (body, error)
    assert_error(client.post("/v1/events/usage/meter", json={}, headers=test_key), 400, "validation_error")


def test_usage_needs_event_read(client: TestClient, test_key: dict[str, str]) -> None:
    ingestor = service_key(client, test_key, ["event_ingestor"])
    reader = service_key(client, test_key, ["event_reader"])
    body = {"event_name": "llm.call", "aggregation_type": "COUNT", **WINDOW}
    assert_error(client.post("/v1/events/usage", json=body, headers=ingestor), 403, "permission_denied")
    assert client.post("/v1/events/usage", json=body, headers=reader).status_code == 200


def test_usage_of_another_environment_is_invisible(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str]
) -> None:
    _ingest(client, test_key)
    body = {"event_name": "llm.call", "aggregation_type": "COUNT", **WINDOW}
    assert client.post("/v1/events/usage", json=body, headers=prod_key).json()["value"] == "0"
