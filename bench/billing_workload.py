"""``bench billing``'s workload: its dates and sizes, the plan's prices (and the same prices in
plain Python for the checks), the cohorts of subscriptions and their events."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from bench.stores import Store
from billingkit.storage.sql.types import sqlite_time

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUN_AT = datetime(2026, 2, 1, 1, tzinfo=UTC)  # T0 + 1 month + 1 hour
MONTH_SECONDS = 31 * 86400  # January (and 6 Jan - 6 Feb, 12 Jan - 12 Feb)
EVENTS_PER_NAME = 50
MAX_BYTES = 200_000

# The plan, and the same prices in plain Python for the checks.
PLATFORM_FEE = Decimal("49.00")
SLAB = (
    (20, Decimal("0.10"), Decimal(0)),
    (40, Decimal("0.05"), Decimal(1)),
    (None, Decimal("0.01"), Decimal(2)),
)
PACKAGE_BYTES = 250_000
PACKAGE_PRICE = Decimal("0.10")
# One subscription in ``--adjusted-every`` carries a 10 % coupon (forever) and a 20 % tax.
COUPON_PERCENT = Decimal(10)
TAX_PERCENT = Decimal(20)
MONTHLY = {"currency": "usd", "billing_period": "MONTHLY"}
# One customer in ``--wallet-every`` has a PRE_PAID wallet (all price types) of 30 credits at 1.00.
WALLET_CREDITS = Decimal(30)
# One subscription in ``--addon-every`` has add-on Boost: 9.00 a month in advance, 0.02 a request.
ADDON_FEE = Decimal("9.00")
ADDON_PER_REQUEST = Decimal("0.02")


def addon_prices(calls_meter: str) -> list[dict[str, Any]]:
    return [
        {
            **MONTHLY,
            "display_name": "Boost fee",
            "type": "FIXED",
            "billing_model": "FLAT_FEE",
            "amount": str(ADDON_FEE),
            "invoice_cadence": "ADVANCE",
        },
        {
            **MONTHLY,
            "display_name": "Boost requests",
            "type": "USAGE",
            "meter_id": calls_meter,
            "invoice_cadence": "ARREAR",
            "billing_model": "FLAT_FEE",
            "amount": str(ADDON_PER_REQUEST),
        },
    ]


def plan_prices(calls_meter: str, storage_meter: str) -> list[dict[str, Any]]:
    return [
        {
            **MONTHLY,
            "display_name": "Platform fee",
            "type": "FIXED",
            "billing_model": "FLAT_FEE",
            "amount": str(PLATFORM_FEE),
            "invoice_cadence": "ADVANCE",
        },
        {
            **MONTHLY,
            "display_name": "API requests",
            "type": "USAGE",
            "meter_id": calls_meter,
            "invoice_cadence": "ARREAR",
            "billing_model": "TIERED",
            "tier_mode": "SLAB",
            "tiers": [
                {"up_to": up_to, "unit_amount": str(unit), "flat_amount": str(flat)}
                for up_to, unit, flat in SLAB
            ],
        },
        {
            **MONTHLY,
            "display_name": "Storage",
            "type": "USAGE",
            "meter_id": storage_meter,
            "invoice_cadence": "ARREAR",
            "billing_model": "PACKAGE",
            "amount": str(PACKAGE_PRICE),
            "transform_quantity": {"divide_by": PACKAGE_BYTES},
        },
    ]


def expected_slab(quantity: int) -> Decimal:
    """SLAB by hand: each tier's share at its unit amount, plus the flat amount of each tier touched."""
    total, lower = Decimal(0), 0
    for up_to, unit, flat in SLAB:
        if quantity <= lower:
            break
        upper = quantity if up_to is None else min(quantity, up_to)
        total += (upper - lower) * unit + flat
        if up_to is None:
            break
        lower = up_to
    return total.quantize(Decimal("0.01"))


def expected_package(total_bytes: int) -> Decimal:
    return (math.ceil(total_bytes / PACKAGE_BYTES) * PACKAGE_PRICE).quantize(Decimal("0.01"))


# -- cohorts and their events ---------------------------------------------------------------


@dataclass
class Cohort:
    """Subscriptions starting at ``start``, billed by one run at ``run_at``."""

    name: str
    start: datetime
    run_at: datetime
    size: int
    first: int  # index of its first customer
    customers: list[str] = field(default_factory=list)  # external ids
    adjusted_every: int = 0  # every n-th customer's subscription has the coupon and the tax (0: none)
    wallet_every: int = 0  # every n-th customer has a PRE_PAID wallet of WALLET_CREDITS (0: none)
    addon_every: int = 0  # every n-th customer's subscription has add-on Boost (0: none)
    # external id -> (api.request events, bytes stored) in the first period
    usage: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.customers = [f"cust-{i:06d}" for i in range(self.first, self.first + self.size)]

    def adjusted(self, external_id: str) -> bool:
        """Whether this customer's subscription carries the coupon and the tax."""
        return self.adjusted_every > 0 and int(external_id.removeprefix("cust-")) % self.adjusted_every == 0

    def boosted(self, external_id: str) -> bool:
        """Whether this customer's subscription has add-on Boost."""
        return self.addon_every > 0 and int(external_id.removeprefix("cust-")) % self.addon_every == 0

    def funded(self, external_id: str) -> bool:
        """Whether this customer has a PRE_PAID wallet holding ``WALLET_CREDITS``."""
        return self.wallet_every > 0 and int(
            external_id.removeprefix("cust-")
        ) % self.wallet_every == 1 % max(self.wallet_every, 1)


def event_rows(store: Store, cohorts: list[Cohort], seed: int) -> list[tuple[Any, ...]]:
    """100 events per customer at random milliseconds of its first period, as ``bench ingest``
    preloads them: the ``events`` columns in ``bench.stores.COLUMNS`` order, timestamps in the
    column's form (``sqlite_time`` text on SQLite), properties as JSON text. The per-customer totals
    go to ``cohort.usage`` for the checks."""
    rnd = random.Random(seed)
    sqlite = store.kind == "sqlite"
    ingested: Any = sqlite_time(RUN_AT) if sqlite else RUN_AT
    tenant, env = store.tenant_id, store.environment_id
    rows: list[tuple[Any, ...]] = []
    append, randrange, randint = rows.append, rnd.randrange, rnd.randint
    span = MONTH_SECONDS * 1000
    for cohort in cohorts:
        # naive UTC + isoformat is what sqlite_time returns, without a time zone conversion per event
        base = cohort.start.replace(tzinfo=None) if sqlite else cohort.start
        for customer in cohort.customers:
            total = 0
            for n in range(2 * EVENTS_PER_NAME):
                at = base + timedelta(milliseconds=randrange(span))
                stamp = at.isoformat(sep=" ", timespec="microseconds") if sqlite else at
                if n < EVENTS_PER_NAME:
                    name, props = "api.request", '{"status": 200}'
                else:
                    size = randint(1, MAX_BYTES)
                    total += size
                    name, props = "storage.write", f'{{"bytes": {size}}}'
                append(
                    (
                        tenant,
                        env,
                        f"evt_{customer}_{n:03d}",
                        name,
                        customer,
                        None,
                        stamp,
                        None,
                        props,
                        ingested,
                    )
                )
            cohort.usage[customer] = (EVENTS_PER_NAME, total)
    if sqlite:
        assert rows[0][6] == sqlite_time(datetime.fromisoformat(rows[0][6]).replace(tzinfo=UTC))
    return rows
