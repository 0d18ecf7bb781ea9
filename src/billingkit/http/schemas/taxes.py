"""Answers of ``/v1/taxes/associations``: which tax rate applies to whom."""

from __future__ import annotations

from billingkit import TaxRateEntityType
from billingkit.http.schemas.adjustments import TaxRateResponse
from billingkit.http.schemas.base import EnvironmentRecordResponse, PaginationResponse, Timestamp, WireModel

__all__ = ["ListTaxAssociationsResponse", "TaxAssociationResponse"]


class TaxAssociationResponse(EnvironmentRecordResponse):
    """Tax rate ``tax_rate_id`` (embedded as ``tax_rate``) applies to ``entity_type``
    ``entity_id`` from ``start_date`` until ``end_date`` (none: open-ended), for invoices in
    ``currency`` (none: any), when ``auto_apply``; lower ``priority`` applies first."""

    tax_rate_id: str
    entity_type: TaxRateEntityType
    entity_id: str
    priority: int
    auto_apply: bool
    currency: str | None
    start_date: Timestamp
    end_date: Timestamp | None
    metadata: dict[str, str]
    tax_rate: TaxRateResponse | None


class ListTaxAssociationsResponse(WireModel):
    items: list[TaxAssociationResponse]
    pagination: PaginationResponse
