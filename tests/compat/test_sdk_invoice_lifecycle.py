"""Direct invoices and the invoice lifecycle through the official SDK: create (idempotent),
update, finalize, void and the payment status."""

from __future__ import annotations

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def test_direct_invoice_lifecycle(sdk: Flexprice, env: Scoped) -> None:
    customer = env.customers.create(external_id="acme", name="Acme")
    coupon = env.coupons.create(name="25 off", type="fixed", cadence="once", amount_off="25", currency="usd")
    line = models.CreateInvoiceLineItemRequest(
        amount="100.00", quantity="4", display_name="Seats", price_id="p1"
    )
    fields = {
        "customer_id": customer.id,
        "currency": "usd",
        "line_items": [line],
        "coupons": [coupon.id],
        # 100.00 - 25.00 = 75.00
        "subtotal": "100.00",
        "total": "75.00",
        "amount_due": "75.00",
        "invoice_status": "DRAFT",
        "idempotency_key": "sdk-1",
    }
    draft = known(sdk.invoices.create_invoice(**fields))
    assert isinstance(draft, models.InvoiceResponse)
    assert (draft.invoice_status, draft.total_discount, draft.amount_due, draft.invoice_type) == (
        "DRAFT",
        "25.00",
        "75.00",
        "ONE_OFF",
    )
    assert known(sdk.invoices.create_invoice(**fields)).id == draft.id
    with pytest.raises(errors.FlexpriceError) as conflict:  # 409 is not declared: the default error
        sdk.invoices.create_invoice(**{**fields, "description": "other"})
    assert status_and_code(conflict.value) == (409, "idempotency_conflict")

    edited = known(sdk.invoices.update_invoice(id=draft.id, metadata={"po": "9"}, apply_discount=True))
    assert (edited.metadata, edited.total, edited.version) == ({"po": "9"}, "75.00", 2)

    finalized = sdk.invoices.finalize_invoice(id=draft.id)
    assert finalized.message == "invoice finalized successfully"
    shown = known(sdk.invoices.get_invoice(id=draft.id))
    assert (shown.invoice_status, shown.invoice_number) == ("FINALIZED", "INV-202605-00001")

    paid = known(sdk.invoices.update_invoice_payment_status(id=draft.id, payment_status="SUCCEEDED"))
    assert (paid.payment_status, paid.amount_paid, paid.amount_remaining) == ("SUCCEEDED", "75.00", "0.00")

    other = known(
        sdk.invoices.create_invoice(
            customer_id=customer.id,
            currency="usd",
            line_items=[line],
            subtotal="100.00",
            total="100.00",
            amount_due="100.00",
        )
    )
    assert other.invoice_number == "INV-202605-00002"
    voided = sdk.invoices.void_invoice(id=other.id)
    assert voided.message == "invoice voided successfully"
    assert known(sdk.invoices.get_invoice(id=other.id)).invoice_status == "VOIDED"
    with pytest.raises(errors.ErrorResponse) as again:
        sdk.invoices.void_invoice(id=other.id)
    assert status_and_code(again.value) == (400, "invalid_operation")
