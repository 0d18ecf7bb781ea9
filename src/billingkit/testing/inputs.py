"""Hypothesis strategies for what the main API takes: meters, plans with prices, customers,
subscriptions and usage event streams.

Every value drawn is a request the library accepts as it is (``scoped.plans.create(request)``,
``scoped.customers.create(request)``, ``scoped.events.ingest_bulk(events)``), and shrinks toward
the simplest one (one flat monthly price in usd, one customer, few events). Requests that name
other resources take them as arguments: draw the meters, create them, then draw a plan over their
ids; or draw a whole :class:`Catalogue` and let :meth:`Catalogue.create` do both. Re-exported by
:mod:`billingkit.testing.strategies`; requires the ``testing`` extra.

Example::

    from hypothesis import given, strategies as st
    from billingkit.testing import strategies as bks

    @given(bks.catalogues(), bks.customer_requests(), st.data())
    def test_subscribing_never_fails(scope, catalogue, customer, data):
        created = catalogue.create(scope)
        who = scope.customers.create(customer)
        scope.subscriptions.create(data.draw(bks.subscription_requests(created.plan, customer_id=who.id)))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "billingkit.testing.inputs needs hypothesis: pip install 'billingkit[testing]'"
    ) from exc

from billingkit.domain.catalog import Meter, PlanDetail, PriceType
from billingkit.domain.money import currency_precision
from billingkit.domain.periods import BillingCycle, BillingPeriod, InvoiceCadence
from billingkit.domain.pricing import BillingModel, TierMode
from billingkit.domain.subscriptions import PaymentTerms
from billingkit.domain.usage_meters import AggregationType
from billingkit.services.customers import CustomerCreate
from billingkit.services.meters import MeterCreate
from billingkit.services.plans import PlanCreate
from billingkit.services.prices import PriceInput
from billingkit.services.subscriptions import SubscriptionCreate

if TYPE_CHECKING:
    from billingkit.facade.scoped import Scoped

__all__ = [
    "AGGREGATIONS",
    "FILTER_KEY",
    "FILTER_MISS",
    "FILTER_VALUES",
    "PRICE_SHAPES",
    "VALUE_FIELD",
    "Catalogue",
    "CreatedCatalogue",
    "catalogues",
    "customer_requests",
    "meter_requests",
    "names",
    "plan_requests",
    "price_requests",
    "subscription_requests",
    "usage_event_requests",
]

#: Meter aggregations drawn by :func:`meter_requests`, simplest first.
AGGREGATIONS = (
    AggregationType.COUNT,
    AggregationType.SUM,
    AggregationType.MAX,
    AggregationType.COUNT_UNIQUE,
    AggregationType.LATEST,
    AggregationType.AVG,
    AggregationType.SUM_WITH_MULTIPLIER,
)
#: Price shapes drawn by :func:`price_requests`: ``flat`` (a fixed fee, or per unit of usage),
#: ``package`` (per started or finished block of units), ``tiered`` (volume or slab tiers).
PRICE_SHAPES = ("flat", "package", "tiered")
#: The property a meter with a field sums, counts or takes the maximum of.
VALUE_FIELD = "value"
#: The property a drawn meter filter looks at, and the values it lets through.
FILTER_KEY = "region"
FILTER_VALUES = ("eu", "us", "apac")
#: The value an event's :data:`FILTER_KEY` has when it is drawn to miss its meter's filter.
FILTER_MISS = "elsewhere"
_COUNTRIES = ("US", "GB", "DE", "IN", "JP", "FR", "BR", "AU")
_TIME_ZONES = ("UTC", "Europe/London", "America/New_York", "Asia/Kolkata", "Australia/Sydney")
_PLACEHOLDER = "meter-placeholder-{}"


def names(*, max_words: int = 3) -> st.SearchStrategy[str]:
    """Display names: one to ``max_words`` words of letters and digits (accented letters
    included), never blank, at most 255 characters."""
    word = st.text(
        alphabet=st.characters(categories=("Lu", "Ll", "Nd"), max_codepoint=0x24F), min_size=1, max_size=12
    )
    return st.lists(word, min_size=1, max_size=max_words).map(" ".join)


def _amount(currency: str, *, max_value: int) -> st.SearchStrategy[Decimal]:
    places = currency_precision(currency)
    return st.decimals(min_value=0, max_value=max_value, places=places, allow_nan=False, allow_infinity=False)


def _unit_amount(*, max_value: int = 10) -> st.SearchStrategy[Decimal]:
    return st.decimals(min_value=0, max_value=max_value, places=4, allow_nan=False, allow_infinity=False)


def meter_requests(
    *, aggregations: Sequence[AggregationType] = AGGREGATIONS, event_name: str | None = None
) -> st.SearchStrategy[MeterCreate]:
    """Meters the library accepts: an aggregation from ``aggregations`` over the property
    :data:`VALUE_FIELD` (none for COUNT), sometimes a filter on :data:`FILTER_KEY`; the event name
    is ``event_name`` or drawn (``api.call``, ``tokens.used``, ...)."""

    @st.composite
    def build(draw: Any) -> MeterCreate:
        kind = draw(st.sampled_from(list(aggregations)))
        aggregation: dict[str, Any] = {"type": kind}
        if kind is not AggregationType.COUNT:
            aggregation["field"] = VALUE_FIELD
        if kind is AggregationType.SUM_WITH_MULTIPLIER:
            aggregation["multiplier"] = draw(st.sampled_from(["2", "0.5", "1000"]))
        filters = []
        if draw(st.booleans()):
            allowed = draw(st.lists(st.sampled_from(FILTER_VALUES), min_size=1, unique=True))
            filters.append({"key": FILTER_KEY, "values": allowed})
        return MeterCreate(
            name=draw(names()),
            event_name=event_name
            or draw(st.sampled_from(["api.call", "tokens.used", "storage.gb", "seats.active"])),
            aggregation=aggregation,
            filters=filters,
        )

    return build()


def _tiers(currency: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    @st.composite
    def build(draw: Any) -> list[dict[str, Any]]:
        count = draw(st.integers(min_value=1, max_value=4))
        bounds = sorted(draw(st.sets(st.integers(1, 10_000), min_size=count - 1, max_size=count - 1)))
        return [
            {
                "up_to": up_to,
                "unit_amount": draw(_unit_amount()),
                "flat_amount": draw(st.none() | _amount(currency, max_value=100)),
            }
            for up_to in [*bounds, None]
        ]

    return build()


def price_requests(
    *,
    meter_id: str | None = None,
    currency: str = "usd",
    billing_period: BillingPeriod = BillingPeriod.MONTHLY,
    shapes: Sequence[str] = PRICE_SHAPES,
) -> st.SearchStrategy[PriceInput]:
    """One price of a plan (``PlanCreate.prices``): a USAGE price over ``meter_id`` when it is
    given (billed in arrear), else a FIXED fee (in advance or in arrear). Its shape is drawn from
    ``shapes`` (see :data:`PRICE_SHAPES`; a FIXED price is always ``flat``)."""

    @st.composite
    def build(draw: Any) -> PriceInput:
        fields: dict[str, Any] = {
            "currency": currency,
            "billing_period": billing_period,
            "display_name": draw(names(max_words=2)),
        }
        if meter_id is None:
            fields.update(
                type=PriceType.FIXED,
                billing_model=BillingModel.FLAT_FEE,
                amount=draw(_amount(currency, max_value=1000)),
                invoice_cadence=draw(st.sampled_from([InvoiceCadence.ADVANCE, InvoiceCadence.ARREAR])),
            )
            return PriceInput.model_validate(fields)
        fields.update(type=PriceType.USAGE, meter_id=meter_id, invoice_cadence=InvoiceCadence.ARREAR)
        shape = draw(st.sampled_from(list(shapes)))
        if shape == "tiered":
            fields.update(
                billing_model=BillingModel.TIERED,
                tier_mode=draw(st.sampled_from(list(TierMode))),
                tiers=draw(_tiers(currency)),
            )
        elif shape == "package":
            fields.update(
                billing_model=BillingModel.PACKAGE,
                amount=draw(_amount(currency, max_value=100)),
                transform_quantity={
                    "divide_by": draw(st.sampled_from([1, 10, 100, 1000])),
                    "round": draw(st.sampled_from(["up", "down"])),
                },
            )
        else:
            fields.update(billing_model=BillingModel.FLAT_FEE, amount=draw(_unit_amount()))
        return PriceInput.model_validate(fields)

    return build()


def plan_requests(
    *,
    meter_ids: Sequence[str] = (),
    currency: str | None = "usd",
    billing_period: BillingPeriod | None = BillingPeriod.MONTHLY,
    max_prices: int = 4,
    shapes: Sequence[str] = PRICE_SHAPES,
) -> st.SearchStrategy[PlanCreate]:
    """Plans with one to ``max_prices`` prices, all in one currency and billing period (``None``
    draws them), so a subscription to the plan bills every price. Each price is a FIXED fee or,
    when ``meter_ids`` are given, a USAGE price over one of them (see :func:`price_requests`)."""
    if max_prices < 1:
        raise ValueError("max_prices must be at least 1")
    currency_draw = st.just(currency) if currency else st.sampled_from(["usd", "eur", "inr", "jpy", "kwd"])
    period_draw = (
        st.just(billing_period)
        if billing_period
        else st.sampled_from([BillingPeriod.MONTHLY, BillingPeriod.WEEKLY, BillingPeriod.ANNUAL])
    )
    meters: st.SearchStrategy[str | None] = st.none()
    if meter_ids:
        meters = st.none() | st.sampled_from(list(meter_ids))

    @st.composite
    def build(draw: Any) -> PlanCreate:
        code, period = draw(currency_draw), draw(period_draw)
        prices = [
            draw(price_requests(meter_id=meter, currency=code, billing_period=period, shapes=shapes))
            for meter in draw(st.lists(meters, min_size=1, max_size=max_prices))
        ]
        return PlanCreate(name=draw(names()), prices=prices)

    return build()


@dataclass(frozen=True, slots=True)
class CreatedCatalogue:
    """What :meth:`Catalogue.create` made: the meters (in the catalogue's order) and the plan."""

    meters: tuple[Meter, ...]
    plan: PlanDetail


@dataclass(frozen=True, slots=True)
class Catalogue:
    """Meters and a plan priced over them, drawn together by :func:`catalogues`. The plan's usage
    prices name meters by position: :meth:`plan_request` fills in the ids of meters already
    created, :meth:`create` creates both in a scope."""

    meters: tuple[MeterCreate, ...]
    #: The plan request, its usage prices naming meters by placeholder (see :meth:`plan_request`).
    plan_draft: PlanCreate

    def plan_request(self, meter_ids: Sequence[str]) -> PlanCreate:
        """The plan request with usage prices over ``meter_ids`` (created from :attr:`meters`, in
        that order)."""
        if len(meter_ids) != len(self.meters):
            raise ValueError(f"expected {len(self.meters)} meter ids, got {len(meter_ids)}")
        ids = {_PLACEHOLDER.format(i): meter_id for i, meter_id in enumerate(meter_ids)}
        prices = [
            price.model_copy(update={"meter_id": ids[price.meter_id]}) if price.meter_id else price
            for price in self.plan_draft.prices
        ]
        return self.plan_draft.model_copy(update={"prices": prices})

    def create(self, scope: Scoped) -> CreatedCatalogue:
        """Create the meters, then the plan over them, in ``scope``."""
        meters = tuple(scope.meters.create(request) for request in self.meters)
        plan = scope.plans.create(self.plan_request([m.id for m in meters]))
        return CreatedCatalogue(meters=meters, plan=plan)


def catalogues(
    *,
    max_meters: int = 3,
    currency: str | None = "usd",
    billing_period: BillingPeriod | None = BillingPeriod.MONTHLY,
    max_prices: int = 4,
    aggregations: Sequence[AggregationType] = AGGREGATIONS,
    shapes: Sequence[str] = PRICE_SHAPES,
) -> st.SearchStrategy[Catalogue]:
    """A :class:`Catalogue`: up to ``max_meters`` meters (distinct event names) and a plan from
    :func:`plan_requests` whose usage prices are over them."""

    @st.composite
    def build(draw: Any) -> Catalogue:
        count = draw(st.integers(min_value=0, max_value=max_meters))
        meters = tuple(
            draw(meter_requests(aggregations=aggregations, event_name=f"event.{index}"))
            for index in range(count)
        )
        plan = draw(
            plan_requests(
                meter_ids=[_PLACEHOLDER.format(i) for i in range(count)],
                currency=currency,
                billing_period=billing_period,
                max_prices=max_prices,
                shapes=shapes,
            )
        )
        return Catalogue(meters=meters, plan_draft=plan)

    return build()


def customer_requests(*, external_id: str | None = None) -> st.SearchStrategy[CustomerCreate]:
    """Customers: a name, an ``external_id`` (given, or drawn unique per draw), and sometimes an
    email, a time zone, a country and metadata."""

    @st.composite
    def build(draw: Any) -> CustomerCreate:
        fields: dict[str, Any] = {
            "external_id": external_id or f"cust-{draw(st.uuids()).hex[:12]}",
            "name": draw(names()),
        }
        if draw(st.booleans()):
            fields["email"] = f"{draw(st.sampled_from(['ada', 'grace', 'alan']))}@example.com"
        if draw(st.booleans()):
            fields["timezone"] = draw(st.sampled_from(_TIME_ZONES))
        if draw(st.booleans()):
            fields["address_country"] = draw(st.sampled_from(_COUNTRIES))
        fields["metadata"] = draw(
            st.dictionaries(st.sampled_from(["segment", "source", "team"]), names(max_words=1), max_size=2)
        )
        return CustomerCreate.model_validate(fields)

    return build()


def subscription_requests(
    plan: PlanDetail,
    *,
    customer_id: str | None = None,
    external_customer_id: str | None = None,
    start: datetime | None = None,
) -> st.SearchStrategy[SubscriptionCreate]:
    """Subscriptions of a customer (``customer_id`` or ``external_customer_id``) to ``plan`` in
    a currency and billing period its prices offer; the billing cycle (anniversary or calendar)
    and the payment terms are drawn. ``start`` sets ``start_date`` (default: the clock's now)."""
    if (customer_id is None) == (external_customer_id is None):
        raise ValueError("give exactly one of customer_id and external_customer_id")
    offers = sorted(
        {(p.currency, p.billing_period, p.billing_period_count) for p in plan.prices if p.end_date is None},
        key=lambda offer: (offer[0], offer[1].value, offer[2]),
    )
    if not offers:
        raise ValueError(f"plan {plan.id} has no prices to subscribe to")

    @st.composite
    def build(draw: Any) -> SubscriptionCreate:
        currency, period, count = draw(st.sampled_from(offers))
        return SubscriptionCreate(
            plan_id=plan.id,
            customer_id=customer_id,
            external_customer_id=external_customer_id,
            currency=currency,
            billing_period=period,
            billing_period_count=count,
            billing_cycle=draw(st.sampled_from(list(BillingCycle))),
            payment_terms=draw(st.none() | st.sampled_from(list(PaymentTerms))),
            start_date=start,
        )

    return build()


def _property_value(draw: Any, meter: Meter | MeterCreate) -> Any:
    kind = meter.aggregation.type
    if kind is AggregationType.COUNT_UNIQUE:
        return draw(st.sampled_from(["a", "b", "c", "d"]))
    return draw(
        st.integers(min_value=0, max_value=1000)
        | st.decimals(min_value=0, max_value=1000, places=2, allow_nan=False).map(str)
    )


def usage_event_requests(
    meters: Sequence[Meter | MeterCreate],
    *,
    external_customer_ids: Sequence[str],
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
    end: datetime = datetime(2026, 2, 1, tzinfo=UTC),
    max_size: int = 50,
    id_prefix: str = "evt",
) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Event streams for ``meters`` as ``scoped.events.ingest_bulk`` takes them: each event has
    one meter's event name, a customer from ``external_customer_ids``, a timestamp in
    ``[start, end)``, a numeric (or, for COUNT_UNIQUE, text) :data:`VALUE_FIELD` and, for a
    filtered meter, a :data:`FILTER_KEY` value that usually passes (else :data:`FILTER_MISS`:
    stored, and reported as matching no meter); ids are unique
    (``<id_prefix>-<n>``). Sorted by timestamp."""
    if not meters or not external_customer_ids:
        raise ValueError("give at least one meter and one external customer id")
    span = int((end - start).total_seconds())
    if span <= 0:
        raise ValueError("end must be after start")

    @st.composite
    def build(draw: Any) -> list[dict[str, Any]]:
        events = []
        for index in range(draw(st.integers(min_value=0, max_value=max_size))):
            meter = draw(st.sampled_from(list(meters)))
            properties: dict[str, Any] = {VALUE_FIELD: _property_value(draw, meter)}
            for meter_filter in meter.filters:
                passing = draw(st.integers(0, 9)) < 9
                values = list(meter_filter.values) if passing else [FILTER_MISS]
                properties[meter_filter.key] = draw(st.sampled_from(values))
            offset = draw(st.integers(min_value=0, max_value=span - 1))
            events.append(
                {
                    "event_id": f"{id_prefix}-{index}",
                    "event_name": meter.event_name,
                    "external_customer_id": draw(st.sampled_from(list(external_customer_ids))),
                    "timestamp": start + timedelta(seconds=offset),
                    "properties": properties,
                }
            )
        return sorted(events, key=lambda event: event["timestamp"])

    return build()
