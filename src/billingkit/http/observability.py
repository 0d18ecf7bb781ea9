"""What operators see of requests: the route label shared by metrics and logs, and one structured
log line per error response (logger ``billingkit.http``)."""

from __future__ import annotations

import logging
from typing import Any

from starlette.routing import Match

from billingkit.logfields import log_fields

__all__ = ["UNMATCHED", "log_request_error", "route_label"]

log = logging.getLogger("billingkit.http")

#: The route label of a request no route matches: unknown paths share it, so a scanner probing
#: random URLs cannot grow the number of metric series.
UNMATCHED = "unmatched"


def route_label(scope: dict[str, Any]) -> str:
    """The route template (``/v1/customers/{id}``), never the raw path. The router records the
    route it picked; a request answered before routing (a body over the size limit) is matched
    here against the application's routes."""
    route = scope.get("route")
    if route is None:
        for candidate in getattr(scope.get("app"), "routes", ()):
            match, _ = candidate.matches(scope)
            if match is not Match.NONE:
                route = candidate
                break
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


def log_request_error(
    scope: dict[str, Any], status: int, code: str, exc: BaseException | None = None
) -> None:
    """``event=request_error method=... route=... status=... code=...``: INFO for 4xx, ERROR with
    the exception (and its traceback) for 5xx. The response never carries the exception."""
    log_fields(
        log,
        logging.ERROR if status >= 500 else logging.INFO,
        "request_error",
        method=scope.get("method", ""),
        route=route_label(scope),
        status=status,
        code=code,
        exc_info=exc if status >= 500 else None,
    )
