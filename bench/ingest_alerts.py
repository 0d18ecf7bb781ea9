"""The alerts that ``python -m bench ingest -- --alerts`` configures (issue 17's mode (d))."""

from __future__ import annotations

from datetime import datetime

from billingkit import Scoped

__all__ = ["configure_alerts"]


def configure_alerts(scoped: Scoped, meter_id: str, customers: list[str], start: datetime) -> None:
    """Alerts of every kind for ``customers``, whose subscriptions start at ``start``: a metered
    feature with alert settings, a plan pricing the meter, a spend alert per subscription and a
    prepaid wallet with balance alerts per customer (bench_ingest's module doc, ``--alerts``)."""
    scoped.features.create(
        name="Tokens",
        type="metered",
        meter_id=meter_id,
        alert_settings={"alert_enabled": True, "critical": {"threshold": "0", "condition": "below"}},
    )
    plan = scoped.plans.create(
        name="Tokens",
        prices=[
            {
                "type": "USAGE",
                "billing_model": "FLAT_FEE",
                "amount": "0.0001",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ARREAR",
                "meter_id": meter_id,
            }
        ],
    )
    for external_id in customers:
        customer = scoped.customers.create(external_id=external_id, name=external_id)
        sub = scoped.subscriptions.create(
            customer_id=customer.id,
            plan_id=plan.id,
            currency="usd",
            billing_period="MONTHLY",
            start_date=start,
        )
        config = {
            "info": {"threshold": "100", "condition": "above"},
            "critical": {"threshold": "1000", "condition": "above"},
        }
        scoped.alerts.create(entity_type="subscription", entity_id=sub.id, config=config)
        scoped.wallets.create(
            customer_id=customer.id,
            currency="usd",
            initial_credits_to_load="500",
            alert_settings={"alert_enabled": True, "warning": {"threshold": "100", "condition": "below"}},
        )
