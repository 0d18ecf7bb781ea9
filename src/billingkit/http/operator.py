"""Operator endpoints, outside ``/v1`` and outside authentication: ``GET /health`` (liveness),
``GET /ready`` (readiness: the store answers) and ``GET /metrics`` (Prometheus). They are left out
of the OpenAPI document, which describes the billing API only."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from billingkit.facade import Billing

__all__ = ["metrics_router", "router"]

router = APIRouter(include_in_schema=False)
#: Included only when the app exports metrics (``create_app(billing, metrics=False)`` leaves it out).
metrics_router = APIRouter(include_in_schema=False)


@router.get("/health")
async def health() -> dict[str, str]:
    """The process answers; touches nothing else (a slow database must not get it restarted)."""
    return {"status": "ok"}


@router.get("/ready")
def ready(request: Request) -> dict[str, str]:
    """The store answers a trivial query; else 503 ``service_unavailable`` (from the error handler)."""
    billing: Billing = request.app.state.billing
    billing.ping()
    return {"status": "ok"}


@metrics_router.get("/metrics")
def metrics(request: Request) -> Response:
    from billingkit.http.metrics import CONTENT_TYPE, PrometheusMetrics

    exported: PrometheusMetrics = request.app.state.metrics
    return Response(exported.exposition(), media_type=CONTENT_TYPE)
