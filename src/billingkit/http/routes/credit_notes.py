"""``/v1/creditnotes``: create (finalized at once unless ``process_credit_note`` is false), read,
list, finalize, void."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit import CreditNoteReason, CreditNoteStatus, CreditNoteType
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.credit_notes import CreditNoteResponse, ListCreditNotesResponse
from billingkit.services.credit_notes import CreditNoteCreate, CreditNoteFinalize, CreditNoteSearch

router = APIRouter(prefix="/creditnotes", tags=["credit notes"], route_class=WireRoute)

Text = Annotated[str | None, Query(min_length=1, max_length=255)]


@router.post("", status_code=201)
def create_credit_note(caller: EnvCaller, body: CreditNoteCreate) -> CreditNoteResponse:
    """The same request again (same ``idempotency_key``, given or derived from the content)
    answers the first note, unchanged."""
    return CreditNoteResponse.model_validate(caller.credit_notes.create(body).to_dict())


@router.get("")
def list_credit_notes(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    invoice_id: Text = None,
    customer_id: Text = None,
    subscription_id: Text = None,
    credit_note_type: CreditNoteType | None = None,
    credit_note_status: Annotated[list[CreditNoteStatus] | None, Query()] = None,
    reason: CreditNoteReason | None = None,
) -> ListCreditNotesResponse:
    search = CreditNoteSearch(
        limit=limit,
        offset=offset,
        invoice_id=invoice_id,
        customer_id=customer_id,
        subscription_id=subscription_id,
        credit_note_type=credit_note_type,
        credit_note_status=credit_note_status,
        reason=reason,
    )
    return ListCreditNotesResponse.model_validate(caller.credit_notes.list(search).to_dict())


@router.get("/{credit_note_id}")
def get_credit_note(caller: EnvCaller, credit_note_id: str) -> CreditNoteResponse:
    return CreditNoteResponse.model_validate(caller.credit_notes.get(credit_note_id).to_dict())


@router.post("/{credit_note_id}/finalize")
def finalize_credit_note(
    caller: EnvCaller, credit_note_id: str, body: CreditNoteFinalize | None = None
) -> CreditNoteResponse:
    """Recheck the draft against its invoice as it is now and apply it (the body is optional)."""
    finalized = caller.credit_notes.finalize(credit_note_id, body or CreditNoteFinalize())
    return CreditNoteResponse.model_validate(finalized.to_dict())


@router.post("/{credit_note_id}/void")
def void_credit_note(caller: EnvCaller, credit_note_id: str) -> CreditNoteResponse:
    """Only a DRAFT is voided."""
    return CreditNoteResponse.model_validate(caller.credit_notes.void(credit_note_id).to_dict())
