"""``bench billing``'s checks of a run: the count of its invoices, the amounts of a sample
against the event data computed with plain arithmetic, gap-free invoice numbers."""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import text

from bench.billing_workload import (
    ADDON_FEE,
    ADDON_PER_REQUEST,
    COUPON_PERCENT,
    PLATFORM_FEE,
    TAX_PERCENT,
    WALLET_CREDITS,
    Cohort,
    expected_package,
    expected_slab,
)
from bench.stores import Store
from billingkit import Billing, Scoped
from billingkit.domain.money import round_money
from billingkit.storage.sql.types import sqlite_time

__all__ = ["SAMPLE", "StoredInvoice", "check_run", "stored_invoices"]

SAMPLE = 20


@dataclass(frozen=True)
class StoredInvoice:
    id: str
    invoice_number: str | None


def stored_invoices(store: Store, billing: Billing, cohort: Cohort) -> list[Any]:
    """The cohort's cycle invoices as stored (id and number), for a run that kept none."""
    engine = billing.storage.engine  # type: ignore[attr-defined]
    start = cohort.start if store.kind == "postgres" else sqlite_time(cohort.start)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT id, invoice_number FROM invoices WHERE tenant_id = :t AND environment_id = :e"
                " AND billing_reason = 'SUBSCRIPTION_CYCLE' AND period_start = :s"
            ),
            {"t": store.tenant_id, "e": store.environment_id, "s": start},
        ).all()
    return [StoredInvoice(row.id, row.invoice_number) for row in rows]


def check_run(
    store: Store,
    billing: Billing,
    scoped: Scoped,
    cohort: Cohort,
    invoices: list[Any],
    seed: int,
    first_number: int | None = None,
) -> None:
    """Count, amounts of a sample against the event data, gap-free numbers (from ``first_number``
    when given); raises on a mismatch."""
    if len(invoices) != cohort.size:
        raise SystemExit(
            f"{cohort.name}: the run issued {len(invoices):,} invoices, expected {cohort.size:,}"
        )
    engine = billing.storage.engine  # type: ignore[attr-defined]
    scope = {"t": store.tenant_id, "e": store.environment_id}
    with engine.connect() as conn:
        stored = conn.execute(
            text(
                "SELECT count(*) FROM invoices WHERE tenant_id = :t AND environment_id = :e"
                " AND billing_reason = 'SUBSCRIPTION_CYCLE' AND period_start = :s"
            ),
            {**scope, "s": cohort.start if store.kind == "postgres" else sqlite_time(cohort.start)},
        ).scalar_one()
        due = conn.execute(
            text("SELECT count(*) FROM subscriptions WHERE next_run_at <= :n"),
            {"n": cohort.run_at if store.kind == "postgres" else sqlite_time(cohort.run_at)},
        ).scalar_one()
    if stored != cohort.size or due:
        raise SystemExit(f"{cohort.name}: {stored:,} cycle invoices stored, {due:,} subscriptions still due")

    rnd = random.Random(seed)
    for invoice in rnd.sample(invoices, SAMPLE):
        got = scoped.invoices.get(invoice.id)  # as stored
        external = scoped.customers.get(got.customer_id).external_id
        calls, total_bytes = cohort.usage[external]
        expected = {
            "Platform fee": (Decimal(1), PLATFORM_FEE),
            "API requests": (Decimal(calls), expected_slab(calls)),
            "Storage": (Decimal(total_bytes), expected_package(total_bytes)),
        }
        if cohort.boosted(external):
            expected["Boost fee"] = (Decimal(1), ADDON_FEE)
            expected["Boost requests"] = (Decimal(calls), round_money(calls * ADDON_PER_REQUEST, "usd"))
        lines = {line.display_name: (line.quantity, line.amount) for line in got.line_items}
        subtotal = sum((amount for _, amount in expected.values()), Decimal(0))
        discount = tax = Decimal(0)
        if cohort.adjusted(external):  # 10 % off, then 20 % tax on what is left, each rounded
            discount = round_money(subtotal * COUPON_PERCENT / 100, "usd")
            tax = round_money((subtotal - discount) * TAX_PERCENT / 100, "usd")
        # The wallet's credits pay the lines after discounts (never the tax), up to what it holds.
        credits = min(WALLET_CREDITS, subtotal - discount) if cohort.funded(external) else Decimal(0)
        total = subtotal - discount + tax - credits
        figures = (
            got.subtotal,
            got.total_discount,
            got.total_tax,
            got.total_prepaid_credits_applied,
            got.total,
            got.amount_due,
        )
        if lines != expected or figures != (subtotal, discount, tax, credits, total, total):
            raise SystemExit(
                f"{cohort.name}: invoice {got.id} of {external}: lines {lines}, figures {figures}; "
                f"expected {expected}, subtotal {subtotal}, discount {discount}, tax {tax}, "
                f"credits {credits}, total {total}"
            )
        if (got.period_start, got.invoice_status.value) != (cohort.start, "FINALIZED"):
            raise SystemExit(f"{cohort.name}: invoice {got.id}: {got.period_start} {got.invoice_status}")

    key = f"INV-{cohort.run_at:%Y%m}-"
    numbers = sorted(int(str(i.invoice_number).removeprefix(key)) for i in invoices)
    first = numbers[0] if first_number is None else first_number
    if numbers != list(range(first, first + cohort.size)):
        raise SystemExit(
            f"{cohort.name}: invoice numbers {numbers[0]}..{numbers[-1]} ({len(set(numbers))} distinct) "
            f"are not {first}..{first + cohort.size - 1}"
        )
