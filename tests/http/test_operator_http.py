"""Operator endpoints: /health, /ready, /metrics, and the log line of every error response."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from billingkit import Billing, TestClock
from billingkit.errors import InternalError
from billingkit.http import create_app
from billingkit.storage.memory import MemoryStorage
from billingkit.storage.sql import SqlStorage
from tests.http.conftest import assert_error
from tests.stories import weekly_subscription

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _unreachable(tmp_path: Path) -> Billing:
    """A real SQL store whose database cannot be opened (its directory does not exist)."""
    return Billing(SqlStorage.from_url(f"sqlite:///{tmp_path / 'gone' / 'x.db'}", migrate=False))


def _samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


# -- health and readiness ----------------------------------------------------------------------


def test_health_and_ready_answer_without_authentication(client: TestClient) -> None:
    for path in ("/health", "/ready"):
        response = client.get(path)
        assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_health_answers_while_the_store_does_not_and_ready_is_503(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client = TestClient(create_app(_unreachable(tmp_path)), raise_server_exceptions=False)
    assert client.get("/health").json() == {"status": "ok"}
    with caplog.at_level(logging.INFO, logger="billingkit.http"):
        response = client.get("/ready")
    body = assert_error(response, 503, "service_unavailable")
    assert body == {
        "code": "service_unavailable",
        "http_status_code": 503,
        "message": "the database does not answer",
    }
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "request_error"]
    assert (record.levelno, record.method, record.route, record.status, record.code) == (
        logging.ERROR,
        "GET",
        "/ready",
        503,
        "service_unavailable",
    )
    assert record.getMessage() == (
        "event=request_error method=GET route=/ready status=503 code=service_unavailable"
    )
    # The driver's error is in the server log (chained), never in the response.
    assert record.exc_info is not None and "unable to open database file" in caplog.text
    assert "unable to open" not in response.text


def test_operator_endpoints_live_outside_v1_and_the_api_document(client: TestClient) -> None:
    assert_error(client.get("/v1/health"), 404, "not_found")
    assert_error(client.get("/v1/ready"), 404, "not_found")
    paths = client.get("/v1/openapi.json").json()["paths"]
    assert not {"/health", "/ready", "/metrics"} & set(paths)


# -- metrics -----------------------------------------------------------------------------------


def _weekly_subscription(billing: Billing) -> dict[str, str]:
    """The test environment's API key header of a tenant with one weekly in-advance subscription
    (its opening invoice is issued at creation)."""
    setup, _ = weekly_subscription(billing, "m-1")
    return {"x-api-key": setup.environments[0][1].api_key}


def test_metrics_count_requests_ingestion_invoices_and_billing_runs() -> None:
    clock = TestClock(T0)
    billing = Billing(MemoryStorage(), clock, renewal_notice=None)
    client = TestClient(create_app(billing, max_body_bytes=2048), raise_server_exceptions=False)
    key = _weekly_subscription(billing)  # one opening invoice issued

    assert client.get("/v1/customers", headers=key).status_code == 200
    assert client.get("/v1/customers", headers=key).status_code == 200
    assert client.get("/v1/customers/cust_nope", headers=key).status_code == 404
    assert client.get("/v1/customers").status_code == 401
    assert client.get("/no/such/route/123").status_code == 404
    assert client.get("/no/such/route/456").status_code == 404
    events = [{"event_id": f"e{i}", "event_name": "calls", "external_customer_id": "m-1"} for i in (1, 2, 1)]
    assert client.post("/v1/events/bulk", json={"events": events}, headers=key).status_code == 202
    too_big = client.post(
        "/v1/events/bulk",
        content=b"{" + b" " * 4096 + b"}",
        headers={**key, "content-type": "application/json"},
    )
    assert too_big.status_code == 413
    clock.advance(timedelta(weeks=2, hours=1))
    assert billing.run_due().invoice_count == 2
    assert billing.run_due().invoice_count == 0

    got = _samples(client)

    def requests(method: str, route: str, status: str) -> float:
        labels = (("method", method), ("route", route), ("status", status))
        return got[("billingkit_http_requests_total", labels)]

    assert requests("GET", "/v1/customers", "200") == 2
    assert requests("GET", "/v1/customers/{customer_id}", "404") == 1
    assert requests("GET", "/v1/customers", "401") == 1
    # Unknown paths share one label: no series per raw path.
    assert requests("GET", "unmatched", "404") == 2
    assert requests("POST", "/v1/events/bulk", "202") == 1
    assert requests("POST", "/v1/events/bulk", "413") == 1  # rejected before routing, still labelled
    assert not any("cust_nope" in str(labels) or "/no/such" in str(labels) for _, labels in got)
    latency = (("method", "GET"), ("route", "/v1/customers"), ("status", "200"))
    assert got[("billingkit_http_request_duration_seconds_count", latency)] == 2
    assert got[("billingkit_events_ingested_total", ())] == 2
    assert got[("billingkit_events_duplicate_total", ())] == 1
    assert got[("billingkit_invoices_issued_total", ())] == 3  # the opening one and two periods
    assert got[("billingkit_billing_runs_total", (("status", "completed"),))] == 2
    assert got[("billingkit_billing_runs_total", (("status", "failed"),))] == 0
    assert got[("billingkit_billing_run_duration_seconds_count", ())] == 2
    assert got[("billingkit_billing_run_subscription_failures_total", ())] == 0

    # The scrape itself is counted once it is answered.
    assert (
        _samples(client)[
            ("billingkit_http_requests_total", (("method", "GET"), ("route", "/metrics"), ("status", "200")))
        ]
        == 1
    )


def test_a_failed_billing_run_is_counted(tmp_path: Path) -> None:
    billing = _unreachable(tmp_path)
    client = TestClient(create_app(billing), raise_server_exceptions=False)
    with pytest.raises(InternalError, match="the database is unavailable"):
        billing.run_due()
    got = _samples(client)
    assert got[("billingkit_billing_runs_total", (("status", "failed"),))] == 1
    assert got[("billingkit_billing_runs_total", (("status", "completed"),))] == 0
    assert got[("billingkit_billing_run_duration_seconds_count", ())] == 1


def test_each_app_has_its_own_registry() -> None:
    first = TestClient(create_app(Billing()))
    second = TestClient(create_app(Billing()))
    first.get("/health")
    first.get("/health")
    second.get("/health")
    health = ("billingkit_http_requests_total", (("method", "GET"), ("route", "/health"), ("status", "200")))
    assert _samples(first)[health] == 2
    assert _samples(second)[health] == 1


def test_metrics_can_be_turned_off() -> None:
    client = TestClient(create_app(Billing(), metrics=False))
    assert_error(client.get("/metrics"), 404, "not_found")
    assert client.get("/health").status_code == 200


# -- error log lines ---------------------------------------------------------------------------


def test_a_client_error_is_one_info_line_with_route_status_and_code(
    client: TestClient, test_key: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="billingkit.http"):
        assert client.get("/v1/customers/cust_nope", headers=test_key).status_code == 404
        assert client.get("/v1/nowhere").status_code == 404
    lines = [r for r in caplog.records if getattr(r, "event", None) == "request_error"]
    assert [(r.levelno, r.method, r.route, r.status, r.code, r.exc_info) for r in lines] == [
        (logging.INFO, "GET", "/v1/customers/{customer_id}", 404, "not_found", None),
        (logging.INFO, "GET", "unmatched", 404, "not_found", None),
    ]


def test_a_server_error_logs_the_exception_but_answers_without_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client = TestClient(create_app(_unreachable(tmp_path)), raise_server_exceptions=False)
    with caplog.at_level(logging.INFO, logger="billingkit.http"):
        response = client.get("/v1/customers", headers={"x-api-key": "sk_anything"})
    assert response.json() == {
        "code": "internal_error",
        "http_status_code": 500,
        "message": "An unexpected error occurred",
    }
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "request_error"]
    assert (record.levelno, record.route, record.status, record.code) == (
        logging.ERROR,
        "/v1/customers",
        500,
        "internal_error",
    )
    assert record.exc_info is not None and "unable to open database file" in caplog.text
