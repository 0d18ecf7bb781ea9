"""What operators see of requests: the route label shared by metrics and logs, and one structured
log line per error response (logger ``billingkit.http``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter
from starlette.routing import compile_path

from billingkit.logfields import log_fields

__all__ = ["UNMATCHED", "RouteLabels", "log_request_error", "route_label"]

log = logging.getLogger("billingkit.http")

#: The route label of a request no route matches: unknown paths share it, so a scanner probing
#: random URLs cannot grow the number of metric series.
UNMATCHED = "unmatched"


class RouteLabels:
    """The application's route templates with their full prefixes, in routing order.

    Labels come from matching the request path against these templates ourselves rather than
    from the router's choice (which FastAPI records without the ``include_router`` prefix), so a
    request answered before routing (a body over the size limit) gets its route's label too.
    """

    def __init__(self) -> None:
        self._routes: list[tuple[re.Pattern[str], frozenset[str], str]] = []

    def add(self, template: str, methods: set[str] | frozenset[str] | None) -> None:
        regex, _, _ = compile_path(template)
        self._routes.append((regex, frozenset(methods or ()), template))

    def add_router(self, router: APIRouter, prefix: str = "") -> None:
        for route in router.routes:
            path = getattr(route, "path", None)
            if isinstance(path, str):
                self.add(prefix + path, getattr(route, "methods", None))

    def label(self, method: str, path: str) -> str:
        """The template of the route serving ``method path``; a template whose path matches but
        whose methods do not (a 405) when none serves it; else :data:`UNMATCHED`."""
        other_method = None
        for regex, methods, template in self._routes:
            if regex.match(path):
                if method in methods or (method == "HEAD" and "GET" in methods):
                    return template
                other_method = other_method or template
        return other_method or UNMATCHED


def route_label(scope: Mapping[str, Any]) -> str:
    """The route template of a request (``/v1/customers/{customer_id}``), never its raw path."""
    labels = getattr(getattr(scope.get("app"), "state", None), "route_labels", None)
    if not isinstance(labels, RouteLabels):
        return UNMATCHED
    return labels.label(str(scope.get("method", "")), _route_path(scope))


def _route_path(scope: Mapping[str, Any]) -> str:
    """The path the router matches: without the ``root_path`` a proxy mounted the app under."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", ""))
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :]
    return path


def log_request_error(
    scope: Mapping[str, Any], status: int, code: str, exc: BaseException | None = None
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
