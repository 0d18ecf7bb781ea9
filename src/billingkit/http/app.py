"""Assembling the FastAPI application."""

from __future__ import annotations

from contextvars import ContextVar
from functools import cache
from typing import Any

from fastapi import APIRouter, Depends, FastAPI
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from billingkit.facade import Billing
from billingkit.http.errors import install_error_handlers
from billingkit.http.limits import BodySizeLimit
from billingkit.http.metrics import PrometheusMetrics, RequestMetrics
from billingkit.http.observability import UNMATCHED, RouteLabels
from billingkit.http.openapi import install_openapi
from billingkit.http.operator import metrics_router
from billingkit.http.operator import router as operator_router
from billingkit.http.params import check_request_text
from billingkit.http.routes import (
    access,
    addons,
    alerts,
    billing_views,
    cancellation,
    checkout,
    costs,
    coupons,
    credit_grant_applications,
    credit_grants,
    credit_notes,
    customers,
    entitlements,
    environment_clone,
    events,
    features,
    groups,
    invoice_documents,
    invoices,
    meters,
    payments,
    plan_change_in_place,
    plan_change_replace,
    plan_price_sync,
    plans,
    portal,
    price_units,
    prices,
    subscription_addons,
    subscription_entitlements,
    subscription_line_items,
    subscription_modify,
    subscription_pauses,
    subscription_phases,
    subscriptions,
    tasks,
    tax_associations,
    tax_rates,
    usage,
    wallet_balances,
    wallets,
    webhooks,
)

__all__ = ["build_app"]

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024


def _routers(metrics: bool) -> list[tuple[APIRouter, str]]:
    """The adapter's routers with their prefixes, in routing order."""
    # price_units before prices: "/prices/units" must not be taken for a price id; wallets and
    # portal before customers: "/customers/wallets" and "/customers/portal/..." must not be taken
    # for a customer id; billing_views first: "/customers/usage" must not be taken for a customer id.
    modules = (
        wallets,
        portal,
        customers,
        access,
        plans,
        addons,
        price_units,
        prices,
        groups,
        meters,
        features,
        entitlements,
        credit_grants,
        credit_grant_applications,
        coupons,
        tax_rates,
        tax_associations,
        events,
        usage,
        subscription_addons,  # before subscriptions: "/subscriptions/addon" is no subscription id
        cancellation,  # before subscriptions: "/subscriptions/schedules" is no subscription id
        subscription_phases,  # before subscriptions: "/subscriptions/phases/..." is no subscription id
        subscriptions,
        plan_change_replace,
        subscription_pauses,
        plan_change_in_place,
        subscription_entitlements,
        subscription_line_items,
        subscription_modify,
        invoices,
        invoice_documents,
        payments,
        credit_notes,
        wallet_balances,
        plan_price_sync,
        alerts,
        webhooks,
        checkout,
        environment_clone,
        costs,
        tasks,
    )
    found = [(operator_router, ""), (billing_views.router, "/v1")]
    found += [(module.router, "/v1") for module in modules]
    # The reference's /v1/... schedule paths under the base, and the sandbox checkout page.
    found += [(cancellation.doubled, "/v1"), (checkout.pages, "/v1"), (tasks.files, "/v1")]
    if metrics:
        found.append((metrics_router, ""))
    return found


#: The app whose request is being handled (set by :class:`_App`), for the shared routes'
#: ``dependency_overrides``.
_CURRENT_APP: ContextVar[FastAPI | None] = ContextVar("billingkit_http_app", default=None)


class _CurrentAppOverrides:
    """The ``dependency_overrides_provider`` of the shared routes: the overrides of the app
    serving the request, so ``app.dependency_overrides`` works per app as FastAPI documents."""

    @property
    def dependency_overrides(self) -> dict[Any, Any]:
        app = _CURRENT_APP.get()
        return app.dependency_overrides if app is not None else {}


class _App(FastAPI):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _CURRENT_APP.set(self)
        try:
            await super().__call__(scope, receive, send)
        finally:
            _CURRENT_APP.reset(token)


def _new_app(**options: Any) -> FastAPI:
    return _App(
        title="billingkit",
        version="1.0",
        redoc_url=None,
        dependencies=[Depends(check_request_text)],
        **options,
    )


@cache
def _shared_routes(metrics: bool) -> tuple[BaseRoute, ...]:
    """The adapter's routes, built once per process and configuration and shared by its apps.

    FastAPI prepares a route (its dependencies, parameter and answer models: pydantic schemas)
    once per app that includes it, which cost about a second per app for the ~260 routes; the
    routes hold nothing of the app (the app's ``Billing`` is ``request.app.state.billing``), so
    every app of the process serves the same route objects. They are included into an app that
    serves nothing, with the same app-level dependency as the apps that use them. (The routers
    have no startup handlers or lifespan, which ``include_router`` would hand to that app only.)"""
    template = _new_app(openapi_url=None, docs_url=None)
    template.router.dependency_overrides_provider = _CurrentAppOverrides()
    for router, prefix in _routers(metrics):
        template.include_router(router, prefix=prefix)
    return tuple(template.routes)


def build_app(
    billing: Billing, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, metrics: bool = True
) -> FastAPI:
    app = _new_app(openapi_url="/v1/openapi.json", docs_url="/v1/docs")
    app.state.billing = billing
    install_error_handlers(app)
    labels = RouteLabels()  # route templates for metrics and logs (see observability.py)
    app.state.route_labels = labels
    for route in app.routes:  # FastAPI's own: the OpenAPI document and the docs page
        labels.add(getattr(route, "path", UNMATCHED), getattr(route, "methods", None))
    app.router.routes.extend(_shared_routes(metrics))
    for router, prefix in _routers(metrics):
        labels.add_router(router, prefix)
    install_openapi(app)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    if metrics:
        # Outermost, so it also counts what the size limit rejects; the observer feeds the
        # library's counters (events, invoices, billing runs) into this app's own registry.
        exported = PrometheusMetrics()
        billing.observe(exported)
        app.state.metrics = exported
        app.add_middleware(RequestMetrics, metrics=exported)
    return app
