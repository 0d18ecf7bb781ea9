"""Subscriptions through the library, on every store: what create accepts and refuses, how the
customer, currency, trial, anchor and payment terms are taken, versions, and plan price sync.

The ``clock`` fixture starts at 2026-05-01 09:30 UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, Scoped, TestClock, ValidationError
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.subscriptions import PaymentTerms, Subscription, SubscriptionStatus

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
DROP = object()  # a field left out of the request


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def fee(amount: str = "20", **extra: Any) -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "USD",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        **extra,
    }


def calls(meter_id: str) -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": "0.1",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
    }


class Catalog:
    """What the tests subscribe to; the rarely needed parts are created on first use."""

    def __init__(self, s: Scoped) -> None:
        self.s = s
        self.meter_id = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"}).id
        #: a 20.00 monthly fee and 0.10 per call, USD, no trial
        self.plan_id = s.plans.create(name="Pro", prices=[fee(), calls(self.meter_id)]).id
        #: external id "c1"
        self.customer_id = s.customers.create(external_id="c1", name="Ada").id

    @cached_property
    def trial_plan_id(self) -> str:
        """A monthly fee with a 14-day trial."""
        return self.s.plans.create(name="Trial", prices=[fee(trial_period_days=14)]).id

    @cached_property
    def mixed_trials_plan_id(self) -> str:
        """Two fees with 7 and 14 trial days."""
        prices = [fee(trial_period_days=7), fee("5", trial_period_days=14, display_name="Seat")]
        return self.s.plans.create(name="Mixed", prices=prices).id

    @cached_property
    def daily_allowance_plan_id(self) -> str:
        """A metered entitlement that resets daily (not supported on a monthly subscription)."""
        feature = self.s.features.create(name="API", type="metered", meter_id=self.meter_id, lookup_key="api")
        return self.s.plans.create(
            name="Daily",
            prices=[fee(), calls(self.meter_id)],
            entitlements=[{"feature_id": feature.id, "usage_limit": 100, "usage_reset_period": "DAILY"}],
        ).id

    @cached_property
    def archived_plan_id(self) -> str:
        plan = self.s.plans.create(name="Old", prices=[fee()])
        self.s.plans.delete(plan.id)
        return plan.id

    @cached_property
    def other_customer_id(self) -> str:
        """External id "c2"."""
        return self.s.customers.create(external_id="c2", name="Bob").id

    @cached_property
    def archived_customer_id(self) -> str:
        """External id "gone"."""
        gone = self.s.customers.create(external_id="gone", name="Gone")
        self.s.customers.delete(gone.id)
        return gone.id

    @property
    def archived_external_id(self) -> str:
        assert self.archived_customer_id
        return "gone"

    def create(self, **fields: Any) -> Subscription:
        request = {
            "customer_id": self.customer_id,
            "plan_id": self.plan_id,
            "currency": "usd",
            "billing_period": "MONTHLY",
        }
        request.update(fields)
        return self.s.subscriptions.create(**{k: v for k, v in request.items() if v is not DROP})

    def invoices(self, sub: Subscription) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def written(self) -> tuple[int, int, int]:
        """(subscriptions, invoices, notifications) stored so far."""
        return (
            self.s.subscriptions.list(limit=1, status=None).total,
            self.s.invoices.list(limit=1, status=None).total,
            self.s.notifications.list(limit=1000).total,
        )


@pytest.fixture
def cat(test_env: Scoped) -> Catalog:
    return Catalog(test_env)


# -- refused input -----------------------------------------------------------------------------------

Case = tuple[str, Callable[[Catalog], dict[str, Any]], str]

BAD: list[Case] = [
    ("unknown plan", lambda c: {"plan_id": "plan_missing"}, "plan_id"),
    ("archived plan", lambda c: {"plan_id": c.archived_plan_id}, "plan_id"),
    ("unknown customer", lambda c: {"customer_id": "cust_missing"}, "customer_id"),
    ("archived customer", lambda c: {"customer_id": c.archived_customer_id}, "customer_id"),
    (
        "unknown external id",
        lambda c: {"customer_id": DROP, "external_customer_id": "nobody"},
        "external_customer_id",
    ),
    (
        "archived external id",
        lambda c: {"customer_id": DROP, "external_customer_id": c.archived_external_id},
        "external_customer_id",
    ),
    ("no customer", lambda c: {"customer_id": DROP}, "customer_id"),
    ("no price in currency", lambda c: {"currency": "eur"}, "currency"),
    ("no price for period", lambda c: {"billing_period": "ANNUAL"}, "billing_period"),
    ("no price for period count", lambda c: {"billing_period_count": 2}, "billing_period_count"),
    ("bad currency code", lambda c: {"currency": "dollars"}, "currency"),
    ("bad billing_period", lambda c: {"billing_period": "FORTNIGHTLY"}, "billing_period"),
    ("ONETIME billing_period", lambda c: {"billing_period": "ONETIME"}, "billing_period"),
    ("billing_period_count 0", lambda c: {"billing_period_count": 0}, "billing_period_count"),
    ("bad payment_terms", lambda c: {"payment_terms": "10 NET"}, "payment_terms"),
    ("bad billing_cycle", lambda c: {"billing_cycle": "weekly"}, "billing_cycle"),
    ("bad subscription_status", lambda c: {"subscription_status": "sleeping"}, "subscription_status"),
    ("cancelled status", lambda c: {"subscription_status": "cancelled"}, "subscription_status"),
    ("trialing without trial", lambda c: {"subscription_status": "trialing"}, "subscription_status"),
    ("end before start", lambda c: {"start_date": at(2026, 6, 1), "end_date": at(2026, 5, 20)}, "end_date"),
    ("end at start", lambda c: {"start_date": at(2026, 6, 1), "end_date": at(2026, 6, 1)}, "end_date"),
    ("end before default start", lambda c: {"end_date": NOW - timedelta(seconds=1)}, "end_date"),
    ("naive start", lambda c: {"start_date": datetime(2026, 6, 1)}, "start_date"),
    (
        "billing_anchor with calendar cycle",
        lambda c: {"billing_cycle": "calendar", "billing_anchor": at(2026, 5, 20)},
        "billing_anchor",
    ),
    ("differing trial days", lambda c: {"plan_id": c.mixed_trials_plan_id}, "trial_period_days"),
    ("negative trial days", lambda c: {"trial_period_days": -1}, "trial_period_days"),
    ("unknown add-on", lambda c: {"addons": [{"addon_id": "addon_x"}]}, "addons[0].addon_id"),
    (
        "unknown add-on field",
        lambda c: {"addons": [{"addon_id": "addon_x", "quantity": 1}]},
        "addons[0].quantity",
    ),
    ("unknown coupon", lambda c: {"coupons": ["coupon_x"]}, "coupons[0]"),
    (
        "unknown line item price",
        lambda c: {"line_items": [{"price_id": "price_x"}]},
        "line_items[0].price_id",
    ),
    (
        "phases on a draft",
        lambda c: {"subscription_status": "draft", "phases": [{"start_date": "2026-06-01T00:00:00Z"}]},
        "phases",
    ),
    ("auto invoice threshold", lambda c: {"auto_invoice_threshold": "100"}, "auto_invoice_threshold"),
    (
        "allowance resetting daily on a monthly subscription",
        lambda c: {"plan_id": c.daily_allowance_plan_id},
        "billing_period",
    ),
    (
        "payment behaviour that does not go with the collection method",
        lambda c: {"collection_method": "send_invoice", "payment_behavior": "error_if_incomplete"},
        "payment_behavior",
    ),
]


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
@pytest.mark.parametrize(("fields", "field"), [pytest.param(f, n, id=i) for i, f, n in BAD])
def test_bad_create_input_is_refused_and_writes_nothing(
    cat: Catalog, fields: Callable[[Catalog], dict[str, Any]], field: str
) -> None:
    request = fields(cat)  # creates what the case refers to first
    before = cat.written()
    with pytest.raises(ValidationError) as caught:
        cat.create(**request)
    assert caught.value.field == field, caught.value.message
    assert caught.value.details["field"] == field
    assert cat.written() == before  # no subscription, no invoice, no notification


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"currency": "eur"}, "currency", "plan {plan} has no prices in eur; it has usd 1 x MONTHLY"),
        (
            {"billing_period": "ANNUAL"},
            "billing_period",
            "plan {plan} has no ANNUAL prices in usd; it has usd 1 x MONTHLY",
        ),
        (
            {"billing_period_count": 3},
            "billing_period_count",
            "plan {plan} has no prices for usd 3 x MONTHLY; it has usd 1 x MONTHLY",
        ),
    ],
)
def test_missing_plan_price_names_the_field_that_does_not_match_and_what_the_plan_has(
    cat: Catalog, fields: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        cat.create(**fields)
    assert (caught.value.field, caught.value.message) == (field, says.format(plan=cat.plan_id))


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_missing_price_lists_every_combination_the_plan_has(cat: Catalog) -> None:
    plan = cat.s.plans.create(
        name="Multi",
        prices=[
            fee(),
            fee("200", billing_period="ANNUAL"),
            fee("30", currency="eur", billing_period_count=3),
        ],
    )
    with pytest.raises(ValidationError) as caught:
        cat.create(plan_id=plan.id, billing_period="WEEKLY")
    assert caught.value.field == "billing_period"
    assert caught.value.message.endswith("; it has eur 3 x MONTHLY, usd 1 x ANNUAL, usd 1 x MONTHLY")


def test_refused_creates_write_nothing_on_any_store(cat: Catalog) -> None:
    """The same table on every store (one test per store keeps the SQL runs short)."""
    requests = [(name, fields(cat), field) for name, fields, field in BAD]
    before = cat.written()
    for name, request, field in requests:
        with pytest.raises(ValidationError) as caught:
            cat.create(**request)
        assert caught.value.field == field, name
        assert cat.written() == before, name
    # No refused create took an invoice number: the first opening invoice is number 1.
    sub = cat.create()
    (opening,) = cat.invoices(sub)
    assert opening.invoice_number == "INV-202605-00001"


# -- what create takes -----------------------------------------------------------------------------


def test_customer_id_wins_over_external_customer_id(cat: Catalog) -> None:
    other = cat.other_customer_id  # external id "c2"
    sub = cat.create(external_customer_id="c2")
    assert sub.customer_id == cat.customer_id
    # ... even when the external id names nobody.
    assert cat.create(external_customer_id="nobody").customer_id == cat.customer_id
    by_external = cat.create(customer_id=DROP, external_customer_id="c2")
    assert by_external.customer_id == other
    assert [s.id for s in cat.s.subscriptions.for_customer("c2").items] == [by_external.id]


def test_currency_is_stored_lowercase(cat: Catalog) -> None:
    sub = cat.create(currency="USD")
    assert sub.currency == "usd"
    assert {line.currency for line in sub.line_items} == {"usd"}
    assert cat.s.subscriptions.get(sub.id).currency == "usd"
    (opening,) = cat.invoices(sub)
    assert opening.currency == "usd"


def test_line_items_follow_the_plan_prices(cat: Catalog) -> None:
    sub = cat.create()
    by_type = {line.price_type.value: line for line in sub.line_items}
    assert set(by_type) == {"FIXED", "USAGE"}
    assert by_type["FIXED"].quantity == Decimal(1)
    assert by_type["USAGE"].quantity == Decimal(0)
    assert by_type["USAGE"].meter_id is not None
    assert all(line.subscription_id == sub.id and line.start_date == NOW for line in sub.line_items)


def test_trial_days_inherited_overridden_or_turned_off(cat: Catalog) -> None:
    inherited = cat.create(plan_id=cat.trial_plan_id)
    assert inherited.subscription_status is SubscriptionStatus.TRIALING
    assert (inherited.trial_start, inherited.trial_end) == (NOW, NOW + timedelta(days=14))
    assert (inherited.current_period_start, inherited.current_period_end) == (NOW, NOW + timedelta(days=14))
    assert cat.invoices(inherited) == []

    longer = cat.create(plan_id=cat.trial_plan_id, trial_period_days=30)
    assert longer.subscription_status is SubscriptionStatus.TRIALING
    assert longer.trial_end == NOW + timedelta(days=30)
    assert longer.current_period_end == NOW + timedelta(days=30)
    assert cat.invoices(longer) == []

    off = cat.create(plan_id=cat.trial_plan_id, trial_period_days=0)
    assert off.subscription_status is SubscriptionStatus.ACTIVE
    assert (off.trial_start, off.trial_end) == (None, None)
    assert (off.current_period_start, off.current_period_end) == (NOW, at(2026, 6, 1, 9, 30))
    (opening,) = cat.invoices(off)
    assert opening.billing_reason is BillingReason.SUBSCRIPTION_CREATE
    assert opening.amount_due == Decimal("20.00")

    # A plan without a trial gets one when asked; the differing plan is fine with explicit days.
    asked = cat.create(trial_period_days=3)
    assert asked.subscription_status is SubscriptionStatus.TRIALING
    assert asked.trial_end == NOW + timedelta(days=3)
    explicit = cat.create(plan_id=cat.mixed_trials_plan_id, trial_period_days=10)
    assert explicit.trial_end == NOW + timedelta(days=10)


def test_billing_anchor_day_20_with_start_on_the_5th(
    cat: Catalog, billing: Billing, clock: TestClock
) -> None:
    start = at(2026, 5, 5)
    sub = cat.create(start_date=start, billing_anchor=at(2026, 4, 20))
    assert sub.billing_anchor == at(2026, 4, 20)
    assert (sub.current_period_start, sub.current_period_end) == (start, at(2026, 5, 20))
    (opening,) = cat.invoices(sub)
    assert (opening.period_start, opening.period_end) == (start, at(2026, 5, 20))

    clock.set(at(2026, 5, 20))
    billing.run_due()
    after = cat.s.subscriptions.get(sub.id)
    assert (after.current_period_start, after.current_period_end) == (at(2026, 5, 20), at(2026, 6, 20))

    # An anchor after the start works the same way: the lattice holds the 20th of every month.
    later = cat.create(start_date=start, billing_anchor=at(2026, 8, 20))
    assert (later.current_period_start, later.current_period_end) == (start, at(2026, 5, 20))


def test_payment_terms_set_the_due_date(cat: Catalog, billing: Billing, clock: TestClock) -> None:
    sub = cat.create(payment_terms="30 NET")
    assert sub.payment_terms is PaymentTerms.NET_30
    (opening,) = cat.invoices(sub)
    assert opening.period_end == at(2026, 6, 1, 9, 30)
    assert opening.due_date == at(2026, 7, 1, 9, 30)  # period end + 30 days

    plain = cat.create()
    assert cat.invoices(plain)[0].due_date == at(2026, 6, 2, 9, 30)  # period end + 1 day

    clock.set(at(2026, 6, 1, 9, 30))
    billing.run_due()
    closing = cat.invoices(sub)[1]
    assert closing.period_end == at(2026, 6, 1, 9, 30)
    assert closing.due_date == at(2026, 7, 1, 9, 30)


# -- versions ----------------------------------------------------------------------------------------


def test_version_grows_with_activation_and_each_billing_run(
    cat: Catalog, billing: Billing, clock: TestClock
) -> None:
    draft = cat.create(subscription_status="draft")
    assert draft.version == 1
    assert cat.s.subscriptions.get(draft.id).version == 1
    active = cat.s.subscriptions.activate(draft.id)
    assert active.version == 2
    assert cat.s.subscriptions.get(draft.id).version == 2

    direct = cat.create()
    assert direct.version == 1
    versions = []
    # The renewal notice (3 days before 1 Jun 09:30), then the period end, then the next notice.
    for when in (at(2026, 5, 29, 12), at(2026, 6, 1, 9, 30), at(2026, 6, 28, 12)):
        clock.set(when)
        billing.run_due()
        versions.append(cat.s.subscriptions.get(direct.id).version)
    assert versions == [2, 3, 4]
    billing.run_due()  # nothing due: no change, no new version
    assert cat.s.subscriptions.get(direct.id).version == 4
    assert cat.s.subscriptions.get(draft.id).version == 5  # 2 after activation + the same 3 runs


def test_activate_refuses_anything_but_a_draft(cat: Catalog) -> None:
    sub = cat.create()
    with pytest.raises(InvalidOperation):
        cat.s.subscriptions.activate(sub.id)
    draft = cat.create(subscription_status="draft", end_date=at(2026, 8, 1))
    with pytest.raises(ValidationError) as caught:
        cat.s.subscriptions.activate(draft.id, start_date=at(2026, 9, 1))
    assert caught.value.field == "start_date"
    assert cat.s.subscriptions.get(draft.id).subscription_status is SubscriptionStatus.DRAFT
    assert cat.invoices(draft) == []


def test_draft_with_inherited_trial_starts_its_trial_on_activation(cat: Catalog) -> None:
    draft = cat.create(plan_id=cat.trial_plan_id, subscription_status="draft")
    assert draft.subscription_status is SubscriptionStatus.DRAFT
    start = at(2026, 6, 10)
    activated = cat.s.subscriptions.activate(draft.id, start_date=start)
    assert activated.subscription_status is SubscriptionStatus.TRIALING
    assert (activated.trial_start, activated.trial_end) == (start, start + timedelta(days=14))
    assert cat.invoices(activated) == []


def test_explicit_anchor_equal_to_the_start_survives_activation(cat: Catalog) -> None:
    draft = cat.create(subscription_status="draft", start_date=at(2026, 5, 5), billing_anchor=at(2026, 5, 5))
    assert draft.billing_anchor_requested is True
    activated = cat.s.subscriptions.activate(draft.id, start_date=at(2026, 5, 12))
    assert activated.billing_anchor == at(2026, 5, 5)
    # Anchored on the 5th: the first period is the short 12 May - 5 Jun.
    assert (activated.current_period_start, activated.current_period_end) == (at(2026, 5, 12), at(2026, 6, 5))
    assert cat.s.subscriptions.get(draft.id).billing_anchor == at(2026, 5, 5)


def test_anchor_not_requested_follows_the_new_start_on_activation(cat: Catalog) -> None:
    draft = cat.create(subscription_status="draft", start_date=at(2026, 5, 5))
    assert (draft.billing_anchor, draft.billing_anchor_requested) == (at(2026, 5, 5), False)
    assert cat.s.subscriptions.get(draft.id).billing_anchor_requested is False
    activated = cat.s.subscriptions.activate(draft.id, start_date=at(2026, 5, 12))
    assert activated.billing_anchor == at(2026, 5, 12)
    assert (activated.current_period_start, activated.current_period_end) == (
        at(2026, 5, 12),
        at(2026, 6, 12),
    )


def test_requested_anchor_flag_is_stored_and_stays_off_the_wire(cat: Catalog) -> None:
    draft = cat.create(subscription_status="draft", start_date=at(2026, 5, 5), billing_anchor=at(2026, 5, 5))
    stored = cat.s.subscriptions.get(draft.id)
    assert stored.billing_anchor_requested is True
    activated = cat.s.subscriptions.activate(draft.id)
    assert cat.s.subscriptions.get(activated.id).billing_anchor_requested is True
    for data in (
        stored.to_dict(),
        activated.to_dict(line_items=False),
        cat.s.subscriptions.get_v2(draft.id, expand="subscription_line_items").to_dict(),
    ):
        assert "billing_anchor_requested" not in data
    events = cat.s.notifications.list(entity_id=draft.id).items
    assert {e.event_type for e in events} == {"subscription.draft.created", "subscription.activated"}
    assert all("billing_anchor_requested" not in e.payload["subscription"] for e in events)


# -- plan price sync -----------------------------------------------------------------------------------


def test_synced_price_sequence_and_plan_prices_out_of_sync(cat: Catalog) -> None:
    plan = cat.s.plans.get(cat.plan_id)
    highest = max(price.sequence for price in plan.prices)
    sub = cat.create()
    assert sub.synced_price_sequence == highest

    v2 = cat.s.subscriptions.get_v2(sub.id)
    assert v2.plan_prices_out_of_sync is False
    data = v2.to_dict()
    assert data["plan_prices_out_of_sync"] is False
    assert data["synced_price_sequence"] == highest
    assert "line_items" not in data
    expanded = cat.s.subscriptions.get_v2(sub.id, expand="subscription_line_items,phases").to_dict()
    assert len(expanded["line_items"]) == 2
    assert expanded["phases"] == []

    fixed = next(price for price in plan.prices if price.type.value == "FIXED")
    cat.s.prices.update(fixed.id, amount="25", effective_from=at(2026, 7, 1))
    v2 = cat.s.subscriptions.get_v2(sub.id)
    assert v2.plan_prices_out_of_sync is True
    assert v2.subscription.synced_price_sequence == highest
    assert v2.to_dict()["plan_prices_out_of_sync"] is True

    fresh = cat.create()
    assert fresh.synced_price_sequence > highest
    assert cat.s.subscriptions.get_v2(fresh.id).plan_prices_out_of_sync is False

    cat.s.prices.create(entity_type="PLAN", entity_id=cat.plan_id, **fee("3", display_name="Support"))
    assert cat.s.subscriptions.get_v2(fresh.id).plan_prices_out_of_sync is True


def test_get_v2_refuses_unknown_expansions(cat: Catalog) -> None:
    sub = cat.create()
    with pytest.raises(ValidationError) as caught:
        cat.s.subscriptions.get_v2(sub.id, expand="subscription_line_items,invoices")
    assert caught.value.field == "expand"
