"""The OpenAPI document describes every answer: a strict schema for every success, the error body
for every error, no 422, and credentials as security schemes rather than header parameters."""

from __future__ import annotations

import pkgutil
from importlib import import_module
from typing import Any, get_args, get_origin

from fastapi.testclient import TestClient

from billingkit.http import routes
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.base import WireModel
from tests.http.conftest import assert_error

# The login, and Razorpay's webhook (trusted by its signature, not a key).
_NO_CREDENTIALS = {("post", "/v1/auth/login"), ("post", "/v1/webhooks/razorpay/{tenant_id}/{environment_id}")}


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, item in doc["paths"].items() for method, op in item.items()]


def _component(doc: dict[str, Any], ref: str) -> dict[str, Any]:
    prefix = "#/components/schemas/"
    assert ref.startswith(prefix), ref
    schema: dict[str, Any] = doc["components"]["schemas"][ref.removeprefix(prefix)]
    return schema


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node))
    return set()


def test_every_success_answer_has_a_strict_schema(client: TestClient) -> None:
    doc = client.get("/v1/openapi.json").json()
    missing: list[str] = []
    for method, path, op in _operations(doc):
        successes = {status: r for status, r in op["responses"].items() if status.startswith("2")}
        assert successes, (method, path)
        for status, response in successes.items():
            if status == "204":
                assert "content" not in response, (method, path)
                continue
            schema = response.get("content", {}).get("application/json", {}).get("schema", {})
            if schema.get("type") == "array":
                # The reference answers a few lists as plain arrays (a customer's wallets): each
                # item must then be a strict schema.
                schema = schema.get("items", {})
            if "$ref" not in schema:
                missing.append(f"{method.upper()} {path} {status}")
                continue
            component = _component(doc, schema["$ref"])
            assert component.get("additionalProperties") is False, (method, path, schema["$ref"])
            assert component["properties"] and component["required"], (method, path, schema["$ref"])
    assert missing == []


def test_every_reference_resolves_and_every_answer_model_is_strict(client: TestClient) -> None:
    doc = client.get("/v1/openapi.json").json()
    names = {ref.removeprefix("#/components/schemas/") for ref in _refs(doc)}
    assert names <= set(doc["components"]["schemas"]), names - set(doc["components"]["schemas"])
    strict = [
        name
        for name, schema in doc["components"]["schemas"].items()
        if name.endswith("Response") and schema.get("type") == "object"
    ]
    assert len(strict) > 40
    for name in strict:
        assert doc["components"]["schemas"][name].get("additionalProperties") is False, name


def test_no_422_and_no_credential_header_parameters(client: TestClient) -> None:
    doc = client.get("/v1/openapi.json").json()
    assert {"HTTPValidationError", "ValidationError"}.isdisjoint(doc["components"]["schemas"])
    for method, path, op in _operations(doc):
        assert "422" not in op["responses"], (method, path)
        headers = [p["name"].lower() for p in op.get("parameters", []) if p["in"] == "header"]
        assert "x-api-key" not in headers and "authorization" not in headers, (method, path)


def test_credentials_are_security_schemes_of_authenticated_operations(client: TestClient) -> None:
    doc = client.get("/v1/openapi.json").json()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["ApiKeyAuth"] == {"type": "apiKey", "in": "header", "name": "x-api-key"}
    assert schemes["BearerAuth"]["type"] == "http" and schemes["BearerAuth"]["scheme"] == "bearer"
    assert (
        schemes["SessionTokenAuth"]["in"] == "header"
        and schemes["SessionTokenAuth"]["name"] == "X-Session-Token"
    )
    either = [{"ApiKeyAuth": []}, {"BearerAuth": []}]
    portal = [p for p in doc["paths"] if p.startswith("/v1/customer/portal/")]
    assert len(portal) == 7
    for method, path, op in _operations(doc):
        if (method, path) in _NO_CREDENTIALS:
            assert "security" not in op, (method, path)
        elif path.startswith("/v1/customer/portal/"):
            # The customer portal takes its session token only (tests/http/test_portal_http.py).
            assert op["security"] == [{"SessionTokenAuth": []}], (method, path)
        else:
            assert op["security"] == either, (method, path)
    assert not {"/health", "/ready", "/metrics"} & set(doc["paths"])


def test_every_route_answers_through_a_wire_model() -> None:
    """Each route of the adapter declares an answer model (or answers 204) and leaves out the keys
    its model was not given, as the answers did before they had models."""
    modules = [
        import_module(f"{routes.__name__}.{info.name}") for info in pkgutil.iter_modules(routes.__path__)
    ]
    declared = [route for module in modules for route in module.router.routes]
    assert len(declared) > 100
    for route in declared:
        assert isinstance(route, WireRoute), route.path
        if route.status_code == 204:
            continue
        model = route.response_model
        if get_origin(model) is list:  # a plain array of answers, as the reference has a few
            (model,) = get_args(model)
        assert isinstance(model, type) and issubclass(model, WireModel), (route.path, model)


def test_a_bearer_header_without_a_token_is_still_an_invalid_token(client: TestClient) -> None:
    """The security schemes hand the raw header to billingkit, which keeps its own answers."""
    assert assert_error(
        client.get("/v1/users/me", headers={"authorization": "Bearer "}), 401, "unauthorized"
    )["message"] == ("invalid token")
    missing = assert_error(
        client.get("/v1/users/me", headers={"authorization": "Basic abc"}), 401, "unauthorized"
    )
    assert "x-api-key" in missing["message"]
