"""Assembling the FastAPI application."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI

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


def build_app(
    billing: Billing, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, metrics: bool = True
) -> FastAPI:
    app = FastAPI(
        title="billingkit",
        version="1.0",
        openapi_url="/v1/openapi.json",
        docs_url="/v1/docs",
        redoc_url=None,
        dependencies=[Depends(check_request_text)],
    )
    app.state.billing = billing
    install_error_handlers(app)
    labels = RouteLabels()  # route templates for metrics and logs (see observability.py)
    app.state.route_labels = labels
    for route in app.routes:  # FastAPI's own: the OpenAPI document and the docs page
        labels.add(getattr(route, "path", UNMATCHED), getattr(route, "methods", None))

    def include(router: APIRouter, prefix: str = "") -> None:
        app.include_router(router, prefix=prefix)
        labels.add_router(router, prefix)

    include(operator_router)
    # price_units before prices: "/prices/units" must not be taken for a price id; wallets and
    # portal before customers: "/customers/wallets" and "/customers/portal/..." must not be taken
    # for a customer id; billing_views first: "/customers/usage" must not be taken for a customer id.
    include(billing_views.router, "/v1")
    routers = (
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
    )
    for module in (
        *routers,
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
    ):
        include(module.router, "/v1")
    # The reference's /v1/... schedule paths under the base, and the sandbox checkout page.
    include(cancellation.doubled, "/v1")
    include(checkout.pages, "/v1")
    include(tasks.files, "/v1")
    install_openapi(app)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    if metrics:
        # Outermost, so it also counts what the size limit rejects; the observer feeds the
        # library's counters (events, invoices, billing runs) into this app's own registry.
        exported = PrometheusMetrics()
        billing.observe(exported)
        app.state.metrics = exported
        include(metrics_router)
        app.add_middleware(RequestMetrics, metrics=exported)
    return app
