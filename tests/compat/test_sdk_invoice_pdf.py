"""The invoice PDF through the official SDK (``invoices.get_invoice_pdf``): a renewal invoice with a
monthly fee and metered calls (Base 49.00 + 150 calls x 0.01 = 1.50, total 50.50 usd), drawn for
a customer without an address (``en_US``)."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from flexprice import Flexprice
from flexprice.models import errors
from pypdf import PdfReader

from billingkit import Billing, TestClock
from billingkit.facade import Scoped
from tests.compat.test_sdk_subscriptions import _catalogue


def test_get_invoice_pdf(sdk: Flexprice, env: Scoped, billing: Billing, clock: TestClock) -> None:
    customer_id, plan_id, _ = _catalogue(sdk, env)
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer_id, plan_id=plan_id, currency="usd", billing_period="MONTHLY"
    )
    sdk.events.ingest_events_bulk(
        events=[
            {
                "event_id": f"c{i}",
                "event_name": "api.call",
                "external_customer_id": "cust-ada",
                "timestamp": (clock.now() + timedelta(hours=i + 1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            for i in range(150)
        ]
    )
    clock.advance(days=31)
    billing.run_due()
    renewal = next(
        i
        for i in sdk.invoices.query_invoice(subscription_id=sub.id).items
        if i.billing_reason == "SUBSCRIPTION_CYCLE"
    )
    assert renewal.invoice_pdf_url == f"/v1/invoices/{renewal.id}/pdf"

    response = sdk.invoices.get_invoice_pdf(id=renewal.id)
    assert response.headers["content-type"] == "application/pdf"
    reader = PdfReader(io.BytesIO(response.read()))
    text = " ".join(" ".join(page.extract_text() for page in reader.pages).split())
    for expected in (
        f"Invoice number {renewal.invoice_number}",
        "Bill to Ada",
        "Base",
        "Calls",
        "150 $1.50",
        "Subtotal $50.50",
        "Total $50.50",
        "Amount due $50.50",
    ):
        assert expected in text, expected

    located = sdk.invoices.get_invoice_pdf(id=renewal.id, url=True, force_generate=True)
    assert json.loads(located.read()) == {"presigned_url": f"http://testserver/v1/invoices/{renewal.id}/pdf"}

    with pytest.raises(errors.FlexpriceError) as missing:
        sdk.invoices.get_invoice_pdf(id="inv_missing")
    # The call streams its answer, so the SDK hands over the error body as text it has read.
    assert (missing.value.status_code, json.loads(missing.value.body)["code"]) == (404, "not_found")
