"""The storage contract: what every ``Storage`` must do, whatever it stores data in."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billingkit.domain.access import (
    Account,
    AccountType,
    ApiKey,
    EnvironmentType,
    Role,
)
from billingkit.domain.customers import Customer
from billingkit.domain.event_queries import EventFilter, EventPage, filter_events
from billingkit.domain.queries import Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Status
from billingkit.domain.usage import MeterFilter, UsageEvent, property_text
from billingkit.errors import AlreadyExists, NotFound, ValidationError, VersionConflict
from billingkit.ports import Storage
from billingkit.storage.kinds import KINDS, Level

__all__ = ["StorageContract", "sample"]

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_counter = iter(range(10**9))


def sample(kind: str, tenant_id: str = "tenant_a", environment_id: str = "env_a", **fields: Any) -> Any:
    """A valid resource of ``kind`` in the given scope (fields override the defaults)."""
    n = next(_counter)
    common: dict[str, Any] = {
        "id": f"{kind}_{n:08d}",
        "created_at": T0 + timedelta(seconds=n),
        "updated_at": T0 + timedelta(seconds=n),
        "created_by": "test",
        "updated_by": "test",
    }
    scope: dict[str, Any] = {}
    level = KINDS[kind].level
    if level is not Level.GLOBAL:
        scope["tenant_id"] = tenant_id
    if level is Level.ENVIRONMENT:
        scope["environment_id"] = environment_id
    defaults: dict[str, dict[str, Any]] = {
        "tenants": {"name": f"Tenant {n}"},
        "environments": {"name": f"env {n}", "type": EnvironmentType.DEVELOPMENT},
        "accounts": {
            "type": AccountType.USER,
            "name": f"User {n}",
            "email": f"user{n}@example.com",
            "roles": (Role.ALL_READER,),
        },
        "api_keys": {
            "name": f"key {n}",
            "key_hash": f"{n:064x}",
            "display_id": "sk_ab***cd",
            "account_id": "user_1",
            "account_type": AccountType.USER,
            "roles": (Role.ALL_WRITER, Role.EVENT_INGESTOR),
        },
        "customers": {"external_id": f"ext-{n}", "name": f"Customer {n}", "metadata": {"tier": "gold"}},
        "notifications": {
            "event_type": "customer.created",
            "entity_type": "customer",
            "entity_id": f"cust_{n}",
            "payload": {"event_type": "customer.created", "customer": {"id": f"cust_{n}"}},
        },
        # Catalogue kinds carry nested values (tiers, aggregations, alert settings) and exact
        # decimals, so their round trip proves JSON columns keep decimals and structure exactly.
        "plans": {"name": f"Plan {n}", "lookup_key": f"plan-{n}", "display_order": 2, "metadata": {"a": "b"}},
        "addons": {"name": f"Add-on {n}", "lookup_key": f"addon-{n}"},
        "prices": {
            "entity_type": "PLAN",
            "entity_id": "plan_1",
            "type": "USAGE",
            "billing_model": "TIERED",
            "billing_period": "MONTHLY",
            "invoice_cadence": "ARREAR",
            "currency": "usd",
            "tier_mode": "SLAB",
            "tiers": [
                {"up_to": 1000, "unit_amount": "0.0125", "flat_amount": "0.10"},
                {"up_to": None, "unit_amount": "0.01"},
            ],
            "meter_id": "meter_1",
            "lookup_key": f"price-{n}",
            "start_date": T0,
            "min_quantity": "0.000001",
        },
        "price_units": {
            "code": f"cr{n}",
            "name": "Credits",
            "symbol": "CR",
            "base_currency": "usd",
            "conversion_rate": "0.0001",
        },
        "groups": {"name": f"Group {n}", "lookup_key": f"group-{n}", "entity_type": "price"},
        "meters": {
            "name": f"Meter {n}",
            "event_name": "api.request",
            "aggregation": {"type": "SUM_WITH_MULTIPLIER", "field": "bytes", "multiplier": "0.001"},
            "filters": [{"key": "region", "values": ["eu", "us"]}],
        },
        "features": {
            "name": f"Feature {n}",
            "type": "metered",
            "lookup_key": f"feature-{n}",
            "meter_id": "meter_1",
            "reporting_unit": {"unit_singular": "call", "unit_plural": "calls", "conversion_rate": "0.5"},
            "alert_settings": {
                "alert_enabled": True,
                "warning": {"threshold": "80.5", "condition": "above"},
                "critical": {"threshold": "100", "condition": "above"},
            },
        },
        "entitlements": {
            "entity_type": "PLAN",
            "entity_id": f"plan_{n}",
            "plan_id": f"plan_{n}",
            "feature_id": "feat_1",
            "feature_type": "config",
            "config_value": {"regions": ["eu"], "max": 3},
        },
        "credit_grants": {
            "name": f"Grant {n}",
            "scope": "PLAN",
            "plan_id": "plan_1",
            "cadence": "RECURRING",
            "credits": "100.50",
            "period": "MONTHLY",
            "period_count": 1,
            "expiration_type": "DURATION",
            "expiration_duration": 30,
            "expiration_duration_unit": "DAY",
        },
        "coupons": {
            "name": f"Coupon {n}",
            "type": "percentage",
            "cadence": "repeated",
            "coupon_code": f"SAVE{n}",
            "percentage_off": "12.5",
            "duration_in_periods": 3,
            "max_redemptions": 100,
            "rules": {"min_amount": "10"},
        },
        "tax_rates": {
            "name": f"VAT {n}",
            "code": f"VAT{n}",
            "tax_rate_type": "percentage",
            "percentage_value": "20",
        },
        # Subscriptions and invoices embed their line items as JSON: the round trip proves that
        # decimals, instants and enums inside them come back exactly.
        "subscriptions": {
            "plan_id": "plan_1",
            "customer_id": f"cust_{n}",
            "subscription_status": "active",
            "billing_period": "MONTHLY",
            "billing_anchor": T0,
            "currency": "usd",
            "start_date": T0,
            "current_period_start": T0,
            "current_period_end": T0 + timedelta(days=31),
            "payment_terms": "30 NET",
            "commitment_amount": "100.005",
            "overage_factor": "1.5",
            "next_run_at": T0 + timedelta(days=31),
            "line_items": [
                {
                    "id": f"subs_line_{n}",
                    "subscription_id": f"subs_{n}",
                    "customer_id": f"cust_{n}",
                    "entity_id": "plan_1",
                    "price_id": "price_1",
                    "price_type": "USAGE",
                    "meter_id": "meter_1",
                    "quantity": "0.000001",
                    "currency": "usd",
                    "billing_period": "MONTHLY",
                    "invoice_cadence": "ARREAR",
                    "start_date": T0,
                }
            ],
        },
        "invoices": {
            "customer_id": f"cust_{n}",
            "subscription_id": f"subs_{n}",
            "invoice_number": f"INV-202603-{n:05d}",
            "invoice_status": "FINALIZED",
            "currency": "usd",
            "billing_reason": "SUBSCRIPTION_CYCLE",
            "subtotal": "12.50",
            "total": "12.50",
            "amount_due": "12.50",
            "amount_remaining": "12.50",
            "period_start": T0,
            "period_end": T0 + timedelta(days=31),
            "due_date": T0 + timedelta(days=32),
            "line_items": [
                {
                    "id": f"inv_line_{n}",
                    "display_name": "API calls",
                    "price_type": "USAGE",
                    "quantity": "1250.5",
                    "amount": "12.50",
                    "period_start": T0,
                    "period_end": T0 + timedelta(days=31),
                    "trace": {"unrounded_amount": "12.5025", "tiers": [{"quantity": "1000"}]},
                }
            ],
        },
        "wallet_transactions": {
            "wallet_id": "wallet_1",
            "customer_id": f"cust_{n}",
            "type": "credit",
            "credit_amount": "10.005",
            "amount": "20.01",
            "transaction_reason": "FREE_CREDIT_GRANT",
            "idempotency_key": f"sample|{n}",
            "expiry_date": T0 + timedelta(days=30),
        },
    }
    model = KINDS[kind].model
    return model(**{**common, **scope, **defaults[kind], **fields})


# -- event streams and queries for the event query contract ------------------------------------
_EVENT_NAMES = ("api.call", "Api.call", "éclair", "z")
_EVENT_CUSTOMERS = ("c1", "c2", "C1")
_EVENT_KEYS = ("region", "n", "flag")
_event_values = st.one_of(
    st.sampled_from(["eu", "us", "EU", "1.5", "2", "true", "", "é"]),
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=10**19, max_value=10**20),
    st.sampled_from([1.5, 2.0, -0.0, 0.1, 1e16, 2.5e-07]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.just({"a": 1}),
    st.just([1]),
)


@st.composite
def _event_stream(draw: Any) -> list[UsageEvent]:
    """Up to 30 events with unique ids (mixed case and non-ASCII, to prove code point order),
    few distinct instants (ties broken by id) and mixed property values."""
    size = draw(st.integers(0, 30))
    alphabet = "aAbZ_é€\U0001d11e0"
    ids = draw(st.lists(st.text(alphabet, min_size=1, max_size=3), min_size=size, max_size=size, unique=True))
    instants = draw(st.lists(st.integers(0, 3600), min_size=1, max_size=5))
    events = []
    for event_id in ids:
        keys = draw(st.lists(st.sampled_from(_EVENT_KEYS), max_size=3, unique=True))
        events.append(
            UsageEvent(
                event_id=event_id,
                event_name=draw(st.sampled_from(_EVENT_NAMES)),
                external_customer_id=draw(st.sampled_from(_EVENT_CUSTOMERS)),
                timestamp=T0
                + timedelta(
                    seconds=draw(st.sampled_from(instants)),
                    microseconds=draw(st.sampled_from([0, 1, 999_999])),
                ),
                properties={key: draw(_event_values) for key in keys},
                customer_id=draw(st.sampled_from([None, "cust_1"])),
                source=draw(st.sampled_from([None, "api", "sdk"])),
            )
        )
    return events


@st.composite
def _event_filter(draw: Any, events: list[UsageEvent]) -> EventFilter:
    """A random query over ``events``: window, exact filters, property filters on the texts the
    stream holds, sort, order, offset, limit and keys (from the stream or made up)."""
    start = T0 + timedelta(seconds=draw(st.sampled_from([0, -1, 1, 600, 1800])))
    end = start + timedelta(seconds=draw(st.sampled_from([7200, 1, 600, 1800])))

    def sometimes(options: list[Any]) -> Any:  # None (no filter) three times in four
        return draw(st.sampled_from(options)) if draw(st.integers(0, 3)) == 0 else None

    texts = sorted({t for e in events for v in e.properties.values() if (t := property_text(v)) is not None})
    property_filters = tuple(
        MeterFilter(
            key,
            tuple(draw(st.lists(st.sampled_from([*texts, "eu", "2"]), min_size=1, max_size=3, unique=True))),
        )
        for key in (sometimes([_EVENT_KEYS[:1], _EVENT_KEYS[1:2], _EVENT_KEYS[:2]]) or ())
    )
    sort = draw(st.sampled_from(["timestamp", "timestamp", "event_name"]))
    after = before = None
    if sort == "timestamp" and draw(st.booleans()):
        if events and draw(st.integers(0, 3)):
            chosen = draw(st.sampled_from(events))
            key = (chosen.timestamp, chosen.event_id)
        else:
            key = (T0 + timedelta(seconds=draw(st.integers(0, 3600))), draw(st.sampled_from(["", "a", "é"])))
        if draw(st.booleans()):
            after = key
        else:
            before = key
    return EventFilter(
        start=start,
        end=end,
        external_customer_id=sometimes(list(_EVENT_CUSTOMERS)),
        event_name=sometimes(list(_EVENT_NAMES)),
        event_id=sometimes([e.event_id for e in events[:3]] or ["a"]),
        source=sometimes(["api", "sdk"]),
        property_filters=property_filters,
        sort=sort,
        descending=draw(st.booleans()),
        after=after,
        before=before,
        offset=draw(st.sampled_from([0, 0, 1, 3])),
        limit=draw(st.sampled_from([5, 1, 2, 50])),
    )


def _page_view(page: EventPage) -> tuple[Any, ...]:
    """A page with properties compared by their text (PostgreSQL's JSONB prints some floats as
    plain integers: the same JSON number, another Python type)."""
    rows = [
        (
            e.event_id,
            e.event_name,
            e.external_customer_id,
            e.customer_id,
            e.timestamp,
            e.source,
            {key: property_text(value) for key, value in e.properties.items()},
        )
        for e in page.events
    ]
    return rows, page.has_more, page.total_count


class StorageContract:
    """Subclass and provide a ``storage`` fixture returning a fresh, empty store (a class
    method fixture or one from your ``conftest.py``)."""

    # -- readiness -------------------------------------------------------------------------
    def test_ping_answers_even_while_a_writer_holds_its_transaction(self, storage: Storage) -> None:
        storage.ping()
        answered = threading.Event()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(sample("customers"))  # an open write transaction, not committed

            def probe() -> None:
                storage.ping()
                answered.set()

            thread = threading.Thread(target=probe, daemon=True)
            thread.start()
            # A probe that needed the write lock would wait for this transaction to end.
            assert answered.wait(5), "ping waited for a writer"
        thread.join()

    # -- round trips -----------------------------------------------------------------------
    @pytest.mark.parametrize("kind", sorted(KINDS))
    def test_every_kind_round_trips_exactly(self, storage: Storage, kind: str) -> None:
        item = sample(kind)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            getattr(uow, kind).add(item)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            loaded = getattr(uow, kind).get(item.id)
        assert loaded == item
        assert loaded.created_at.tzinfo is not None and loaded.created_at.utcoffset() == timedelta(0)

    @pytest.mark.parametrize("kind", sorted(KINDS))
    def test_find_many_returns_exactly_the_stored_items_of_the_scope(
        self, storage: Storage, kind: str
    ) -> None:
        level = KINDS[kind].level
        ours = [sample(kind) for _ in range(3)]
        archived = sample(kind, status=Status.ARCHIVED)
        theirs = sample(kind, tenant_id="tenant_b") if level is not Level.GLOBAL else None
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            getattr(uow, kind).add_many([*ours, archived])
            uow.commit()
        if theirs is not None:
            with storage.unit_of_work("tenant_b", "env_a") as uow:
                getattr(uow, kind).add(theirs)
                uow.commit()
        wanted = [item.id for item in (*ours, archived)] + [ours[0].id, "missing_id"]
        if theirs is not None:
            wanted.append(theirs.id)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            repo = getattr(uow, kind)
            found = sorted(repo.find_many(wanted), key=lambda item: item.id)
            assert found == sorted([*ours, archived], key=lambda item: item.id)
            assert repo.find_many([]) == []
            many = [sample(kind) for _ in range(1100)]  # more than one statement's worth of ids
            repo.add_many(many)
            assert len(repo.find_many(item.id for item in many)) == 1100

    def test_missing_resource_is_not_found(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.find("cust_missing") is None
            with pytest.raises(NotFound):
                uow.customers.get("cust_missing")

    # -- scoping ---------------------------------------------------------------------------
    @pytest.mark.parametrize("kind", sorted(k for k, v in KINDS.items() if v.level is not Level.GLOBAL))
    def test_other_scopes_cannot_see_a_resource(self, storage: Storage, kind: str) -> None:
        item = sample(kind)
        field = "name" if "name" in type(item).model_fields else "created_by"
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            getattr(uow, kind).add(item)
            uow.commit()
        others = [("tenant_b", "env_a")]
        if KINDS[kind].level is Level.ENVIRONMENT:
            others.append(("tenant_a", "env_b"))
        for tenant_id, environment_id in others:
            with storage.unit_of_work(tenant_id, environment_id) as uow:
                repo = getattr(uow, kind)
                assert repo.find(item.id) is None
                with pytest.raises(NotFound):
                    repo.get(item.id)
                assert repo.find_one(**{field: getattr(item, field)}) is None
                assert repo.list(ListQuery(status=None)).total == 0
                with pytest.raises(NotFound):
                    repo.update(
                        item.model_copy(
                            update={
                                "tenant_id": tenant_id,
                                **(
                                    {"environment_id": environment_id}
                                    if KINDS[kind].level is Level.ENVIRONMENT
                                    else {}
                                ),
                            }
                        )
                    )

    def test_writing_into_another_scope_is_refused(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(ValidationError):
                uow.customers.add(sample("customers", tenant_id="tenant_b"))
            with pytest.raises(ValidationError):
                uow.customers.add(sample("customers", environment_id="env_b"))

    # -- uniqueness ------------------------------------------------------------------------
    def test_external_id_is_unique_among_live_customers_of_an_environment(self, storage: Storage) -> None:
        first = sample("customers", external_id="acme")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(first)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(AlreadyExists) as info:
                uow.customers.add(sample("customers", external_id="acme"))
            assert info.value.details["field"] == "external_id"
        # another environment may use it
        with storage.unit_of_work("tenant_a", "env_b") as uow:
            uow.customers.add(sample("customers", environment_id="env_b", external_id="acme"))
            uow.commit()
        # once the first is archived the id is free again
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.update(first.model_copy(update={"status": Status.ARCHIVED}))
            uow.customers.add(sample("customers", external_id="acme"))
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.list(ListQuery(status=None)).total == 2

    def test_one_invoice_per_subscription_period_and_reason(self, storage: Storage) -> None:
        first = sample("invoices", subscription_id="subs_1", invoice_number="INV-1")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.invoices.add(first)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(AlreadyExists) as info:
                uow.invoices.add(sample("invoices", subscription_id="subs_1", invoice_number="INV-2"))
            assert info.value.details["field"] == "subscription_id"
            # another billing reason, period or subscription is another invoice
            uow.invoices.add(
                sample(
                    "invoices",
                    subscription_id="subs_1",
                    invoice_number="INV-3",
                    billing_reason="SUBSCRIPTION_CREATE",
                )
            )
            uow.invoices.add(sample("invoices", subscription_id="subs_2", invoice_number="INV-4"))
            # invoices without a subscription never collide
            uow.invoices.add(sample("invoices", subscription_id=None, invoice_number="INV-5"))
            uow.invoices.add(sample("invoices", subscription_id=None, invoice_number="INV-6"))
            with pytest.raises(AlreadyExists):
                uow.invoices.add(sample("invoices", subscription_id="subs_9", invoice_number="INV-1"))
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.invoices.list(ListQuery(status=None)).total == 5

    def test_counters_are_gap_free_per_scope_and_roll_back(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert [uow.counters.next("inv:202603") for _ in range(3)] == [1, 2, 3]
            assert uow.counters.next("inv:202604") == 1
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.counters.next("inv:202603") == 4  # taken, then rolled back below
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.counters.next("inv:202603") == 4
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_b") as uow:
            assert uow.counters.next("inv:202603") == 1
            uow.commit()

    def test_counters_hand_out_blocks(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.counters.next("blocks", count=5) == 1  # 1..5 taken
            assert uow.counters.next("blocks") == 6
            assert uow.counters.next("blocks", count=3) == 7  # 7..9
            bad: Any
            for bad in (0, -1, True, 1.5):
                with pytest.raises(ValidationError):
                    uow.counters.next("blocks", count=bad)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.counters.next("blocks", count=2) == 10
            assert uow.counters.next("fresh", count=4) == 1

    def test_concurrent_counters_hand_out_each_number_once(self, storage: Storage) -> None:
        taken: list[int] = []
        lock = threading.Lock()

        def take() -> None:
            for _ in range(10):
                with storage.unit_of_work("tenant_a", "env_a") as uow:
                    value = uow.counters.next("n")
                    uow.commit()
                with lock:
                    taken.append(value)

        threads = [threading.Thread(target=take) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(taken) == list(range(1, 41))

    def test_subscription_updates_check_the_version(self, storage: Storage) -> None:
        sub = sample("subscriptions")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.subscriptions.add(sub)
            updated = uow.subscriptions.update(
                sub.model_copy(update={"billing_sequence": 1}), expected_version=1
            )
            assert updated.version == 2
            with pytest.raises(VersionConflict):
                uow.subscriptions.update(sub.model_copy(update={"billing_sequence": 2}), expected_version=1)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = uow.subscriptions.get(sub.id)
            assert (stored.version, stored.billing_sequence) == (2, 1)

    def test_add_many_stores_all_or_none(self, storage: Storage) -> None:
        kept = sample("customers", external_id="kept")
        batch = [sample("customers", external_id=f"b{n}") for n in range(3)]
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(kept)
            uow.customers.add_many(batch)
            uow.customers.add_many([])
            clash = [sample("customers", external_id="new"), sample("customers", external_id="b1")]
            with pytest.raises(AlreadyExists):
                uow.customers.add_many(clash)
            twice = sample("customers", external_id="twice")
            with pytest.raises(AlreadyExists):
                uow.customers.add_many([twice, twice.model_copy(update={"external_id": "other"})])
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = {c.external_id for c in uow.customers.list(ListQuery(limit=100)).items}
            assert stored == {"kept", "b0", "b1", "b2"}

    def test_add_many_refuses_another_scope(self, storage: Storage) -> None:
        ours, theirs = sample("customers"), sample("customers", environment_id="env_b")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(ValidationError):
                uow.customers.add_many([ours, theirs])
            assert uow.customers.find(ours.id) is None

    def test_update_many_writes_changes_and_checks_versions(self, storage: Storage) -> None:
        subs = [sample("subscriptions") for _ in range(3)]
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.subscriptions.add_many(subs)
            uow.commit()
        later = T0 + timedelta(days=31)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            changes = [
                (subs[0], subs[0].model_copy(update={"billing_sequence": 5, "next_run_at": later})),
                (subs[1], subs[1].model_copy(update={"billing_sequence": 7})),
                (subs[2], subs[2]),  # nothing changed but the version
            ]
            saved = uow.subscriptions.update_many(changes)
            assert [s.version for s in saved] == [2, 2, 2]
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = [uow.subscriptions.get(s.id) for s in subs]
            assert stored == saved
            assert (stored[0].billing_sequence, stored[0].next_run_at) == (5, later)
            assert (stored[1].billing_sequence, stored[1].next_run_at) == (7, subs[1].next_run_at)
            # A stale pair (version 1, stored 2) refuses the whole call.
            stale = [
                (stored[0], stored[0].model_copy(update={"billing_sequence": 6})),
                (subs[1], subs[1].model_copy(update={"billing_sequence": 8})),
            ]
            with pytest.raises(VersionConflict):
                uow.subscriptions.update_many(stale)
            assert [uow.subscriptions.get(s.id) for s in subs] == saved
            missing = sample("subscriptions")
            with pytest.raises(NotFound):
                uow.subscriptions.update_many([(missing, missing.model_copy(update={"billing_sequence": 1}))])

    def test_update_many_writes_only_the_fields_that_changed(self, storage: Storage) -> None:
        item = sample("customers", name="Ada", email="ada@old.test")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(item)
            uow.customers.update(item.model_copy(update={"email": "ada@new.test"}))  # someone else
            (saved,) = uow.customers.update_many([(item, item.model_copy(update={"name": "Ada L."}))])
            assert saved.name == "Ada L."
            stored = uow.customers.get(item.id)
            assert (stored.name, stored.email) == ("Ada L.", "ada@new.test")
            with pytest.raises(NotFound):
                ghost = sample("customers")
                uow.customers.update_many([(ghost, ghost)])
            with pytest.raises(ValidationError):
                uow.customers.update_many([(item, sample("customers"))])  # not the same resource

    def test_update_that_breaks_uniqueness_is_refused(self, storage: Storage) -> None:
        a = sample("customers", external_id="a")
        b = sample("customers", external_id="b")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(a)
            uow.customers.add(b)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(AlreadyExists):
                uow.customers.update(b.model_copy(update={"external_id": "a"}))
            assert uow.customers.get(b.id).external_id == "b"

    def test_duplicate_id_is_already_exists(self, storage: Storage) -> None:
        item = sample("customers")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(item)
            with pytest.raises(AlreadyExists):
                uow.customers.add(item.model_copy(update={"external_id": "other"}))

    # -- transactions ----------------------------------------------------------------------
    def test_uncommitted_work_is_rolled_back(self, storage: Storage) -> None:
        item = sample("customers")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(item)
        with pytest.raises(RuntimeError), storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(sample("customers"))
            raise RuntimeError("boom")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.list(ListQuery()).total == 0

    def test_rollback_restores_updated_rows(self, storage: Storage) -> None:
        item = sample("customers", name="before")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(item)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.update(item.model_copy(update={"name": "after"}))
            uow.rollback()
            assert uow.customers.get(item.id).name == "before"

    def test_a_refused_write_does_not_undo_earlier_writes(self, storage: Storage) -> None:
        kept = sample("customers", external_id="kept")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(kept)
            with pytest.raises(AlreadyExists):
                uow.customers.add(sample("customers", external_id="kept"))
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.get(kept.id) == kept

    def test_concurrent_writers_of_one_external_id_produce_one_customer(self, storage: Storage) -> None:
        outcomes: list[str] = []
        barrier = threading.Barrier(4)

        def create() -> None:
            barrier.wait()
            try:
                with storage.unit_of_work("tenant_a", "env_a") as uow:
                    uow.customers.add(sample("customers", external_id="race"))
                    uow.commit()
                outcomes.append("created")
            except AlreadyExists:
                outcomes.append("conflict")

        threads = [threading.Thread(target=create) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["conflict", "conflict", "conflict", "created"]
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.list(ListQuery()).total == 1

    # -- lists -----------------------------------------------------------------------------
    def _five(self, storage: Storage) -> list[Customer]:
        names = ["delta", "Alpha", "charlie", "bravo", "echo"]
        items = [
            sample(
                "customers",
                name=n,
                email=f"{n.lower()}@x.io" if i % 2 == 0 else None,
                metadata={"tier": "gold" if i < 2 else "free"},
            )
            for i, n in enumerate(names)
        ]
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            for item in items:
                uow.customers.add(item)
            uow.commit()
        return items

    def test_list_pages_with_total_and_default_newest_first(self, storage: Storage) -> None:
        items = self._five(storage)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            first = uow.customers.list(ListQuery(limit=2))
            second = uow.customers.list(ListQuery(limit=2, offset=2))
            last = uow.customers.list(ListQuery(limit=2, offset=4))
        assert first.total == second.total == last.total == 5
        ids = [c.id for c in [*first.items, *second.items, *last.items]]
        assert ids == [c.id for c in reversed(items)]
        assert first.has_more and not last.has_more

    def test_list_sorts_and_filters_identically(self, storage: Storage) -> None:
        items = self._five(storage)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            by_name = uow.customers.list(ListQuery(sort=(Sort("name", descending=False),)))
            assert [c.name for c in by_name.items] == ["Alpha", "bravo", "charlie", "delta", "echo"]
            gold = uow.customers.list(ListQuery(filters=(Filter("metadata.tier", Op.EQ, "gold"),)))
            assert {c.id for c in gold.items} == {items[0].id, items[1].id}
            contains = uow.customers.list(ListQuery(filters=(Filter("name", Op.CONTAINS, "ALP"),)))
            assert [c.name for c in contains.items] == ["Alpha"]
            not_contains = uow.customers.list(ListQuery(filters=(Filter("name", Op.NOT_CONTAINS, "a"),)))
            assert [c.name for c in not_contains.items] == ["echo"]
            chosen = uow.customers.list(ListQuery(filters=(Filter("id", Op.IN, [items[2].id, items[4].id]),)))
            assert chosen.total == 2
            after = uow.customers.list(
                ListQuery(filters=(Filter("created_at", Op.AFTER, items[2].created_at),))
            )
            assert {c.id for c in after.items} == {items[3].id, items[4].id}
            by_email = uow.customers.list(
                ListQuery(sort=(Sort("email", descending=False),), filters=(Filter("name", Op.NE, "Alpha"),))
            )
            # NULL sorts first ascending on every store
            assert [c.email for c in by_email.items] == [
                None,
                None,
                "charlie@x.io",
                "delta@x.io",
                "echo@x.io",
            ][0:1] + [c.email for c in by_email.items[1:]]
            assert by_email.items[0].email is None and by_email.items[-1].email == "echo@x.io"

    def test_list_by_status(self, storage: Storage) -> None:
        items = self._five(storage)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.update(items[0].model_copy(update={"status": Status.ARCHIVED}))
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.list(ListQuery()).total == 4
            assert uow.customers.list(ListQuery(status=Status.ARCHIVED)).total == 1
            assert uow.customers.list(ListQuery(status=None)).total == 5
            assert uow.customers.find_one(external_id=items[0].external_id) is None
            assert uow.customers.find_one(external_id=items[0].external_id, include_archived=True) is not None

    def test_unknown_fields_are_validation_errors(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(ValidationError):
                uow.customers.list(ListQuery(sort=(Sort("no_such_field"),)))
            with pytest.raises(ValidationError):
                uow.customers.list(ListQuery(filters=(Filter("no_such_field", Op.EQ, "x"),)))

    # -- unscoped lookups ------------------------------------------------------------------
    def test_api_key_lookup_by_hash_crosses_scopes(self, storage: Storage) -> None:
        key = sample("api_keys", tenant_id="tenant_z", environment_id="env_z", key_hash="f" * 64)
        assert isinstance(key, ApiKey)
        with storage.unit_of_work("tenant_z", "env_z") as uow:
            uow.api_keys.add(key)
            uow.commit()
        with storage.unit_of_work() as uow:
            assert uow.find_api_key_by_hash("f" * 64) == key
            assert uow.find_api_key_by_hash("e" * 64) is None

    def test_accounts_by_email_across_tenants(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", None) as uow:
            uow.accounts.add(sample("accounts", email="same@x.io"))
            uow.for_scope("tenant_b", None).accounts.add(
                sample("accounts", tenant_id="tenant_b", email="same@x.io")
            )
            uow.commit()
        with storage.unit_of_work() as uow:
            found = uow.find_accounts_by_email("same@x.io")
        assert sorted(a.tenant_id for a in found) == ["tenant_a", "tenant_b"]
        assert all(isinstance(a, Account) for a in found)

    def test_for_scope_shares_the_transaction(self, storage: Storage) -> None:
        with storage.unit_of_work(None, None) as uow:
            uow.tenants.add(sample("tenants", id="tenant_q"))
            uow.for_scope("tenant_q", None).environments.add(sample("environments", tenant_id="tenant_q"))
            # not committed: both writes vanish together
        with storage.unit_of_work("tenant_q", None) as uow:
            assert uow.tenants.find("tenant_q") is None
            assert uow.environments.list(ListQuery()).total == 0

    # -- usage events --------------------------------------------------------------------------
    def test_events_are_stored_once_per_id(self, storage: Storage) -> None:
        from billingkit.domain.usage import UsageEvent

        def event(event_id: str, tokens: str = "1.10") -> UsageEvent:
            return UsageEvent(
                event_id, "llm.call", "cust-1", T0, {"tokens": tokens, "model": "m1"}, source="api"
            )

        with storage.unit_of_work("tenant_a", "env_a") as uow:
            # a repeated id inside one batch: the first occurrence wins
            assert uow.events.insert_new([event("e1"), event("e2"), event("e1", "9")], T0) == {"e1", "e2"}
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.events.insert_new([event("e2", "5"), event("e3")], T0) == {"e3"}
            assert uow.events.insert_new([], T0) == set()
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = uow.events.find("e1")
            assert stored == event("e1") and stored is not None and stored.properties["tokens"] == "1.10"
            assert uow.events.find("e2") == event("e2")
            assert uow.events.find("missing") is None
        # the same id in another scope is another event
        with storage.unit_of_work("tenant_a", "env_b") as uow:
            assert uow.events.find("e1") is None
            assert uow.events.insert_new([event("e1")], T0) == {"e1"}
            uow.commit()

    def test_event_inserts_roll_back(self, storage: Storage) -> None:
        from billingkit.domain.usage import UsageEvent

        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.events.insert_new([UsageEvent("e1", "n", "c", T0, {})], T0)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.events.find("e1") is None
            assert uow.events.insert_new([UsageEvent("e1", "n", "c", T0, {})], T0) == {"e1"}

    # -- event queries ---------------------------------------------------------------------------
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=st.data())
    def test_event_queries_match_the_domain_reference(self, storage: Storage, data: st.DataObject) -> None:
        events = data.draw(_event_stream(), label="events")
        scope = (f"tenant_eq{next(_counter)}", "env_eq")
        with storage.unit_of_work(*scope) as uow:
            assert uow.events.insert_new(events, T0) == {e.event_id for e in events}
            uow.commit()
        queries = data.draw(st.lists(_event_filter(events), min_size=1, max_size=8), label="queries")
        with storage.unit_of_work(*scope) as uow:
            for query in queries:
                assert _page_view(uow.events.query(query)) == _page_view(filter_events(events, query)), query

    def _store_events(self, storage: Storage, events: list[UsageEvent], scope: tuple[str, str]) -> None:
        with storage.unit_of_work(*scope) as uow:
            uow.events.insert_new(events, T0)
            uow.commit()

    @pytest.mark.parametrize("descending", [True, False])
    def test_event_pages_by_after_key_visit_each_event_once_in_order(
        self, storage: Storage, descending: bool
    ) -> None:
        # 120 events on 40 instants: every page boundary may fall inside a tie
        events = [
            UsageEvent(f"e{n:03d}", "api.call", "c1", T0 + timedelta(seconds=n // 3), {"n": n})
            for n in range(120)
        ]
        self._store_events(storage, events, ("tenant_a", "env_a"))
        window = {"start": T0, "end": T0 + timedelta(hours=1), "descending": descending, "limit": 50}
        seen: list[str] = []
        after = None
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            for _ in range(4):
                page = uow.events.query(EventFilter(**window, after=after))  # type: ignore[arg-type]
                assert page.total_count == 120
                seen += [e.event_id for e in page.events]
                if not page.has_more:
                    break
                after = (page.events[-1].timestamp, page.events[-1].event_id)
        expected = sorted((e.event_id for e in events), reverse=descending)
        assert seen == expected
        assert len(page.events) == 20

    def test_polling_with_a_before_key_returns_only_newer_events(self, storage: Storage) -> None:
        def event(n: int) -> UsageEvent:
            return UsageEvent(f"e{n:02d}", "api.call", "c1", T0 + timedelta(seconds=n), {})

        self._store_events(storage, [event(n) for n in range(10)], ("tenant_a", "env_a"))
        window = {"start": T0, "end": T0 + timedelta(hours=1), "limit": 5}
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            newest = uow.events.query(EventFilter(**window))  # type: ignore[arg-type]
        assert [e.event_id for e in newest.events] == ["e09", "e08", "e07", "e06", "e05"]
        first = (newest.events[0].timestamp, newest.events[0].event_id)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            nothing = uow.events.query(EventFilter(**window, before=first))  # type: ignore[arg-type]
        assert nothing == EventPage((), False, 10)
        self._store_events(storage, [event(n) for n in range(10, 17)], ("tenant_a", "env_a"))
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            # the 5 newer events nearest the key, newest first; has_more: even newer ones exist
            poll = uow.events.query(EventFilter(**window, before=first))  # type: ignore[arg-type]
            assert [e.event_id for e in poll.events] == ["e14", "e13", "e12", "e11", "e10"]
            assert (poll.has_more, poll.total_count) == (True, 17)
            first = (poll.events[0].timestamp, poll.events[0].event_id)
            rest = uow.events.query(EventFilter(**window, before=first))  # type: ignore[arg-type]
            assert [e.event_id for e in rest.events] == ["e16", "e15"] and not rest.has_more

    def test_event_total_count_ignores_paging(self, storage: Storage) -> None:
        events = [
            UsageEvent(
                f"e{n}",
                "api.call",
                f"c{n % 2}",
                T0 + timedelta(seconds=n),
                {"region": ["eu", "us"][n % 3 == 0]},
            )
            for n in range(30)
        ]
        self._store_events(storage, events, ("tenant_a", "env_a"))
        matching = [e for e in events if e.external_customer_id == "c0" and e.properties["region"] == "eu"]
        base: dict[str, Any] = {
            "start": T0,
            "end": T0 + timedelta(hours=1),
            "external_customer_id": "c0",
            "property_filters": (MeterFilter("region", ("eu",)),),
        }
        key = (events[10].timestamp, events[10].event_id)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            for paging in ({}, {"limit": 1}, {"offset": 7, "limit": 2}, {"after": key}, {"before": key}):
                page = uow.events.query(EventFilter(**base, **paging))
                assert page.total_count == len(matching) == 10, paging
            assert uow.events.query(EventFilter(**base, offset=50)) == EventPage((), False, 10)
        # another scope sees none of them
        with storage.unit_of_work("tenant_a", "env_b") as uow:
            assert uow.events.query(EventFilter(T0, T0 + timedelta(hours=1))) == EventPage((), False, 0)
