"""Rendering every failure as ``{code, http_status_code, message}`` with the right status.

Invalid bodies and parameters are 400 ``validation_error`` (never 422), unknown routes 404, and
unexpected failures 500 with no internals.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from billingkit.domain.validation import field_path, unknown_field_error
from billingkit.errors import (
    BillingError,
    InternalError,
    NotFound,
    ServiceUnavailable,
    TooManyRequests,
    ValidationError,
)
from billingkit.http.observability import log_request_error

__all__ = ["error_response", "install_error_handlers"]


def error_response(error: BillingError) -> JSONResponse:
    headers = {"Retry-After": str(error.retry_after)} if isinstance(error, TooManyRequests) else None
    return JSONResponse(error.to_dict(), status_code=error.http_status, headers=headers)


def _from_request_validation(exc: RequestValidationError) -> ValidationError:
    errors: list[dict[str, Any]] = list(exc.errors())
    first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": "value_error"}
    loc = [p for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    loc = [p for p in loc if not (isinstance(p, str) and "[" in p)]
    unknown = unknown_field_error(first, loc)
    if unknown is not None:
        return unknown
    path = field_path(loc)
    kind = first.get("type", "")
    if kind == "json_invalid":
        message = "the request body is not valid JSON"
        path = ""
    elif kind == "missing":
        message = f"{path}: field required" if path else "request body required"
    else:
        text = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        message = f"{path}: {text}" if path else text
    details = {
        "errors": [
            {
                "field": field_path([p for p in e.get("loc", ()) if p not in ("body", "query", "path")]),
                "message": e.get("msg"),
            }
            for e in errors[:20]
        ]
    }
    return ValidationError(message, field=path or None, details=details)


def _logged(request: Request, error: BillingError, exc: BaseException | None = None) -> JSONResponse:
    log_request_error(request.scope, error.http_status, error.code, exc)
    return error_response(error)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(BillingError)
    async def _billing_error(request: Request, exc: BillingError) -> JSONResponse:
        # A 5xx shows no message of its own (it may name internals) except "try again later".
        if exc.http_status >= 500 and not isinstance(exc, ServiceUnavailable):
            return _logged(request, InternalError("An unexpected error occurred"), exc)
        return _logged(request, exc, exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _logged(request, _from_request_validation(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return _logged(request, NotFound("no such route"))
        body = {"code": "http_client_error", "http_status_code": exc.status_code, "message": str(exc.detail)}
        log_request_error(request.scope, exc.status_code, "http_client_error")
        return JSONResponse(body, status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return _logged(request, InternalError("An unexpected error occurred"), exc)
