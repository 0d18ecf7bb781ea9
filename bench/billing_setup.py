"""``bench billing``'s setup: the schema and the catalogue, the first subscriptions through the
library (timed), the rest inserted directly as rows the repositories would write, and the events
preloaded through the bare driver (``prepare``)."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Any

from bench.billing_workload import (
    COUPON_PERCENT,
    T0,
    TAX_PERCENT,
    WALLET_CREDITS,
    Cohort,
    addon_prices,
    event_rows,
    plan_prices,
)
from bench.stores import Store, libpq_url, preload_postgres, preload_sqlite, reset_postgres
from billingkit import Billing, SqlStorage, TestClock
from billingkit.domain.addon_associations import AddonAssociation
from billingkit.domain.catalog.tax_associations import TaxAssociation, TaxRateEntityType
from billingkit.domain.coupon_associations import CouponAssociation
from billingkit.domain.customers import Customer
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

__all__ = ["Setup", "prepare"]


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
    plan = scoped.plans.create(name="Pro", prices=plan_prices(calls.id, stored.id))
    setup.plan_id = plan.id
    setup.addon_id = scoped.addons.create(name="Boost", lookup_key="boost", prices=addon_prices(calls.id)).id
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
        preload_sqlite(store, rows)  # ends with ANALYZE and a checkpoint
    else:
        preload_postgres(store, rows)
        import psycopg

        with psycopg.connect(libpq_url(store.url), autocommit=True) as pg:
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
