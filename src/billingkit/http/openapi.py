"""The adapter's OpenAPI document, made to say what the adapter really answers.

FastAPI documents each operation's success answer from the route's answer model
(:mod:`billingkit.http.schemas`) and the credentials from the security dependencies of
:mod:`billingkit.http.auth` (the ``ApiKeyAuth`` and ``BearerAuth`` schemes). It also documents a
422 that is never sent (invalid input is a 400) and no error bodies at all, so
:func:`install_openapi` post-processes the generated document once, for every route:

- every error status any route can send is documented on every operation with the error body
  ``{code, http_status_code, message[, details]}`` (``Error``); the statuses are those of the
  error classes in :mod:`billingkit.errors`, so a new error class is documented by itself, except
  those only a few routes send (:data:`ROUTE_SPECIFIC`), which a route declares with FastAPI's
  ``responses=`` and which then get the error body too;
- FastAPI's 422 and its ``HTTPValidationError`` schemas go;
- every notification kind is documented under the OpenAPI 3.1 ``webhooks`` map: a ``POST`` whose
  body is the kind's payload model (:data:`billingkit.http.schemas.webhooks.PAYLOADS`), described
  with the operations that emit it (:data:`billingkit.domain.event_sources.EMITTED_BY`).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema
from starlette.routing import BaseRoute, Route

from billingkit import errors
from billingkit.domain.event_sources import EMITTED_BY
from billingkit.domain.event_types import EVENT_TYPES
from billingkit.http.schemas.webhooks import PAYLOADS

__all__ = ["ERROR_SCHEMA", "ROUTE_SPECIFIC", "document", "error_statuses", "install_openapi", "webhooks"]

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Error",
    "required": ["code", "http_status_code", "message"],
    "properties": {
        "code": {"type": "string", "description": "stable, machine-readable (validation_error, ...)"},
        "http_status_code": {"type": "integer"},
        "message": {"type": "string"},
        "details": {"type": "object", "additionalProperties": True},
    },
}
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


#: Statuses only some routes send: 429 (sign-in throttling, ``POST /v1/auth/login``) and 503 (the
#: readiness probe, outside the document). Routes that send them declare them.
ROUTE_SPECIFIC = frozenset({429, 503})


def error_statuses() -> list[int]:
    """Every status an error class of :mod:`billingkit.errors` answers with, in order."""
    found: set[int] = set()
    pending: list[type[errors.BillingError]] = [errors.BillingError]
    while pending:
        cls = pending.pop()
        found.add(cls.http_status)
        pending += cls.__subclasses__()
    return sorted(found)


def _document(schema: dict[str, Any]) -> dict[str, Any]:
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Error"] = ERROR_SCHEMA
    schema["webhooks"] = webhooks(schemas)
    ref = {"$ref": "#/components/schemas/Error"}
    statuses = [status for status in error_statuses() if status not in ROUTE_SPECIFIC]
    for item in schema.get("paths", {}).values():
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            declared = [int(code) for code in responses if code.isdigit() and int(code) in ROUTE_SPECIFIC]
            for status in (*statuses, *declared):
                response = responses.setdefault(str(status), {"description": HTTPStatus(status).phrase})
                response.setdefault("content", {"application/json": {"schema": ref}})
    return schema


def webhooks(schemas: dict[str, Any]) -> dict[str, Any]:
    """The ``webhooks`` map of the document: one ``POST`` per event kind, its body the kind's
    payload schema; the schemas it refers to are added to ``schemas`` (the document's components;
    one already there is kept)."""
    pairs = [(model, "serialization") for model in PAYLOADS.values()]
    refs, top = models_json_schema(pairs, ref_template="#/components/schemas/{model}")  # type: ignore[arg-type]
    for name, schema in top.get("$defs", {}).items():
        schemas.setdefault(name, schema)
    documented: dict[str, Any] = {}
    for name, model in PAYLOADS.items():
        emitted = EMITTED_BY.get(name)
        description = (
            f"Emitted by: {emitted}."
            if emitted
            else "Emitted by a part still to come; the shape is the reference's."
        )
        documented[name] = {
            "post": {
                "summary": name,
                "description": f"{EVENT_TYPES[name].group} notification. {description}",
                "operationId": "webhook_" + name.replace(".", "_"),
                "tags": ["Webhook events"],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": refs[(model, "serialization")]}},
                },
                "responses": {"2XX": {"description": "the receiver took the delivery"}},
            }
        }
    return documented


#: Documents already built, by what determines them (:func:`_document_key`), each with the routes
#: its key names by identity (kept alive so an identity is never reused); a few, newest last.
_DOCUMENTS: OrderedDict[tuple[Any, ...], tuple[tuple[BaseRoute, ...], dict[str, Any]]] = OrderedDict()
_DOCUMENTS_KEPT = 8
_DOCUMENTS_LOCK = threading.Lock()


def _document_key(app: FastAPI) -> tuple[tuple[Any, ...], tuple[BaseRoute, ...]]:
    """What the document of ``app`` is made of: its title and version and its routes, by identity
    (apps of one configuration share their route objects, see :mod:`billingkit.http.app`), with
    the routes version FastAPI keeps of the routers they include (a route added to an included
    router after the document was built changes it). Plain Starlette routes (the document and
    docs pages themselves, per app) are never documented, so they are left out."""
    routes = tuple(route for route in app.routes if type(route) is not Route)
    version = getattr(app.router, "_get_routes_version", None)
    return (
        app.title,
        app.version,
        app.openapi_version,
        tuple(id(route) for route in routes),
        version() if version is not None else None,
    ), routes


def _build(app: FastAPI) -> dict[str, Any]:
    return _document(get_openapi(title=app.title, version=app.version, routes=app.routes))


def document(app: FastAPI) -> dict[str, Any]:
    """A new copy of the corrected document of ``app``, built once per process for all the apps
    with the same title, version and routes."""
    key, routes = _document_key(app)
    with _DOCUMENTS_LOCK:
        found = _DOCUMENTS.get(key)
        if found is None:
            found = (routes, _build(app))
            _DOCUMENTS[key] = found
            while len(_DOCUMENTS) > _DOCUMENTS_KEPT:
                _DOCUMENTS.popitem(last=False)
        else:
            _DOCUMENTS.move_to_end(key)
    return copy.deepcopy(found[1])


def install_openapi(app: FastAPI) -> None:
    """Serve the corrected document at ``app.openapi_url`` (built once, on first use; each app gets
    its own copy of a document shared by the apps with the same routes, see :func:`document`)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
