"""billingkit quick start: runs on the embedded default (in-memory store), no setup needed.

    bash scripts/dev.sh run

Part 1 uses the stored system: a tenant with test and production environments, customers, isolation
between environments, API keys and the notification events changes record.

Part 2 builds an API product's catalogue in the store (meters, a feature, a plan with a flat fee,
tiered and package usage prices and an entitlement, an add-on, a coupon, a tax rate), then simulates
three months of it with the pure billing core (``billingkit.domain``): billing periods from the
customer's anchor, usage aggregated from raw events by the stored meters, and invoices assembled from
the stored prices, coupon and tax rate. Subscriptions that store these invoices arrive with the
subscriptions milestone; the arithmetic is already the real one.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise

from billingkit import Billing, NotFound, Scoped
from billingkit.domain.catalog import Meter, PlanDetail, Price
from billingkit.domain.coupons import CouponAssociation
from billingkit.domain.invoice_lines import LineItemInput
from billingkit.domain.invoicing import InvoiceDraft, InvoiceRequest, assemble_invoice
from billingkit.domain.periods import BillingPeriod, BillingSchedule
from billingkit.domain.usage import UsageEvent, aggregate_usage


def main() -> None:
    billing = Billing()
    setup = billing.bootstrap(tenant_name="Acme Analytics", owner_email="owner@acme.test")
    test_env, test_key = setup.environments[0]
    prod_env, _ = setup.environments[1]
    print(f"tenant {setup.tenant.id} ({setup.tenant.name})")
    print(f"  test environment {test_env.id}, API key {test_key.key.display_id}")

    test = billing.scope(setup.tenant.id, test_env.id)
    ada = test.customers.create(
        external_id="cust-ada",
        name="Ada Lovelace",
        email="ada@example.com",
        timezone="Europe/London",
        address_country="GB",
        metadata={"plan_hint": "pro"},
    )
    test.customers.create(external_id="cust-grace", name="Grace Hopper", timezone="America/New_York")
    test.customers.update(ada.id, name="Ada King, Countess of Lovelace")

    page = test.customers.list(limit=10)
    print(f"\n{page.total} customers in test:")
    for customer in page.items:
        print(f"  {customer.id}  {customer.external_id:<11} {customer.name} ({customer.timezone})")

    production = billing.scope(setup.tenant.id, prod_env.id)
    try:
        production.customers.get(ada.id)
    except NotFound as exc:
        print(f"\nproduction cannot see test data: {exc.code}: {exc.message}")

    # The same test environment, reached the way an API client would: by its key.
    as_key = billing.authenticate(test_key.api_key)
    print(f"the test key sees {as_key.customers.list().total} customers")

    print("\nnotifications recorded:")
    for event in test.notifications.list().items:
        print(f"  {event.created_at:%H:%M:%S}  {event.event_type:<17} {event.entity_id}")

    simulate_three_months(test)


# -- part 2: a catalogue, and three simulated months with the pure core ------------------------


def build_catalogue(test: Scoped) -> tuple[PlanDetail, dict[str, Meter]]:
    """The API product: $49/month in advance, API calls on slab tiers and e-mail recipients in
    packages of 1,000, both billed in arrear; plus an add-on, a welcome coupon and 20% VAT."""
    calls = test.meters.create(name="API calls", event_name="api.request", aggregation={"type": "COUNT"})
    emails = test.meters.create(
        name="E-mail recipients", event_name="email.sent", aggregation={"type": "SUM", "field": "recipients"}
    )
    api_access = test.features.create(
        name="API access", type="metered", meter_id=calls.id, lookup_key="api-access", unit_plural="calls"
    )
    monthly = {"currency": "usd", "billing_period": "MONTHLY"}
    plan = test.plans.create(
        name="API Pro",
        lookup_key="api-pro",
        prices=[
            {
                **monthly,
                "display_name": "Platform fee",
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "49.00",
                "invoice_cadence": "ADVANCE",
            },
            {  # first 1,000 calls at 2c, next 9,000 at 1.5c, the rest at 1c plus a $5 flat
                **monthly,
                "display_name": "API calls",
                "type": "USAGE",
                "meter_id": calls.id,
                "invoice_cadence": "ARREAR",
                "billing_model": "TIERED",
                "tier_mode": "SLAB",
                "tiers": [
                    {"up_to": 1000, "unit_amount": "0.02"},
                    {"up_to": 10000, "unit_amount": "0.015"},
                    {"up_to": None, "unit_amount": "0.01", "flat_amount": "5"},
                ],
            },
            {  # $2 per started block of 1,000 recipients
                **monthly,
                "display_name": "E-mail recipients",
                "type": "USAGE",
                "meter_id": emails.id,
                "invoice_cadence": "ARREAR",
                "billing_model": "PACKAGE",
                "amount": "2.00",
                "transform_quantity": {"divide_by": 1000},
            },
        ],
        entitlements=[
            {"feature_id": api_access.id, "usage_limit": 1_000_000, "usage_reset_period": "MONTHLY"}
        ],
    )
    test.addons.create(
        name="Priority support",
        lookup_key="priority-support",
        prices=[
            {
                **monthly,
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "99",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    test.coupons.create(
        name="Welcome 10%",
        coupon_code="WELCOME10",
        type="percentage",
        cadence="repeated",
        percentage_off="10",
        duration_in_periods=2,
    )
    test.tax_rates.create(name="VAT", code="VAT20", percentage_value="20")
    print(f"\ncatalogue: plan {plan.name!r} ({plan.id})")
    for price in plan.prices:
        shown = f"{len(price.tiers or ())} tiers" if price.tiers else price.to_dict()["display_amount"]
        print(f"  {price.display_name:<18} {price.type.value:<5} {price.billing_model.value:<8} {shown}")
    print(f"  entitlement: {api_access.name} up to {plan.entitlements[0].usage_limit:,} calls a month")
    return plan, {calls.id: calls, emails.id: emails}


def simulated_events(start: datetime, end: datetime, seed: int = 7) -> list[UsageEvent]:
    """A deterministic stream of API calls and e-mail sends for one customer."""
    rng = random.Random(seed)
    events: list[UsageEvent] = []
    t = start
    n = 0
    while t < end:
        for _ in range(rng.randint(60, 140)):
            n += 1
            events.append(UsageEvent(f"evt_{n}", "api.request", "cust-ada", t, {}))
        n += 1
        events.append(
            UsageEvent(f"evt_{n}", "email.sent", "cust-ada", t, {"recipients": str(rng.randint(50, 400))})
        )
        t += timedelta(hours=1)
    return events


def print_invoice(number: int, draft: InvoiceDraft) -> None:
    print(
        f"\ninvoice {number}  {draft.period_start:%Y-%m-%d} .. {draft.period_end:%Y-%m-%d}"
        f"  ({draft.currency})"
    )
    for line in draft.lines:
        print(
            f"  {line.display_name:<18} {line.period_start:%m-%d}..{line.period_end:%m-%d} "
            f"qty {line.quantity:>8}  {line.amount:>9}"
        )
    print(f"  {'subtotal':<47}{draft.subtotal:>9}")
    print(f"  {'discounts':<47}{-draft.total_discount:>9}")
    print(f"  {'tax':<47}{draft.total_tax:>9}")
    print(f"  {'amount due':<47}{draft.amount_due:>9}")


def _line(price: Price, quantity: Decimal | None = None) -> LineItemInput:
    return LineItemInput(
        price.id,
        price.to_spec(),
        price.type.value,
        price.invoice_cadence.value,
        display_name=price.display_name or price.id,
        quantity=quantity,
    )


def simulate_three_months(test: Scoped) -> None:
    plan, meters = build_catalogue(test)
    start = datetime(2026, 1, 31, 10, 0, tzinfo=UTC)  # anchored on the 31st: Feb clamps, Mar restores
    schedule = BillingSchedule.for_start(start, period=BillingPeriod.MONTHLY, timezone="Europe/London")
    periods = schedule.periods(start, start + timedelta(days=85))
    events = simulated_events(start, periods[-1].end)
    welcome = CouponAssociation("ca_welcome", test.coupons.get_by_code("WELCOME10").to_core(), start)
    vat = test.tax_rates.list(tax_rate_codes=["VAT20"]).items[0].to_core()
    fixed = [p for p in plan.prices if p.meter_id is None]
    usage = [p for p in plan.prices if p.meter_id is not None]
    opening = assemble_invoice(
        InvoiceRequest(
            currency="usd",
            reference_point="period_start",
            period_start=periods[0].start,
            period_end=periods[0].end,
            lines=tuple(_line(p) for p in fixed),
            coupons=(welcome,),
            tax_rates=(vat,),
            as_of=periods[0].start,
        )
    )
    print_invoice(1, opening)
    for number, (period, following) in enumerate(pairwise(periods), start=2):
        lines = [_line(p) for p in fixed]
        for price in usage:
            assert price.meter_id is not None
            meter = meters[price.meter_id].to_spec()
            quantity = aggregate_usage(meter, events, start=period.start, end=period.end).value
            lines.append(_line(price, quantity))
        draft = assemble_invoice(
            InvoiceRequest(
                currency="usd",
                reference_point="period_end",
                period_start=period.start,
                period_end=period.end,
                next_period_end=following.end,
                lines=tuple(lines),
                # The coupon has been used on the number - 1 invoices before this one.
                coupons=(replace(welcome, applications=number - 1),),
                tax_rates=(vat,),
                as_of=period.end,
            )
        )
        print_invoice(number, draft)


if __name__ == "__main__":
    main()
