"""Webhook endpoints of an environment: create, read, update, delete, list, rotate the secret.

An endpoint's secret is made here and shown once, in the answer of :func:`create_endpoint` and of
:func:`rotate_secret` (:class:`EndpointSecret`); the store keeps it encrypted
(:mod:`billingkit.services.webhook_secrets`), and no other answer, repr or message carries it.
Event types are checked against the catalogue (:data:`billingkit.domain.event_types.EVENT_TYPES`);
an empty list subscribes to every type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from billingkit.domain.access import Action
from billingkit.domain.event_types import EVENT_TYPES
from billingkit.domain.queries import Op, Page
from billingkit.domain.resources import Status
from billingkit.domain.validation import InputModel
from billingkit.domain.webhooks import WebhookEndpoint
from billingkit.errors import NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.search import Searches, SearchRequest
from billingkit.services.webhook_secrets import new_secret

__all__ = [
    "EndpointCreate",
    "EndpointSearch",
    "EndpointSecret",
    "EndpointUpdate",
    "create_endpoint",
    "delete_endpoint",
    "get_endpoint",
    "live_endpoint",
    "rotate_secret",
    "search_endpoints",
    "update_endpoint",
]

ENTITY = "webhook"
MAX_HEADERS = 20
#: Headers the dispatcher sets itself; an endpoint's static headers cannot replace them.
RESERVED_HEADERS = frozenset(
    {"webhook-id", "webhook-timestamp", "webhook-signature", "content-type", "content-length", "host"}
)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

Url = Annotated[str, Field(min_length=1, max_length=2048)]
Description = Annotated[str, Field(max_length=1024)]


def _url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("url must be an absolute http or https URL, such as https://example.com/hooks")
    return value


def _event_types(value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    unknown = [name for name in value if name not in EVENT_TYPES]
    if unknown:
        raise ValueError(f"unknown event type {unknown[0]!r}; see docs/webhooks.md for the event types")
    return list(dict.fromkeys(value))


def _headers(value: dict[str, str] | None) -> dict[str, str] | None:
    if value is None:
        return None
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    for name, text in value.items():
        if not _TOKEN.match(name):
            raise ValueError(f"{name!r} is not a valid header name")
        if name.lower() in RESERVED_HEADERS:
            raise ValueError(f"header {name!r} is set by billingkit and cannot be configured")
        if "\r" in text or "\n" in text:
            raise ValueError(f"header {name!r} holds a line break")
    return value


class EndpointCreate(InputModel):
    """A new endpoint: ``url`` (http or https), what it is for, whether it receives deliveries
    now (``enabled``), the ``event_types`` it wants (empty: all) and static ``headers`` sent with
    every delivery (not the ``webhook-*`` ones, which billingkit sets)."""

    url: Url
    description: Description | None = None
    enabled: bool = True
    event_types: list[str] = []
    headers: dict[str, str] = {}

    _check_url = field_validator("url")(_url)
    _check_types = field_validator("event_types")(_event_types)
    _check_headers = field_validator("headers")(_headers)


class EndpointUpdate(InputModel):
    """Partial update: only the fields present change. Enabling an endpoint clears its failure
    streak and the reason it was disabled."""

    url: Url | None = None
    description: Description | None = None
    enabled: bool | None = None
    event_types: list[str] | None = None
    headers: dict[str, str] | None = None

    _check_url = field_validator("url")(_url)
    _check_types = field_validator("event_types")(_event_types)
    _check_headers = field_validator("headers")(_headers)

    def changes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if value is None and name != "description":
                raise ValidationError(f"{name} cannot be cleared", field=name)
            out[name] = value
        return out


class EndpointSearch(SearchRequest):
    """Which endpoints to list (``enabled`` filters), newest first."""

    kind: ClassVar[str] = "webhook_endpoints"

    enabled: Annotated[bool | None, Searches("enabled", Op.EQ)] = None


@dataclass(frozen=True, slots=True)
class EndpointSecret:
    """An endpoint and its signing secret, as created or rotated: the only answer that shows the
    secret (its repr does not)."""

    endpoint: WebhookEndpoint
    secret: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.endpoint.to_dict(), "secret": self.secret}

    def __repr__(self) -> str:
        return f"EndpointSecret({self.endpoint!r}, secret=<hidden>)"


def live_endpoint(uow: UnitOfWork, endpoint_id: str) -> WebhookEndpoint:
    """The endpoint ``endpoint_id`` of this scope; :class:`NotFound` when missing or deleted."""
    endpoint = uow.webhook_endpoints.find(endpoint_id)
    if endpoint is None or endpoint.status is not Status.PUBLISHED:
        raise NotFound(f"webhook endpoint {endpoint_id} not found")
    return endpoint


def create_endpoint(uow: UnitOfWork, ctx: Context, *, data: EndpointCreate) -> EndpointSecret:
    """A new endpoint with a new secret (shown in this answer only)."""
    ctx.require(ENTITY, Action.WRITE)
    secret = new_secret()
    endpoint = WebhookEndpoint(
        id=ctx.ids.new("whep"),
        **ctx.stamp(),
        **data.model_dump(),
        secret_ciphertext=ctx.providers.webhook_secrets.seal(secret),
    )
    uow.webhook_endpoints.add(endpoint)
    return EndpointSecret(endpoint, secret)


def get_endpoint(uow: UnitOfWork, ctx: Context, *, endpoint_id: str) -> WebhookEndpoint:
    ctx.require(ENTITY, Action.READ)
    return live_endpoint(uow, endpoint_id)


def search_endpoints(uow: UnitOfWork, ctx: Context, *, search: EndpointSearch) -> Page[WebhookEndpoint]:
    ctx.require(ENTITY, Action.READ)
    return uow.webhook_endpoints.list(search.to_query())


def update_endpoint(
    uow: UnitOfWork, ctx: Context, *, endpoint_id: str, data: EndpointUpdate
) -> WebhookEndpoint:
    ctx.require(ENTITY, Action.WRITE)
    current = live_endpoint(uow, endpoint_id)
    changes = data.changes()
    if not changes:
        return current
    if changes.get("enabled") is True:
        changes.update(failure_streak=0, disabled_reason=None)
    updated = current.model_copy(update={**changes, **ctx.touch()})
    return uow.webhook_endpoints.update_many([(current, updated)])[0]


def delete_endpoint(uow: UnitOfWork, ctx: Context, *, endpoint_id: str) -> WebhookEndpoint:
    """Archive the endpoint: it reads as not found afterwards and its pending deliveries fail
    when the dispatcher reaches them."""
    ctx.require(ENTITY, Action.WRITE)
    current = live_endpoint(uow, endpoint_id)
    archived = current.model_copy(update={"status": Status.ARCHIVED, "enabled": False, **ctx.touch()})
    return uow.webhook_endpoints.update_many([(current, archived)])[0]


def rotate_secret(uow: UnitOfWork, ctx: Context, *, endpoint_id: str) -> EndpointSecret:
    """A new secret for the endpoint (shown in this answer only); the old one signs nothing more."""
    ctx.require(ENTITY, Action.WRITE)
    current = live_endpoint(uow, endpoint_id)
    secret = new_secret()
    rotated = current.model_copy(
        update={"secret_ciphertext": ctx.providers.webhook_secrets.seal(secret), **ctx.touch()}
    )
    saved = uow.webhook_endpoints.update_many([(current, rotated)])[0]
    return EndpointSecret(saved, secret)
