"""The public hypothesis strategies produce valid values that the calculators accept."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from decimal import Decimal

from hypothesis import given, settings

from billingkit.domain.money import currency_precision
from billingkit.domain.periods import BillingCycle, BillingPeriod, BillingSchedule
from billingkit.domain.pricing import BillingModel, PriceSpec, Tier, TierMode, price_quantity
from billingkit.domain.usage import AggregationType, MeterSpec, UsageEvent, aggregate_usage
from billingkit.testing import strategies as bks


@settings(max_examples=40)
@given(bks.currencies())
def test_currencies_are_lowercase_codes(code: str) -> None:
    assert code == code.lower() and len(code) == 3


@settings(max_examples=40)
@given(bks.money_amounts(currency="jpy", min_value=5, max_value=50))
def test_money_amounts_respect_bounds_and_precision(amount: Decimal) -> None:
    assert Decimal(5) <= amount <= Decimal(50)
    assert amount == amount.quantize(Decimal(1).scaleb(-currency_precision("jpy")))


@settings(max_examples=40)
@given(bks.tiers(min_size=2, max_size=3))
def test_tiers_are_valid(tiers: tuple[Tier, ...]) -> None:
    assert 2 <= len(tiers) <= 3
    assert tiers[-1].up_to is None
    bounds = [t.up_to for t in tiers[:-1]]
    assert all(isinstance(b, int) for b in bounds)
    assert bounds == sorted(set(bounds))  # type: ignore[type-var]


@settings(max_examples=40, deadline=None)
@given(bks.price_specs(billing_model=BillingModel.PACKAGE), bks.quantities())
def test_price_specs_price(spec: PriceSpec, quantity: Decimal) -> None:
    assert spec.billing_model is BillingModel.PACKAGE
    assert spec.transform_quantity is not None
    assert price_quantity(spec, quantity).amount >= 0


@settings(max_examples=40, deadline=None)
@given(bks.price_specs(tier_mode=TierMode.VOLUME))
def test_tier_mode_implies_tiered(spec: PriceSpec) -> None:
    assert spec.billing_model is BillingModel.TIERED and spec.tier_mode is TierMode.VOLUME


@settings(max_examples=40, deadline=None)
@given(bks.billing_schedules(cycle=BillingCycle.CALENDAR, period=BillingPeriod.QUARTERLY))
def test_calendar_schedules_are_aligned(schedule: BillingSchedule) -> None:
    local = schedule.anchor.astimezone(schedule._zone)
    assert (local.day, local.month % 3) == (1, 1)


@settings(max_examples=40)
@given(bks.billing_periods(recurring_only=False))
def test_billing_periods(period: BillingPeriod) -> None:
    assert period in set(BillingPeriod)


METER = MeterSpec("api_call", AggregationType.SUM, field="n")


@settings(max_examples=30, deadline=None)
@given(bks.usage_event_streams(meter=METER, max_size=10))
def test_event_streams(events: list[UsageEvent]) -> None:
    assert all(isinstance(e, UsageEvent) for e in events)
    result = aggregate_usage(
        METER,
        events,
        start=datetime(2023, 12, 1).astimezone(),
        end=datetime(2024, 3, 1).astimezone(),
    )
    assert result.event_count <= len({e.event_id for e in events})


def test_testing_package_does_not_import_hypothesis() -> None:
    code = "import sys, billingkit.testing; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
