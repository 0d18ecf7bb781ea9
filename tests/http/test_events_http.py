"""``/v1/events`` over HTTP: 202 answers, duplicates reported, invalid batches refused whole."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.http import create_app
from tests.http.conftest import assert_error, service_key


def _events(n: int) -> list[dict[str, Any]]:
    return [
        {
            "event_id": f"e{i}",
            "event_name": "api.request",
            "external_customer_id": "cust-1",
            "timestamp": "2026-05-01T10:00:00Z",
            "properties": {"i": i},
        }
        for i in range(n)
    ]


def test_single_and_bulk(client: TestClient, test_key: dict[str, str], prod_key: dict[str, str]) -> None:
    one = client.post(
        "/v1/events", json={"event_name": "login", "external_customer_id": "c"}, headers=test_key
    )
    assert one.status_code == 202, one.text
    assert one.json()["message"] == "Event accepted for processing" and one.json()["event_id"].startswith(
        "event_"
    )
    again = client.post(
        "/v1/events", json={"event_id": "x", "event_name": "l", "external_customer_id": "c"}, headers=test_key
    )
    assert again.json() == {"message": "Event accepted for processing", "event_id": "x"}
    assert again.headers["billingkit-duplicate"] == "false"
    repeat = client.post(
        "/v1/events", json={"event_id": "x", "event_name": "l", "external_customer_id": "c"}, headers=test_key
    )
    assert repeat.status_code == 202 and repeat.json() == again.json()
    assert repeat.headers["billingkit-duplicate"] == "true"

    first = client.post("/v1/events/bulk", json={"events": _events(5)}, headers=test_key)
    assert first.status_code == 202
    # a map of strings, as the reference answers (its SDK refuses numbers and lists here)
    assert first.json() == {
        "message": "Events accepted for processing",
        "accepted": "5",
        "duplicates": "0",
        "evaluate_alerts_immediately": "false",
    }
    second = client.post("/v1/events/bulk", json={"events": _events(5)}, headers=test_key).json()
    assert (second["accepted"], second["duplicates"]) == ("0", "5")
    assert client.post("/v1/events/bulk", json={"events": []}, headers=test_key).status_code == 202

    found = client.get("/v1/events/lookup", params={"id": "e2"}, headers=test_key)
    assert found.status_code == 200
    event = found.json()["event"]
    assert event == {
        "id": "e2",
        "event_name": "api.request",
        "external_customer_id": "cust-1",
        "customer_id": None,
        "timestamp": "2026-05-01T10:00:00Z",
        "source": None,
        "properties": {"i": 2},
        "environment_id": event["environment_id"],
    }
    # the id's reference name is `id`; `event_id` is still read, and one of them is required
    assert client.get("/v1/events/lookup", params={"event_id": "e2"}, headers=test_key).json() == found.json()
    body = assert_error(client.get("/v1/events/lookup", headers=test_key), 400, "validation_error")
    assert body["details"]["field"] == "id"
    assert_error(
        client.get("/v1/events/lookup", params={"event_id": "e2"}, headers=prod_key), 404, "not_found"
    )


def test_invalid_batch_is_400_and_writes_nothing(client: TestClient, test_key: dict[str, str]) -> None:
    events = _events(10)
    events[7] = {**events[7], "external_customer_id": None}
    body = assert_error(
        client.post("/v1/events/bulk", json={"events": events}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "events[7].external_customer_id"
    assert_error(
        client.get("/v1/events/lookup", params={"event_id": "e0"}, headers=test_key), 404, "not_found"
    )
    body = assert_error(
        client.post("/v1/events/bulk", json={"events": "no"}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "events"
    assert_error(
        client.post("/v1/events", json={"event_name": "x"}, headers=test_key), 400, "validation_error"
    )


def test_batch_cap_and_body_limit(billing: Billing, test_key: dict[str, str]) -> None:
    billing.max_bulk_events = 2
    small = TestClient(create_app(billing, max_body_bytes=2_000), raise_server_exceptions=False)
    body = assert_error(
        small.post("/v1/events/bulk", json={"events": _events(3)}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["max_events"] == 2
    big = [{**e, "properties": {"pad": "x" * 500}} for e in _events(2)] * 3
    response = small.post("/v1/events/bulk", json={"events": big}, headers=test_key)
    assert response.status_code == 413 and response.json()["http_status_code"] == 413


def test_ingestor_writes_reader_reads(client: TestClient, test_key: dict[str, str]) -> None:
    ingestor = service_key(client, test_key, ["event_ingestor"])
    reader = service_key(client, test_key, ["event_reader"])
    assert client.post("/v1/events/bulk", json={"events": _events(1)}, headers=ingestor).status_code == 202
    assert_error(
        client.get("/v1/events/lookup", params={"event_id": "e0"}, headers=ingestor), 403, "permission_denied"
    )
    assert client.get("/v1/events/lookup", params={"event_id": "e0"}, headers=reader).status_code == 200
    assert_error(
        client.post("/v1/events/bulk", json={"events": _events(1)}, headers=reader), 403, "permission_denied"
    )


def test_text_no_database_can_store_is_400_not_500(client: TestClient, test_key: dict[str, str]) -> None:
    events = _events(3)
    events[1] = {**events[1], "properties": {"x": "a\u0000b"}}
    body = assert_error(
        client.post("/v1/events/bulk", json={"events": events}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "events[1].properties.x"
    assert_error(
        client.get("/v1/events/lookup", params={"event_id": "e0"}, headers=test_key), 404, "not_found"
    )
    single = client.post(
        "/v1/events",
        json={"event_name": "a\u0000", "external_customer_id": "c", "properties": {}},
        headers=test_key,
    )
    assert assert_error(single, 400, "validation_error")["details"]["field"] == "events[0].event_name"
    # JSON that Python's parser accepts but no database stores: a lone surrogate, NaN, Infinity,
    # and a NUL or a lone surrogate in a property name (the error names it escaped)
    head = b'{"events":[{"event_id":"e9","event_name":"n","external_customer_id":"c","properties":'
    cases = {
        b'{"x":"\\ud800"}': "events[0].properties.x",
        b'{"x":NaN}': "events[0].properties.x",
        b'{"deep":{"x":[1,-Infinity]}}': "events[0].properties.deep.x[1]",
        b'{"a\\u0000b":1}': "events[0].properties.a\\u0000b",
        b'{"\\udfff":1}': "events[0].properties.\\udfff",
    }
    for properties, field in cases.items():
        response = client.post(
            "/v1/events/bulk",
            content=head + properties + b"}]}",
            headers={**test_key, "content-type": "application/json"},
        )
        assert assert_error(response, 400, "validation_error")["details"]["field"] == field
    assert_error(
        client.get("/v1/events/lookup", params={"event_id": "e9"}, headers=test_key), 404, "not_found"
    )


def test_bodies_are_read_as_before_and_a_streamed_body_over_the_limit_is_413(
    billing: Billing, client: TestClient, test_key: dict[str, str]
) -> None:
    headers = {**test_key, "content-type": "application/json"}
    for path in ("/v1/events", "/v1/events/bulk"):
        invalid = assert_error(
            client.post(path, content=b'{"events": [', headers=headers), 400, "validation_error"
        )
        assert invalid["message"] == "the request body is not valid JSON"
        array = assert_error(client.post(path, content=b"[]", headers=headers), 400, "validation_error")
        assert array["message"] == "Input should be a valid dictionary"
        empty = assert_error(client.post(path, content=b"", headers=headers), 400, "validation_error")
        assert empty["message"] == "request body required"
        text = client.post(path, content=b"{}", headers={**test_key, "content-type": "text/plain"})
        assert_error(text, 400, "validation_error")
        # invalid JSON is refused before the key is looked at, as FastAPI's Body() does
        assert_error(
            client.post(path, content=b"{", headers={"content-type": "application/json"}),
            400,
            "validation_error",
        )
        assert_error(
            client.post(path, content=b"{}", headers={"content-type": "application/json"}),
            401,
            "unauthorized",
        )
    # JSON the fast parser refuses but Python's accepts is read by Python's: a BOM, UTF-16
    body = json.dumps({"events": _events(2)})
    for encoded in (b"\xef\xbb\xbf" + body.encode(), body.encode("utf-16")):
        assert client.post("/v1/events/bulk", content=encoded, headers=headers).status_code == 202
    # big integers keep every digit
    big = b'{"events":[{"event_id":"big","event_name":"n","external_customer_id":"c",' + (
        b'"properties":{"n":123456789012345678901234567890}}]}'
    )
    assert client.post("/v1/events/bulk", content=big, headers=headers).status_code == 202
    found = client.get("/v1/events/lookup", params={"id": "big"}, headers=test_key).json()["event"]
    assert found["properties"] == {"n": 123456789012345678901234567890}

    small = TestClient(create_app(billing, max_body_bytes=2_000), raise_server_exceptions=False)

    def chunks() -> Any:  # no content-length: the limit applies while the body streams in
        yield b'{"events": ['
        for i in range(10):
            yield (
                json.dumps({**_events(1)[0], "event_id": f"s{i}", "properties": {"pad": "x" * 500}}).encode()
                + b","
            )
        yield b"{}]}"

    response = small.post("/v1/events/bulk", content=chunks(), headers=headers)
    assert_error(response, 413, "payload_too_large")


def test_the_alerts_flag_over_http(client: TestClient, test_key: dict[str, str]) -> None:
    body = {"events": _events(2), "evaluate_alerts_immediately": True}
    response = client.post("/v1/events/bulk", json=body, headers=test_key)
    assert response.status_code == 202 and response.json()["evaluate_alerts_immediately"] == "true"
    bad = client.post(
        "/v1/events/bulk", json={**body, "evaluate_alerts_immediately": "yes"}, headers=test_key
    )
    assert assert_error(bad, 400, "validation_error")["details"]["field"] == "evaluate_alerts_immediately"
