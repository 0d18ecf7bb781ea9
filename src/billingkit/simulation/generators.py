"""Usage generators: seeded streams of usage events for :func:`billingkit.simulate`.

A generator makes the events of one event name for a set of customers, a month at a time; the
same seed gives the same events, whatever else the simulation holds.

* :class:`Poisson`: about ``per_day`` a day per customer, drawn at random (Poisson), growing
  ``growth`` a month: ``Poisson("api.request", per_day=300, growth=0.10)`` is "300 calls a day,
  growing 10 % a month" (month 0: 300 a day, month 1: 330, month 2: 363, ...).
* :class:`Steady`: exactly ``per_day`` a day (rounded half up), growing the same way; for
  simulations whose invoices you want to check by hand.

Both emit either one event per unit (for a ``COUNT`` meter) or, with ``property``, one event per
customer and day carrying the day's count in that property (for a ``SUM`` meter: 300 calls a day
for 1,000 customers over a year is 365,000 events instead of 110 million). ``spread`` makes
customers differ: each customer's rate is multiplied once by a log-normal factor of median 1.

The random draws use numpy (a pandas dependency, in the ``notebook`` extra).
"""

from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from billingkit.display.extras import notebook_module
from billingkit.errors import ValidationError

__all__ = ["Poisson", "Steady", "UsageGenerator"]

_DAY = timedelta(days=1)


class UsageGenerator(Protocol):
    """What :func:`billingkit.simulate` asks of a generator: the events of ``[start, end)``
    (month ``month`` of the simulation, from 0) for ``customers`` (external id -> plan key), as
    ingestion takes them, the same for the same ``seed``."""

    def events(
        self, customers: dict[str, str], *, month: int, start: datetime, end: datetime, seed: int
    ) -> Iterator[dict[str, Any]]: ...


@dataclass(frozen=True)
class _DailyUsage(ABC):
    event_name: str
    per_day: float
    growth: float = 0.0
    property: str | None = None
    spread: float = 0.0
    plan: str | None = None
    properties: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.event_name:
            raise ValidationError("a usage generator needs an event name", field="event_name")
        for name in ("per_day", "growth", "spread"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < (-0.99 if name == "growth" else 0):
                raise ValidationError(f"{name} must be a finite number >= 0", field=name)

    @abstractmethod
    def _counts(self, rng: Any, rates: Any) -> Any:
        """The counts for a (customers x days) array of expected ``rates``."""

    def events(
        self, customers: dict[str, str], *, month: int, start: datetime, end: datetime, seed: int
    ) -> Iterator[dict[str, Any]]:
        """The events of ``[start, end)``: per customer and day, the day's count (see the module
        docstring). Days start at ``start``'s time of day."""
        np = notebook_module("numpy", "usage generators")
        who = sorted(ext for ext, plan in customers.items() if self.plan is None or plan == self.plan)
        days = max(0, math.ceil((end - start) / _DAY))
        if not who or not days:
            return
        key = [seed, _stable(self.event_name), _stable(self.plan or "")]
        # Each customer's factor is drawn from the seed alone, so it is the same every month.
        factors = np.random.default_rng([*key, len(who)]).lognormal(0.0, self.spread, len(who))
        rate = self.per_day * (1 + self.growth) ** month
        rng = np.random.default_rng([*key, month])
        counts = self._counts(rng, np.outer(factors * rate, np.ones(days)))
        extra = self.properties or {}
        for c, ext in enumerate(who):
            for d in range(days):
                count = int(counts[c, d])
                day = start + d * _DAY
                if count == 0 or day >= end:
                    continue
                stamp = f"{day:%Y%m%d}"
                if self.property is not None:
                    yield {
                        "event_id": f"{self.event_name}-{ext}-{stamp}",
                        "event_name": self.event_name,
                        "external_customer_id": ext,
                        "timestamp": (day + _DAY / 2 if day + _DAY / 2 < end else day).isoformat(),
                        "properties": {**extra, self.property: count},
                    }
                    continue
                span = min(_DAY, end - day).total_seconds()
                for i, offset in enumerate(sorted(rng.uniform(0, span, count))):
                    yield {
                        "event_id": f"{self.event_name}-{ext}-{stamp}-{i}",
                        "event_name": self.event_name,
                        "external_customer_id": ext,
                        "timestamp": (day + timedelta(seconds=float(offset))).isoformat(),
                        "properties": dict(extra),
                    }


@dataclass(frozen=True)
class Poisson(_DailyUsage):
    """About ``per_day`` events (or units, with ``property``) a day per customer, Poisson
    distributed, growing ``growth`` a month (0.10: 10 % a month, compounded); ``spread``: the
    sigma of each customer's log-normal factor (0: all alike); ``plan``: only the customers on that
    plan key; ``properties``: added to every event. Example: ``Poisson("api.request", per_day=300,
    growth=0.10, property="calls")``."""

    def _counts(self, rng: Any, rates: Any) -> Any:
        return rng.poisson(rates)


@dataclass(frozen=True)
class Steady(_DailyUsage):
    """Exactly ``per_day`` (times the customer's factor and the growth, rounded half up) a day
    per customer; the same fields as :class:`Poisson`."""

    def _counts(self, rng: Any, rates: Any) -> Any:
        np = notebook_module("numpy", "usage generators")
        return np.floor(rates + 0.5)


def _stable(text: str) -> int:
    """A number for ``text`` that is the same in every process (``hash`` is salted per process)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
