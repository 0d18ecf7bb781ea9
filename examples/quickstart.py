"""billingkit quick start: runs on the embedded default (in-memory store), no setup needed.

    bash scripts/dev.sh run

Part 1 uses the stored system: a tenant with test and production environments, customers, isolation
between environments, API keys and the notification events changes record.

Part 2 is the library's main job. It builds an API product's catalogue (meters, a metered feature, a
plan with a flat fee, tiered and package usage prices and an included allowance), subscribes a
customer, then moves a test clock through three billing periods. Each month the customer's usage
events are ingested and ``billing.run_due()`` bills the period that ended: the usage of that period
in arrear, the next period's fee in advance. The invoices printed are the stored ones, numbered
``INV-YYYYMM-NNNNN``.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from billingkit import Billing, Invoice, NotFound, PlanDetail, Scoped, TestClock

START = datetime(2026, 1, 31, 10, 0, tzinfo=UTC)  # anchored on the 31st: Feb clamps, Mar restores


def main() -> None:
    clock = TestClock(START)
    billing = Billing(clock=clock)
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

    bill_three_months(billing, clock, test, ada.id)


# -- part 2: a catalogue, a subscription, and three billed months ------------------------------


def build_catalogue(test: Scoped) -> PlanDetail:
    """The API product: $49/month in advance; API calls on slab tiers (the first 10,000 a month
    included) and e-mail recipients in packages of 1,000, both billed in arrear."""
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
        entitlements=[  # a soft limit: 10,000 calls a month included, the rest billed
            {
                "feature_id": api_access.id,
                "usage_limit": 10_000,
                "usage_reset_period": "MONTHLY",
                "is_soft_limit": True,
            }
        ],
    )
    print(f"\ncatalogue: plan {plan.name!r} ({plan.id})")
    for price in plan.prices:
        shown = f"{len(price.tiers or ())} tiers" if price.tiers else price.to_dict()["display_amount"]
        print(f"  {price.display_name:<18} {price.type.value:<5} {price.billing_model.value:<8} {shown}")
    print(f"  entitlement: {api_access.name}, {plan.entitlements[0].usage_limit:,} calls a month included")
    return plan


def usage_events(start: datetime, end: datetime, seed: int) -> list[dict[str, object]]:
    """A deterministic month of API calls and e-mail sends for one customer, as ingestion takes them."""
    rng = random.Random(seed)
    events: list[dict[str, object]] = []
    t = start
    while t < end:
        stamp = t.isoformat()
        for i in range(rng.randint(10, 50)):
            events.append(
                {"event_id": f"call-{stamp}-{i}", "event_name": "api.request",
                 "external_customer_id": "cust-ada", "timestamp": stamp}
            )  # fmt: skip
        events.append(
            {"event_id": f"mail-{stamp}", "event_name": "email.sent", "external_customer_id": "cust-ada",
             "timestamp": stamp, "properties": {"recipients": rng.randint(50, 400)}}
        )  # fmt: skip
        t += timedelta(hours=1)
    return events


def print_invoice(invoice: Invoice) -> None:
    period = f"{invoice.period_start:%Y-%m-%d} .. {invoice.period_end:%Y-%m-%d}"
    print(f"\n{invoice.invoice_number}  {invoice.billing_reason.value:<20} {period}  ({invoice.currency})")
    for line in invoice.line_items:
        billed = line.adjusted_entitlement_quantity
        note = (
            f"  ({line.quantity - billed} included)" if billed is not None and billed != line.quantity else ""
        )
        print(
            f"  {line.display_name:<18} {line.period_start:%m-%d}..{line.period_end:%m-%d} "
            f"qty {line.quantity:>8}  {line.amount:>9}{note}"
        )
    print(f"  {'amount due':<47}{invoice.amount_due:>9}   due {invoice.due_date:%Y-%m-%d}")


def bill_three_months(billing: Billing, clock: TestClock, test: Scoped, customer_id: str) -> None:
    plan = build_catalogue(test)
    sub = test.subscriptions.create(
        customer_id=customer_id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        payment_terms="15 NET",
    )
    first = f"{sub.current_period_start:%Y-%m-%d} .. {sub.current_period_end:%Y-%m-%d}"
    print(f"\nsubscription {sub.id}: {sub.subscription_status.value}, first period {first} ({sub.timezone})")
    (opening,) = test.invoices.list(subscription_id=sub.id).items
    print_invoice(opening)
    for month in range(3):
        sub = test.subscriptions.get(sub.id)
        events = usage_events(sub.current_period_start, sub.current_period_end, seed=month)
        for i in range(0, len(events), billing.max_bulk_events):
            test.events.ingest_bulk(events[i : i + billing.max_bulk_events])
        clock.set(sub.current_period_end + timedelta(hours=1))
        report = billing.run_due()
        print(f"\n{clock.now():%Y-%m-%d %H:%M} run_due: {len(events):,} events this period -> {report!r}")
        for invoice in report.invoices:
            print_invoice(invoice)
    sub = test.subscriptions.get(sub.id)
    print(f"\nsubscription now at {sub.current_period_start:%Y-%m-%d} .. {sub.current_period_end:%Y-%m-%d}, "
          f"version {sub.version}")  # fmt: skip


if __name__ == "__main__":
    main()
