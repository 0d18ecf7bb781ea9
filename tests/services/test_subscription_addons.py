"""Add-ons on subscriptions through the library, on every store: attach on create and later,
remove, list, their charges and credits, allowances, credit grants and a draft's activation.

The clock starts at 2026-05-01 00:00 UTC; May is 31 days, so the add-on's 31.00 a month in
advance is 1.00 a day of May and prorations come out in whole cents.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.addon_associations import AddonCadence, AddonStatus
from billingkit.domain.catalog import PriceEntityType
from billingkit.domain.credit_grant_applications import ApplicationStatus
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.periods import Period
from billingkit.domain.queries import ListQuery
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.errors import AlreadyExists, InvalidOperation, NotFound, ValidationError, VersionConflict
from billingkit.services import subscription_addons
from billingkit.services.invoicing import Charge, load_snapshot, measure_usage
from billingkit.services.line_settlements import addon_removal_key, settle_lines
from billingkit.services.subscription_lines import find_line_item

D = Decimal


def at(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


MAY, JUNE, JULY = at(5, 1), at(6, 1), at(7, 1)
MONTHLY = {"currency": "usd", "billing_period": "MONTHLY"}


@pytest.fixture
def clock() -> TestClock:
    return TestClock(MAY)


@dataclass
class World:
    billing: Billing
    clock: TestClock
    s: Scoped
    customer_id: str
    meter_id: str
    feature_id: str
    plan_id: str
    addon_id: str
    fixed_price_id: str  # the add-on's 31.00 monthly ADVANCE price
    usage_price_id: str  # the add-on's 0.10 a call

    def subscribe(self, **fields: Any) -> Subscription:
        return self.s.subscriptions.create(
            customer_id=self.customer_id,
            plan_id=self.plan_id,
            currency="usd",
            billing_period="MONTHLY",
            **fields,
        )

    def invoices(self, sub: Subscription) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(items, key=lambda i: i.billing_sequence or 0)

    def calls(self, count: int, start: datetime, tag: str) -> None:
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": "ada",
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{tag}{i}",
                }
                for i in range(count)
            ]
        )

    def run(self, when: datetime) -> None:
        self.clock.set(when)
        assert self.billing.run_due().failures == []


def fee(amount: str, cadence: str = "ADVANCE", **extra: Any) -> dict[str, Any]:
    return {
        **MONTHLY,
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "invoice_cadence": cadence,
        **extra,
    }


def per_call(meter_id: str, amount: str = "0.10", **extra: Any) -> dict[str, Any]:
    return {
        **MONTHLY,
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        **extra,
    }


@pytest.fixture
def w(billing: Billing, clock: TestClock) -> World:
    """Plan Pro: 20.00 a month in advance. Add-on Extra: 31.00 a month in advance and 0.10 a call
    in usd monthly, plus a eur and an annual price no monthly usd subscription bills."""
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    feature = s.features.create(name="API", type="metered", meter_id=meter.id, lookup_key="api")
    plan = s.plans.create(name="Pro", prices=[fee("20", display_name="Pro fee")])
    addon = s.addons.create(
        name="Extra",
        lookup_key="extra",
        prices=[
            fee("31", display_name="Extra fee"),
            per_call(meter.id, display_name="Extra calls"),
            fee("40", currency="eur"),
            fee("300", billing_period="ANNUAL"),
        ],
    )
    fixed, usage = addon.prices[0], addon.prices[1]
    customer = s.customers.create(external_id="ada", name="Ada")
    return World(billing, clock, s, customer.id, meter.id, feature.id, plan.id, addon.id, fixed.id, usage.id)


# -- attaching ----------------------------------------------------------------------------------------


def test_addons_on_create_get_lines_an_association_and_their_override_on_the_opening_invoice(
    w: World,
) -> None:
    sub = w.subscribe(
        addons=[
            {
                "addon_id": w.addon_id,
                "override_line_items": [{"price_id": w.fixed_price_id, "amount": "25"}],
                "metadata": {"source": "signup"},
            }
        ]
    )
    (association,) = w.s.subscriptions.addon_associations(sub.id)
    assert (association.addon_id, association.entity_id, association.addon_status, association.cadence) == (
        w.addon_id,
        sub.id,
        AddonStatus.ACTIVE,
        AddonCadence.RECURRING,
    )
    assert (association.start_date, association.end_date, association.metadata) == (
        MAY,
        None,
        {"source": "signup"},
    )
    plan_line, *addon_lines = sub.line_items
    assert plan_line.entity_type == "plan"
    # Only the usd monthly prices make lines; the fixed one names the subscription's own price.
    assert [(li.entity_type, li.entity_id, li.addon_association_id, li.start_date) for li in addon_lines] == [
        ("addon", w.addon_id, association.id, MAY),
        ("addon", w.addon_id, association.id, MAY),
    ]
    fixed_line, usage_line = addon_lines
    assert usage_line.price_id == w.usage_price_id and fixed_line.price_id != w.fixed_price_id
    owned = w.s.prices.get(fixed_line.price_id)
    assert (owned.entity_type, owned.entity_id, owned.parent_price_id, owned.amount) == (
        PriceEntityType.SUBSCRIPTION,
        sub.id,
        w.fixed_price_id,
        D(25),
    )
    (opening,) = w.invoices(sub)
    assert opening.billing_reason is BillingReason.SUBSCRIPTION_CREATE
    assert [(li.display_name, li.amount, li.entity_type, li.entity_id) for li in opening.line_items] == [
        ("Pro fee", D("20.00"), "plan", w.plan_id),
        ("Extra fee", D("25.00"), "addon", w.addon_id),
    ]
    assert opening.total == D("45.00")
    # The add-on's lines are in the owner index (a line item is found by its id alone).
    found, line = w.s.run(lambda uow, ctx: find_line_item(uow, usage_line.id))
    assert (found.id, line) == (sub.id, usage_line)


def test_adding_mid_period_with_prorations_charges_the_rest_of_the_period(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    added = w.s.subscriptions.add_addon(
        subscription_id=sub.id, addon_id=w.addon_id, proration_behavior="create_prorations"
    )
    # 31.00 x 21 days / 31 days (1,814,400 / 2,678,400 seconds) = 21.00.
    invoice = added.invoice
    assert invoice is not None
    assert (invoice.billing_reason, invoice.period_start, invoice.period_end) == (
        BillingReason.SUBSCRIPTION_UPDATE,
        at(5, 11),
        JUNE,
    )
    assert [(li.display_name, li.amount, li.period_start, li.period_end) for li in invoice.line_items] == [
        ("Remaining time on Extra fee", D("21.00"), at(5, 11), JUNE)
    ]
    # Settled like every mid-period change: a ONE_OFF invoice keyed by the association.
    assert (invoice.total, invoice.idempotency_key) == (
        D("21.00"),
        f"subscription_change|addon_charge|{added.association.id}",
    )
    assert (invoice.invoice_status, invoice.invoice_type) == ("FINALIZED", "ONE_OFF")
    saved = w.s.subscriptions.get(sub.id)
    assert saved.version == sub.version + 1 and saved == added.subscription
    assert [li.addon_association_id for li in saved.line_items[1:]] == [added.association.id] * 2
    (event, *_) = w.s.notifications.list(event_type="subscription.updated").items
    assert event.entity_id == sub.id
    assert [i.id for i in w.invoices(sub)][-1] == invoice.id


def test_adding_without_prorations_bills_from_the_next_period(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    added = w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=w.addon_id)
    assert added.invoice is None
    w.calls(40, at(5, 2), "before")  # before the add-on started: not its usage
    w.calls(30, at(5, 12), "after")
    w.run(at(6, 1, 1))
    cycle = w.invoices(sub)[-1]
    assert [(li.display_name, li.quantity, li.amount) for li in cycle.line_items] == [
        ("Pro fee", D(1), D("20.00")),
        ("Extra fee", D(1), D("31.00")),  # June, in advance, in full
        ("Extra calls", D(30), D("3.00")),  # May from the 11th, in arrears
    ]


def test_a_onetime_addon_is_charged_once_in_full_and_then_ends(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    added = w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=w.addon_id, cadence="onetime")
    assert added.invoice is not None and added.invoice.total == D("31.00")  # whatever the proration
    fixed, usage = added.subscription.line_items[1:]
    assert (fixed.start_date, fixed.end_date, usage.start_date, usage.end_date) == (
        MAY,
        JUNE,
        at(5, 11),
        JUNE,
    )
    w.calls(30, at(5, 12), "may")
    w.run(at(6, 1, 1))
    assert [(li.display_name, li.amount) for li in w.invoices(sub)[-1].line_items] == [
        ("Pro fee", D("20.00")),
        ("Extra calls", D("3.00")),
    ]
    w.calls(50, at(6, 2), "june")
    w.run(at(7, 1, 1))
    assert [(li.display_name, li.amount) for li in w.invoices(sub)[-1].line_items] == [
        ("Pro fee", D("20.00"))
    ]
    # The association stays (its entitlements and grants are not one-off).
    assert [a.id for a in w.s.subscriptions.addon_associations(sub.id)] == [added.association.id]


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"addon_id": "addon_missing"}, "addon_id"),
        ({"start_date": at(4, 30)}, "start_date"),
        (
            {"override_line_items": [{"price_id": "price_other", "amount": "1"}]},
            "override_line_items[0].price_id",
        ),
        (
            {"override_line_items": [{"price_id": "$usage", "quantity": "2"}]},
            "override_line_items[0].quantity",
        ),
        (
            {"line_item_commitments": {"$fixed": {"commitment_type": "amount", "commitment_amount": "5"}}},
            None,
        ),
        ({"checkout": {"provider": "razorpay"}}, "checkout.provider"),
        ({"coupons": [{"coupon_code": "X"}]}, "coupons"),
        ({"cadence": "sometimes"}, "cadence"),
    ],
)
def test_bad_additions_are_refused_and_write_nothing(
    w: World, fields: dict[str, Any], field: str | None
) -> None:
    sub = w.subscribe()
    ids = {"$usage": w.usage_price_id, "$fixed": w.fixed_price_id}
    for item in fields.get("override_line_items", ()):
        item["price_id"] = ids.get(item["price_id"], item["price_id"])
    if "line_item_commitments" in fields:
        fields["line_item_commitments"] = {ids[k]: v for k, v in fields["line_item_commitments"].items()}
        field = f"line_item_commitments.{w.fixed_price_id}"
    before = w.s.subscriptions.get(sub.id)
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.add_addon(**{"subscription_id": sub.id, "addon_id": w.addon_id, **fields})
    assert caught.value.field == field, caught.value.message
    assert w.s.subscriptions.get(sub.id) == before
    assert w.s.subscriptions.addon_associations(sub.id) == []
    assert [p.entity_type for p in w.s.prices.list(limit=100).items].count(PriceEntityType.SUBSCRIPTION) == 0


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_an_addon_without_a_matching_price_is_refused_naming_what_it_offers(w: World) -> None:
    other = w.s.addons.create(name="Euro", lookup_key="euro", prices=[fee("9", currency="eur")])
    sub = w.subscribe()
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=other.id)
    assert caught.value.field == "addon_id"
    assert (
        caught.value.message == f"add-on {other.id} has no prices for usd 1 x MONTHLY; it has eur 1 x MONTHLY"
    )
    with pytest.raises(ValidationError) as on_create:
        w.subscribe(addons=[{"addon_id": w.addon_id}, {"addon_id": other.id}])
    assert on_create.value.field == "addons[1].addon_id"
    assert w.s.subscriptions.list().total == 1  # the refused create wrote nothing


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_a_missing_or_ended_subscription_and_a_trial_onetime_addon_are_refused(w: World) -> None:
    with pytest.raises(NotFound):
        w.s.subscriptions.add_addon(subscription_id="subs_missing", addon_id=w.addon_id)
    trialing = w.subscribe(trial_period_days=14)
    assert trialing.subscription_status is SubscriptionStatus.TRIALING
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.add_addon(subscription_id=trialing.id, addon_id=w.addon_id, cadence="onetime")
    assert caught.value.field == "cadence"
    ended = w.subscribe(end_date=at(5, 20))
    w.run(at(5, 21))
    assert w.s.subscriptions.get(ended.id).subscription_status is SubscriptionStatus.CANCELLED
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.add_addon(subscription_id=ended.id, addon_id=w.addon_id)


# -- removing -----------------------------------------------------------------------------------------


def test_removal_defaults_to_the_period_end_and_stops_billing_then(w: World) -> None:
    sub = w.subscribe(addons=[{"addon_id": w.addon_id}])
    (association,) = w.s.subscriptions.addon_associations(sub.id)
    w.clock.set(at(5, 20))
    removed = w.s.subscriptions.remove_addon(addon_association_id=association.id, reason="too dear")
    assert removed.credit.amount == 0 and removed.credit.transaction is None
    gone = removed.association
    assert (gone.addon_status, gone.end_date, gone.cancelled_at, gone.cancellation_reason) == (
        AddonStatus.CANCELLED,
        JUNE,
        at(5, 20),
        "too dear",
    )
    assert [li.end_date for li in removed.subscription.line_items] == [None, JUNE, JUNE]
    # Still listed until it ends; a second removal is refused.
    assert [a.id for a in w.s.subscriptions.addon_associations(sub.id)] == [association.id]
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.remove_addon(addon_association_id=association.id)
    (updated, *_) = w.s.notifications.list(event_type="subscription.updated").items
    assert (updated.entity_id, updated.created_at) == (sub.id, at(5, 20))
    w.calls(10, at(5, 21), "may")
    w.run(at(6, 1, 1))
    assert [(li.display_name, li.amount) for li in w.invoices(sub)[-1].line_items] == [
        ("Pro fee", D("20.00")),
        ("Extra calls", D("1.00")),  # May's usage, billed; June's fee not
    ]
    assert w.s.subscriptions.addon_associations(sub.id) == []
    with pytest.raises(NotFound):
        w.s.subscriptions.remove_addon(addon_association_id="addon_assoc_missing")


def test_removal_mid_period_with_prorations_credits_the_unused_time_once(w: World) -> None:
    sub = w.subscribe(addons=[{"addon_id": w.addon_id}])  # the opening invoice charged May's 31.00
    (association,) = w.s.subscriptions.addon_associations(sub.id)
    w.clock.set(at(5, 21))
    removed = w.s.subscriptions.remove_addon(
        addon_association_id=association.id, effective_date=at(5, 21), proration_behavior="create_prorations"
    )
    # 31.00 x 11 days / 31 days = 11.00, as a prepaid wallet credit.
    transaction = removed.credit.transaction
    assert removed.credit.amount == D("11.00") and transaction is not None
    assert removed.credit.lines == {sub.line_items[1].id: D("11.00")}  # the fee; usage has no credit
    assert (transaction.credit_amount, transaction.transaction_reason, transaction.idempotency_key) == (
        D("11.00"),
        "SUBSCRIPTION_CREDIT_GRANT",
        f"subscription_change|proration_credit_addon|{association.id}|{MAY.isoformat()}|{JUNE.isoformat()}",
    )
    (wallet,) = w.s.wallets.for_customer(id=w.customer_id)
    assert wallet.credit_balance == D("11.00")
    # A retry of the settlement finds the movement made and moves nothing.
    old_lines = sub.line_items[1:]
    again = w.s.run(
        lambda uow, ctx: settle_lines(
            uow,
            ctx,
            uow.subscriptions.get(sub.id),
            key=addon_removal_key(association.id, Period(MAY, JUNE)),
            effective=at(5, 21),
            ended=old_lines,
            field="effective_date",
        )
    )
    assert (again.invoice, again.transaction, again.credited) == (None, None, None)
    (wallet,) = w.s.wallets.for_customer(id=w.customer_id)
    assert wallet.credit_balance == D("11.00")


def test_an_effective_date_in_a_billed_period_is_refused(w: World) -> None:
    sub = w.subscribe(addons=[{"addon_id": w.addon_id}])
    (association,) = w.s.subscriptions.addon_associations(sub.id)
    w.run(at(6, 2))
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.remove_addon(addon_association_id=association.id, effective_date=at(5, 25))
    assert caught.value.field == "effective_date"
    assert w.s.subscriptions.addon_associations(sub.id)[0].addon_status is AddonStatus.ACTIVE


# -- entitlements and credit grants --------------------------------------------------------------------


def test_addon_allowances_add_to_the_plans_while_the_addon_is_in_force(w: World) -> None:
    entitled = w.s.plans.create(
        name="Metered",
        prices=[fee("20", display_name="Pro fee"), per_call(w.meter_id, display_name="Calls")],
        entitlements=[{"feature_id": w.feature_id, "usage_limit": 100, "is_soft_limit": True}],
    )
    booster = w.s.addons.create(
        name="Booster",
        lookup_key="booster",
        entitlements=[{"feature_id": w.feature_id, "usage_limit": 50, "is_soft_limit": True}],
    )
    sub = w.s.subscriptions.create(
        customer_id=w.customer_id, plan_id=entitled.id, currency="usd", billing_period="MONTHLY"
    )
    w.clock.set(at(5, 10))
    added = w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=booster.id)
    assert added.subscription.line_items == sub.line_items  # no prices: no lines
    w.s.subscriptions.remove_addon(addon_association_id=added.association.id)  # from 1 June
    w.calls(200, at(5, 11), "may")
    w.run(at(6, 1, 1))
    w.calls(200, at(6, 2), "june")
    w.run(at(7, 1, 1))
    calls = [
        (li.quantity, li.adjusted_entitlement_quantity, li.amount)
        for invoice in w.invoices(sub)
        for li in invoice.line_items
        if li.display_name == "Calls"
    ]
    # May: 200 - (100 + 50) = 50 billable = 5.00; June: 200 - 100 = 100 = 10.00.
    assert calls == [(D(200), D(50), D("5.00")), (D(200), D(100), D("10.00"))]


def test_addon_credit_grants_start_with_the_association_and_stop_at_its_removal(w: World) -> None:
    granting = w.s.addons.create(
        name="Credits",
        lookup_key="credits",
        credit_grants=[{"name": "Monthly 10", "credits": "10", "cadence": "RECURRING", "period": "MONTHLY"}],
    )
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    added = w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=granting.id)
    (copy,) = w.s.subscriptions.get_v2(sub.id, expand="credit_grants").credit_grants
    assert (copy.scope, copy.subscription_id, copy.start_date, copy.credits) == (
        "SUBSCRIPTION",
        sub.id,
        at(5, 11),
        D(10),
    )
    assert copy.metadata == {"addon_id": granting.id, "addon_association_id": added.association.id}
    cgas = sorted(
        w.s.credit_grants.applications(subscription_ids=[sub.id]).items, key=lambda c: c.period_start
    )
    assert [(c.period_start, c.application_status) for c in cgas] == [
        (at(5, 11), ApplicationStatus.APPLIED),
        (at(6, 11), ApplicationStatus.PENDING),
    ]
    (wallet,) = w.s.wallets.for_customer(id=w.customer_id)
    assert wallet.credit_balance == D(10)
    w.s.subscriptions.remove_addon(addon_association_id=added.association.id)  # from 1 June
    cgas = sorted(
        w.s.credit_grants.applications(subscription_ids=[sub.id]).items, key=lambda c: c.period_start
    )
    assert [c.application_status for c in cgas] == [ApplicationStatus.APPLIED, ApplicationStatus.CANCELLED]
    (copy,) = w.s.subscriptions.get_v2(sub.id, expand="credit_grants").credit_grants
    assert copy.end_date == JUNE
    w.run(at(6, 12))
    (wallet,) = w.s.wallets.for_customer(id=w.customer_id)
    assert wallet.credit_balance == D(10)  # nothing granted after the removal


def test_a_drafts_addons_move_with_its_activation(w: World) -> None:
    draft = w.subscribe(subscription_status="draft", addons=[{"addon_id": w.addon_id, "cadence": "onetime"}])
    assert w.invoices(draft) == []
    w.clock.set(at(5, 10))
    active = w.s.subscriptions.activate(draft.id, start_date=at(5, 10))
    (association,) = w.s.subscriptions.addon_associations(draft.id)
    assert association.start_date == at(5, 10)
    fixed, usage = active.line_items[1:]
    assert (fixed.start_date, fixed.end_date, usage.start_date, usage.end_date) == (
        at(5, 10),
        at(6, 10),
        at(5, 10),
        at(6, 10),
    )
    (opening,) = w.invoices(draft)
    assert [(li.display_name, li.amount) for li in opening.line_items] == [
        ("Pro fee", D("20.00")),
        ("Extra fee", D("31.00")),
    ]


def test_the_associations_listing_needs_a_live_subscription(w: World) -> None:
    with pytest.raises(NotFound):
        w.s.subscriptions.addon_associations("subs_missing")
    with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
        assert uow.addon_associations.list(ListQuery(limit=10)).total == 0


def test_two_charges_from_the_same_instant_are_refused_whole(w: World) -> None:
    """The unique invoice key (subscription, period, billing reason) allows one update invoice per
    window: a second prorated add-on from the same instant is a 409 and writes nothing."""
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    first = w.s.subscriptions.add_addon(
        subscription_id=sub.id, addon_id=w.addon_id, proration_behavior="create_prorations"
    )
    assert first.invoice is not None
    with pytest.raises(AlreadyExists) as caught:
        w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=w.addon_id, cadence="onetime")
    assert caught.value.details["invoice_id"] == first.invoice.id
    assert [a.id for a in w.s.subscriptions.addon_associations(sub.id)] == [first.association.id]
    assert w.s.subscriptions.get(sub.id) == first.subscription
    w.clock.advance(timedelta(seconds=1))
    later = w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=w.addon_id, cadence="onetime")
    assert later.invoice is not None and later.invoice.total == D("31.00")


def test_addons_of_a_backdated_subscription_start_with_it(w: World) -> None:
    w.clock.set(at(6, 15))
    sub = w.subscribe(start_date=at(5, 1), addons=[{"addon_id": w.addon_id}])
    (association,) = w.s.subscriptions.addon_associations(sub.id)
    assert association.start_date == MAY
    opening = w.invoices(sub)[0]
    assert opening.period_start == MAY
    assert [(li.display_name, li.amount) for li in opening.line_items] == [
        ("Pro fee", D("20.00")),
        ("Extra fee", D("31.00")),
    ]


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_commitments_apply_to_addon_lines_and_daily_allowances_are_refused(w: World) -> None:
    sub = w.subscribe()
    commitment = {"commitment_type": "amount", "commitment_amount": "5", "overage_factor": "1.5"}
    added = w.s.subscriptions.add_addon(
        subscription_id=sub.id, addon_id=w.addon_id, line_item_commitments={w.usage_price_id: commitment}
    )
    usage_line = added.subscription.line_items[-1]
    assert (usage_line.price_id, usage_line.commitment_amount, usage_line.commitment_overage_factor) == (
        w.usage_price_id,
        D(5),
        D("1.5"),
    )
    daily = w.s.addons.create(
        name="Daily",
        lookup_key="daily",
        entitlements=[{"feature_id": w.feature_id, "usage_limit": 10, "usage_reset_period": "DAILY"}],
    )
    with pytest.raises(ValidationError) as caught:
        w.subscribe(addons=[{"addon_id": daily.id}])
    assert caught.value.field == "addons[0].addon_id" and "resets DAILY" in caught.value.message


def test_an_entitlement_override_given_with_the_addons_replaces_the_addons_allowance(w: World) -> None:
    metered = w.s.plans.create(name="Metered", prices=[per_call(w.meter_id, display_name="Calls")])
    booster = w.s.addons.create(
        name="Booster",
        lookup_key="booster",
        entitlements=[{"feature_id": w.feature_id, "usage_limit": 50, "is_soft_limit": True}],
    )
    (entitlement,) = w.s.addons.get(booster.id).entitlements
    sub = w.s.subscriptions.create(
        customer_id=w.customer_id,
        plan_id=metered.id,
        currency="usd",
        billing_period="MONTHLY",
        addons=[{"addon_id": booster.id}],
        override_entitlements=[{"entitlement_id": entitlement.id, "usage_limit": 80}],
    )
    w.calls(200, at(5, 2), "may")
    w.run(at(6, 1, 1))
    (line,) = [li for li in w.invoices(sub)[-1].line_items if li.display_name == "Calls"]
    assert (line.adjusted_entitlement_quantity, line.amount) == (D(120), D("12.00"))  # 200 - 80


@pytest.mark.parametrize("storage", ["memory", "sqlite"], indirect=True)
def test_a_concurrent_change_of_the_subscription_is_a_version_conflict_and_writes_nothing(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer saves the subscription between the add's read and its write (simulated in
    the same unit of work): the add's write names the version it read and fails; the library runs
    it again twice, then the conflict comes out, with nothing of any attempt stored."""
    sub = w.subscribe()
    real = subscription_addons.start_grants

    def meddle(uow: Any, ctx: Any, target: Subscription, grants: Any) -> Any:
        stored = uow.subscriptions.get(target.id)
        changed = stored.model_copy(update={"metadata": {"other": "writer"}})
        uow.subscriptions.update(changed, expected_version=stored.version)
        return real(uow, ctx, target, grants)

    monkeypatch.setattr(subscription_addons, "start_grants", meddle)
    with pytest.raises(VersionConflict):
        w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=w.addon_id)
    assert w.s.subscriptions.get(sub.id) == sub
    assert w.s.subscriptions.addon_associations(sub.id) == []


def test_a_plan_line_and_an_addon_line_on_one_meter_share_one_usage_query(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    metered = w.s.plans.create(name="Metered", prices=[per_call(w.meter_id, "0.20", display_name="Calls")])
    sub = w.s.subscriptions.create(
        customer_id=w.customer_id,
        plan_id=metered.id,
        currency="usd",
        billing_period="MONTHLY",
        addons=[{"addon_id": w.addon_id}],
    )
    w.calls(25, at(5, 3), "may")
    w.clock.set(at(6, 1, 1))
    sub = w.s.subscriptions.get(sub.id)
    asked: list[int] = []

    def measure(uow: Any, ctx: Any) -> list[Any]:
        store = type(uow.usage)
        real = store.aggregate

        def counting(self: Any, queries: Any) -> Any:
            asked.append(len(queries))
            return real(self, queries)

        monkeypatch.setattr(store, "aggregate", counting)
        charge = Charge(
            sub, BillingReason.SUBSCRIPTION_CYCLE, "period_end", Period(MAY, JUNE), Period(JUNE, JULY)
        )
        return measure_usage(uow, [charge], load_snapshot(uow, [sub], at=ctx.now))

    (usage,) = w.s.run(measure)
    monkeypatch.undo()
    assert asked == [1]  # two usage lines, one question
    metered_lines = [line.id for line in sub.line_items if line.meter_id]
    assert len(metered_lines) == 2
    assert {line_id: result.value for line_id, result in usage.items()} == dict.fromkeys(metered_lines, D(25))
    w.run(at(6, 1, 1))
    usage_lines = [li for li in w.invoices(sub)[-1].line_items if li.price_type == "USAGE"]
    assert [(li.display_name, li.amount) for li in usage_lines] == [
        ("Calls", D("5.00")),  # 25 x 0.20
        ("Extra calls", D("2.50")),  # 25 x 0.10
    ]
