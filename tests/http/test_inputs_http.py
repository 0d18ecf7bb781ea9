"""No input reaches a 500: bounds and refusals shared by every route, on every store.

Each refusal is a 400 ``validation_error`` naming the field in ``details.field`` (a path id no
store can hold is a 404), and nothing is written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit.domain.validation import MAX_FILTER_TEXT, MAX_OFFSET, MAX_TEXT
from tests.http.conftest import assert_error


def _operations(client: TestClient) -> list[tuple[str, str, dict[str, Any]]]:
    doc = client.get("/v1/openapi.json").json()
    return [(method, path, op) for path, item in doc["paths"].items() for method, op in item.items()]


def _list_routes(client: TestClient, param: str) -> list[str]:
    """The GET routes without path parameters that take the query parameter ``param`` (but the
    customer portal's, which take a session token, not a key: tests/http/test_portal_http.py)."""
    return [
        path
        for method, path, op in _operations(client)
        if method == "get"
        and "{" not in path
        and not path.startswith("/v1/customer/portal/")
        and any(p["in"] == "query" and p["name"] == param for p in op.get("parameters", []))
    ]


def _search_routes(client: TestClient) -> list[str]:
    return [path for method, path, _ in _operations(client) if method == "post" and path.endswith("/search")]


def _field_error(response: Any, field: str) -> dict[str, Any]:
    body = assert_error(response, 400, "validation_error")
    assert body["details"]["field"] == field, body
    return body


def _no_customers(client: TestClient, key: dict[str, str]) -> None:
    listed = client.get("/v1/customers", params={"status": "published"}, headers=key).json()
    assert listed["pagination"]["total"] == 0 and listed["items"] == []


# -- 1. offsets and page sizes ------------------------------------------------------------------


def test_every_list_route_caps_offset(client: TestClient, test_key: dict[str, str]) -> None:
    routes = _list_routes(client, "offset")
    assert len(routes) >= 14, routes
    for path in routes:
        for offset in (2**63, MAX_OFFSET + 1, -1):
            response = client.get(path, params={"offset": offset}, headers=test_key)
            _field_error(response, "offset")
        assert client.get(path, params={"offset": MAX_OFFSET}, headers=test_key).status_code == 200, path
    for path in _list_routes(client, "limit"):
        _field_error(client.get(path, params={"limit": 1001}, headers=test_key), "limit")


def test_every_search_body_caps_offset(client: TestClient, test_key: dict[str, str]) -> None:
    routes = _search_routes(client)
    assert len(routes) >= 12, routes
    for path in routes:
        for offset in (2**63, MAX_OFFSET + 1):
            _field_error(client.post(path, json={"offset": offset}, headers=test_key), "offset")
        _field_error(client.post(path, json={"limit": 2**63}, headers=test_key), "limit")
        assert client.post(path, json={"offset": MAX_OFFSET}, headers=test_key).status_code == 200, path


def test_event_queries_cap_offset_and_page_size(client: TestClient, test_key: dict[str, str]) -> None:
    for field, value in (("offset", 2**63), ("offset", MAX_OFFSET + 1), ("page_size", 2**63)):
        _field_error(client.get("/v1/events", params={field: value}, headers=test_key), field)
        _field_error(client.post("/v1/events/query", json={field: value}, headers=test_key), field)
    ok = client.post("/v1/events/query", json={"offset": MAX_OFFSET}, headers=test_key)
    assert ok.status_code == 200 and ok.json()["events"] == []


# -- 2. text no database can store --------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"external_id": "a\x00b", "name": "n"}, "external_id"),
        ({"external_id": "x", "name": "n\ud800"}, "name"),
        ({"external_id": "x", "name": "n", "metadata": {"k": "v\x00"}}, "metadata.k"),
        ({"external_id": "x", "name": "n", "metadata": {"k\x00": "v"}}, "metadata.k\\u0000"),
    ],
)
def test_body_text_with_nul_or_lone_surrogate_is_400(
    client: TestClient, test_key: dict[str, str], body: dict[str, Any], field: str
) -> None:
    # Sent as raw JSON: "\ud800" is a lone surrogate that httpx could not encode as UTF-8.
    raw = json.dumps(body)
    response = client.post(
        "/v1/customers", content=raw, headers={**test_key, "content-type": "application/json"}
    )
    _field_error(response, field)
    _no_customers(client, test_key)


def test_nested_body_text_is_checked_at_any_depth(client: TestClient, test_key: dict[str, str]) -> None:
    plan = {"name": "P", "prices": [{"amount": "1", "currency": "usd", "description": "d\x00"}]}
    _field_error(client.post("/v1/plans", json=plan, headers=test_key), "prices[0].description")
    coupon = {"name": "C", "type": "fixed", "amount_off": "1", "currency": "usd", "rules": {"a": ["\x00"]}}
    _field_error(client.post("/v1/coupons", json=coupon, headers=test_key), "rules.a[0]")
    assert client.get("/v1/plans", headers=test_key).json()["pagination"]["total"] == 0
    assert client.get("/v1/coupons", headers=test_key).json()["pagination"]["total"] == 0


def test_query_text_with_nul_is_400_naming_the_parameter(
    client: TestClient, test_key: dict[str, str]
) -> None:
    _field_error(client.get("/v1/customers", params={"email": "a\x00b"}, headers=test_key), "email")
    _field_error(client.get("/v1/events", params={"event_name": "e\x00"}, headers=test_key), "event_name")
    search = {"filters": [{"field": "name", "operator": "eq", "value": {"string": "a\x00"}}]}
    _field_error(
        client.post("/v1/customers/search", json=search, headers=test_key), "filters[0].value.string"
    )


def test_path_id_with_nul_is_not_found(client: TestClient, test_key: dict[str, str]) -> None:
    for path in ("/v1/customers/a%00b", "/v1/plans/p%00", "/v1/customers/external/x%00"):
        assert_error(client.get(path, headers=test_key), 404, "not_found")
    updated = client.put("/v1/customers/a%00b", json={"name": "n"}, headers=test_key)
    assert_error(updated, 404, "not_found")
    _no_customers(client, test_key)


# -- 3. a blank sort --------------------------------------------------------------------------


def test_blank_sort_is_400_on_every_list_route(client: TestClient, test_key: dict[str, str]) -> None:
    routes = [path for path in _list_routes(client, "sort") if path != "/v1/events"]
    assert len(routes) >= 12, routes
    for path in routes:
        _field_error(client.get(path, params={"sort": " "}, headers=test_key), "sort")
        assert client.get(path, params={"sort": ""}, headers=test_key).status_code == 200, path


# -- 4. long search terms -----------------------------------------------------------------------


def test_search_terms_are_bounded_and_long_ones_never_error(
    client: TestClient, test_key: dict[str, str]
) -> None:
    def contains(term: str) -> Any:
        search = {"filters": [{"field": "name", "operator": "contains", "value": {"string": term}}]}
        return client.post("/v1/customers/search", json=search, headers=test_key)

    _field_error(contains("%" * (MAX_FILTER_TEXT + 1)), "filters[0].value.string")
    _field_error(contains("x" * 60_000), "filters[0].value.string")
    for term in ("%" * MAX_FILTER_TEXT, "\U0001f600" * MAX_FILTER_TEXT, "_" * MAX_FILTER_TEXT):
        response = contains(term)
        assert response.status_code == 200, response.text
        assert response.json()["items"] == []
    many = {
        "filters": [{"field": "id", "operator": "in", "data_type": "array", "value": {"array": ["x" * 1001]}}]
    }
    _field_error(
        client.post("/v1/customers/search", json=many, headers=test_key), "filters[0].value.array[0]"
    )


# -- 5. text lengths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/plans", {"name": "P", "description": "x" * 1_000_000}, "description"),
        ("/v1/plans", {"name": "P", "description": "x" * (MAX_TEXT + 1)}, "description"),
        ("/v1/plans", {"name": "x" * 256}, "name"),
        ("/v1/plans", {"name": "P", "lookup_key": "k" * 256}, "lookup_key"),
        ("/v1/customers", {"external_id": "e" * 256, "name": "n"}, "external_id"),
        ("/v1/customers", {"external_id": "e", "name": "n", "metadata": {"k": "v" * 501}}, "metadata"),
        (
            "/v1/features",
            {"name": "F", "type": "boolean", "description": "d" * (MAX_TEXT + 1)},
            "description",
        ),
    ],
)
def test_text_over_its_limit_is_400(
    client: TestClient, test_key: dict[str, str], path: str, body: dict[str, Any], field: str
) -> None:
    _field_error(client.post(path, json=body, headers=test_key), field)
    assert client.get(path, headers=test_key).json()["pagination"]["total"] == 0


def test_text_at_its_limit_is_stored(client: TestClient, test_key: dict[str, str]) -> None:
    body = {"name": "x" * 255, "lookup_key": "k" * 255, "description": "d" * MAX_TEXT}
    created = client.post("/v1/plans", json=body, headers=test_key)
    assert created.status_code == 201, created.text
    assert (
        client.get(f"/v1/plans/{created.json()['id']}", headers=test_key).json()["description"]
        == "d" * MAX_TEXT
    )


# -- 6. NaN and Infinity --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["NaN", "nan", "Infinity", "-Infinity", "inf", "sNaN"])
def test_non_finite_decimal_text_is_400(client: TestClient, test_key: dict[str, str], value: str) -> None:
    body = {"name": "VAT", "code": "VAT", "percentage_value": value}
    _field_error(client.post("/v1/taxes/rates", json=body, headers=test_key), "percentage_value")
    assert client.get("/v1/taxes/rates", headers=test_key).json()["pagination"]["total"] == 0


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_json_numbers_are_400_anywhere(
    client: TestClient, test_key: dict[str, str], literal: str
) -> None:
    headers = {**test_key, "content-type": "application/json"}
    rate = f'{{"name": "VAT", "code": "VAT", "percentage_value": {literal}}}'
    _field_error(client.post("/v1/taxes/rates", content=rate, headers=headers), "percentage_value")
    coupon = (
        '{"name": "C", "type": "fixed", "amount_off": "1", "currency": "usd", '
        f'"rules": {{"limit": {{"max": {literal}}}}}}}'
    )
    _field_error(client.post("/v1/coupons", content=coupon, headers=headers), "rules.limit.max")
    condition = (
        f'{{"field": "name", "operator": "gt", "data_type": "number", "value": {{"number": {literal}}}}}'
    )
    search = f'{{"filters": [{condition}]}}'
    _field_error(
        client.post("/v1/customers/search", content=search, headers=headers), "filters[0].value.number"
    )
    assert client.get("/v1/taxes/rates", headers=test_key).json()["pagination"]["total"] == 0
    assert client.get("/v1/coupons", headers=test_key).json()["pagination"]["total"] == 0


# -- found by the schemathesis pass ---------------------------------------------------------------


@pytest.mark.parametrize("instant", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_instants_outside_utc_years_are_400(
    client: TestClient, test_key: dict[str, str], instant: str
) -> None:
    for path in ("/v1/entitlements/search", "/v1/customers/search"):
        _field_error(client.post(path, json={"start_time": instant}, headers=test_key), "start_time")


# -- 7. tax rates hold the value of their type only ------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tax_rate_type": "percentage", "percentage_value": "10", "fixed_value": "-1"}, "fixed_value"),
        ({"tax_rate_type": "percentage", "percentage_value": "10", "fixed_value": "0"}, "fixed_value"),
        ({"tax_rate_type": "fixed", "fixed_value": "1", "percentage_value": "10"}, "percentage_value"),
    ],
)
def test_tax_rate_refuses_the_other_types_value(
    client: TestClient, test_key: dict[str, str], body: dict[str, Any], field: str
) -> None:
    _field_error(
        client.post("/v1/taxes/rates", json={"name": "T", "code": "T", **body}, headers=test_key), field
    )
    assert client.get("/v1/taxes/rates", headers=test_key).json()["pagination"]["total"] == 0
    fine = {
        "name": "T",
        "code": "T",
        "tax_rate_type": "percentage",
        "percentage_value": "10",
        "fixed_value": None,
    }
    created = client.post("/v1/taxes/rates", json=fine, headers=test_key)
    assert created.status_code == 201 and created.json()["fixed_value"] is None


# -- the OpenAPI document -------------------------------------------------------------------------


def test_openapi_documents_errors_and_no_422(client: TestClient) -> None:
    doc = client.get("/v1/openapi.json").json()
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    assert doc["components"]["securitySchemes"]["ApiKeyAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "x-api-key",
    }
    error = {"$ref": "#/components/schemas/Error"}
    for method, path, op in _operations(client):
        assert "422" not in op["responses"], (method, path)
        for status in ("400", "401", "403", "404", "409", "413", "500"):
            assert op["responses"][status]["content"]["application/json"]["schema"] == error, (method, path)
        names = [p["name"].lower() for p in op.get("parameters", []) if p["in"] == "header"]
        assert "x-api-key" not in names and "authorization" not in names, (method, path)
        # 503 is only the readiness probe's (outside the document); 429 only sign-in's.
        assert "503" not in op["responses"], (method, path)
        assert ("429" in op["responses"]) == (path == "/v1/auth/login"), (method, path)
    throttled = doc["paths"]["/v1/auth/login"]["post"]["responses"]["429"]
    assert throttled["content"]["application/json"]["schema"] == error
    assert doc["paths"]["/v1/customers"]["get"]["security"] == [{"ApiKeyAuth": []}, {"BearerAuth": []}]
