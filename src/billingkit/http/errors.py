"""Rendering every failure as ``{code, http_status_code, message}`` with the right status.

Invalid bodies and parameters are 400 ``validation_error`` (never 422), unknown routes 404, and
unexpected failures 500 with no internals.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from billingkit.domain.validation import field_path
from billingkit.errors import BillingError, InternalError, NotFound, TooManyRequests, ValidationError

log = logging.getLogger("billingkit.http")

__all__ = ["error_response", "install_error_handlers"]


def error_response(error: BillingError) -> JSONResponse:
    headers = {"Retry-After": str(error.retry_after)} if isinstance(error, TooManyRequests) else None
    return JSONResponse(error.to_dict(), status_code=error.http_status, headers=headers)


def _from_request_validation(exc: RequestValidationError) -> ValidationError:
    errors: list[dict[str, Any]] = list(exc.errors())
    first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": "value_error"}
    loc = [p for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    loc = [p for p in loc if not (isinstance(p, str) and "[" in p)]
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


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(BillingError)
    async def _billing_error(_: Request, exc: BillingError) -> JSONResponse:
        if isinstance(exc, InternalError):
            log.error("internal error: %s", exc.message, exc_info=exc)
            return error_response(InternalError("An unexpected error occurred"))
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(_from_request_validation(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return error_response(NotFound("no such route"))
        body = {"code": "http_client_error", "http_status_code": exc.status_code, "message": str(exc.detail)}
        return JSONResponse(body, status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return error_response(InternalError("An unexpected error occurred"))
