"""Credit notes through the official SDK: create (finalized at once, or a draft), get, finalize
(``process_credit_note``), void, and the errors the SDK raises."""

from __future__ import annotations

from typing import Any

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _paid_invoice(sdk: Flexprice, env: Scoped, amount: str = "100.00") -> Any:
    customer = sdk.customers.create_customer(external_id="c1", name="Ada")
    invoice = env.invoices.create(
        customer_id=customer.id,
        currency="usd",
        line_items=[{"amount": amount, "quantity": "1", "display_name": "Plan", "price_id": "p"}],
        subtotal=amount,
        total=amount,
        amount_due=amount,
    )
    return env.invoices.update_payment(invoice.id, payment_status="SUCCEEDED")


def test_credit_notes(sdk: Flexprice, env: Scoped) -> None:
    invoice = _paid_invoice(sdk, env)
    line_id = invoice.line_items[0].id
    created = known(
        sdk.credit_notes.create_credit_note(
            invoice_id=invoice.id,
            reason="DUPLICATE",
            memo="double charge",
            metadata={"ticket": "T-1"},
            line_items=[{"invoice_line_item_id": line_id, "amount": "30.00", "display_name": "Refund"}],
            refund_target="PREPAID_WALLET",
        )
    )
    assert isinstance(created, models.CreditNoteResponse)
    assert (
        created.credit_note_type,
        created.credit_note_status,
        created.refund_status,
        created.total_amount,
        created.credit_note_number,
    ) == ("REFUND", "FINALIZED", "SUCCEEDED", "30.00", "CN-202605-00001")
    assert created.line_items is not None
    (line,) = created.line_items
    assert (line.invoice_line_item_id, line.amount, line.display_name, line.credit_note_id) == (
        line_id,
        "30.00",
        "Refund",
        created.id,
    )
    assert known(sdk.credit_notes.get_credit_note(id=created.id)).model_dump() == created.model_dump()

    draft = known(
        sdk.credit_notes.create_credit_note(
            invoice_id=invoice.id,
            reason="SERVICE_ISSUE",
            line_items=[{"invoice_line_item_id": line_id, "amount": "50.00"}],
            process_credit_note=False,
        )
    )
    assert (draft.credit_note_status, draft.credit_note_number) == ("DRAFT", None)
    finalized = known(sdk.credit_notes.process_credit_note(id=draft.id))
    assert (finalized.credit_note_status, finalized.credit_note_number) == ("FINALIZED", "CN-202605-00002")
    assert env.invoices.get(invoice.id).refunded_amount == 80  # 30.00 + 50.00

    spare = sdk.credit_notes.create_credit_note(
        invoice_id=invoice.id,
        reason="ORDER_CHANGE",
        line_items=[{"invoice_line_item_id": line_id, "amount": "20.00"}],
        process_credit_note=False,
    )
    voided = known(sdk.credit_notes.void_credit_note(id=spare.id))
    assert (voided.credit_note_status, voided.refund_status) == ("VOIDED", "VOIDED")

    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.credit_notes.process_credit_note(id=voided.id, refund_target="PREPAID_WALLET")
    assert status_and_code(raised.value) == (400, "invalid_operation")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.credit_notes.create_credit_note(
            invoice_id=invoice.id,
            reason="DUPLICATE",
            line_items=[{"invoice_line_item_id": line_id, "amount": "20.01"}],  # 20.00 left
        )
    assert status_and_code(raised.value) == (400, "invalid_operation")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.credit_notes.create_credit_note(
            invoice_id=invoice.id,
            reason="DUPLICATE",
            line_items=[{"invoice_line_item_id": line_id, "amount": "1.00"}],
            refund_target="BACK_TO_SOURCE",
        )
    assert status_and_code(raised.value) == (400, "validation_error")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.credit_notes.get_credit_note(id="cn_missing")
    assert status_and_code(raised.value) == (404, "not_found")
