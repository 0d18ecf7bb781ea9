"""Add-ons over two months of a subscription, through the public API with a test clock, on every
store (memory, SQLite, PostgreSQL). Amounts are exact, with the arithmetic beside them.

Plan Pro: 20.00 a month in advance, 0.10 an API call in arrears, from 1 May 2026 00:00 UTC
(May: 31 days = 2,678,400 seconds).

* Support (15.00 a month in advance) comes with the subscription, overridden for Ada to 12.00 x 2:
  24.00 on the opening invoice and on every period invoice after it.
* Storage (31.00 a month in advance) is added on 11 May at 13:17:05 with ``create_prorations``:
  1,766,575 seconds of May are left, so it is charged 31.00 x 1,766,575 / 2,678,400 = 20.4464...
  = 20.45 at once; from June it is on the period invoices (31.00), until it is removed on 15 June
  with effect at the period end (1 July): July's invoice no longer bills it.
* Setup (50.00, ``onetime``) is added on 12 May: 50.00 at once, in full, and never again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from billingkit import Billing, TestClock
from billingkit.domain.invoices import BillingReason, Invoice

D = Decimal
MAY, JUNE, JULY = (datetime(2026, m, 1, tzinfo=UTC) for m in (5, 6, 7))


def fee(amount: str, name: str) -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "display_name": name,
    }


def test_addons_with_an_override_a_prorated_add_a_onetime_add_and_a_removal(storage: Any) -> None:
    clock = TestClock(MAY)
    billing = Billing(storage, clock, renewal_notice=None)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    calls_price = {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": "0.10",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter.id,
        "display_name": "Calls",
    }
    plan = s.plans.create(name="Pro", prices=[fee("20", "Pro"), calls_price])
    support = s.addons.create(name="Support", lookup_key="support", prices=[fee("15", "Support")])
    storage_addon = s.addons.create(name="Storage", lookup_key="storage", prices=[fee("31", "Storage")])
    setup_fee = s.addons.create(name="Setup", lookup_key="setup", prices=[fee("50", "Setup")])
    ada = s.customers.create(external_id="ada", name="Ada")

    def calls(count: int, start: datetime, tag: str) -> None:
        s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": "ada",
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{tag}{i}",
                }
                for i in range(count)
            ]
        )

    def run(when: datetime) -> None:
        clock.set(when)
        assert billing.run_due().failures == []

    def invoices() -> list[Invoice]:
        return sorted(
            s.invoices.list(subscription_id=sub.id, limit=100).items, key=lambda i: i.billing_sequence or 0
        )

    def lines(invoice: Invoice) -> dict[str, Decimal]:
        return {line.display_name: line.amount for line in invoice.line_items}

    sub = s.subscriptions.create(
        customer_id=ada.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        addons=[
            {
                "addon_id": support.id,
                "override_line_items": [
                    {"price_id": support.prices[0].id, "amount": "12.00", "quantity": "2"}
                ],
            }
        ],
    )
    clock.set(datetime(2026, 5, 11, 13, 17, 5, tzinfo=UTC))
    storage_added = s.subscriptions.add_addon(
        subscription_id=sub.id, addon_id=storage_addon.id, proration_behavior="create_prorations"
    )
    clock.set(datetime(2026, 5, 12, tzinfo=UTC))
    setup_added = s.subscriptions.add_addon(subscription_id=sub.id, addon_id=setup_fee.id, cadence="onetime")
    calls(120, datetime(2026, 5, 20, tzinfo=UTC), "may")  # 120 x 0.10 = 12.00
    run(datetime(2026, 6, 1, 1, tzinfo=UTC))
    clock.set(datetime(2026, 6, 15, tzinfo=UTC))
    removed = s.subscriptions.remove_addon(addon_association_id=storage_added.association.id)
    calls(50, datetime(2026, 6, 20, tzinfo=UTC), "june")  # 50 x 0.10 = 5.00
    run(datetime(2026, 7, 1, 1, tzinfo=UTC))

    opening, storage_charge, setup_charge, june, july = invoices()
    assert opening.billing_reason is BillingReason.SUBSCRIPTION_CREATE
    assert lines(opening) == {"Pro": D("20.00"), "Support": D("24.00")}  # 12.00 x 2
    assert opening.total == D("44.00")

    assert storage_charge.id == (storage_added.invoice.id if storage_added.invoice else None)
    assert (storage_charge.billing_reason, storage_charge.period_start, storage_charge.period_end) == (
        BillingReason.SUBSCRIPTION_UPDATE,
        datetime(2026, 5, 11, 13, 17, 5, tzinfo=UTC),
        JUNE,
    )
    (prorated,) = storage_charge.line_items
    assert (prorated.trace["remaining_seconds"], prorated.trace["period_seconds"]) == (1766575, 2678400)
    assert prorated.trace["coefficient"].startswith("0.65956")
    assert (prorated.amount, storage_charge.total) == (D("20.45"), D("20.45"))

    assert setup_charge.id == (setup_added.invoice.id if setup_added.invoice else None)
    assert (lines(setup_charge), setup_charge.total) == ({"Setup": D("50.00")}, D("50.00"))

    # 1 June: May's calls, and June's Pro, Support (at the override) and Storage; no Setup.
    assert june.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
    assert lines(june) == {
        "Pro": D("20.00"),
        "Calls": D("12.00"),
        "Support": D("24.00"),
        "Storage": D("31.00"),
    }
    assert june.total == D("87.00")  # 20 + 12 + 24 + 31

    # Storage was removed with effect 1 July: July's invoice bills June's calls, Pro and Support.
    assert removed.association.end_date == JULY and removed.credit.amount == 0
    assert lines(july) == {"Pro": D("20.00"), "Calls": D("5.00"), "Support": D("24.00")}
    assert july.total == D("49.00")  # 20 + 5 + 24

    left = s.subscriptions.addon_associations(sub.id)
    assert sorted(a.addon_id for a in left) == sorted([support.id, setup_fee.id])
    assert [a.cadence for a in left if a.addon_id == setup_fee.id] == ["onetime"]
