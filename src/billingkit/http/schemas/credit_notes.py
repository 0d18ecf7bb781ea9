"""Answers of ``/v1/creditnotes``: credit notes against invoices."""

from __future__ import annotations

from billingkit import CreditNoteReason, CreditNoteStatus, CreditNoteType, PaymentStatus, Status
from billingkit.http.schemas.base import (
    DecimalString,
    EnvironmentRecordResponse,
    PaginationResponse,
    Timestamp,
    WireModel,
)

__all__ = ["CreditNoteLineItemResponse", "CreditNoteResponse", "ListCreditNotesResponse"]


class CreditNoteLineItemResponse(WireModel):
    """``amount`` credited on invoice line ``invoice_line_item_id`` (the reference's
    ``creditnote.CreditNoteLineItem``); the fields from ``credit_note_id`` on are the note's."""

    id: str
    invoice_line_item_id: str
    display_name: str | None
    amount: DecimalString
    currency: str
    metadata: dict[str, str]
    credit_note_id: str
    tenant_id: str
    environment_id: str
    status: Status
    created_at: Timestamp
    updated_at: Timestamp
    created_by: str
    updated_by: str


class CreditNoteResponse(EnvironmentRecordResponse):
    """A credit note (the reference's ``CreditNoteResponse``): ``total_amount`` (the sum of its
    lines) credited on ``invoice_id``; an ``ADJUSTMENT`` lowered what the invoice asks, a
    ``REFUND`` paid the customer's PRE_PAID wallet (``refund_status`` SUCCEEDED once finalized).
    ``credit_note_number`` is assigned at finalization unless the request gave one."""

    credit_note_number: str | None
    invoice_id: str
    customer_id: str
    subscription_id: str | None
    credit_note_type: CreditNoteType
    credit_note_status: CreditNoteStatus
    reason: CreditNoteReason
    memo: str | None
    currency: str
    total_amount: DecimalString
    idempotency_key: str
    refund_status: PaymentStatus | None
    finalized_at: Timestamp | None
    voided_at: Timestamp | None
    line_items: list[CreditNoteLineItemResponse]
    metadata: dict[str, str]
    version: int


class ListCreditNotesResponse(WireModel):
    items: list[CreditNoteResponse]
    pagination: PaginationResponse
