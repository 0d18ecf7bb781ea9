"""``billingkit.simulate``: months of billing on an embedded in-memory ``Billing`` in one call.

The catalogue and the customers are given in the library's own request shapes; the simulation
creates them in a fresh in-memory store, subscribes every customer at ``start``, then for each
month ingests that month's usage, moves a :class:`~billingkit.TestClock` past the period end and
runs the due work, which bills the period exactly as a host's billing run does. The stored
invoices are the result. The same arguments and ``seed`` give the same invoices, numbers and ids.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from dateutil.relativedelta import relativedelta

from billingkit.clock import TestClock
from billingkit.display.extras import notebook_module
from billingkit.domain.ids import IdFactory
from billingkit.errors import ConfigurationError, ValidationError
from billingkit.facade import Billing, Scoped
from billingkit.ports import Storage
from billingkit.simulation.generators import UsageGenerator
from billingkit.simulation.results import SimulationResult

if TYPE_CHECKING:
    import pandas

__all__ = ["DEFAULT_START", "PROGRESS_FROM", "sample_customers", "simulate"]

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
#: Show a progress bar (when tqdm is installed) from this many customer-months on.
PROGRESS_FROM = 5_000


def simulate(
    *,
    plans: Mapping[str, Mapping[str, Any]],
    customers: Sequence[Mapping[str, Any]],
    usage: pandas.DataFrame | Iterable[Mapping[str, Any]] | UsageGenerator | Sequence[UsageGenerator] = (),
    meters: Mapping[str, Mapping[str, Any]] | None = None,
    months: int = 12,
    start: datetime = DEFAULT_START,
    seed: int = 0,
    progress: bool | None = None,
    storage: Storage | None = None,
) -> SimulationResult:
    """Bill ``customers`` on ``plans`` for ``months`` months of ``usage`` and return the invoices.

    * ``meters``: key -> ``meters.create`` fields; a price's ``meter_id`` may name a key.
    * ``plans``: key -> ``plans.create`` fields (``prices=[...]`` included).
    * ``customers``: ``customers.create`` fields plus ``plan`` (a key of ``plans``) and optionally
      ``subscription`` (more ``subscriptions.create`` fields; currency and billing period default
      to the plan's first price's). See :func:`sample_customers`.
    * ``usage``: a DataFrame (columns ``event_name``, ``external_customer_id``, ``timestamp``,
      optionally ``event_id``; other columns become properties), events as
      ``events.ingest_bulk`` takes them, or generators (:class:`~billingkit.simulation.Poisson`).
    * ``seed``: fixes the generators' draws and the ids; ``progress``: a tqdm bar over the months
      (default: on from 5,000 customer-months when tqdm is installed).
    * ``storage``: where the simulated system lives (default: a new in-memory store); a new
      ``SqlStorage`` keeps the history in a database, e.g. to backtest it there later.

    Raises ``ValidationError`` for a bad catalogue, customer or event (naming the field, e.g.
    ``customers[3].plan``) and ``ConfigurationError`` when a DataFrame, generator or progress
    bar needs the ``notebook`` extra.
    """
    if not 1 <= months <= 240:
        raise ValidationError("months must be between 1 and 240", field="months")
    clock = TestClock(start)
    billing = Billing(storage, clock, token_secret=f"simulation-{seed}")
    entropy = random.Random(seed)
    billing.ids = IdFactory(clock.now, entropy=entropy.randbytes)
    setup = billing.bootstrap(tenant_name="Simulation")
    scope = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter_ids = {key: scope.meters.create(**fields).id for key, fields in (meters or {}).items()}
    plan_ids = {key: _create_plan(scope, key, fields, meter_ids) for key, fields in plans.items()}
    on_plan = _subscribe(scope, customers, plans, plan_ids)
    feeds = _feeds(usage, on_plan, start, months, seed)
    steps: Iterable[int] = range(months)
    if progress or (progress is None and len(on_plan) * months >= PROGRESS_FROM):
        steps = _progress(steps, months, required=bool(progress))
    for month in steps:
        end = start + relativedelta(months=month + 1)
        batch: list[Mapping[str, Any]] = []
        for feed in feeds:
            batch.extend(feed(month))
        for i in range(0, len(batch), billing.max_bulk_events):
            scope.events.ingest_bulk(batch[i : i + billing.max_bulk_events])
        clock.set(end + timedelta(minutes=1))
        billing.run_due()
    return SimulationResult.collect(
        billing, scope, plan_ids, meter_ids, months=months, start=start, seed=seed
    )


def sample_customers(
    count: int, *, plans: Mapping[str, float], seed: int = 0, prefix: str = "cust"
) -> list[dict[str, Any]]:
    """``count`` customers for :func:`simulate` (``external_id`` ``<prefix>-0001``...), each on a
    plan key of ``plans`` drawn with its weight: ``plans={"pro": 3, "team": 1}`` puts about a
    quarter on "team". The same ``seed`` gives the same assignment."""
    if count < 0:
        raise ValidationError("count must be >= 0", field="count")
    keys = list(plans)
    if not keys or any(weight < 0 for weight in plans.values()) or sum(plans.values()) <= 0:
        raise ValidationError("plans needs positive weights", field="plans")
    rng = random.Random(seed)
    chosen = rng.choices(keys, weights=[plans[k] for k in keys], k=count)
    width = max(4, len(str(count)))
    return [
        {"external_id": f"{prefix}-{i + 1:0{width}d}", "name": f"Customer {i + 1}", "plan": plan}
        for i, plan in enumerate(chosen)
    ]


def _create_plan(scope: Scoped, key: str, fields: Mapping[str, Any], meter_ids: Mapping[str, str]) -> str:
    prices = [
        {**price, "meter_id": meter_ids.get(price["meter_id"], price["meter_id"])}
        if isinstance(price, Mapping) and price.get("meter_id") is not None
        else price
        for price in fields.get("prices", ())
    ]
    data = {"lookup_key": key, **fields, "prices": prices}
    data.setdefault("name", key)
    return scope.plans.create(**data).id


def _subscribe(
    scope: Scoped,
    customers: Sequence[Mapping[str, Any]],
    plans: Mapping[str, Mapping[str, Any]],
    plan_ids: Mapping[str, str],
) -> dict[str, str]:
    """Create each customer and its subscription; external id -> plan key."""
    on_plan: dict[str, str] = {}
    for i, spec in enumerate(customers):
        fields = dict(spec)
        key = fields.pop("plan", None)
        if key not in plan_ids:
            raise ValidationError(
                f"customers[{i}].plan must name one of the plans ({', '.join(sorted(plan_ids))})",
                field=f"customers[{i}].plan",
            )
        terms = dict(fields.pop("subscription", None) or {})
        customer = scope.customers.create(**fields)
        first = (plans[key].get("prices") or [{}])[0]
        terms.setdefault("currency", first.get("currency", "usd"))
        terms.setdefault("billing_period", first.get("billing_period", "MONTHLY"))
        scope.subscriptions.create(customer_id=customer.id, plan_id=plan_ids[key], **terms)
        on_plan[customer.external_id] = key
    return on_plan


def _feeds(usage: Any, on_plan: dict[str, str], start: datetime, months: int, seed: int) -> list[Any]:
    """One callable per usage source: month -> that month's events."""
    bounds = [start + relativedelta(months=m) for m in range(months + 1)]
    if hasattr(usage, "events") or (
        isinstance(usage, Sequence) and usage and all(hasattr(u, "events") for u in usage)
    ):
        generators: list[UsageGenerator] = list(usage) if isinstance(usage, Sequence) else [usage]
        return [
            lambda m, g=g: g.events(on_plan, month=m, start=bounds[m], end=bounds[m + 1], seed=seed)
            for g in generators
        ]
    if hasattr(usage, "to_dict") and hasattr(usage, "columns"):
        usage = _frame_events(usage)
    by_month: list[list[Mapping[str, Any]]] = [[] for _ in range(months)]
    for n, event in enumerate(usage):
        when = _instant(event.get("timestamp"), n)
        month = next((m for m in range(months) if bounds[m] <= when < bounds[m + 1]), None)
        if month is not None:
            by_month[month].append(event)
    return [lambda m: iter(by_month[m])]


def _instant(value: Any, n: int) -> datetime:
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(when, datetime) or when.tzinfo is None:
        raise ValidationError(
            "every usage event needs a timezone-aware timestamp", field=f"usage[{n}].timestamp"
        )
    return when


def _frame_events(frame: pandas.DataFrame) -> Iterator[dict[str, Any]]:
    """A DataFrame's rows as events: the ingestion columns, every other non-null column a
    property."""
    pandas_module = notebook_module("pandas", "DataFrame usage")
    top = {"event_id", "event_name", "external_customer_id", "timestamp", "customer_id", "source"}
    for row in frame.to_dict("records"):
        event: dict[str, Any] = {}
        properties: dict[str, Any] = {}
        for column, value in row.items():
            if value is None or value is pandas_module.NaT or value is pandas_module.NA:
                continue
            if isinstance(value, float) and value != value:  # NaN: a column this row leaves empty
                continue
            if isinstance(value, pandas_module.Timestamp):
                value = value.to_pydatetime()
            if hasattr(value, "item"):  # a numpy scalar: the Python number
                value = value.item()
            (event if column in top else properties)[str(column)] = value
        if isinstance(event.get("timestamp"), datetime):
            event["timestamp"] = event["timestamp"].isoformat()
        if properties:
            event["properties"] = properties
        yield event


def _progress(steps: Iterable[int], months: int, *, required: bool) -> Iterable[int]:
    try:
        tqdm = notebook_module("tqdm.auto", "progress bars")
    except ConfigurationError:
        if required:
            raise
        return steps
    bar: Iterable[int] = tqdm.tqdm(steps, total=months, desc="simulating", unit="month")
    return bar
