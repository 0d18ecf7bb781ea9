"""The in-process entitlement check (``scoped.entitlements.check``) and its cache, on every store.

The catalogue (tests/entitlement_catalogue.py): plan Pro grants 1,000 calls a month (hard); add-on
Boost 500 (soft); add-on Unlimited unlimited calls. Ada subscribes at 2026-05-01 09:30 UTC, so her
window is 1 May 09:30 - 1 June 09:30.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import count
from typing import Any

import pytest

from billingkit import Billing, NotFound, PermissionDenied, Scoped, Settings, TestClock
from billingkit.domain.access import Actor, Role
from billingkit.services.access import BootstrapResult
from tests.entitlement_catalogue import EntitlementCatalogue, add_override, attach_addon, build_catalogue

_ids = count()


@pytest.fixture
def cat(test_env: Scoped) -> EntitlementCatalogue:
    return build_catalogue(test_env)


def calls(
    scoped: Scoped, n: int, *, at: datetime | None = None, customer: str = "ada", **properties: Any
) -> None:
    """``n`` API calls of ``customer`` stamped ``at`` (default: now), in batches of 1,000."""
    events = [
        {
            "event_id": f"e{next(_ids)}",
            "event_name": "api.call",
            "external_customer_id": customer,
            **({"timestamp": at.isoformat()} if at else {}),
            "properties": properties,
        }
        for _ in range(n)
    ]
    for start in range(0, n, 1000):
        scoped.events.ingest_bulk(events[start : start + 1000])


def test_allowed_below_a_hard_limit_refused_at_and_over_it(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    scoped = cat.scoped
    first = scoped.entitlements.check("ada", "calls")
    assert (first.allowed, first.usage, first.limit, first.is_soft_limit) == (True, 0, 1000, False)
    assert (first.window_start, first.window_end) == (
        datetime(2026, 5, 1, 9, 30, tzinfo=UTC),
        datetime(2026, 6, 1, 9, 30, tzinfo=UTC),
    )
    assert (first.customer_id, first.feature_id, first.subscription_ids) == (
        cat.customer_id,
        cat.calls,
        (cat.subscription.id,),
    )
    assert first.usage_reset_period is not None and first.usage_reset_period.value == "MONTHLY"
    calls(scoped, 999)
    below = scoped.entitlements.check("ada", "calls")
    assert (below.allowed, below.usage, below.remaining) == (True, 999, 1)
    clock.advance(timedelta(seconds=1))
    calls(scoped, 1)
    at_limit = scoped.entitlements.check(cat.customer_id, cat.calls)
    assert (at_limit.allowed, at_limit.usage, at_limit.remaining) == (False, 1000, 0)
    calls(scoped, 5)
    over = scoped.entitlements.check("ada", "calls")
    assert (over.allowed, over.usage, over.remaining) == (False, 1005, 0)


def test_allowed_over_a_soft_limit(cat: EntitlementCatalogue, clock: TestClock) -> None:
    scoped = cat.scoped
    attach_addon(scoped, cat.subscription.id, cat.boost, clock.now())
    scoped.billing.entitlement_cache.clear()  # the association was written behind the library's back
    calls(scoped, 1600)
    check = scoped.entitlements.check("ada", "calls")
    # 1,000 + 500 (soft): 1,600 used is over the limit, but a soft limit does not refuse.
    assert (check.allowed, check.usage, check.limit, check.is_soft_limit, check.remaining) == (
        True,
        1600,
        1500,
        True,
        0,
    )


def test_unlimited(cat: EntitlementCatalogue, clock: TestClock) -> None:
    scoped = cat.scoped
    attach_addon(scoped, cat.subscription.id, cat.unlimited, clock.now())
    scoped.billing.entitlement_cache.clear()
    calls(scoped, 1500)
    check = scoped.entitlements.check("ada", "calls")
    assert (check.allowed, check.usage, check.limit, check.remaining) == (True, 1500, None, None)


def test_boolean_static_and_config_features(cat: EntitlementCatalogue) -> None:
    scoped = cat.scoped
    sso = scoped.entitlements.check("ada", "sso")
    assert (sso.allowed, sso.usage, sso.limit, sso.window_start, sso.feature_type.value) == (
        True,
        0,
        None,
        None,
        "boolean",
    )
    assert scoped.entitlements.check("ada", cat.tier).static_values == ("gold",)
    assert scoped.entitlements.check("ada", "regions").config_values == ({"storage": {"region": "eu"}},)


def test_what_nothing_grants_is_refused(cat: EntitlementCatalogue) -> None:
    scoped = cat.scoped
    audit = scoped.features.create(name="Audit", type="boolean", lookup_key="audit")
    refused = scoped.entitlements.check("ada", "audit")
    assert (refused.allowed, refused.is_enabled, refused.feature_id, refused.limit) == (
        False,
        False,
        audit.id,
        None,
    )
    scoped.customers.create(external_id="bob", name="Bob")
    nothing = scoped.entitlements.check("bob", "calls")
    assert (nothing.allowed, nothing.is_enabled, nothing.limit, nothing.subscription_ids) == (
        False,
        False,
        0,
        (),
    )
    add_override(
        scoped,
        cat.subscription.id,
        cat.sso,
        "boolean",
        is_enabled=False,
        parent_entitlement_id=cat.plan_entitlement(cat.sso).id,
    )
    scoped.billing.entitlement_cache.clear()
    assert not scoped.entitlements.check("ada", "sso").allowed


def test_unknown_customer_or_feature(cat: EntitlementCatalogue) -> None:
    with pytest.raises(NotFound):
        cat.scoped.entitlements.check("nobody", "calls")
    with pytest.raises(NotFound):
        cat.scoped.entitlements.check("ada", "nothing")


@pytest.mark.parametrize(("status", "grants"), [("draft", False), ("trialing", True)])
def test_only_active_and_trialing_subscriptions_grant(test_env: Scoped, status: str, grants: bool) -> None:
    cat = build_catalogue(test_env, external_id="eve")
    test_env.subscriptions.create(
        customer_id=test_env.customers.create(external_id="zed", name="Zed").id,
        plan_id=cat.plan_id,
        currency="usd",
        billing_period="MONTHLY",
        subscription_status=status,
        **({"trial_period_days": 14} if status == "trialing" else {}),
    )
    assert test_env.entitlements.check("zed", "sso").allowed is grants


def test_the_window_follows_the_billing_period(cat: EntitlementCatalogue, clock: TestClock) -> None:
    scoped, billing = cat.scoped, cat.scoped.billing
    calls(scoped, 3, at=clock.now() - timedelta(days=1))  # before the subscription: not counted
    calls(scoped, 1000)
    assert not scoped.entitlements.check("ada", "calls").allowed
    clock.set(datetime(2026, 6, 1, 9, 30, tzinfo=UTC))
    # The period is over (the billing run has not advanced it yet): a new window, nothing used.
    fresh = scoped.entitlements.check("ada", "calls")
    assert (fresh.allowed, fresh.usage, fresh.window_start) == (
        True,
        0,
        datetime(2026, 6, 1, 9, 30, tzinfo=UTC),
    )
    billing.run_due()
    calls(scoped, 2)
    after = scoped.entitlements.check("ada", "calls")
    assert (after.usage, after.window_end) == (2, datetime(2026, 7, 1, 9, 30, tzinfo=UTC))


def test_a_daily_reset_counts_each_day(cat: EntitlementCatalogue, clock: TestClock) -> None:
    scoped = cat.scoped
    scoped.entitlements.update(
        cat.plan_entitlement(cat.calls).id,
        usage_limit=10,
        usage_reset_period="DAILY",
        is_enabled=True,
        is_soft_limit=False,
    )
    calls(scoped, 10)
    assert not scoped.entitlements.check("ada", "calls").allowed
    clock.advance(timedelta(days=1))
    next_day = scoped.entitlements.check("ada", "calls")
    assert (next_day.allowed, next_day.usage, next_day.window_start) == (
        True,
        0,
        datetime(2026, 5, 2, 9, 30, tzinfo=UTC),
    )


def test_limits_of_several_subscriptions_add_up(cat: EntitlementCatalogue) -> None:
    scoped = cat.scoped
    second = scoped.subscriptions.create(
        customer_id=cat.customer_id, plan_id=cat.plan_id, currency="usd", billing_period="MONTHLY"
    )
    calls(scoped, 1500)
    check = scoped.entitlements.check("ada", "calls")
    assert (check.allowed, check.limit, check.subscription_ids) == (
        True,
        2000,
        (cat.subscription.id, second.id),
    )


def test_a_sum_meter_split_in_time_adds_up_exactly(test_env: Scoped, clock: TestClock) -> None:
    tokens = test_env.meters.create(
        name="Tokens", event_name="llm", aggregation={"type": "SUM", "field": "tokens"}
    )
    peak = test_env.meters.create(
        name="Peak", event_name="llm", aggregation={"type": "MAX", "field": "tokens"}
    )
    used = test_env.features.create(name="Tokens", type="metered", meter_id=tokens.id, lookup_key="tokens")
    top = test_env.features.create(name="Peak", type="metered", meter_id=peak.id, lookup_key="peak")
    plan = test_env.plans.create(
        name="LLM",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "1",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
        entitlements=[{"feature_id": used.id, "usage_limit": 100}, {"feature_id": top.id, "usage_limit": 50}],
    )
    test_env.customers.create(external_id="ada", name="Ada")
    test_env.subscriptions.create(
        external_customer_id="ada", plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )

    def llm(tokens: str, at: datetime) -> None:
        test_env.events.ingest_bulk(
            [
                {
                    "event_id": f"t{next(_ids)}",
                    "event_name": "llm",
                    "external_customer_id": "ada",
                    "timestamp": at.isoformat(),
                    "properties": {"tokens": tokens},
                }
            ]
        )

    llm("10.25", clock.now())
    clock.advance(timedelta(hours=2))
    llm("20.5", clock.now() - timedelta(hours=1))
    assert test_env.entitlements.check("ada", "tokens").usage == Decimal("30.75")
    clock.advance(timedelta(minutes=5))
    llm("0.001", clock.now())
    assert test_env.entitlements.check("ada", "tokens").usage == Decimal("30.751")
    assert test_env.entitlements.check("ada", "peak").usage == Decimal("20.5")
    clock.advance(timedelta(minutes=1))
    llm("60", clock.now())
    split, whole = test_env.entitlements.check("ada", "tokens"), test_env.entitlements.check("ada", "peak")
    assert (split.usage, split.allowed, whole.usage, whole.allowed) == (Decimal("90.751"), True, 60, False)


# -- the cache -----------------------------------------------------------------------------------


def test_changes_made_through_the_library_show_at_once(cat: EntitlementCatalogue) -> None:
    scoped = cat.scoped
    calls(scoped, 1000)
    assert not scoped.entitlements.check("ada", "calls").allowed
    scoped.entitlements.update(
        cat.plan_entitlement(cat.calls).id, usage_limit=2000, is_enabled=True, is_soft_limit=False
    )
    raised = scoped.entitlements.check("ada", "calls")
    assert (raised.allowed, raised.limit) == (True, 2000)
    scoped.subscriptions.create(
        customer_id=cat.customer_id, plan_id=cat.plan_id, currency="usd", billing_period="MONTHLY"
    )
    assert scoped.entitlements.check("ada", "calls").limit == 4000


def test_changes_behind_the_librarys_back_show_within_the_ttl(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    scoped = cat.scoped
    assert scoped.entitlements.check("ada", "calls").limit == 1000
    attach_addon(scoped, cat.subscription.id, cat.boost, clock.now())  # e.g. another process
    clock.advance(timedelta(seconds=29))
    assert scoped.entitlements.check("ada", "calls").limit == 1000
    clock.advance(timedelta(seconds=1))
    assert scoped.entitlements.check("ada", "calls").limit == 1500


def test_usage_staleness_is_only_for_late_back_dated_events(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    scoped = cat.scoped
    clock.advance(timedelta(hours=1))
    calls(scoped, 10, at=clock.now() - timedelta(minutes=30))
    assert scoped.entitlements.check("ada", "calls").usage == 10  # measures the head up to a minute ago
    calls(scoped, 1)  # now
    calls(scoped, 2, at=clock.now() + timedelta(days=1))  # stamped ahead, still in the window
    calls(scoped, 4, at=clock.now() - timedelta(seconds=59))  # late, within the minute of grace
    assert scoped.entitlements.check("ada", "calls").usage == 17
    calls(scoped, 100, at=clock.now() - timedelta(minutes=10))  # late by more than the grace
    assert scoped.entitlements.check("ada", "calls").usage == 17
    clock.advance(timedelta(seconds=30))  # the head expires: measured again
    assert scoped.entitlements.check("ada", "calls").usage == 117


def test_a_zero_ttl_reads_everything_every_time(
    billing: Billing, cat: EntitlementCatalogue, clock: TestClock
) -> None:
    billing.settings = Settings(entitlement_cache_ttl=timedelta(0))
    scoped = cat.scoped
    clock.advance(timedelta(hours=1))
    assert scoped.entitlements.check("ada", "calls").limit == 1000
    attach_addon(scoped, cat.subscription.id, cat.boost, clock.now())
    calls(scoped, 7, at=clock.now() - timedelta(minutes=10))
    check = scoped.entitlements.check("ada", "calls")
    assert (check.limit, check.usage) == (1500, 7)
    assert repr(billing.entitlement_cache) == "<EntitlementCache grants=0 usage_heads=0>"


def test_each_billing_has_its_own_cache_and_scopes_do_not_mix(
    billing: Billing, setup: BootstrapResult, cat: EntitlementCatalogue, prod_env: Scoped
) -> None:
    assert cat.scoped.entitlements.check("ada", "calls").allowed
    prod = build_catalogue(prod_env)
    prod_env.entitlements.update(
        prod.plan_entitlement(prod.calls).id, usage_limit=1, is_enabled=True, is_soft_limit=False
    )
    assert prod_env.entitlements.check("ada", "calls").limit == 1
    assert cat.scoped.entitlements.check("ada", "calls").limit == 1000
    other = Billing(billing.storage, billing.clock)
    assert other.entitlement_cache is not billing.entitlement_cache
    assert (
        other.scope(setup.tenant.id, setup.environments[0][0].id).entitlements.check("ada", "calls").limit
        == 1000
    )


def test_the_cache_keeps_a_bounded_number_of_entries(clock: TestClock) -> None:
    from billingkit.services.entitlement_cache import CustomerGrants, EntitlementCache

    cache = EntitlementCache(max_entries=2)
    scope = ("tenant_1", "env_1")
    later = clock.now() + timedelta(minutes=1)
    for name in ("a", "b", "c"):
        cache.keep_grants(scope, name, CustomerGrants(f"cust_{name}", name, {}, later))
    assert cache.grants(scope, "a", clock.now()) is None
    assert cache.grants(scope, "c", clock.now()) is not None
    assert cache.grants(scope, "c", later) is None  # expired
    with pytest.raises(ValueError, match="max_entries"):
        EntitlementCache(max_entries=0)


def test_the_ttl_must_not_be_negative() -> None:
    from billingkit import ValidationError

    with pytest.raises(ValidationError) as caught:
        Settings(entitlement_cache_ttl=timedelta(seconds=-1))
    assert caught.value.field == "entitlement_cache_ttl"
    assert Settings().entitlement_cache_ttl == timedelta(seconds=30)


def test_checking_needs_entitlement_read(
    billing: Billing, setup: BootstrapResult, cat: EntitlementCatalogue
) -> None:
    env_id = setup.environments[0][0].id
    ingestor = billing.scope(setup.tenant.id, env_id, actor=Actor(id="k", roles=(Role.EVENT_INGESTOR,)))
    with pytest.raises(PermissionDenied):
        ingestor.entitlements.check("ada", "calls")
    reader = billing.scope(setup.tenant.id, env_id, actor=Actor(id="r", roles=(Role.ALL_READER,)))
    assert reader.entitlements.check("ada", "calls").allowed


def test_the_cli_reads_the_ttl_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from billingkit.cli import _settings, build_parser

    parser = build_parser()
    monkeypatch.delenv("BILLINGKIT_ENTITLEMENT_CACHE_TTL", raising=False)
    assert _settings(parser.parse_args(["serve"])).entitlement_cache_ttl == timedelta(seconds=30)
    monkeypatch.setenv("BILLINGKIT_ENTITLEMENT_CACHE_TTL", "0")
    assert _settings(parser.parse_args(["serve"])).entitlement_cache_ttl == timedelta(0)


def test_a_customers_change_drops_only_that_customers_grants(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    scoped = cat.scoped
    assert scoped.entitlements.check("ada", "calls").limit == 1000
    attach_addon(scoped, cat.subscription.id, cat.boost, clock.now())  # behind the library's back
    bob = scoped.customers.create(external_id="bob", name="Bob")  # customer.created about bob
    scoped.subscriptions.create(
        customer_id=bob.id, plan_id=cat.plan_id, currency="usd", billing_period="MONTHLY"
    )
    assert scoped.entitlements.check("ada", "calls").limit == 1000  # Ada's grants were kept
    scoped.customers.update(cat.customer_id, name="Ada L.")  # customer.updated about Ada
    assert scoped.entitlements.check("ada", "calls").limit == 1500
