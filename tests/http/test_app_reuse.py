"""What apps of one process share (their routes, their OpenAPI document) and what they do not."""

from __future__ import annotations

import copy

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.errors import AlreadyExists
from billingkit.http import create_app
from billingkit.http.openapi import _document, document
from billingkit.http.params import check_request_text
from tests.http.conftest import assert_error


def _uncached(app) -> dict:  # type: ignore[no-untyped-def,type-arg]
    return _document(get_openapi(title=app.title, version=app.version, routes=app.routes))


def test_the_cached_document_is_the_document_built_afresh() -> None:
    app = create_app(Billing())
    served = TestClient(app).get("/v1/openapi.json").json()
    assert app.openapi() == _uncached(app) == served
    other = create_app(Billing())
    assert other.openapi() == app.openapi() and other.openapi() is not app.openapi()


def test_changing_a_returned_document_changes_no_other_app() -> None:
    first = create_app(Billing())
    kept = copy.deepcopy(first.openapi())
    first.openapi()["paths"].clear()
    first.openapi()["components"]["schemas"]["Error"]["properties"].clear()
    document(first)["info"]["title"] = "changed"
    assert create_app(Billing()).openapi() == kept
    assert document(first) == kept


def test_another_configuration_gets_its_own_document() -> None:
    plain = create_app(Billing()).openapi()
    extended = create_app(Billing())

    @extended.get("/v1/extra", operation_id="extra")
    def extra() -> dict[str, str]:
        return {"ok": "yes"}

    assert "/v1/extra" in extended.openapi()["paths"]
    assert extended.openapi() == _uncached(extended)
    retitled = create_app(Billing())
    retitled.title = "another title"
    assert retitled.openapi()["info"] == {"title": "another title", "version": "1.0"}
    # Other routes (the metrics page), documented the same: the operator pages are left out.
    assert create_app(Billing(), metrics=False).openapi() == plain
    assert "/v1/extra" not in create_app(Billing()).openapi()["paths"]
    assert create_app(Billing()).openapi() == plain


def test_a_route_added_to_an_included_router_later_is_documented() -> None:
    app = FastAPI()
    router = APIRouter()

    @router.get("/v1/first", operation_id="first")
    def first() -> dict[str, str]:
        return {}

    app.include_router(router)
    before = document(app)
    assert "/v1/first" in before["paths"] and "/v1/second" not in before["paths"]

    @router.get("/v1/second", operation_id="second")
    def second() -> dict[str, str]:
        return {}

    after = document(app)
    assert "/v1/second" in after["paths"]
    assert after == _uncached(app)


def test_apps_sharing_routes_keep_their_own_billing_metrics_and_overrides() -> None:
    one, two = Billing(), Billing()
    keys = [
        {"x-api-key": b.bootstrap(tenant_name="Acme", owner_email="o@a.test").environments[0][1].api_key}
        for b in (one, two)
    ]
    first, second = create_app(one), create_app(two)
    a, b = TestClient(first), TestClient(second)
    made = a.post("/v1/customers", json={"external_id": "c1", "name": "Ada"}, headers=keys[0])
    assert made.status_code == 201, made.text
    assert b.get(f"/v1/customers/{made.json()['id']}", headers=keys[1]).status_code == 404
    assert a.get(f"/v1/customers/{made.json()['id']}", headers=keys[0]).status_code == 200
    assert b.get("/v1/customers", headers=keys[0]).status_code == 401

    def refuse() -> None:
        raise AlreadyExists("overridden")

    first.dependency_overrides[check_request_text] = refuse
    assert_error(a.get("/v1/customers", headers=keys[0]), 409, "already_exists")
    assert b.get("/v1/customers", headers=keys[1]).status_code == 200
    first.dependency_overrides.clear()
    assert a.get("/v1/customers", headers=keys[0]).status_code == 200

    def counted(client: TestClient) -> float:
        text = client.get("/metrics").text
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("billingkit_http_requests_total{") and "/v1/customers" in line
        )

    assert counted(a) > 0
    before = counted(b)
    b.get("/v1/customers", headers=keys[1])
    assert counted(b) == before + 1
