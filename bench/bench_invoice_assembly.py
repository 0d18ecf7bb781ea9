"""Benchmark: pure invoice assembly for a 10-line subscription, on one core.

Run: ``python -m bench invoice_assembly [-- --seconds 3 --no-profile]``.

The subscription has tiered SLAB and VOLUME usage lines, a PACKAGE usage line, flat fees (one
prorated, one ARREAR), a usage line with a commitment (overage factor 1.5, true-up), a line coupon, an
invoice-level coupon, a percentage tax and a credit grant. The request (the snapshot a service would
load) is built once; each iteration assembles the invoice from it, as a period-end run does. A second
figure includes building the request (validation) every time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

from billingkit.domain.commitments import LineCommitment
from billingkit.domain.coupons import Coupon, CouponAssociation
from billingkit.domain.credits import CreditSource
from billingkit.domain.invoice_lines import LineItemInput
from billingkit.domain.invoicing import InvoiceDraft, InvoiceRequest, assemble_invoice
from billingkit.domain.pricing import PriceSpec, Tier, TransformQuantity
from billingkit.domain.taxes import TaxRate

TARGET_PER_SECOND = 20_000

PERIOD_START = datetime(2025, 1, 1, tzinfo=UTC)
PERIOD_END = datetime(2025, 2, 1, tzinfo=UTC)
NEXT_END = datetime(2025, 3, 1, tzinfo=UTC)


def build_request() -> InvoiceRequest:
    """The 10-line subscription snapshot at its period end."""
    usd = "usd"
    slab = PriceSpec(
        billing_model="TIERED",
        amount=Decimal(0),
        currency=usd,
        tier_mode="SLAB",  # type: ignore[arg-type]
        tiers=(
            Tier(1000, Decimal("0.02")),
            Tier(10000, Decimal("0.015")),
            Tier(None, Decimal("0.01"), Decimal("5")),
        ),
    )
    volume = PriceSpec(
        billing_model="TIERED",
        amount=Decimal(0),
        currency=usd,
        tier_mode="VOLUME",  # type: ignore[arg-type]
        tiers=(Tier(100, Decimal("1.00")), Tier(500, Decimal("0.80")), Tier(None, Decimal("0.50"))),
    )
    package = PriceSpec(
        billing_model="PACKAGE",
        amount=Decimal("5.00"),
        currency=usd,  # type: ignore[arg-type]
        transform_quantity=TransformQuantity(1000),
    )
    per_unit = PriceSpec(billing_model="FLAT_FEE", amount=Decimal("0.002"), currency=usd)  # type: ignore[arg-type]

    def flat(amount: str) -> PriceSpec:
        return PriceSpec(billing_model="FLAT_FEE", amount=Decimal(amount), currency=usd)  # type: ignore[arg-type]

    lines = (
        LineItemInput("li_platform", flat("49.00"), "FIXED", "ADVANCE", display_name="Platform"),
        LineItemInput(
            "li_seats", flat("12.00"), "FIXED", "ADVANCE", display_name="Seats", quantity=Decimal(7)
        ),
        LineItemInput(
            "li_support",
            flat("99.00"),
            "FIXED",
            "ADVANCE",
            display_name="Support",
            proration_coefficient=Decimal("0.5"),
        ),
        LineItemInput("li_onboarding", flat("150.00"), "FIXED", "ARREAR", display_name="Onboarding"),
        LineItemInput(
            "li_api",
            slab,
            "USAGE",
            "ARREAR",
            display_name="API calls",
            quantity=Decimal(23456),
            allowance=Decimal(1000),
        ),
        LineItemInput(
            "li_storage", volume, "USAGE", "ARREAR", display_name="Storage GB", quantity=Decimal(321)
        ),
        LineItemInput(
            "li_emails", package, "USAGE", "ARREAR", display_name="Emails", quantity=Decimal(12345)
        ),
        LineItemInput(
            "li_compute",
            per_unit,
            "USAGE",
            "ARREAR",
            display_name="Compute seconds",
            quantity=Decimal(40000),
            commitment=LineCommitment("amount", Decimal("100"), Decimal("1.5"), True),
        ),
        LineItemInput("li_events", slab, "USAGE", "ARREAR", display_name="Events", quantity=Decimal(5000)),
        LineItemInput(
            "li_bandwidth", volume, "USAGE", "ARREAR", display_name="Bandwidth", quantity=Decimal(80)
        ),
    )
    line_coupon = CouponAssociation(
        "ca_line",
        Coupon("cpn_line", "percentage", "forever", percentage_off=Decimal(15)),
        PERIOD_START,
        line_item_id="li_api",
    )
    invoice_coupon = CouponAssociation(
        "ca_inv",
        Coupon("cpn_inv", "fixed", "repeated", amount_off=Decimal("25"), currency=usd, duration_in_periods=3),
        PERIOD_START,
    )
    return InvoiceRequest(
        currency=usd,
        reference_point="period_end",
        period_start=PERIOD_START,
        period_end=PERIOD_END,
        next_period_end=NEXT_END,
        lines=lines,
        coupons=(line_coupon, invoice_coupon),
        tax_rates=(TaxRate("tax_vat", "percentage", percentage_value=Decimal(18)),),
        credit_sources=(CreditSource("cg_1", Decimal("40"), kind="credit_grant", priority=1),),
        as_of=PERIOD_END,
    )


def _rate(fn: Callable[[], object], seconds: float) -> tuple[float, int]:
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(200):
            fn()
        count += 200
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start), count


def main(argv: list[str]) -> None:
    """Print assemblies per second (request prebuilt, and request rebuilt) and a cProfile summary."""
    parser = argparse.ArgumentParser(prog="bench invoice_assembly")
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--top", type=int, default=15, help="profile rows to show")
    args = parser.parse_args(argv)

    request = build_request()
    draft: InvoiceDraft = assemble_invoice(request)
    print(
        f"invoice: {len(draft.lines)} lines, subtotal {draft.subtotal}, discount "
        f"{draft.total_discount}, tax {draft.total_tax}, credits "
        f"{draft.total_prepaid_credits_applied}, total {draft.total} {draft.currency}"
    )
    for _ in range(2000):  # warm caches (babel precision lookups, method caches)
        assemble_invoice(request)

    rate, count = _rate(lambda: assemble_invoice(request), args.seconds)
    verdict = "OK" if rate >= TARGET_PER_SECOND else "BELOW TARGET"
    print(
        f"assemble_invoice (request prebuilt): {rate:,.0f} assemblies/s "
        f"({1e6 / rate:.1f} us each, {count:,} runs) target {TARGET_PER_SECOND:,}/s: {verdict}"
    )
    rate2, count2 = _rate(lambda: assemble_invoice(build_request()), args.seconds)
    print(
        f"build request + assemble:            {rate2:,.0f} assemblies/s "
        f"({1e6 / rate2:.1f} us each, {count2:,} runs)"
    )
    if args.no_profile:
        return
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5000):
        assemble_invoice(request)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime")
    stats.print_stats(args.top)
    print("profile of 5,000 assemblies (by own time):")
    lines = out.getvalue().splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    print("\n".join(lines[start:]))
