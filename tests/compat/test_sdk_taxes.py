"""Tax associations, and the tax records of an invoice, through the official SDK."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def test_tax_associations(sdk: Flexprice, env: Scoped) -> None:
    customer = sdk.customers.create_customer(external_id="c1", name="Ada")
    vat = sdk.tax_rates.create_tax_rate(name="VAT", code="VAT20", percentage_value="20")
    created = known(
        sdk.tax_associations.create_tax_association(
            tax_rate_code="VAT20",
            entity_type="customer",
            entity_id=customer.id,
            priority=1,
            currency="usd",
            start_date=datetime(2020, 1, 1, tzinfo=UTC),
            metadata={"k": "v"},
        )
    )
    assert isinstance(created, models.TaxAssociationResponse)
    assert (created.entity_type, created.entity_id, created.priority, created.auto_apply) == (
        "customer",
        customer.id,
        1,
        True,
    )
    assert created.tax_rate is not None and (created.tax_rate.id, created.tax_rate.code) == (vat.id, "VAT20")
    assert known(sdk.tax_associations.get_tax_association(id=created.id)).model_dump() == created.model_dump()

    updated = known(sdk.tax_associations.update_tax_association(id=created.id, priority=5, auto_apply=False))
    assert (updated.priority, updated.auto_apply) == (5, False)

    tenant = sdk.tax_associations.create_tax_association(tax_rate_code="VAT20", entity_type="tenant")
    by_customer = known(sdk.tax_associations.list_tax_associations(external_customer_id="c1"))
    assert isinstance(by_customer, models.ListTaxAssociationsResponse)
    assert [a.id for a in by_customer.items] == [created.id]
    by_type = sdk.tax_associations.list_tax_associations(entity_type="tenant")
    assert [a.id for a in by_type.items] == [tenant.id]

    deleted = known(sdk.tax_associations.delete_tax_association(id=created.id))
    assert deleted.status == "archived"
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.tax_associations.get_tax_association(id=created.id)
    assert status_and_code(raised.value) == (404, "not_found")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.tax_associations.create_tax_association(tax_rate_code="NOPE", entity_type="tenant")
    assert status_and_code(raised.value) == (400, "validation_error")


def test_tax_rate_overrides_and_the_invoice_tax_record(sdk: Flexprice, env: Scoped) -> None:
    customer = sdk.customers.create_customer(external_id="c1", name="Ada")
    sdk.tax_rates.create_tax_rate(name="VAT", code="VAT20", percentage_value="20")
    plan = env.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "200",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        tax_rate_overrides=[{"tax_rate_code": "VAT20", "currency": "usd"}],
    )
    (invoice,) = env.invoices.list(subscription_id=sub.id).items
    read = known(sdk.invoices.get_invoice(id=invoice.id))
    # 200.00 x 20 / 100 = 40.00; total 240.00
    assert (read.subtotal, read.total_tax, read.total) == ("200.00", "40.00", "240.00")
    (tax,) = read.taxes or []
    assert (tax.taxable_amount, tax.tax_amount, tax.entity_type) == ("200.00", "40.00", "invoice")
    assert tax.tax_rate is not None and tax.tax_rate.code == "VAT20"


def test_customer_tax_rate_overrides(sdk: Flexprice, env: Scoped) -> None:
    sdk.tax_rates.create_tax_rate(name="VAT", code="VAT20", percentage_value="20")
    customer = sdk.customers.create_customer(
        external_id="c9",
        name="Bea",
        tax_rate_overrides=[{"tax_rate_code": "VAT20", "currency": "usd", "priority": 2}],
    )
    listed = known(sdk.tax_associations.list_tax_associations(entity_type="customer", entity_id=customer.id))
    (association,) = listed.items or []
    assert (association.entity_id, association.currency, association.priority) == (customer.id, "usd", 2)
    assert association.tax_rate is not None and association.tax_rate.code == "VAT20"
    with pytest.raises(errors.ErrorResponse) as caught:
        sdk.customers.create_customer(
            external_id="c10", name="Cy", tax_rate_overrides=[{"tax_rate_code": "NOPE", "currency": "usd"}]
        )
    assert status_and_code(caught.value) == (400, "validation_error")
    assert env.customers.list(external_ids=["c10"]).total == 0
