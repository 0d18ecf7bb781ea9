"""What the checkout tests share: the plan their sessions subscribe to (30.00 usd a month, in
advance) and the ``create_subscription`` configuration for it."""

from __future__ import annotations

from typing import Any

from billingkit import Scoped

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
