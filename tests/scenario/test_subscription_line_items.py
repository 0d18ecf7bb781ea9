"""A subscription with its own line items, end to end through the library, on every store: an
overridden plan fee, an extra fee, an extra metered line ended mid-period, an entitlement override
raising the free allowance, and a one-time charge, billed to the cent over three months.

Plan Team: a 40.00 monthly fee (ADVANCE) and 0.02 per API call (ARREAR, a SUM meter) with 1,000
calls a month free (soft limit). An add-on price bills 0.50 per export (ARREAR, a COUNT meter).
Ada subscribes on 1 March 2026 00:00 UTC; March has 31 days.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from billingkit import Billing, TestClock
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.subscriptions import Subscription

D = Decimal


def at(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


def monthly(kind: str, amount: str, cadence: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": cadence,
        **extra,
    }


def lines(invoice: Invoice) -> list[tuple[str, str, Decimal]]:
    return [(ln.display_name, str(ln.quantity), ln.amount) for ln in invoice.line_items]


def test_own_line_items_bill_to_the_cent(storage: Any) -> None:
    clock = TestClock(at(3, 1))
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    calls = s.meters.create(name="API calls", event_name="api", aggregation={"type": "SUM", "field": "calls"})
    exports = s.meters.create(name="Exports", event_name="export", aggregation={"type": "COUNT"})
    feature = s.features.create(name="API", type="metered", meter_id=calls.id)
    plan = s.plans.create(
        name="Team",
        prices=[
            monthly("FIXED", "40", "ADVANCE", display_name="Base"),
            monthly("USAGE", "0.02", "ARREAR", meter_id=calls.id, display_name="Calls"),
        ],
        entitlements=[{"feature_id": feature.id, "usage_limit": 1000, "is_soft_limit": True}],
    )
    detail = s.plans.get(plan.id)
    base = next(p for p in detail.prices if p.display_name == "Base")
    addon = s.addons.create(name="Exports", lookup_key="exports")
    export_price = s.prices.create(
        entity_type="ADDON",
        entity_id=addon.id,
        **monthly("USAGE", "0.50", "ARREAR", meter_id=exports.id, display_name="Exports"),
    )
    for external_id in ("ada", "bob"):
        s.customers.create(external_id=external_id, name=external_id.title())

    def subscribe(external_id: str, **fields: Any) -> Subscription:
        return s.subscriptions.create(
            external_customer_id=external_id,
            plan_id=plan.id,
            currency="usd",
            billing_period="MONTHLY",
            **fields,
        )

    ada = subscribe(
        "ada",
        override_line_items=[{"price_id": base.id, "amount": "32.00"}],
        line_items=[
            {
                "price": {k: v for k, v in monthly("FIXED", "15", "ADVANCE").items() if k != "currency"}
                | {"display_name": "Support"}
            },
            {"price_id": export_price.id},
        ],
        override_entitlements=[{"entitlement_id": detail.entitlements[0].id, "usage_limit": 5000}],
    )
    bob = subscribe("bob")  # the plan as it is, for comparison

    def invoices(sub: Subscription) -> list[Invoice]:
        found = s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(found, key=lambda inv: inv.billing_sequence or 0)

    (opening,) = invoices(ada)
    # The overridden fee and the extra fee, in advance: 32.00 + 15.00 = 47.00.
    assert (opening.billing_reason, lines(opening), opening.amount_due) == (
        BillingReason.SUBSCRIPTION_CREATE,
        [("Base", "1", D("32.00")), ("Support", "1", D("15.00"))],
        D("47.00"),
    )
    assert [inv.amount_due for inv in invoices(bob)] == [D("40.00")]

    # March: 7,000 calls each; Ada exports 6 times before 21 March and 4 times after.
    s.events.ingest_bulk(
        [
            {
                "event_id": f"{who}-calls-{day}",
                "event_name": "api",
                "external_customer_id": who,
                "timestamp": at(3, day).isoformat(),
                "properties": {"calls": 1000},
            }
            for who in ("ada", "bob")
            for day in range(2, 9)
        ]
        + [
            {
                "event_id": f"export-{day}",
                "event_name": "export",
                "external_customer_id": "ada",
                "timestamp": (at(3, day) + timedelta(hours=12)).isoformat(),
            }
            for day in (*range(10, 16), *range(22, 26))
        ]
    )
    clock.set(at(3, 21))
    exports_line = next(li for li in ada.line_items if li.display_name == "Exports")
    ended = s.subscriptions.delete_line_item(exports_line.id)
    assert ended.line_item.end_date == at(3, 21)
    clock.set(at(4, 1, 1))
    billing.run_due()
    _, april = invoices(ada)
    # March in arrears: calls (7,000 - 5,000 free) x 0.02 = 40.00; exports until 21 March only:
    # 6 x 0.50 = 3.00. April in advance: 32.00 + 15.00. Total 90.00.
    assert (april.billing_reason, april.period_start, april.period_end) == (
        BillingReason.SUBSCRIPTION_CYCLE,
        at(3, 1),
        at(4, 1),
    )
    assert sorted(lines(april)) == [
        ("Base", "1", D("32.00")),
        ("Calls", "7000", D("40.00")),
        ("Exports", "6", D("3.00")),
        ("Support", "1", D("15.00")),
    ]
    exports_charge = next(ln for ln in april.line_items if ln.display_name == "Exports")
    assert (exports_charge.period_start, exports_charge.period_end) == (at(3, 1), at(3, 21))
    assert april.amount_due == D("90.00")
    # Bob's plan allowance is 1,000: (7,000 - 1,000) x 0.02 = 120.00, plus the 40.00 fee.
    _, bob_april = invoices(bob)
    assert sorted(lines(bob_april)) == [("Base", "1", D("40.00")), ("Calls", "7000", D("120.00"))]
    assert bob_april.amount_due == D("160.00")

    # A one-time onboarding fee dated 10 April is invoiced at once, in full, and never again.
    clock.set(at(4, 5))
    onboarding = s.subscriptions.add_line_item(
        ada.id,
        price={
            "type": "FIXED",
            "billing_model": "FLAT_FEE",
            "amount": "120",
            "billing_period": "ONETIME",
            "invoice_cadence": "ADVANCE",
            "display_name": "Onboarding",
        },
        start_date=at(4, 10),
    )
    assert onboarding.invoice is not None
    assert (onboarding.invoice.billing_reason, lines(onboarding.invoice), onboarding.invoice.amount_due) == (
        BillingReason.SUBSCRIPTION_UPDATE,
        [("Onboarding", "1", D("120.00"))],
        D("120.00"),
    )
    clock.set(at(5, 1, 1))
    billing.run_due()
    may = invoices(ada)[-1]
    # April: no calls, no exports line any more; May in advance at the overridden fee again.
    assert sorted(lines(may)) == [
        ("Base", "1", D("32.00")),
        ("Calls", "0", D("0.00")),
        ("Support", "1", D("15.00")),
    ]
    assert may.amount_due == D("47.00")
    assert len(invoices(ada)) == 4
