"""``GET /v1/events`` and ``POST /v1/events/query``: the reference's shapes, 400s naming fields,
``event_reader`` reads and ``event_ingestor`` does not."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error, service_key

KEYS = {"events", "has_more", "iter_first_key", "iter_last_key", "total_count", "offset"}


def _events() -> list[dict[str, Any]]:
    # the clock fixture stands at 2026-05-01T09:30Z; e0..e5 one minute apart, e0 oldest
    return [
        {
            "event_id": f"e{i}",
            "event_name": "api.request" if i != 3 else "login",
            "external_customer_id": "cust-1" if i != 4 else "cust-2",
            "timestamp": f"2026-05-01T09:0{i}:00Z",
            "source": "api" if i % 2 else "sdk",
            "properties": {"region": ["eu", "us", "eu"][i % 3], "tier": i},
        }
        for i in range(6)
    ]


@pytest.fixture
def loaded(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    response = client.post("/v1/events/bulk", json={"events": _events()}, headers=test_key)
    assert response.status_code == 202, response.text
    return test_key


def _ids(body: dict[str, Any]) -> list[str]:
    return [event["id"] for event in body["events"]]


def test_get_lists_newest_first_with_the_reference_shape(client: TestClient, loaded: dict[str, str]) -> None:
    response = client.get("/v1/events", params={"page_size": 2}, headers=loaded)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == KEYS
    assert _ids(body) == ["e5", "e4"]
    assert (body["has_more"], body["total_count"], body["offset"]) == (True, 6, 0)
    assert body["events"][0] == {
        "id": "e5",
        "event_name": "api.request",
        "external_customer_id": "cust-1",
        "customer_id": None,
        "timestamp": "2026-05-01T09:05:00Z",
        "source": "api",
        "properties": {"region": "eu", "tier": 5},
        "environment_id": body["events"][0]["environment_id"],
    }
    assert body["iter_first_key"].endswith("::e5") and body["iter_last_key"].endswith("::e4")
    following = client.get(
        "/v1/events", params={"page_size": 2, "iter_last_key": body["iter_last_key"]}, headers=loaded
    ).json()
    assert _ids(following) == ["e3", "e2"] and following["has_more"] is True
    offset = client.get("/v1/events", params={"page_size": 2, "offset": 4}, headers=loaded).json()
    assert (_ids(offset), offset["has_more"], offset["offset"]) == (["e1", "e0"], False, 4)


def test_get_filters(client: TestClient, loaded: dict[str, str]) -> None:
    def ids(**params: Any) -> list[str]:
        response = client.get("/v1/events", params=params, headers=loaded)
        assert response.status_code == 200, response.text
        return _ids(response.json())

    assert ids(external_customer_id="cust-2") == ["e4"]
    assert ids(event_name="login") == ["e3"]
    assert ids(event_id="e1") == ["e1"]
    assert ids(source="sdk") == ["e4", "e2", "e0"]
    assert ids(start_time="2026-05-01T09:01:00Z", end_time="2026-05-01T11:03:00+02:00") == ["e2", "e1"]
    assert ids(property_filters="region:eu") == ["e5", "e3", "e2", "e0"]
    assert ids(property_filters="region:eu,us;tier:1,2,3") == ["e3", "e2", "e1"]
    assert ids(property_filters="tier:4") == ["e4"]  # numbers match their text
    assert ids(sort="event_name", order="asc") == ["e0", "e1", "e2", "e4", "e5", "e3"]
    assert ids(order="asc", page_size=3) == ["e0", "e1", "e2"]


def test_post_query_takes_the_same_fields_in_the_body(client: TestClient, loaded: dict[str, str]) -> None:
    response = client.post(
        "/v1/events/query",
        json={
            "external_customer_id": "cust-1",
            "property_filters": {"region": ["eu"]},
            "order": "asc",
            "page_size": 2,
            "start_time": "2026-04-30T00:00:00Z",
            "end_time": "2026-05-02T00:00:00Z",
            "unknown": "ignored",
        },
        headers=loaded,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == KEYS
    assert (_ids(body), body["has_more"], body["total_count"]) == (["e0", "e2"], True, 4)
    more = client.post(
        "/v1/events/query",
        json={"property_filters": {"region": ["eu"]}, "order": "asc", "iter_last_key": body["iter_last_key"]},
        headers=loaded,
    ).json()
    assert _ids(more) == ["e3", "e5"] and more["has_more"] is False
    # polling for newer events: nothing new yet, the same key comes back
    newest = client.post("/v1/events/query", json={"page_size": 1}, headers=loaded).json()
    poll = client.post(
        "/v1/events/query", json={"iter_first_key": newest["iter_first_key"]}, headers=loaded
    ).json()
    assert poll["events"] == [] and poll["iter_first_key"] == newest["iter_first_key"]
    assert poll["iter_last_key"] is None and poll["total_count"] == 6
    client.post(
        "/v1/events",
        json={
            "event_id": "e6",
            "event_name": "n",
            "external_customer_id": "c",
            "timestamp": "2026-05-01T09:10:00Z",
        },
        headers=loaded,
    )
    poll = client.post(
        "/v1/events/query", json={"iter_first_key": newest["iter_first_key"]}, headers=loaded
    ).json()
    assert _ids(poll) == ["e6"] and poll["iter_first_key"].endswith("::e6")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"page_size": 0}, "page_size"),
        ({"page_size": 1001}, "page_size"),
        ({"page_size": "ten"}, "page_size"),
        ({"offset": -1}, "offset"),
        ({"iter_last_key": "not-a-key"}, "iter_last_key"),
        ({"iter_first_key": "1::e1", "sort": "event_name"}, "iter_first_key"),
        ({"start_time": "2026-05-01T00:00:00"}, "start_time"),
        ({"end_time": "tomorrow"}, "end_time"),
        ({"sort": "created_at"}, "sort"),
        ({"order": "up"}, "order"),
        ({"property_filters": "region"}, "property_filters"),
        ({"property_filters": "region:eu;region:us"}, "property_filters.region"),
    ],
)
def test_get_bad_input_is_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], params: dict[str, Any], field: str
) -> None:
    body = assert_error(client.get("/v1/events", params=params, headers=test_key), 400, "validation_error")
    assert body["details"]["field"] == field


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"page_size": 0}, "page_size"),
        ({"page_size": 1001}, "page_size"),
        ({"page_size": "10"}, "page_size"),
        ({"iter_first_key": 5}, "iter_first_key"),
        ({"iter_last_key": "5::e1", "sort": "event_name"}, "iter_last_key"),
        ({"start_time": "2026-05-01T00:00:00"}, "start_time"),
        ({"property_filters": {"region": "eu"}}, "property_filters.region"),
        ({"property_filters": {"region": [1]}}, "property_filters.region"),
        ({"property_filters": ["region"]}, "property_filters"),
    ],
)
def test_post_bad_input_is_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], payload: dict[str, Any], field: str
) -> None:
    response = client.post("/v1/events/query", json=payload, headers=test_key)
    assert assert_error(response, 400, "validation_error")["details"]["field"] == field


def test_page_size_1000_is_allowed_on_get_and_post(client: TestClient, loaded: dict[str, str]) -> None:
    get = client.get("/v1/events", params={"page_size": 1000}, headers=loaded)
    post = client.post("/v1/events/query", json={"page_size": 1000}, headers=loaded)
    assert get.status_code == post.status_code == 200
    assert len(get.json()["events"]) == len(post.json()["events"]) == 6
    assert_error(client.post("/v1/events/query", json=["x"], headers=loaded), 400, "validation_error")


def test_reader_reads_ingestor_does_not(client: TestClient, loaded: dict[str, str]) -> None:
    ingestor = service_key(client, loaded, ["event_ingestor"])
    reader = service_key(client, loaded, ["event_reader"])
    assert_error(client.get("/v1/events", headers=ingestor), 403, "permission_denied")
    assert_error(client.post("/v1/events/query", json={}, headers=ingestor), 403, "permission_denied")
    assert client.get("/v1/events", headers=reader).json()["total_count"] == 6
    assert client.post("/v1/events/query", json={}, headers=reader).json()["total_count"] == 6


def test_another_environment_sees_nothing(
    client: TestClient, loaded: dict[str, str], prod_key: dict[str, str]
) -> None:
    for response in (
        client.get("/v1/events", headers=prod_key),
        client.post("/v1/events/query", json={}, headers=prod_key),
    ):
        assert response.status_code == 200
        assert response.json() == {
            "events": [],
            "has_more": False,
            "iter_first_key": None,
            "iter_last_key": None,
            "total_count": 0,
            "offset": 0,
        }
