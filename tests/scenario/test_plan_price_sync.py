"""Plan price sync end to end, through the library, on every store: a plan's fee gets a new
version, its call price ends and an export price is added mid-period; the sync brings two
subscriptions up (one of them with its fee overridden, which it keeps), and their next invoices
bill exactly the new set. Amounts are exact, with the arithmetic beside them; instants are UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.subscriptions import Subscription
from billingkit.services.price_overrides import OverrideLineItem, override_lines

D = Decimal


def at(month: int, day: int) -> datetime:
    return datetime(2026, month, day, tzinfo=UTC)


def usage_price(meter_id: str, amount: str, name: str) -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "display_name": name,
    }


def ingest(s: Scoped, clock: TestClock, customer: str, name: str, count: int, start: datetime) -> None:
    clock.set(start)
    s.events.ingest_bulk(
        [
            {
                "event_name": name,
                "external_customer_id": customer,
                "timestamp": (start + timedelta(minutes=i)).isoformat(),
                "event_id": f"{customer}-{name}-{start:%m%d}-{i}",
            }
            for i in range(count)
        ]
    )


def bills(invoice: Invoice) -> dict[str, Decimal]:
    return {line.display_name or "": line.amount for line in invoice.line_items}


def test_sync_brings_two_subscriptions_to_the_new_prices_and_keeps_an_override(storage: Any) -> None:
    clock = TestClock(at(5, 1))
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    api = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    exports = s.meters.create(name="Exports", event_name="export", aggregation={"type": "COUNT"})
    base = {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": "20.00",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "display_name": "Base",
    }
    plan = s.plans.create(name="Pro", prices=[base, usage_price(api.id, "0.10", "Calls")])
    fee_id = next(p.id for p in plan.prices if p.type.value == "FIXED")
    calls_id = next(p.id for p in plan.prices if p.type.value == "USAGE")

    def subscribe(external_id: str) -> Subscription:
        customer = s.customers.create(external_id=external_id, name=external_id)
        return s.subscriptions.create(
            customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
        )

    ada, bob = subscribe("ada"), subscribe("bob")

    def override_fee(uow, ctx):  # type: ignore[no-untyped-def]
        # Bob's fee is 15.00 for him alone (a subscription-owned price, parent: the plan's fee).
        sub = uow.subscriptions.get(bob.id)
        changed = OverrideLineItem.model_validate({"price_id": fee_id, "amount": "15.00"})
        lines = override_lines(uow, ctx, sub.line_items, [changed])
        uow.subscriptions.update(sub.model_copy(update={"line_items": lines}), expected_version=sub.version)

    s.run(override_fee)

    # Before the change: calls at 0.10.
    ingest(s, clock, "ada", "api", 100, at(5, 5))
    ingest(s, clock, "bob", "api", 200, at(5, 6))

    # 11 May: the fee becomes 30.00 (a new version), calls end, exports at 1.00 begin.
    clock.set(at(5, 11))
    successor = s.prices.update(fee_id, amount="30.00")
    s.prices.delete(calls_id)
    s.prices.create(entity_type="PLAN", entity_id=plan.id, **usage_price(exports.id, "1.00", "Exports"))
    assert s.subscriptions.get_v2(ada.id).plan_prices_out_of_sync is True
    result = s.plans.sync_subscriptions(plan.id)
    assert (result.subscriptions_checked, result.subscriptions_updated) == (2, 2)
    assert s.subscriptions.get_v2(bob.id).plan_prices_out_of_sync is False
    bob_fee = next(li for li in s.subscriptions.get(bob.id).line_items if li.display_name == "Base")
    assert bob_fee.end_date is None and successor.id not in {
        li.price_id for li in s.subscriptions.get(bob.id).line_items
    }

    # After the change: calls are no longer billed, exports are.
    ingest(s, clock, "ada", "api", 50, at(5, 20))
    ingest(s, clock, "ada", "export", 3, at(5, 21))
    ingest(s, clock, "bob", "api", 40, at(5, 22))
    ingest(s, clock, "bob", "export", 5, at(5, 23))

    clock.set(at(6, 1))
    report = billing.run_due()
    by_sub = {inv.subscription_id: inv for inv in report.invoices}
    ada_june, bob_june = by_sub[ada.id], by_sub[bob.id]
    assert ada_june.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
    # Ada: calls until 11 May (100 x 0.10 = 10.00), exports after (3 x 1.00 = 3.00), June's fee at
    # the new version (30.00 in advance); the ended 20.00 fee is gone: 43.00.
    assert bills(ada_june) == {"Calls": D("10.00"), "Exports": D("3.00"), "Base": D("30.00")}
    assert ada_june.amount_due == D("43.00")
    # Bob: 200 x 0.10 = 20.00, 5 x 1.00 = 5.00, his own fee of 15.00 kept: 40.00.
    assert bills(bob_june) == {"Calls": D("20.00"), "Exports": D("5.00"), "Base": D("15.00")}
    assert bob_june.amount_due == D("40.00")

    # July, no usage: only the fees of the new set.
    clock.set(at(7, 1))
    july = {inv.subscription_id: inv for inv in billing.run_due().invoices}
    assert (bills(july[ada.id]), july[ada.id].amount_due) == (
        {"Exports": D("0.00"), "Base": D("30.00")},
        D("30.00"),
    )
    assert (bills(july[bob.id]), july[bob.id].amount_due) == (
        {"Exports": D("0.00"), "Base": D("15.00")},
        D("15.00"),
    )
