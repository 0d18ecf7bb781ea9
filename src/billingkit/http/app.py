"""Assembling the FastAPI application."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from billingkit.facade import Billing
from billingkit.http.errors import install_error_handlers
from billingkit.http.limits import BodySizeLimit
from billingkit.http.openapi import install_openapi
from billingkit.http.params import check_request_text
from billingkit.http.routes import (
    access,
    addons,
    coupons,
    credit_grants,
    customers,
    entitlements,
    events,
    features,
    groups,
    invoices,
    meters,
    plans,
    price_units,
    prices,
    subscriptions,
    tax_rates,
    usage,
)

__all__ = ["build_app"]

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024


def build_app(billing: Billing, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
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
    # price_units before prices: "/prices/units" must not be taken for a price id.
    routers = (customers, access, plans, addons, price_units, prices, groups, meters, features)
    for module in (
        *routers,
        entitlements,
        credit_grants,
        coupons,
        tax_rates,
        events,
        usage,
        subscriptions,
        invoices,
    ):
        app.include_router(module.router, prefix="/v1")
    install_openapi(app)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    return app
