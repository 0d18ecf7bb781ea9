"""What the checkout tests share: the plan their sessions subscribe to (30.00 usd a month, in
advance), the ``create_subscription`` configuration for it, a customer paying VAT, and the stored
rows of a kind."""

from __future__ import annotations

from typing import Any

from billingkit import Billing, Scoped
from billingkit.domain.customers import Customer
from billingkit.domain.queries import ListQuery

PRICE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "30",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}


def checkout_plan(scoped: Scoped, amount: str = "30") -> str:
    """A plan charging ``amount`` usd a month in advance, in ``scoped``; its id."""
    return scoped.plans.create(name=f"Pro {amount}", prices=[{**PRICE, "amount": amount}]).id


def subscription_params(plan_id: str) -> dict[str, Any]:
    """The ``configuration`` of a ``create_subscription`` session on ``plan_id``, monthly in usd."""
    return {
        "create_subscription_params": {"plan_id": plan_id, "currency": "usd", "billing_period": "MONTHLY"}
    }


def vat_customer(scoped: Scoped) -> Customer:
    """Customer ``c1`` (Ada), who pays 10% VAT (tax rate ``VAT10``), in ``scoped``."""
    scoped.tax_rates.create(name="VAT", code="VAT10", tax_rate_type="percentage", percentage_value="10")
    customer = scoped.customers.create(external_id="c1", name="Ada")
    scoped.tax_associations.create(tax_rate_code="VAT10", external_customer_id="c1")
    return customer


def stored_rows(billing: Billing, scoped: Scoped, kind: str) -> list[Any]:
    """Every stored row of ``kind`` (a unit of work repository name) in ``scoped``, archived too."""
    with billing.storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
        return list(getattr(uow, kind).list(ListQuery(limit=1000, status=None)).items)
