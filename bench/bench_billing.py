"""Benchmark: a billing run (``Billing.run_due``) of 10,000 due subscriptions.

Run: ``python -m bench billing [-- --subscriptions 10000 --stores sqlite,postgres --library-sample 200
--profile-subscriptions 500 --no-profile --top 25 --sort cumulative --keep-invoices yes --gc on
--wallet-every 0 --addon-every 0]``.

For each store (a SQLite file in a temporary directory; PostgreSQL at ``--pg-url``, a database this
benchmark owns: created when missing, its ``public`` schema dropped and recreated):

0. Setup (timed, not part of the figure). One plan, ``Pro``, monthly in USD: a FIXED ADVANCE
   ``FLAT_FEE`` of 49.00, a USAGE ARREAR ``TIERED``/``SLAB`` price on a COUNT meter of
   ``api.request`` (20 at 0.10, 20 at 0.05 + 1.00 flat, the rest at 0.01 + 2.00 flat) and a USAGE
   ARREAR ``PACKAGE`` price on a SUM meter of ``bytes`` of ``storage.write`` (0.10 per started
   250,000 bytes). Every subscription starts at T0 = 2026-01-01 00:00 UTC (monthly, anniversary),
   one customer each, with 100 events inside its first period (50 ``api.request``, 50
   ``storage.write`` of 1..200,000 bytes). With ``--wallet-every N`` one customer in N (the
   first, then every N-th) has a PRE_PAID wallet (all price types) holding 30 credits worth 1.00
   each, which its invoice consumes (a debit row and a wallet update each). With ``--addon-every
   N`` one subscription in N (the first, then every N-th) also has add-on ``Boost`` (its
   association and two line items): a FIXED ADVANCE ``FLAT_FEE`` of 9.00 and a USAGE ARREAR
   ``FLAT_FEE`` of 0.02 per ``api.request``, so its invoices carry two more lines.

   The first ``--library-sample`` customers and subscriptions go through the library
   (``scoped.customers.create``, ``scoped.subscriptions.create``: each subscription issues its opening
   invoice); their rate is measured and extrapolated to all subscriptions. The rest are inserted
   directly: copies of a library-made subscription (new ids, its own customer; exactly the model
   ``create_subscription`` builds for that plan and start, opening invoice counted in
   ``billing_sequence`` but not stored) turned into rows with
   ``billingkit.storage.sql.mapping.row_encoder`` (as the repositories write them) and inserted in one
   executemany; the events go in
   through the bare driver as ``bench ingest`` preloads them (sqlite3 ``executemany`` / psycopg
   ``COPY``, indexes built afterwards), then the statistics are refreshed.
1. The figure: one ``billing.run_due(now=T0 + 1 month + 1 hour)`` (default batches of 500) over all
   due subscriptions, wall time and invoices per second (target on SQLite: >= 1,000/s). With
   ``--keep-invoices no`` the run only counts its invoices (``keep_invoices=False``, as the worker
   runs); the checks then read the invoices back from the store. ``--gc off`` runs it without the
   garbage collector, to measure what its passes cost.
2. Checks: the run reports ``--subscriptions`` invoices and no failure, the store holds that many
   cycle invoices and no subscription is still due; 20 random invoices, read back through the
   library, have the amounts computed here from the event data with plain arithmetic (line by line
   and in total); the run's invoice numbers are ``INV-202602-00001`` .. ``-10000`` without a gap
   (the library-made subscriptions' opening invoices drew from January's counter).
3. Where the time goes (unless ``--no-profile``), on two more cohorts of ``--profile-subscriptions``
   (same plan, started 2026-01-06 and 2026-01-12, so each falls due on its own): the first run with
   wall-clock timers around the parts (a wrapper costs about 0.1 us a call), the second under
   cProfile (which slows Python calls down: its shares lean towards Python-heavy parts).

The PostgreSQL database is left in place (it is reset at the next run); the SQLite file is removed.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import math
import os
import pstats
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.bench_ingest import (
    DEFAULT_PG_URL,
    Store,
    _libpq,
    _preload_postgres,
    _preload_sqlite,
    _sqlite_connect,
    reset_postgres,
)
from billingkit import Billing, Scoped, SqlStorage, TestClock
from billingkit.domain.addon_associations import AddonAssociation
from billingkit.domain.catalog.tax_associations import TaxAssociation, TaxRateEntityType
from billingkit.domain.coupon_associations import CouponAssociation
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.money import round_money
from billingkit.domain.queries import ListQuery
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionType,
    Wallet,
    WalletTransaction,
    movement_key,
)
from billingkit.storage.sql.mapping import row_encoder
from billingkit.storage.sql.tables import TABLES
from billingkit.storage.sql.types import sqlite_time

TARGET_PER_SECOND = 1000.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUN_AT = datetime(2026, 2, 1, 1, tzinfo=UTC)  # T0 + 1 month + 1 hour
MONTH_SECONDS = 31 * 86400  # January (and 6 Jan - 6 Feb, 12 Jan - 12 Feb)
EVENTS_PER_NAME = 50
MAX_BYTES = 200_000
SAMPLE = 20

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


def _addon_prices(calls_meter: str) -> list[dict[str, Any]]:
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


def _plan_prices(calls_meter: str, storage_meter: str) -> list[dict[str, Any]]:
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


# -- the workload -----------------------------------------------------------------------------


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
    preloads them: the ``events`` columns in ``bench.bench_ingest.COLUMNS`` order, timestamps in the
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


# -- setup ------------------------------------------------------------------------------------------


@dataclass
class Setup:
    plan_id: str = ""
    addon_id: str = ""
    coupon_id: str = ""
    tax_rate_id: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


def _adjustments(cohort: Cohort, external_id: str, setup: Setup) -> dict[str, Any]:
    """What ``subscriptions.create`` is given for the coupon, the tax and the add-on, when the
    customer has them."""
    extra: dict[str, Any] = {}
    if cohort.boosted(external_id):
        extra["addons"] = [{"addon_id": setup.addon_id}]
    if not cohort.adjusted(external_id):
        return extra
    return {
        **extra,
        "subscription_coupons": [{"coupon_code": "BENCH10"}],
        "tax_rate_overrides": [{"tax_rate_code": "VAT20", "currency": "usd"}],
    }


def _association_rows(
    billing: Billing, setup: Setup, sub: Subscription
) -> tuple[CouponAssociation, TaxAssociation]:
    """The coupon and tax associations ``subscriptions.create`` stores for an adjusted subscription."""
    common = {
        "tenant_id": sub.tenant_id,
        "environment_id": sub.environment_id,
        "created_at": sub.created_at,
        "updated_at": sub.updated_at,
        "created_by": sub.created_by,
        "updated_by": sub.updated_by,
    }
    coupon = CouponAssociation(
        id=billing.ids.new("coupon_assoc"),
        **common,
        coupon_id=setup.coupon_id,
        subscription_id=sub.id,
        start_date=sub.start_date,
        applications=1,  # the opening invoice (counted, not stored) used it
    )
    tax = TaxAssociation(
        id=billing.ids.new("taxassoc"),
        **common,
        tax_rate_id=setup.tax_rate_id,
        entity_type=TaxRateEntityType.SUBSCRIPTION,
        entity_id=sub.id,
        currency="usd",
        start_date=sub.start_date,
    )
    return coupon, tax


def _wallet_rows(billing: Billing, customer: Customer) -> tuple[Wallet, WalletTransaction]:
    """A PRE_PAID wallet of ``customer`` holding ``WALLET_CREDITS`` (its cached balance) and the
    completed credit row that put them there, as the ledger service writes them."""
    common = {
        "tenant_id": customer.tenant_id,
        "environment_id": customer.environment_id,
        "created_at": customer.created_at,
        "updated_at": customer.updated_at,
        "created_by": customer.created_by,
        "updated_by": customer.updated_by,
    }
    wallet = Wallet(
        id=billing.ids.new("wallet"),
        **common,
        customer_id=customer.id,
        currency="usd",
        name="Prepaid credits",
        credit_balance=WALLET_CREDITS,
    )
    credit = WalletTransaction(
        id=billing.ids.new("wtx"),
        **common,
        wallet_id=wallet.id,
        customer_id=customer.id,
        type=TransactionType.CREDIT,
        credit_amount=WALLET_CREDITS,
        amount=WALLET_CREDITS,
        transaction_reason=TransactionReason.FREE_CREDIT_GRANT,
        idempotency_key=movement_key("bench_top_up", wallet.id),
    )
    return wallet, credit


def _copy_subscription(
    billing: Billing, template: Subscription, customer: Customer, associations: dict[str, AddonAssociation]
) -> tuple[Subscription, list[AddonAssociation]]:
    """``template`` (made by ``create_subscription``) for another customer, with new ids, and
    copies of its add-on ``associations`` (by id) that its lines name."""
    sub_id = billing.ids.new("subs")
    copied: dict[str, AddonAssociation] = {}
    lines = []
    for line in template.line_items:
        update = {"id": billing.ids.new("subs_line"), "subscription_id": sub_id, "customer_id": customer.id}
        old = line.addon_association_id
        if old is not None:
            if old not in copied:
                copied[old] = associations[old].model_copy(
                    update={"id": billing.ids.new("addon_assoc"), "entity_id": sub_id}
                )
            update["addon_association_id"] = copied[old].id
        lines.append(line.model_copy(update=update))
    copy = template.model_copy(update={"id": sub_id, "customer_id": customer.id, "line_items": tuple(lines)})
    return copy, list(copied.values())


def prepare(store: Store, cohorts: list[Cohort], args: argparse.Namespace) -> Setup:
    setup = Setup()
    started = time.perf_counter()
    if store.kind == "postgres":
        reset_postgres(store.url)
    clock = TestClock(T0)
    billing = Billing(SqlStorage.from_url(store.url, migrate=True), clock)
    boot = billing.bootstrap(tenant_name="Bench", owner_email="owner@bench.test")
    store.tenant_id, store.environment_id = boot.tenant.id, boot.environments[0][0].id
    scoped = billing.scope(store.tenant_id, store.environment_id)
    calls = scoped.meters.create(name="API requests", event_name="api.request", aggregation={"type": "COUNT"})
    stored = scoped.meters.create(
        name="Storage bytes", event_name="storage.write", aggregation={"type": "SUM", "field": "bytes"}
    )
    plan = scoped.plans.create(name="Pro", prices=_plan_prices(calls.id, stored.id))
    setup.plan_id = plan.id
    setup.addon_id = scoped.addons.create(name="Boost", lookup_key="boost", prices=_addon_prices(calls.id)).id
    setup.coupon_id = scoped.coupons.create(
        name="Ten off",
        type="percentage",
        cadence="forever",
        percentage_off=str(COUPON_PERCENT),
        coupon_code="BENCH10",
    ).id
    setup.tax_rate_id = scoped.tax_rates.create(
        name="VAT", code="VAT20", percentage_value=str(TAX_PERCENT)
    ).id
    setup.seconds["schema and catalogue"] = time.perf_counter() - started

    def through_library(cohort: Cohort, customer: str) -> tuple[Customer, Subscription]:
        made = scoped.customers.create(external_id=customer, name=f"Customer {customer}")
        sub = scoped.subscriptions.create(
            customer_id=made.id,
            plan_id=setup.plan_id,
            currency="usd",
            billing_period="MONTHLY",
            start_date=cohort.start,
            **_adjustments(cohort, customer, setup),
        )
        return made, sub

    # The library path: the first customers and subscriptions of the main cohort, timed apart.
    main = cohorts[0]
    sample = max(1, min(args.library_sample, main.size))
    started = time.perf_counter()
    made = [scoped.customers.create(external_id=c, name=f"Customer {c}") for c in main.customers[:sample]]
    setup.seconds["library: customers"] = time.perf_counter() - started
    started = time.perf_counter()
    subs = [
        scoped.subscriptions.create(
            customer_id=c.id,
            plan_id=setup.plan_id,
            currency="usd",
            billing_period="MONTHLY",
            start_date=T0,
            **_adjustments(main, c.external_id, setup),
        )
        for c in made
    ]
    setup.seconds["library: subscriptions"] = time.perf_counter() - started
    rate = sample / setup.seconds["library: subscriptions"]
    print(
        f"  library: {sample} customers at {sample / setup.seconds['library: customers']:,.0f}/s, "
        f"{sample} subscriptions at {rate:,.0f}/s "
        f"(all {main.size:,} that way: ~{main.size / rate:,.0f} s for the subscriptions alone)"
    )

    # The rest, directly: customers and subscriptions copied from library-made ones (one template
    # per cohort and kind: with add-on Boost or without).
    started = time.perf_counter()
    templates: dict[tuple[str, bool], tuple[Customer, Subscription]] = {}
    library_made = {main.name: sample}
    later: list[Customer] = []  # made through the library in the later cohorts
    for customer_made, sub_made in zip(made, subs, strict=True):
        templates.setdefault((main.name, main.boosted(customer_made.external_id)), (customer_made, sub_made))
    for cohort in cohorts[1:]:  # each later cohort: its first subscription(s) through the library
        kinds = {cohort.boosted(c) for c in cohort.customers}
        count = 0
        while {k for (name, k) in templates if name == cohort.name} != kinds:
            external_id = cohort.customers[count]
            customer_made, sub_made = through_library(cohort, external_id)
            later.append(customer_made)
            templates.setdefault((cohort.name, cohort.boosted(external_id)), (customer_made, sub_made))
            count += 1
        library_made[cohort.name] = count
    missing = {(c.name, c.boosted(x)) for c in cohorts for x in c.customers} - set(templates)
    if missing:
        raise SystemExit(f"no library-made template for {sorted(missing)}: raise --library-sample")
    with billing.storage.unit_of_work(store.tenant_id, store.environment_id) as uow:
        associations = {a.id: a for a in uow.addon_associations.list(ListQuery(limit=1000)).items}
    customers: list[Customer] = []
    subscriptions: list[Subscription] = []
    addon_rows: list[AddonAssociation] = []
    coupon_rows: list[CouponAssociation] = []
    tax_rows: list[TaxAssociation] = []
    for cohort in cohorts:
        skip = library_made[cohort.name]
        for external_id in cohort.customers[skip:]:
            customer_template, sub_template = templates[(cohort.name, cohort.boosted(external_id))]
            customer = customer_template.model_copy(
                update={
                    "id": billing.ids.new("cust"),
                    "external_id": external_id,
                    "name": f"Customer {external_id}",
                }
            )
            customers.append(customer)
            copy, copied_associations = _copy_subscription(billing, sub_template, customer, associations)
            subscriptions.append(copy)
            addon_rows += copied_associations
            if cohort.adjusted(external_id):
                coupon_row, tax_row = _association_rows(billing, setup, copy)
                coupon_rows.append(coupon_row)
                tax_rows.append(tax_row)
    wallets: list[Wallet] = []
    credits: list[WalletTransaction] = []
    everyone = [*made, *later, *customers]
    funded = {c for cohort in cohorts for c in cohort.customers if cohort.funded(c)}
    for customer in everyone:
        if customer.external_id in funded:
            wallet, credit = _wallet_rows(billing, customer)
            wallets.append(wallet)
            credits.append(credit)
    engine = billing.storage.engine  # type: ignore[attr-defined]
    with engine.begin() as conn:  # rows exactly as the repositories write them
        batches: tuple[tuple[Any, Any, list[Any]], ...] = (
            (Customer, TABLES["customers"], customers),
            (Subscription, TABLES["subscriptions"], subscriptions),
            (AddonAssociation, TABLES["addon_associations"], addon_rows),
            (CouponAssociation, TABLES["coupon_associations"], coupon_rows),
            (TaxAssociation, TABLES["tax_associations"], tax_rows),
            (Wallet, TABLES["wallets"], wallets),
            (WalletTransaction, TABLES["wallet_transactions"], credits),
        )
        for model, table, items in batches:
            if not items:
                continue
            encoder = row_encoder(model, table, engine.dialect)
            conn.exec_driver_sql(encoder.insert_sql(), [tuple(encoder.values(item)) for item in items])
    setup.seconds["direct: customers and subscriptions"] = time.perf_counter() - started
    billing.close()

    started = time.perf_counter()
    rows = event_rows(store, cohorts, args.seed)
    if store.kind == "sqlite":
        _preload_sqlite(store, rows)  # ends with ANALYZE and a checkpoint
    else:
        _preload_postgres(store, rows)
        import psycopg

        with psycopg.connect(_libpq(store.url), autocommit=True) as pg:
            pg.execute("VACUUM ANALYZE")
            pg.execute("CHECKPOINT")
    setup.seconds["direct: events"] = time.perf_counter() - started
    total_subs = sum(c.size for c in cohorts)
    print(
        f"  setup: {total_subs:,} customers and subscriptions ({sample} through the library), "
        f"{len(rows):,} events; "
        + ", ".join(f"{label} {seconds:.1f}s" for label, seconds in setup.seconds.items())
    )
    return setup


def checkpoint(store: Store) -> None:
    if store.kind == "sqlite":
        conn = _sqlite_connect(store)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        return
    import psycopg

    with psycopg.connect(_libpq(store.url), autocommit=True) as conn:
        conn.execute("CHECKPOINT")


# -- checks -------------------------------------------------------------------------------------------


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


# -- where the time goes -----------------------------------------------------------------------------


@contextmanager
def timed_parts() -> Iterator[dict[str, float]]:
    """Wall-clock seconds in the parts of a run, by wrapping them with a timer. Labels are indented
    under the part that calls them; table inserts are told apart by table."""
    from billingkit.services import billing_runs, invoice_issuing, invoicing, notifications
    from billingkit.storage.sql.repository import SqlRepository
    from billingkit.storage.sql.storage import SqlUnitOfWork
    from billingkit.storage.sql.usage import SqlUsageStore

    spent: dict[str, float] = {}
    targets: list[tuple[Any, str, Callable[..., str]]] = [
        (SqlUnitOfWork, "__enter__", lambda *a: "unit of work open (pool checkout, BEGIN)"),
        (SqlUnitOfWork, "claim_due", lambda *a: "claim (SELECT, rows -> Subscription)"),
        (billing_runs, "plan_due", lambda *a: "plan_due"),
        (billing_runs, "load_snapshot", lambda *a: "load_snapshot"),
        (billing_runs, "measure_usage", lambda *a: "measure_usage"),
        (SqlUsageStore, "aggregate", lambda *a: "  usage aggregate (SQL)"),
        (billing_runs, "compute_invoice", lambda *a: "compute_invoice"),
        (invoicing, "_request", lambda *a: "  _request (LineItemInput, InvoiceRequest)"),
        (invoicing, "assemble_invoice", lambda *a: "  assemble_invoice (core)"),
        (billing_runs, "build_invoice", lambda *a: "build_invoice (Invoice, line items)"),
        (invoice_issuing, "number_invoices", lambda *a: "number_invoices (one counter block)"),
        (invoicing, "invoice_payload", lambda *a: "invoice_payload (to_dict)"),
        (notifications, "event", lambda *a: "notification events (built)"),
        (SqlRepository, "add_many", lambda repo, *a: f"INSERT ({repo._table.name}, executemany)"),
        (SqlRepository, "update_many", lambda repo, *a: f"UPDATE ({repo._table.name}, version check)"),
        (SqlUnitOfWork, "commit", lambda *a: "commit"),
        (SqlUnitOfWork, "__exit__", lambda *a: "unit of work close"),
    ]
    saved = []
    for owner, name, label in targets:
        original = owner.__dict__[name]
        saved.append((owner, name, original))

        def timed(*a: Any, _f: Any = original, _label: Callable[..., str] = label, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return _f(*a, **k)
            finally:
                key = _label(*a)
                spent[key] = spent.get(key, 0.0) + time.perf_counter() - start

        setattr(owner, name, timed)
    try:
        yield spent
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


ORDER = [
    "unit of work open (pool checkout, BEGIN)",
    "claim (SELECT, rows -> Subscription)",
    "plan_due",
    "load_snapshot",
    "measure_usage",
    "  usage aggregate (SQL)",
    "compute_invoice",
    "  _request (LineItemInput, InvoiceRequest)",
    "  assemble_invoice (core)",
    "build_invoice (Invoice, line items)",
    "number_invoices (one counter block)",
    "invoice_payload (to_dict)",
    "notification events (built)",
    "INSERT (invoices, executemany)",
    "UPDATE (subscriptions, version check)",
    "INSERT (notification_events, executemany)",
    "commit",
    "unit of work close",
]

# cProfile rows worth naming: (label, path suffix, function).
PROFILE_ROWS = [
    ("run_due (all)", "facade/billing.py", "run_due"),
    ("claim_due", "sql/storage.py", "claim_due"),
    ("plan_due", "domain/renewals.py", "plan_due"),
    ("load_snapshot", "services/invoicing.py", "load_snapshot"),
    ("measure_usage", "services/invoicing.py", "measure_usage"),
    ("  usage aggregate", "sql/usage.py", "aggregate"),
    ("compute_invoice", "services/invoicing.py", "compute_invoice"),
    ("  _request", "services/invoicing.py", "_request"),
    ("  assemble_invoice", "domain/invoicing.py", "assemble_invoice"),
    ("build_invoice", "services/invoicing.py", "build_invoice"),
    ("number_invoices", "services/invoice_issuing.py", "number_invoices"),
    ("invoice_payload", "services/invoicing.py", "invoice_payload"),
    ("notification events (built)", "services/notifications.py", "event"),
    ("SqlRepository.add_many (invoices, notifications)", "sql/repository.py", "add_many"),
    ("SqlRepository.update_many (subscriptions)", "sql/repository.py", "update_many"),
    ("commit", "sql/storage.py", "commit"),
    ("RowEncoder.values (model -> driver row)", "sql/mapping.py", "values"),
    ("RowDecoder.models (driver rows -> models)", "sql/mapping.py", "models"),
    ("pydantic model_copy", "pydantic/main.py", "model_copy"),
    ("pydantic model_dump", "pydantic/main.py", "model_dump"),
    ("SQLAlchemy Connection.execute", "sqlalchemy/engine/base.py", "execute"),
    ("SQLAlchemy cache key + compile", "sqlalchemy/sql/elements.py", "_compile_w_cache"),
]


def run_timed(billing: Billing, cohort: Cohort) -> tuple[list[Invoice], float, dict[str, float]]:
    gc.collect()
    with timed_parts() as spent:
        started = time.perf_counter()
        report = billing.run_due(cohort.run_at)
        total = time.perf_counter() - started
    if report.failures:
        raise SystemExit(f"{cohort.name}: failures {report.failures[:3]}")
    n = len(report.invoices)
    print(f"  where the time goes (timers; {n:,} subscriptions, {n / total:,.0f} invoices/s):")
    print(f"    {'part':<46} {'total':>8} {'per invoice':>12} {'share':>7}")
    top = 0.0
    for label in ORDER:
        seconds = spent.get(label, 0.0)
        if not label.startswith(" "):
            top += seconds
        print(f"    {label:<46} {seconds:7.3f}s {seconds * 1e6 / n:9.0f} us {seconds / total:7.1%}")
    for label, seconds in spent.items():  # anything not foreseen in ORDER
        if label not in ORDER:
            top += seconds if not label.startswith(" ") else 0.0
            print(f"    {label:<46} {seconds:7.3f}s {seconds * 1e6 / n:9.0f} us {seconds / total:7.1%}")
    rest = total - top
    print(
        f"    {'rest (run_due loop, model_copy, bookkeeping)':<46} {rest:7.3f}s {rest * 1e6 / n:9.0f} us "
        f"{rest / total:7.1%}"
    )
    print(f"    {'total':<46} {total:7.3f}s {total * 1e6 / n:9.0f} us")
    return list(report.invoices), total, spent


def run_profiled(billing: Billing, cohort: Cohort, top: int, sort: str) -> list[Invoice]:
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    report = billing.run_due(cohort.run_at)
    profiler.disable()
    if report.failures:
        raise SystemExit(f"{cohort.name}: failures {report.failures[:3]}")
    stats = pstats.Stats(profiler)
    entries: dict[tuple[str, str], float] = {}
    for (filename, _line, function), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for _label, suffix, name in PROFILE_ROWS:
            if function == name and filename.replace(os.sep, "/").endswith(suffix):
                entries[(suffix, name)] = entries.get((suffix, name), 0.0) + cumulative
    total = entries.get(("facade/billing.py", "run_due"), 0.0) or 1.0
    n = len(report.invoices)
    print(f"  cProfile of a run of {n:,} subscriptions ({total:.2f}s under the profiler), cumulative:")
    for label, suffix, name in PROFILE_ROWS:
        seconds = entries.get((suffix, name), 0.0)
        print(f"    {label:<46} {seconds:7.3f}s {seconds / total:7.1%}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(sort).print_stats(top)
    print(f"  cProfile top {top} by {sort}:")
    lines = out.getvalue().splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    for line in lines[start:]:
        if line.strip():
            print("    " + line)
    return list(report.invoices)


# -- per store -----------------------------------------------------------------------------------------


def run_store(store: Store, args: argparse.Namespace) -> dict[str, float]:
    print(f"-- {store.kind}: {store.url}")
    size, psize = args.subscriptions, args.profile_subscriptions
    every, wallets, addons = args.adjusted_every, args.wallet_every, args.addon_every
    cohorts = [
        Cohort("main", T0, RUN_AT, size, 0, adjusted_every=every, wallet_every=wallets, addon_every=addons)
    ]
    if not args.no_profile:
        cohorts.append(
            Cohort(
                "timers",
                T0 + timedelta(days=5),
                RUN_AT + timedelta(days=5),
                psize,
                size,
                adjusted_every=every,
                wallet_every=wallets,
                addon_every=addons,
            )
        )
        cohorts.append(
            Cohort(
                "cprofile",
                T0 + timedelta(days=11),
                RUN_AT + timedelta(days=11),
                psize,
                size + psize,
                adjusted_every=every,
                wallet_every=wallets,
                addon_every=addons,
            )
        )
    setup = prepare(store, cohorts, args)

    billing = Billing(SqlStorage.from_url(store.url, migrate=False), TestClock(RUN_AT))
    scoped = billing.scope(store.tenant_id, store.environment_id)
    checkpoint(store)
    gc.collect()
    if args.gc == "off":
        gc.disable()  # diagnostics: what the garbage collector's passes cost the run
    started, cpu = time.perf_counter(), time.process_time()
    report = billing.run_due(RUN_AT, keep_invoices=args.keep_invoices == "yes")
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    gc.enable()
    rate = report.invoice_count / seconds
    verdict = (
        ""
        if store.kind != "sqlite"
        else (" target >= 1,000/s: " + ("met" if rate >= TARGET_PER_SECOND else "MISSED"))
    )
    print(
        f"  run_due: {report.subscription_count:,} subscriptions, {report.invoice_count:,} invoices, "
        f"{report.notification_count:,} notifications, {len(report.failures)} failures in {seconds:.2f}s "
        f"({cpu:.2f}s of CPU in this process): "
        f"{rate:,.0f} invoices/s{verdict}"
    )
    if report.failures:
        raise SystemExit(f"failures: {report.failures[:3]}")
    issued = (
        list(report.invoices) if args.keep_invoices == "yes" else stored_invoices(store, billing, cohorts[0])
    )
    check_run(store, billing, scoped, cohorts[0], issued, args.seed, first_number=1)
    print(
        f"  checked: {size:,} invoices stored, none still due, {SAMPLE} amounts match, "
        f"numbers INV-{RUN_AT:%Y%m}-00001..{size:05d} without a gap"
    )

    if not args.no_profile:
        invoices, _, _ = run_timed(billing, cohorts[1])
        check_run(store, billing, scoped, cohorts[1], invoices, args.seed)
        invoices = run_profiled(billing, cohorts[2], args.top, args.sort)
        check_run(store, billing, scoped, cohorts[2], invoices, args.seed)
    billing.close()
    return {
        "seconds": seconds,
        "rate": rate,
        "library_subs_per_s": args.library_sample / setup.seconds["library: subscriptions"],
        "setup": sum(setup.seconds.values()),
    }


def _adjusted_share(every: int) -> str:
    if every <= 0:
        return "no coupon or tax"
    return f"one in {every} with a {COUPON_PERCENT}% coupon and a {TAX_PERCENT}% tax"


def _addon_share(every: int) -> str:
    if every <= 0:
        return "no add-ons"
    return f"one in {every} with add-on Boost ({ADDON_FEE} in advance, {ADDON_PER_REQUEST} a request)"


def _wallet_share(every: int) -> str:
    if every <= 0:
        return "no wallets"
    return f"one in {every} with a PRE_PAID wallet of {WALLET_CREDITS} credits"


def main(argv: list[str]) -> None:
    """Print the billing run's invoices per second per store, checks, and where the time goes."""
    parser = argparse.ArgumentParser(prog="python -m bench billing")
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--library-sample", type=int, default=200, help="made through the library")
    parser.add_argument("--profile-subscriptions", type=int, default=500, help="per profiled run")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument(
        "--pg-url",
        default=DEFAULT_PG_URL.replace("billingkit_bench", "billingkit_bench_billing"),
        help="a database this benchmark may wipe",
    )
    parser.add_argument("--seed", type=int, default=20260201)
    parser.add_argument(
        "--gc", default="on", choices=["on", "off"], help="'off': the main run without the garbage collector"
    )
    parser.add_argument(
        "--keep-invoices",
        default="yes",
        choices=["yes", "no"],
        help="run_due(keep_invoices=...): 'no' is how the worker runs (the report only counts)",
    )
    parser.add_argument(
        "--adjusted-every",
        type=int,
        default=4,
        help="one subscription in N has a 10%% coupon and a 20%% tax (0: none)",
    )
    parser.add_argument(
        "--wallet-every",
        type=int,
        default=0,
        help="one customer in N has a PRE_PAID wallet of 30 credits paying its invoice (0: none)",
    )
    parser.add_argument(
        "--addon-every",
        type=int,
        default=0,
        help="one subscription in N has an add-on with a FIXED and a USAGE price (0: none)",
    )
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--top", type=int, default=25, help="cProfile rows to show")
    parser.add_argument(
        "--sort", default="cumulative", choices=["cumulative", "tottime"], help="of those rows"
    )
    args = parser.parse_args(argv)
    if args.subscriptions < SAMPLE:
        raise SystemExit(f"--subscriptions must be at least {SAMPLE}")

    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = set(stores) - {"sqlite", "postgres"}
    if unknown:
        raise SystemExit(f"unknown store(s) {sorted(unknown)}; use sqlite and/or postgres")
    print(
        f"workload: {args.subscriptions:,} monthly subscriptions due at once (flat fee in advance, SLAB "
        f"COUNT and PACKAGE SUM in arrear), {2 * EVENTS_PER_NAME} events each, "
        f"{_adjusted_share(args.adjusted_every)}, {_wallet_share(args.wallet_every)}, "
        f"{_addon_share(args.addon_every)}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_billing_") as tmp:
        for kind in stores:
            url = f"sqlite:///{Path(tmp) / 'billing.db'}" if kind == "sqlite" else args.pg_url
            results[kind] = run_store(Store(kind, url), args)

    print()
    print("| store | run_due | invoices/s | library subscriptions.create | setup |")
    print("|---|---|---|---|---|")
    for kind, r in results.items():
        print(
            f"| {kind} | {r['seconds']:.2f}s | {r['rate']:,.0f}/s | {r['library_subs_per_s']:,.0f}/s | "
            f"{r['setup']:.0f}s |"
        )
    if "sqlite" in results:
        met = results["sqlite"]["rate"] >= TARGET_PER_SECOND
        print(f"target >= {TARGET_PER_SECOND:,.0f} invoices/s on SQLite: {'met' if met else 'NOT met'}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
