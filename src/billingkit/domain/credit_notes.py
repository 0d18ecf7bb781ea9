"""A credit note against an invoice, as stored.

``ADJUSTMENT`` reduces what an unpaid invoice asks for; ``REFUND`` gives back money that was paid
(to a PRE_PAID wallet or the payment method). Statuses: ``DRAFT`` -> ``FINALIZED`` -> ``VOIDED``
(a draft may be voided too). ``idempotency_key`` derives from the request's content unless the caller
names one and is unique in the environment, so a repeated request finds the first note.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from billingkit.domain.invoices import PaymentStatus
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import DecimalText, UtcDatetime

__all__ = [
    "CreditNote",
    "CreditNoteLineItem",
    "CreditNoteReason",
    "CreditNoteStatus",
    "CreditNoteType",
    "RefundTarget",
]


class CreditNoteType(StrEnum):
    ADJUSTMENT = "ADJUSTMENT"
    REFUND = "REFUND"


class CreditNoteStatus(StrEnum):
    DRAFT = "DRAFT"
    FINALIZED = "FINALIZED"
    VOIDED = "VOIDED"


class CreditNoteReason(StrEnum):
    DUPLICATE = "DUPLICATE"
    FRAUDULENT = "FRAUDULENT"
    ORDER_CHANGE = "ORDER_CHANGE"
    UNSATISFACTORY = "UNSATISFACTORY"
    SERVICE_ISSUE = "SERVICE_ISSUE"
    BILLING_ERROR = "BILLING_ERROR"
    SUBSCRIPTION_CANCELLATION = "SUBSCRIPTION_CANCELLATION"


class RefundTarget(StrEnum):
    """Where a REFUND note's money goes (the SDK's ``refund_target``): the customer's PRE_PAID
    wallet, or back to the payment method the invoice was paid with (not supported yet)."""

    PREPAID_WALLET = "PREPAID_WALLET"
    BACK_TO_SOURCE = "BACK_TO_SOURCE"


class CreditNoteLineItem(BaseModel):
    """``amount`` credited against invoice line ``invoice_line_item_id``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    invoice_line_item_id: str
    display_name: str | None = None
    amount: DecimalText
    currency: str
    metadata: dict[str, str] = {}


class CreditNote(EnvironmentResource):
    """A credit of ``total_amount`` (the sum of its lines) against invoice ``invoice_id``."""

    credit_note_number: str | None = None
    invoice_id: str
    customer_id: str
    subscription_id: str | None = None
    credit_note_type: CreditNoteType
    credit_note_status: CreditNoteStatus = CreditNoteStatus.DRAFT
    reason: CreditNoteReason
    memo: str | None = None
    currency: str
    total_amount: DecimalText
    idempotency_key: str
    refund_status: PaymentStatus | None = None
    finalized_at: UtcDatetime | None = None
    voided_at: UtcDatetime | None = None
    line_items: tuple[CreditNoteLineItem, ...] = ()
    metadata: dict[str, str] = {}
    version: int = 1

    def __repr__(self) -> str:
        return (
            f"<CreditNote {self.id} {self.credit_note_type.value} {self.total_amount} {self.currency} "
            f"{self.credit_note_status.value} on {self.invoice_id}>"
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: money as decimal strings, instants as ISO 8601 UTC, and each line with
        the note's common fields, as the reference's ``creditnote.CreditNoteLineItem`` shows them."""
        data = self.model_dump(mode="json")
        common = {
            "credit_note_id": self.id,
            **self.common_fields(),
        }
        data["line_items"] = [{**line, **common} for line in data["line_items"]]
        return data
