"""The invoice communication trigger through the official SDK (``trigger_invoice_comms_webhook``)."""

from __future__ import annotations

import pytest
from flexprice import Flexprice
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import status_and_code


def test_trigger_invoice_comms_webhook(sdk: Flexprice, env: Scoped) -> None:
    customer = env.customers.create(external_id="acme", name="Acme")
    plan = env.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "30",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
                "display_name": "Pro",
            }
        ],
    )
    sub = env.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    (opening,) = env.invoices.list(subscription_id=sub.id).items
    answer = sdk.invoices.trigger_invoice_comms_webhook(id=opening.id)
    assert answer.message == "invoice communication triggered successfully"
    (sent,) = env.notifications.list(event_type="invoice.communication.triggered").items
    invoice = sent.payload["invoice"]
    assert (invoice["id"], invoice["subscription"]["id"], invoice["customer"]["external_id"]) == (
        opening.id,
        sub.id,
        "acme",
    )
    assert [(line["display_name"], line["amount"]) for line in invoice["line_items"]] == [("Pro", "30.00")]
    with pytest.raises(errors.ErrorResponse) as missing:
        sdk.invoices.trigger_invoice_comms_webhook(id="inv_missing")
    assert status_and_code(missing.value) == (404, "not_found")
