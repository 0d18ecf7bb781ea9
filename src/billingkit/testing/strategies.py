"""Hypothesis strategies for billingkit values, for your own property-based tests.

Two families live here: requests the main API takes (:func:`catalogues`, :func:`plan_requests`,
:func:`customer_requests`, :func:`subscription_requests`, :func:`usage_event_requests`... from
:mod:`billingkit.testing.inputs`, see docs/testing.md), and the values of the pricing and period
core below (:func:`price_specs`, :func:`billing_schedules`, :func:`usage_event_streams`...).

Every strategy returns valid values only and shrinks toward simple ones (USD, small amounts, one
tier, UTC, monthly). Bounds are keyword-only. Requires the ``testing`` extra
(``pip install 'billingkit[testing]'``); this module is not imported by ``billingkit.testing``.

Example::

    from hypothesis import given
    from billingkit.domain.pricing import TierMode, price_quantity
    from billingkit.testing import strategies as bks

    @given(bks.price_specs(tier_mode=TierMode.SLAB), bks.quantities(), bks.quantities())
    def test_slab_never_cheaper_with_more_usage(spec, a, b):
        low, high = sorted((a, b))
        assert price_quantity(spec, low).amount <= price_quantity(spec, high).amount
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "billingkit.testing.strategies needs hypothesis: pip install 'billingkit[testing]'"
    ) from exc

from billingkit.domain.money import currency_precision
from billingkit.domain.periods import BillingCycle, BillingPeriod, BillingSchedule
from billingkit.domain.pricing import (
    BillingModel,
    PriceSpec,
    QuantityRounding,
    Tier,
    TierMode,
    TransformQuantity,
)
from billingkit.domain.usage import MeterSpec, UsageEvent
from billingkit.testing.inputs import (
    AGGREGATIONS,
    FILTER_KEY,
    FILTER_MISS,
    FILTER_VALUES,
    PRICE_SHAPES,
    VALUE_FIELD,
    Catalogue,
    CreatedCatalogue,
    catalogues,
    customer_requests,
    meter_requests,
    names,
    plan_requests,
    price_requests,
    subscription_requests,
    usage_event_requests,
)

__all__ = [
    "AGGREGATIONS",
    "CURRENCIES",
    "FILTER_KEY",
    "FILTER_MISS",
    "FILTER_VALUES",
    "PRICE_SHAPES",
    "RECURRING_PERIODS",
    "TIME_ZONES",
    "VALUE_FIELD",
    "Catalogue",
    "CreatedCatalogue",
    "billing_periods",
    "billing_schedules",
    "catalogues",
    "currencies",
    "customer_requests",
    "instants",
    "meter_requests",
    "money_amounts",
    "names",
    "plan_requests",
    "price_requests",
    "price_specs",
    "quantities",
    "subscription_requests",
    "tiers",
    "unit_amounts",
    "usage_event_requests",
    "usage_event_streams",
]

#: Currencies drawn by :func:`currencies`, simplest first (2, 0 and 3 decimal places).
CURRENCIES = ("usd", "eur", "inr", "jpy", "kwd", "gbp")
#: Time zones drawn by schedules: UTC first, then zones with DST and odd offsets.
TIME_ZONES = (
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/Santiago",
)
#: Recurring billing periods, monthly first.
RECURRING_PERIODS = (
    BillingPeriod.MONTHLY,
    BillingPeriod.DAILY,
    BillingPeriod.WEEKLY,
    BillingPeriod.QUARTERLY,
    BillingPeriod.HALF_YEARLY,
    BillingPeriod.ANNUAL,
)


def currencies() -> st.SearchStrategy[str]:
    """Lowercase ISO currency codes (usd, eur, inr, jpy, kwd, gbp)."""
    return st.sampled_from(CURRENCIES)


def money_amounts(
    *,
    currency: str = "usd",
    min_value: Decimal | int | str = 0,
    max_value: Decimal | int | str = 10_000,
) -> st.SearchStrategy[Decimal]:
    """Decimal amounts in ``[min_value, max_value]`` at ``currency``'s precision (0.01 for usd)."""
    places = currency_precision(currency)
    return st.decimals(
        min_value=Decimal(min_value),
        max_value=Decimal(max_value),
        places=places,
        allow_nan=False,
        allow_infinity=False,
    )


def unit_amounts(
    *, min_value: Decimal | int | str = 0, max_value: Decimal | int | str = 100, places: int = 4
) -> st.SearchStrategy[Decimal]:
    """Per-unit prices with up to ``places`` decimals (e.g. 0.0025 per API call)."""
    return st.decimals(
        min_value=Decimal(min_value),
        max_value=Decimal(max_value),
        places=places,
        allow_nan=False,
        allow_infinity=False,
    )


def quantities(*, max_value: int = 100_000, fractional: bool = False) -> st.SearchStrategy[Decimal]:
    """Non-negative quantities up to ``max_value``; whole numbers unless ``fractional``."""
    if fractional:
        return st.decimals(min_value=0, max_value=max_value, places=3, allow_nan=False, allow_infinity=False)
    return st.integers(min_value=0, max_value=max_value).map(Decimal)


def tiers(
    *, min_size: int = 1, max_size: int = 4, max_up_to: int = 10_000
) -> st.SearchStrategy[tuple[Tier, ...]]:
    """Valid tier lists: strictly increasing ``up_to`` values, the last tier open."""

    @st.composite
    def build(draw: Any) -> tuple[Tier, ...]:
        count = draw(st.integers(min_value=min_size, max_value=max_size))
        bounds = sorted(
            draw(
                st.sets(
                    st.integers(min_value=1, max_value=max_up_to),
                    min_size=count - 1,
                    max_size=count - 1,
                )
            )
        )
        result = []
        for up_to in [*bounds, None]:
            result.append(
                Tier(
                    up_to=up_to,
                    unit_amount=draw(unit_amounts(max_value=10)),
                    flat_amount=draw(money_amounts(max_value=100)),
                )
            )
        return tuple(result)

    return build()


def price_specs(
    *,
    currency: str | None = None,
    billing_model: BillingModel | None = None,
    tier_mode: TierMode | None = None,
    with_conversion_rate: bool | None = None,
) -> st.SearchStrategy[PriceSpec]:
    """Valid :class:`PriceSpec` values. Fix any of the keyword arguments to narrow the draw;
    ``tier_mode`` implies ``TIERED``."""

    @st.composite
    def build(draw: Any) -> PriceSpec:
        code = currency or draw(currencies())
        model = billing_model or (
            BillingModel.TIERED if tier_mode else draw(st.sampled_from(list(BillingModel)))
        )
        use_rate = draw(st.booleans()) if with_conversion_rate is None else with_conversion_rate
        rate = (
            draw(
                st.decimals(min_value=Decimal("0.01"), max_value=100, places=4).filter(
                    lambda value: value > 0
                )
            )
            if use_rate
            else None
        )
        if model is BillingModel.TIERED:
            mode = tier_mode or draw(st.sampled_from(list(TierMode)))
            return PriceSpec(
                billing_model=model,
                amount=Decimal(0),
                currency=code,
                tier_mode=mode,
                tiers=draw(tiers()),
                conversion_rate=rate,
            )
        transform = None
        if model is BillingModel.PACKAGE:
            transform = TransformQuantity(
                divide_by=draw(st.integers(min_value=1, max_value=1000)),
                round=draw(st.sampled_from(list(QuantityRounding))),
            )
        return PriceSpec(
            billing_model=model,
            amount=draw(money_amounts(currency=code, max_value=1000)),
            currency=code,
            transform_quantity=transform,
            conversion_rate=rate,
            min_quantity=draw(st.none() | st.integers(min_value=0, max_value=10).map(Decimal)),
        )

    return build()


def billing_periods(*, recurring_only: bool = True) -> st.SearchStrategy[BillingPeriod]:
    """Billing periods, MONTHLY first; ``recurring_only=False`` adds ONETIME."""
    choices = list(RECURRING_PERIODS)
    if not recurring_only:
        choices.append(BillingPeriod.ONETIME)
    return st.sampled_from(choices)


def instants(
    *,
    min_value: datetime = datetime(2000, 1, 1, tzinfo=UTC),
    max_value: datetime = datetime(2060, 1, 1, tzinfo=UTC),
) -> st.SearchStrategy[datetime]:
    """Timezone-aware UTC instants with whole seconds."""
    span = int((max_value - min_value).total_seconds())
    return st.integers(min_value=0, max_value=span).map(
        lambda seconds: min_value + timedelta(seconds=seconds)
    )


def billing_schedules(
    *,
    period: BillingPeriod | None = None,
    cycle: BillingCycle | None = None,
    max_count: int = 3,
    time_zones: tuple[str, ...] = TIME_ZONES,
) -> st.SearchStrategy[BillingSchedule]:
    """Valid schedules: anchors on any day incl. 29-31 (and 29 Feb), at any time of day, in
    ``time_zones``; calendar schedules are derived from a start instant."""

    @st.composite
    def build(draw: Any) -> BillingSchedule:
        chosen_period = period or draw(billing_periods())
        chosen_cycle = cycle or draw(st.sampled_from(list(BillingCycle)))
        count = draw(st.integers(min_value=1, max_value=max_count))
        zone = draw(st.sampled_from(time_zones))
        if chosen_cycle is BillingCycle.CALENDAR:
            return BillingSchedule.for_start(
                draw(instants()),
                period=chosen_period,
                count=count,
                cycle=chosen_cycle,
                timezone=zone,
            )
        year = draw(st.integers(min_value=2000, max_value=2050))
        month = draw(st.integers(min_value=1, max_value=12))
        day = draw(st.sampled_from([1, 15, 28, 29, 30, 31]))
        while True:
            try:
                base = datetime(year, month, day)
                break
            except ValueError:
                day -= 1
        seconds = draw(st.integers(min_value=0, max_value=86399))
        anchor = (base + timedelta(seconds=seconds)).replace(tzinfo=UTC)
        return BillingSchedule(
            anchor=anchor, period=chosen_period, count=count, cycle=chosen_cycle, timezone=zone
        )

    return build()


def usage_event_streams(
    *,
    meter: MeterSpec,
    start: datetime = datetime(2024, 1, 1, tzinfo=UTC),
    end: datetime = datetime(2024, 2, 1, tzinfo=UTC),
    customers: tuple[str, ...] = ("cust_a", "cust_b"),
    max_size: int = 30,
    duplicates: bool = True,
) -> st.SearchStrategy[list[UsageEvent]]:
    """Lists of events for ``meter`` inside and around ``[start, end)``: matching and other event
    names, filter values that pass or not, numeric, string-numeric and junk property values, and
    (when ``duplicates``) re-sent ids that must be ignored."""

    span = int((end - start).total_seconds())
    filter_values = [value for f in meter.filters for value in f.values] or ["x"]

    @st.composite
    def build(draw: Any) -> list[UsageEvent]:
        size = draw(st.integers(min_value=0, max_value=max_size))
        events: list[UsageEvent] = []
        for index in range(size):
            properties: dict[str, Any] = {}
            for meter_filter in meter.filters:
                if draw(st.integers(0, 9)) < 9:
                    properties[meter_filter.key] = draw(st.sampled_from([*filter_values, "other"]))
            value = draw(
                st.one_of(
                    st.integers(min_value=0, max_value=1000),
                    st.integers(min_value=0, max_value=1000).map(str),
                    st.decimals(min_value=0, max_value=1000, places=2),
                    st.sampled_from([None, "n/a", True]),
                )
            )
            if meter.field is not None:
                properties[meter.field] = value
            if meter.group_by is not None:
                properties[meter.group_by] = draw(st.sampled_from(["a", "b", "c"]))
            offset = draw(st.integers(min_value=-3600, max_value=span + 3600))
            events.append(
                UsageEvent(
                    event_id=f"evt_{index}",
                    event_name=draw(st.sampled_from([meter.event_name, "other_event"]))
                    if draw(st.integers(0, 9)) == 0
                    else meter.event_name,
                    external_customer_id=draw(st.sampled_from(customers)),
                    timestamp=start + timedelta(seconds=offset),
                    properties=properties,
                )
            )
        if duplicates and events:
            copies = draw(st.lists(st.sampled_from(events), max_size=5))
            events.extend(
                UsageEvent(
                    event_id=copy.event_id,
                    event_name=copy.event_name,
                    external_customer_id=copy.external_customer_id,
                    timestamp=copy.timestamp + timedelta(seconds=7),
                    properties={**copy.properties, "resent": True},
                )
                for copy in copies
            )
        return events

    return build()
