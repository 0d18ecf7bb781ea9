"""The optional REST adapter (extra ``http``): ``create_app(billing)`` returns an ASGI app.

It holds no business logic: authentication, parsing, one call into the facade, rendering.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

    from billingkit.facade import Billing

__all__ = ["create_app"]


def create_app(billing: Billing, **options: Any) -> FastAPI:
    """Build the REST adapter for ``billing``. Options: ``max_body_bytes`` (default 32 MiB),
    ``metrics`` (default True: ``GET /metrics`` with the app's own Prometheus registry)."""
    try:
        from billingkit.http.app import build_app
    except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
        if exc.name in ("fastapi", "starlette", "uvicorn", "msgspec", "prometheus_client"):
            raise ModuleNotFoundError(
                "the HTTP adapter needs the 'http' extra: pip install 'billingkit[http]'"
            ) from exc
        raise
    return build_app(billing, **options)
