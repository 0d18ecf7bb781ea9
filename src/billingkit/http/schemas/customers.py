"""Answers of ``/v1/customers``."""

from __future__ import annotations

from typing import Any

from billingkit.http.schemas.base import EnvironmentRecordResponse, PaginationResponse, WireModel

__all__ = ["CustomerResponse", "ListCustomersResponse"]


class CustomerResponse(EnvironmentRecordResponse):
    """Someone you bill; ``external_id`` is your id for them, ``timezone`` (IANA) where their
    calendar billing periods are computed. ``integrations`` is always empty in this version."""

    external_id: str
    name: str
    email: str | None
    contact: str | None
    timezone: str
    address_line1: str | None
    address_line2: str | None
    address_city: str | None
    address_state: str | None
    address_postal_code: str | None
    address_country: str | None
    metadata: dict[str, str]
    integrations: list[dict[str, Any]]


class ListCustomersResponse(WireModel):
    items: list[CustomerResponse]
    pagination: PaginationResponse
