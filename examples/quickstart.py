"""billingkit quick start: runs on the embedded default (in-memory store), no setup needed.

    bash scripts/dev.sh run

Part 1 uses the stored system: a tenant with test and production environments, customers, isolation
between environments, API keys and the notification events changes record.

Part 2 simulates three months of a usage-priced plan with the pure billing core
(``billingkit.domain``): billing periods from the customer's anchor, usage aggregated from raw events,
and invoices assembled with tiered, package and flat prices, a coupon and tax. Subscriptions that
store these invoices arrive with the subscriptions milestone; the arithmetic is already the real one.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise

from billingkit import Billing, NotFound
from billingkit.domain.coupons import Coupon, CouponAssociation
from billingkit.domain.invoice_lines import LineItemInput
from billingkit.domain.invoicing import InvoiceDraft, InvoiceRequest, assemble_invoice
from billingkit.domain.periods import BillingPeriod, BillingSchedule
from billingkit.domain.pricing import BillingModel, PriceSpec, Tier, TierMode, TransformQuantity
from billingkit.domain.taxes import TaxRate
from billingkit.domain.usage import AggregationType, MeterSpec, UsageEvent, aggregate_usage


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


# -- part 2: three simulated months with the pure core ----------------------------------------

API_CALLS = MeterSpec(event_name="api.request", aggregation=AggregationType.COUNT)
EMAILS = MeterSpec(event_name="email.sent", aggregation=AggregationType.SUM, field="recipients")
PLATFORM = PriceSpec(billing_model=BillingModel.FLAT_FEE, amount=Decimal("49.00"), currency="usd")
API_PRICE = PriceSpec(  # first 1,000 calls at 2c, next 9,000 at 1.5c, the rest at 1c plus a $5 flat
    billing_model=BillingModel.TIERED,
    amount=Decimal(0),
    currency="usd",
    tier_mode=TierMode.SLAB,
    tiers=(
        Tier(1000, Decimal("0.02")),
        Tier(10000, Decimal("0.015")),
        Tier(None, Decimal("0.01"), Decimal("5")),
    ),
)
EMAIL_PRICE = PriceSpec(  # $2 per started block of 1,000 recipients
    billing_model=BillingModel.PACKAGE,
    amount=Decimal("2.00"),
    currency="usd",
    transform_quantity=TransformQuantity(1000),
)


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


def simulate_three_months() -> None:
    start = datetime(2026, 1, 31, 10, 0, tzinfo=UTC)  # anchored on the 31st: Feb clamps, Mar restores
    schedule = BillingSchedule.for_start(start, period=BillingPeriod.MONTHLY, timezone="Europe/London")
    periods = schedule.periods(start, start + timedelta(days=85))
    events = simulated_events(start, periods[-1].end)
    welcome = CouponAssociation(
        "ca_welcome",
        Coupon("cpn_welcome", "percentage", "repeated", percentage_off=Decimal(10), duration_in_periods=2),
        start,
    )
    vat = TaxRate("tax_vat", "percentage", percentage_value=Decimal(20))
    print("\nsimulated plan 'API Pro': $49/month in advance, tiered API calls, e-mail packages")
    opening = assemble_invoice(
        InvoiceRequest(
            currency="usd",
            reference_point="period_start",
            period_start=periods[0].start,
            period_end=periods[0].end,
            lines=(LineItemInput("li_platform", PLATFORM, "FIXED", "ADVANCE", display_name="Platform fee"),),
            coupons=(welcome,),
            tax_rates=(vat,),
            as_of=periods[0].start,
        )
    )
    print_invoice(1, opening)
    for number, (period, following) in enumerate(pairwise(periods), start=2):
        calls = aggregate_usage(API_CALLS, events, start=period.start, end=period.end).value
        emails = aggregate_usage(EMAILS, events, start=period.start, end=period.end).value
        lines = (
            LineItemInput("li_platform", PLATFORM, "FIXED", "ADVANCE", display_name="Platform fee"),
            LineItemInput("li_api", API_PRICE, "USAGE", "ARREAR", display_name="API calls", quantity=calls),
            LineItemInput(
                "li_email", EMAIL_PRICE, "USAGE", "ARREAR", display_name="E-mail recipients", quantity=emails
            ),
        )
        draft = assemble_invoice(
            InvoiceRequest(
                currency="usd",
                reference_point="period_end",
                period_start=period.start,
                period_end=period.end,
                next_period_end=following.end,
                lines=lines,
                # The coupon has been used on the number - 1 invoices before this one.
                coupons=(replace(welcome, applications=number - 1),),
                tax_rates=(vat,),
                as_of=period.end,
            )
        )
        print_invoice(number, draft)


if __name__ == "__main__":
    main()
    simulate_three_months()
