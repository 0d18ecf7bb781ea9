"""Subscription hierarchies through the library, on every store: the types ``inheritance`` implies,
what a child takes from its parent, the refusals (each naming its field, nothing written), the
billing run (inherited usage, grouped lines, children moving with their parent), delegated
invoicing, the search filters and the modify types ``inheritance`` and ``grouped_invoicing``.

Time starts at 1 Jan 2026 00:00 UTC; plans are monthly in usd.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, Scoped, TestClock, ValidationError
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus, SubscriptionType
from billingkit.services.price_overrides import OverrideLineItem, override_lines

D = Decimal


def at(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


def prices(fee: str, meter_id: str, *, name: str, unit: str = "0.10", **extra: Any) -> list[dict[str, Any]]:
    """``fee`` a month in advance and ``unit`` a call in arrears."""
    common = {"currency": "usd", "billing_period": "MONTHLY", **extra}
    return [
        {
            **common,
            "type": "FIXED",
            "billing_model": "FLAT_FEE",
            "amount": fee,
            "invoice_cadence": "ADVANCE",
            "display_name": f"{name} fee",
        },
        {
            **common,
            "type": "USAGE",
            "billing_model": "FLAT_FEE",
            "amount": unit,
            "invoice_cadence": "ARREAR",
            "meter_id": meter_id,
            "display_name": f"{name} calls",
        },
    ]


@dataclass
class Family:
    clock: TestClock
    billing: Billing
    s: Scoped
    parent_plan: str
    child_plan: str
    customers: dict[str, Customer]

    def customer(self, external_id: str) -> Customer:
        if external_id not in self.customers:
            self.customers[external_id] = self.s.customers.create(external_id=external_id, name=external_id)
        return self.customers[external_id]

    def subscribe(self, external_id: str, plan: str | None = None, **fields: Any) -> Subscription:
        fields.setdefault("currency", "usd")
        fields.setdefault("billing_period", "MONTHLY")
        return self.s.subscriptions.create(
            customer_id=self.customer(external_id).id, plan_id=plan or self.parent_plan, **fields
        )

    def calls(self, external_id: str, count: int, start: datetime) -> None:
        self.customer(external_id)
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": external_id,
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{external_id}-{start:%m%d}-{i}",
                }
                for i in range(count)
            ]
        )

    def invoices(self, sub: Subscription) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(items, key=lambda invoice: invoice.billing_sequence or 0)

    def get(self, sub: Subscription) -> Subscription:
        return self.s.subscriptions.get(sub.id)

    def children(self, parent: Subscription) -> list[Subscription]:
        found = self.s.subscriptions.list(parent_subscription_ids=[parent.id], limit=100).items
        return sorted(found, key=lambda sub: sub.created_at)

    def count(self) -> int:
        return self.s.subscriptions.list(limit=1).total


@pytest.fixture
def fam(storage: Any) -> Family:
    clock = TestClock(at(2026, 1, 1))
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    parent_plan = s.plans.create(name="Group", prices=prices("100", meter.id, name="Group")).id
    child_plan = s.plans.create(name="Team", prices=prices("31", meter.id, name="Team", unit="0.20")).id
    return Family(clock, billing, s, parent_plan, child_plan, {})


def lines(invoice: Invoice) -> list[tuple[str, str, str, str, str | None]]:
    """(display name, quantity, amount, period start day, subscription id of another line)."""
    return [
        (
            line.display_name,
            str(line.quantity),
            str(line.amount),
            f"{line.period_start:%m-%d}",
            line.subscription_id,
        )
        for line in invoice.line_items
    ]


# -- create: types and what children take --------------------------------------------------------


def test_inherited_children_are_skeletons_that_follow_the_parent(fam: Family) -> None:
    fam.customer("eu")
    fam.customer("us")
    parent = fam.subscribe(
        "acme", inheritance={"external_customer_ids_to_inherit_subscription": ["eu", "us"]}
    )
    assert (parent.subscription_type, parent.parent_subscription_id) == (SubscriptionType.PARENT, None)
    by_customer = {child.customer_id: child for child in fam.children(parent)}
    eu, us = by_customer[fam.customers["eu"].id], by_customer[fam.customers["us"].id]
    for child in (eu, us):
        assert (child.subscription_type, child.parent_subscription_id) == (
            SubscriptionType.INHERITED,
            parent.id,
        )
        assert (child.plan_id, child.currency, child.line_items, child.next_run_at) == (
            parent.plan_id,
            "usd",
            (),
            None,
        )
        assert (child.current_period_start, child.current_period_end, child.subscription_status) == (
            at(2026, 1, 1),
            at(2026, 2, 1),
            SubscriptionStatus.ACTIVE,
        )
        assert fam.invoices(child) == []  # never invoiced
    created = fam.s.notifications.list(event_type="subscription.created", limit=10).items
    assert {event.entity_id for event in created} == {parent.id, eu.id, us.id}


def test_a_grouped_child_takes_the_parents_schedule_and_gets_no_opening_invoice(fam: Family) -> None:
    parent = fam.subscribe("acme")
    assert parent.subscription_type is SubscriptionType.STANDALONE
    fam.clock.set(at(2026, 1, 16))
    child = fam.subscribe(
        "team", fam.child_plan, timezone="UTC", inheritance={"parent_subscription_id": parent.id}
    )
    assert (child.subscription_type, child.parent_subscription_id) == (
        SubscriptionType.GROUPED_INVOICING,
        parent.id,
    )
    assert (child.current_period_start, child.current_period_end, child.billing_anchor) == (
        at(2026, 1, 16),
        at(2026, 2, 1),
        parent.billing_anchor,
    )
    assert child.next_run_at is None and fam.invoices(child) == []
    promoted = fam.get(parent)
    assert (promoted.subscription_type, promoted.version) == (SubscriptionType.PARENT, parent.version + 1)


def test_an_invoicing_customer_makes_delegated_invoicing(fam: Family) -> None:
    payer = fam.customer("payer")
    sub = fam.subscribe("acme", inheritance={"invoicing_customer_external_id": "payer"})
    assert (sub.subscription_type, sub.invoicing_customer_id) == (
        SubscriptionType.DELEGATED_INVOICING,
        payer.id,
    )
    (opening,) = fam.invoices(sub)
    assert (opening.customer_id, opening.subscription_customer_id, opening.total) == (
        payer.id,
        fam.customers["acme"].id,
        D("100.00"),
    )
    assert fam.s.invoices.list(customer_id=fam.customers["acme"].id).items == []
    mine = fam.s.invoices.list(subscription_customer_id=[fam.customers["acme"].id]).items
    assert [invoice.id for invoice in mine] == [opening.id]
    found = fam.s.subscriptions.list(invoicing_customer_ids=[payer.id]).items
    assert [s.id for s in found] == [sub.id]
    # an empty inheritance changes nothing
    plain = fam.subscribe("solo", inheritance={})
    assert (plain.subscription_type, plain.invoicing_customer_id) == (SubscriptionType.STANDALONE, None)


def test_delegated_invoices_use_the_invoicing_customers_credits_and_taxes(fam: Family) -> None:
    payer = fam.customer("payer")
    fam.s.wallets.create(customer_id=payer.id, currency="usd", initial_credits_to_load="30")
    fam.s.tax_rates.create(name="VAT", code="VAT10", percentage_value="10")
    fam.s.tax_associations.create(tax_rate_code="VAT10", external_customer_id="payer")
    sub = fam.subscribe("acme", inheritance={"invoicing_customer_external_id": "payer"})
    (opening,) = fam.invoices(sub)
    # 100.00 + 10% tax on the payer's association = 110.00, less the payer's 30.00 of credits.
    assert (opening.subtotal, opening.total_tax, opening.total_prepaid_credits_applied, opening.total) == (
        D("100.00"),
        D("10.00"),
        D("30.00"),
        D("80.00"),
    )


# -- create: refusals ------------------------------------------------------------------------------


def test_refusals_name_their_field_and_write_nothing(fam: Family) -> None:
    parent = fam.subscribe("acme")
    fam.customer("eu")
    new = fam.customer("new")
    draft = fam.subscribe("drafty", subscription_status="draft")
    grouped = fam.subscribe("g1", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    eur_plan = fam.s.plans.create(
        name="Euro", prices=[{**prices("10", "m", name="E")[0], "currency": "eur"}]
    ).id
    fam.s.coupons.create(
        name="Ten", coupon_code="TEN", type="percentage", percentage_off="10", cadence="forever"
    )
    under = {"parent_subscription_id": parent.id}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"inheritance": {"parent_subscription_id": "subs_nope"}}, "inheritance.parent_subscription_id"),
        ({"inheritance": {"parent_subscription_id": grouped.id}}, "inheritance.parent_subscription_id"),
        ({"inheritance": {"parent_subscription_id": draft.id}}, "inheritance.parent_subscription_id"),
        (
            {"inheritance": {**under, "external_customer_ids_to_inherit_subscription": ["eu"]}},
            "inheritance.parent_subscription_id",
        ),
        (
            {"inheritance": {**under, "invoicing_customer_external_id": "eu"}},
            "inheritance.invoicing_customer_external_id",
        ),
        (
            {"inheritance": {"external_customer_ids_to_inherit_subscription": ["eu", "nobody"]}},
            "inheritance.external_customer_ids_to_inherit_subscription[1]",
        ),
        (
            {"inheritance": {"external_customer_ids_to_inherit_subscription": ["eu", "eu"]}},
            "inheritance.external_customer_ids_to_inherit_subscription[1]",
        ),
        (
            {"inheritance": {"external_customer_ids_to_inherit_subscription": ["new"]}},
            "inheritance.external_customer_ids_to_inherit_subscription[0]",
        ),
        (
            {"inheritance": {"invoicing_customer_external_id": "new"}},
            "inheritance.invoicing_customer_external_id",
        ),
        (
            {
                "subscription_status": "draft",
                "inheritance": {"external_customer_ids_to_inherit_subscription": ["eu"]},
            },
            "inheritance",
        ),
        ({"inheritance": under, "billing_period": "ANNUAL"}, "billing_period"),
        ({"inheritance": under, "subscription_coupons": [{"coupon_code": "TEN"}]}, "subscription_coupons"),
        (
            {"inheritance": under, "tax_rate_overrides": [{"tax_rate_code": "X", "currency": "usd"}]},
            "tax_rate_overrides",
        ),
        ({"inheritance": under, "commitment_amount": "10", "overage_factor": "1"}, "commitment_amount"),
        ({"inheritance": under, "trial_period_days": 7}, "trial_period_days"),
        ({"inheritance": under, "end_date": at(2026, 6, 1)}, "end_date"),
        ({"inheritance": under, "billing_anchor": at(2026, 1, 5)}, "billing_anchor"),
        ({"inheritance": under, "billing_cycle": "calendar"}, "billing_cycle"),
        ({"inheritance": under, "auto_invoice_threshold": "50"}, "auto_invoice_threshold"),
        (
            {"inheritance": {"invoicing_customer_external_id": "eu"}, "auto_invoice_threshold": "50"},
            "auto_invoice_threshold",
        ),
        ({"inheritance": under, "start_date": at(2025, 12, 20)}, "start_date"),
    ]
    before = fam.count()
    for fields, field in cases:
        with pytest.raises(ValidationError) as caught:
            fields.setdefault("billing_period", "MONTHLY")
            plan = fam.child_plan if "parent_subscription_id" in fields["inheritance"] else fam.parent_plan
            fam.s.subscriptions.create(customer_id=new.id, plan_id=plan, currency="usd", **fields)
        assert caught.value.field == field, (fields, caught.value.message)
    with pytest.raises(ValidationError) as other_currency:
        fam.s.subscriptions.create(
            customer_id=new.id,
            plan_id=eur_plan,
            currency="eur",
            billing_period="MONTHLY",
            inheritance=under,
        )
    assert other_currency.value.field == "currency"
    assert fam.count() == before
    assert fam.get(parent).subscription_type is SubscriptionType.PARENT  # made a parent by ``grouped``


# -- the billing run -------------------------------------------------------------------------------


def test_the_parents_invoice_bills_inherited_usage_and_grouped_lines_once(fam: Family) -> None:
    fam.customer("eu")
    parent = fam.subscribe("acme", inheritance={"external_customer_ids_to_inherit_subscription": ["eu"]})
    fam.clock.set(at(2026, 1, 16))
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    fam.calls("acme", 10, at(2026, 1, 20))
    fam.calls("eu", 20, at(2026, 1, 20))
    fam.calls("team", 5, at(2026, 1, 20))
    fam.calls("team", 3, at(2026, 1, 10))  # before the child started: not its usage
    fam.calls("stranger", 7, at(2026, 1, 20))

    fam.clock.set(at(2026, 2, 1))
    report = fam.billing.run_due()
    assert (report.subscription_count, report.invoice_count, report.failures) == (1, 1, [])
    opening, first = fam.invoices(parent)
    assert opening.billing_reason is BillingReason.SUBSCRIPTION_CREATE and opening.total == D("100.00")
    assert first.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
    assert (first.customer_id, first.period_start, first.period_end) == (
        fam.customers["acme"].id,
        at(2026, 1, 1),
        at(2026, 2, 1),
    )
    # Group fee for February 100.00; group calls: acme 10 + eu 20 = 30 x 0.10 = 3.00; the team's
    # fee for February 31.00, its calls since 16 Jan 5 x 0.20 = 1.00, and its first stub's fee
    # (16 Jan - 1 Feb, 16 of 31 days) 31.00 x 16/31 = 16.00, billed in arrears. Total 151.00.
    assert lines(first) == [
        ("Group fee", "1", "100.00", "02-01", None),
        ("Group calls", "30", "3.00", "01-01", None),
        ("Team fee", "1", "31.00", "02-01", team.id),
        ("Team calls", "5", "1.00", "01-16", team.id),
        ("Team fee", "1", "16.00", "01-16", team.id),
    ]
    assert first.total == D("151.00")
    assert fam.invoices(team) == []
    moved = fam.get(team)
    assert (moved.current_period_start, moved.current_period_end, moved.next_run_at) == (
        at(2026, 2, 1),
        at(2026, 3, 1),
        None,
    )
    (eu_child,) = [c for c in fam.children(parent) if c.subscription_type is SubscriptionType.INHERITED]
    assert (eu_child.current_period_start, eu_child.current_period_end) == (at(2026, 2, 1), at(2026, 3, 1))

    # The next period: no stub any more, just the group's and the team's fees and usage.
    fam.calls("team", 2, at(2026, 2, 10))
    fam.clock.set(at(2026, 3, 1))
    fam.billing.run_due()
    third = fam.invoices(parent)[2]
    assert lines(third) == [
        ("Group fee", "1", "100.00", "03-01", None),
        ("Group calls", "0", "0.00", "02-01", None),
        ("Team fee", "1", "31.00", "03-01", team.id),
        ("Team calls", "2", "0.40", "02-01", team.id),
    ]
    assert third.total == D("131.40")


def test_a_run_that_catches_up_bills_each_child_charge_once(fam: Family) -> None:
    parent = fam.subscribe("acme")
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    fam.clock.set(at(2026, 3, 5))  # two periods ended
    report = fam.billing.run_due()
    assert report.invoice_count == 2
    _, january, february = fam.invoices(parent)
    # Created with its parent: the first month's fee is billed in arrears on January's invoice.
    assert [line[:4] for line in lines(january) if line[4] == team.id] == [
        ("Team fee", "1", "31.00", "02-01"),
        ("Team calls", "0", "0.00", "01-01"),
        ("Team fee", "1", "31.00", "01-01"),
    ]
    assert [line[:4] for line in lines(february) if line[4] == team.id] == [
        ("Team fee", "1", "31.00", "03-01"),
        ("Team calls", "0", "0.00", "02-01"),
    ]
    assert (january.total, february.total) == (D("162.00"), D("131.00"))
    assert fam.get(team).current_period_end == at(2026, 4, 1)


def test_a_grouped_line_priced_by_a_subscription_owned_price_is_billed_at_it(fam: Family) -> None:
    parent = fam.subscribe("acme")
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    fee_line = next(line for line in team.line_items if line.display_name == "Team fee")
    override = OverrideLineItem.model_validate(
        {"price_id": fee_line.price_id, "amount": "45", "quantity": "2"}
    )

    def apply(uow, ctx):  # type: ignore[no-untyped-def]
        stored = uow.subscriptions.find(team.id)
        changed = override_lines(uow, ctx, stored.line_items, [override])  # same line ids
        uow.subscriptions.update(
            stored.model_copy(update={"line_items": tuple(changed), **ctx.touch()}),
            expected_version=stored.version,
        )

    fam.s.run(apply)
    fam.clock.set(at(2026, 2, 1))
    fam.billing.run_due()
    january = fam.invoices(parent)[1]
    team_lines = [line for line in january.line_items if line.subscription_id == team.id]
    # 2 x 45.00 for February in advance, and for January in arrears: 90.00 each.
    assert [
        (line.display_name, line.quantity, line.amount) for line in team_lines if line.price_type == "FIXED"
    ] == [
        ("Team fee", D(2), D("90.00")),
        ("Team fee", D(2), D("90.00")),
    ]
    owned = {line.price_id for line in team_lines if line.price_type == "FIXED"}
    assert owned != {fee_line.price_id} and len(owned) == 1
    assert january.total == D("280.00")  # 100.00 + 0.00 + 90.00 + 0.00 + 90.00


def test_a_parent_that_ends_ends_its_children(fam: Family) -> None:
    fam.customer("eu")
    parent = fam.subscribe(
        "acme",
        end_date=at(2026, 2, 1),
        inheritance={"external_customer_ids_to_inherit_subscription": ["eu"]},
    )
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    fam.clock.set(at(2026, 2, 1))
    report = fam.billing.run_due()
    assert report.invoice_count == 1
    final = fam.invoices(parent)[1]
    # No next period: only the arrears and the team's first month.
    assert [line[:4] for line in lines(final)] == [
        ("Group calls", "0", "0.00", "01-01"),
        ("Team calls", "0", "0.00", "01-01"),
        ("Team fee", "1", "31.00", "01-01"),
    ]
    for child in fam.children(parent):
        assert (child.subscription_status, child.cancelled_at, child.end_date) == (
            SubscriptionStatus.CANCELLED,
            at(2026, 2, 1),
            at(2026, 2, 1),
        )
    cancelled = fam.s.notifications.list(event_type="subscription.cancelled", limit=10).items
    children = {child.id for child in fam.children(parent)}
    assert team.id in children and len(children) == 2
    assert {event.entity_id for event in cancelled} == {parent.id, *children}


def test_a_trialing_parent_bills_its_childs_first_period_at_the_trial_end(fam: Family) -> None:
    parent = fam.subscribe("acme", trial_period_days=14)
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    assert (team.subscription_status, team.trial_end) == (SubscriptionStatus.TRIALING, at(2026, 1, 15))
    fam.calls("team", 4, at(2026, 1, 5))  # during the trial: free, like the parent's
    fam.clock.set(at(2026, 1, 15))
    fam.billing.run_due()
    (trial_end,) = [
        i for i in fam.invoices(parent) if i.billing_reason is BillingReason.SUBSCRIPTION_TRIAL_END
    ]
    assert [line[:4] for line in lines(trial_end)] == [
        ("Group fee", "1", "100.00", "01-15"),
        ("Team fee", "1", "31.00", "01-15"),
    ]
    moved = fam.get(team)
    assert (moved.subscription_status, moved.current_period_start, moved.current_period_end) == (
        SubscriptionStatus.ACTIVE,
        at(2026, 1, 15),
        at(2026, 2, 15),
    )
    fam.clock.set(at(2026, 2, 15))
    fam.billing.run_due()
    cycle = fam.invoices(parent)[-1]
    assert [line[:4] for line in lines(cycle) if line[4] == team.id] == [
        ("Team fee", "1", "31.00", "02-15"),
        ("Team calls", "0", "0.00", "01-15"),
    ]


def test_previews_show_the_group_and_refuse_children(fam: Family) -> None:
    fam.customer("eu")
    parent = fam.subscribe("acme", inheritance={"external_customer_ids_to_inherit_subscription": ["eu"]})
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    fam.calls("eu", 10, at(2026, 1, 3))
    preview = fam.s.subscriptions.preview_invoice(parent.id)
    assert [line[:3] for line in lines(preview)] == [
        ("Group fee", "1", "100.00"),
        ("Group calls", "10", "1.00"),
        ("Team fee", "1", "31.00"),
        ("Team calls", "0", "0.00"),
        ("Team fee", "1", "31.00"),
    ]
    for child in fam.children(parent):
        with pytest.raises(InvalidOperation):
            fam.s.subscriptions.preview_invoice(child.id)
    assert team.id in {c.id for c in fam.children(parent)}


def test_search_by_parent(fam: Family) -> None:
    fam.customer("eu")
    parent = fam.subscribe("acme", inheritance={"external_customer_ids_to_inherit_subscription": ["eu"]})
    other = fam.subscribe("other")
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": other.id})
    found = fam.s.subscriptions.list(parent_subscription_ids=[parent.id, other.id]).items
    assert {s.subscription_type for s in found} == {
        SubscriptionType.INHERITED,
        SubscriptionType.GROUPED_INVOICING,
    }
    assert team.id in {s.id for s in found} and len(found) == 2
    only = fam.s.subscriptions.list(subscription_type=["parent"]).items
    assert {s.id for s in only} == {parent.id, other.id}


# -- grouped children created or converted with the parent ----------------------------------------


def test_children_created_and_converted_with_a_new_parent(fam: Family) -> None:
    fam.clock.set(at(2026, 1, 10))
    old = fam.subscribe("old", fam.child_plan)  # [10 Jan, 10 Feb), fee billed at its opening
    fam.calls("old", 5, at(2026, 1, 12))
    fam.clock.set(at(2026, 1, 20))
    fam.customer("fresh")
    parent = fam.subscribe(
        "acme",
        inheritance={
            "subscriptions_ids_for_grouped_invoicing": [old.id],
            "grouped_invoicing_children_to_create": [
                {"plan_id": fam.child_plan, "external_customer_id": "fresh"}
            ],
        },
    )
    assert parent.subscription_type is SubscriptionType.PARENT
    children = {c.customer_id: c for c in fam.children(parent)}
    fresh, converted = children[fam.customers["fresh"].id], children[fam.customers["old"].id]
    assert fresh.subscription_type is converted.subscription_type is SubscriptionType.GROUPED_INVOICING
    assert (fresh.start_date, fresh.current_period_start, fresh.current_period_end) == (
        at(2026, 1, 20),
        at(2026, 1, 20),
        at(2026, 2, 20),
    )
    # Joining, the old subscription's usage so far was invoiced on its own: 5 x 0.20 = 1.00.
    _, close_out = fam.invoices(old)
    assert close_out.billing_reason is BillingReason.SUBSCRIPTION_UPDATE
    assert [line[:4] for line in lines(close_out)] == [("Team calls", "5", "1.00", "01-10")]
    assert (converted.current_period_start, converted.current_period_end, converted.next_run_at) == (
        at(2026, 1, 20),
        at(2026, 2, 10),
        None,
    )
    fam.calls("old", 3, at(2026, 1, 25))
    fam.clock.set(at(2026, 2, 20))
    report = fam.billing.run_due()
    assert report.invoice_count == 1  # the old subscription is billed with its parent now
    cycle = fam.invoices(parent)[1]
    # old: calls since 20 Jan 3 x 0.20; its fee paid to 10 Feb, so 10-20 Feb (10 of 31 days:
    # 10.00) in arrears, and the next month. fresh: its first month in arrears and the next.
    assert [line[:4] for line in lines(cycle) if line[4] == converted.id] == [
        ("Team fee", "1", "31.00", "02-20"),
        ("Team calls", "3", "0.60", "01-20"),
        ("Team fee", "1", "10.00", "02-10"),
    ]
    assert [line[:4] for line in lines(cycle) if line[4] == fresh.id] == [
        ("Team fee", "1", "31.00", "02-20"),
        ("Team calls", "0", "0.00", "01-20"),
        ("Team fee", "1", "31.00", "01-20"),
    ]


def test_a_child_to_create_that_is_refused_names_its_place(fam: Family) -> None:
    fam.customer("fresh")
    before = fam.count()
    with pytest.raises(ValidationError) as caught:
        fam.subscribe(
            "acme",
            inheritance={
                "grouped_invoicing_children_to_create": [
                    {"plan_id": fam.child_plan, "external_customer_id": "fresh"},
                    {"plan_id": fam.child_plan, "external_customer_id": "fresh", "trial_period_days": 3},
                ]
            },
        )
    assert caught.value.field == "inheritance.grouped_invoicing_children_to_create[1].trial_period_days"
    with pytest.raises(ValidationError) as unknown:
        fam.subscribe(
            "acme",
            inheritance={
                "grouped_invoicing_children_to_create": [
                    {"plan_id": "plan_nope", "external_customer_id": "fresh"}
                ]
            },
        )
    assert unknown.value.field == "inheritance.grouped_invoicing_children_to_create[0].plan_id"
    assert fam.count() == before


def test_converting_refuses_what_cannot_join(fam: Family) -> None:
    parent = fam.subscribe("acme")
    fam.clock.set(at(2026, 1, 10))
    late = fam.subscribe("late", fam.child_plan)  # [10 Jan, 10 Feb): joins fine
    weekly_plan = fam.s.plans.create(
        name="Weekly", prices=[{**prices("5", "m", name="W")[0], "billing_period": "WEEKLY"}]
    ).id
    weekly = fam.subscribe("weekly", weekly_plan, billing_period="WEEKLY")
    draft = fam.subscribe("draft", fam.child_plan, subscription_status="draft")
    fam.s.coupons.create(
        name="Ten", coupon_code="TEN", type="percentage", percentage_off="10", cadence="forever"
    )
    coupons = fam.subscribe("coupons", fam.child_plan, subscription_coupons=[{"coupon_code": "TEN"}])
    field = "grouped_invoicing_params.child_subscription_ids"
    for sub, index in ((weekly, 1), (draft, 1), (coupons, 1), (parent, 1)):
        with pytest.raises(ValidationError) as caught:
            fam.s.subscriptions.modify(
                parent.id,
                type="grouped_invoicing",
                grouped_invoicing_params={
                    "action": "add",
                    "parent_subscription_id": parent.id,
                    "child_subscription_ids": [late.id, sub.id],
                },
            )
        assert caught.value.field == f"{field}[{index}]", caught.value.message
    assert fam.get(late).subscription_type is SubscriptionType.STANDALONE  # nothing written
    assert fam.invoices(late)[-1].billing_reason is BillingReason.SUBSCRIPTION_CREATE


def test_modify_adds_and_removes_inherited_children(fam: Family) -> None:
    parent = fam.subscribe("acme")
    fam.customer("eu")
    fam.clock.set(at(2026, 1, 10))
    added = fam.s.subscriptions.modify(
        parent.id,
        type="inheritance",
        inheritance_params={"action": "add", "external_customer_ids_to_inherit_subscription": ["eu"]},
    )
    assert added.subscription.subscription_type is SubscriptionType.PARENT
    assert added.changed is not None
    ((child, action),) = added.changed.subscriptions
    assert (action, child.subscription_type, child.start_date, child.current_period_start) == (
        "created",
        SubscriptionType.INHERITED,
        at(2026, 1, 10),
        at(2026, 1, 10),
    )
    with pytest.raises(ValidationError) as twice:
        fam.s.subscriptions.modify(
            parent.id,
            type="inheritance",
            inheritance_params={"action": "add", "external_customer_ids_to_inherit_subscription": ["eu"]},
        )
    assert twice.value.field == "inheritance_params.external_customer_ids_to_inherit_subscription[0]"
    fam.calls("eu", 10, at(2026, 1, 3))  # the whole period counts, even before the child started
    fam.clock.set(at(2026, 1, 20))
    removed = fam.s.subscriptions.modify(
        parent.id,
        type="inheritance",
        inheritance_params={"action": "remove", "external_customer_ids_to_remove": ["eu"]},
    )
    assert removed.changed is not None
    ((gone, action),) = removed.changed.subscriptions
    assert (action, gone.subscription_status, gone.end_date) == (
        "updated",
        SubscriptionStatus.CANCELLED,
        at(2026, 1, 20),
    )
    fam.calls("eu", 5, at(2026, 1, 25))  # the period it left in still counts whole
    fam.clock.set(at(2026, 2, 1))
    fam.billing.run_due()
    assert [line[:3] for line in lines(fam.invoices(parent)[1])][1] == ("Group calls", "15", "1.50")
    fam.calls("eu", 5, at(2026, 2, 5))  # the next period does not
    fam.clock.set(at(2026, 3, 1))
    fam.billing.run_due()
    assert [line[:3] for line in lines(fam.invoices(parent)[2])][1] == ("Group calls", "0", "0.00")
    with pytest.raises(ValidationError) as not_a_child:
        fam.s.subscriptions.modify(
            parent.id,
            type="inheritance",
            inheritance_params={"action": "remove", "external_customer_ids_to_remove": ["eu"]},
        )
    assert not_a_child.value.field == "inheritance_params.external_customer_ids_to_remove[0]"
    with pytest.raises(InvalidOperation):
        fam.s.subscriptions.modify(
            gone.id,
            type="inheritance",
            inheritance_params={"action": "add", "external_customer_ids_to_inherit_subscription": ["acme"]},
        )


def test_modify_moves_subscriptions_into_and_out_of_a_group(fam: Family) -> None:
    parent = fam.subscribe("acme")
    fam.clock.set(at(2026, 1, 5))
    solo = fam.subscribe("solo", fam.child_plan)  # [5 Jan, 5 Feb), fee billed at its opening
    fam.calls("solo", 10, at(2026, 1, 6))
    fam.clock.set(at(2026, 1, 8))
    joined = fam.s.subscriptions.modify(
        solo.id,
        type="grouped_invoicing",
        grouped_invoicing_params={"action": "add", "parent_subscription_id": parent.id},
    )
    assert (joined.subscription.subscription_type, joined.subscription.parent_subscription_id) == (
        SubscriptionType.GROUPED_INVOICING,
        parent.id,
    )
    assert joined.changed is not None
    (close_out,) = joined.changed.invoices
    assert (close_out.billing_reason, close_out.total) == (BillingReason.SUBSCRIPTION_UPDATE, D("2.00"))
    assert [action for _, action in joined.changed.subscriptions] == ["updated", "updated"]
    assert fam.get(parent).subscription_type is SubscriptionType.PARENT

    fam.clock.set(at(2026, 1, 16))
    fresh = fam.subscribe("fresh", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    fam.clock.set(at(2026, 1, 20))
    # Out again: the fresh child owes its first fee (16 Jan - 1 Feb: 16.00), invoiced now; solo's
    # fee is paid to 5 Feb and its usage to 8 Jan, so it bills itself again from 5 Feb on.
    left = fam.s.subscriptions.modify(
        parent.id,
        type="grouped_invoicing",
        grouped_invoicing_params={"action": "remove", "child_subscription_ids": [fresh.id, solo.id]},
    )
    assert left.subscription.id == parent.id and left.changed is not None
    (first_fee,) = left.changed.invoices
    assert (first_fee.subscription_id, first_fee.billing_reason, first_fee.total) == (
        fresh.id,
        BillingReason.SUBSCRIPTION_UPDATE,
        D("16.00"),
    )
    periods = {}
    for sub in (fresh, solo):
        alone = fam.get(sub)
        assert (alone.subscription_type, alone.parent_subscription_id) == (SubscriptionType.STANDALONE, None)
        assert alone.next_run_at is not None and alone.next_run_at <= alone.current_period_end
        periods[sub.id] = (alone.current_period_start, alone.current_period_end)
    assert periods == {fresh.id: (at(2026, 1, 16), at(2026, 2, 1)), solo.id: (at(2026, 1, 8), at(2026, 2, 5))}
    fam.calls("solo", 4, at(2026, 1, 25))
    fam.clock.set(at(2026, 2, 1))
    assert fam.billing.run_due().invoice_count == 2  # the parent and fresh, each its own
    assert [line[:4] for line in lines(fam.invoices(fresh)[-1])] == [
        ("Team fee", "1", "31.00", "02-01"),
        ("Team calls", "0", "0.00", "01-16"),
    ]
    assert [line.subscription_id for line in fam.invoices(parent)[-1].line_items] == [None, None]
    fam.clock.set(at(2026, 2, 5))
    assert fam.billing.run_due().invoice_count == 1
    assert [line[:4] for line in lines(fam.invoices(solo)[-1])] == [
        ("Team fee", "1", "31.00", "02-05"),
        ("Team calls", "4", "0.80", "01-08"),
    ]
    with pytest.raises(InvalidOperation):
        fam.s.subscriptions.modify(
            solo.id, type="grouped_invoicing", grouped_invoicing_params={"action": "remove"}
        )


def _inline(amount: str) -> dict[str, Any]:
    """A subscription's own monthly fee in advance (a line item's inline price)."""
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
    }


def test_a_grouped_childs_extra_line_bills_with_the_parent_and_is_not_prorated_alone(fam: Family) -> None:
    parent = fam.subscribe("acme")
    team = fam.subscribe(
        "team",
        fam.child_plan,
        inheritance={"parent_subscription_id": parent.id},
        line_items=[{"price": _inline("5"), "display_name": "Support"}],
    )
    fam.clock.set(at(2026, 1, 10))
    extra = {"price": _inline("8"), "display_name": "Seat"}
    with pytest.raises(InvalidOperation):
        fam.s.subscriptions.add_line_item(team.id, proration_behavior="create_prorations", **extra)
    added = fam.s.subscriptions.add_line_item(team.id, start_date=at(2026, 2, 1), **extra)
    assert added.invoice is None
    fam.clock.set(at(2026, 2, 1))
    fam.billing.run_due()
    january = fam.invoices(parent)[1]
    assert sorted(
        (line.display_name, str(line.amount), f"{line.period_start:%m-%d}")
        for line in january.line_items
        if line.subscription_id == team.id
    ) == [
        ("Seat", "8.00", "02-01"),  # from its start, February in advance
        ("Support", "5.00", "01-01"),  # created with the child: January in arrears
        ("Support", "5.00", "02-01"),
        ("Team calls", "0.00", "01-01"),
        ("Team fee", "31.00", "01-01"),
        ("Team fee", "31.00", "02-01"),
    ]
    assert fam.invoices(team) == []


def test_plan_price_sync_leaves_inherited_skeletons_without_lines(fam: Family) -> None:
    fam.customer("eu")
    parent = fam.subscribe("acme", inheritance={"external_customer_ids_to_inherit_subscription": ["eu"]})
    team = fam.subscribe("team", fam.parent_plan, inheritance={"parent_subscription_id": parent.id})
    fam.s.prices.create(entity_type="PLAN", entity_id=fam.parent_plan, **prices("7", "m", name="Extra")[0])
    result = fam.s.plans.sync_subscriptions(fam.parent_plan)
    assert result.subscriptions_updated == 2  # the parent and its grouped child
    assert len(fam.get(parent).line_items) == len(fam.get(team).line_items) == 3
    (eu,) = [c for c in fam.children(parent) if c.subscription_type is SubscriptionType.INHERITED]
    assert eu.line_items == ()


def test_a_parent_cancelled_at_once_ends_its_children_and_bills_their_used_part(fam: Family) -> None:
    fam.customer("eu")
    parent = fam.subscribe("acme", inheritance={"external_customer_ids_to_inherit_subscription": ["eu"]})
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    fam.calls("eu", 10, at(2026, 1, 3))
    fam.calls("team", 5, at(2026, 1, 4))
    fam.clock.set(at(2026, 1, 11))
    result = fam.s.subscriptions.cancel(
        parent.id, cancellation_type="immediate", cancel_immediately_invoice_policy="generate_invoice"
    )
    assert result.invoice is not None
    # The used part, 1 - 11 Jan: the group's calls (eu's 10 x 0.10 = 1.00), the team's calls
    # (5 x 0.20 = 1.00) and its first fee for the 10 days (31.00 x 10/31 = 10.00), in arrears.
    assert [line[:4] for line in lines(result.invoice)] == [
        ("Group calls", "10", "1.00", "01-01"),
        ("Team calls", "5", "1.00", "01-01"),
        ("Team fee", "1", "10.00", "01-01"),
    ]
    for child in fam.children(parent):
        assert (child.subscription_status, child.cancelled_at) == (
            SubscriptionStatus.CANCELLED,
            at(2026, 1, 11),
        )
    assert [line.end_date for line in fam.get(team).line_items] == [at(2026, 1, 11)] * 2
    fam.clock.set(at(2026, 2, 1))
    assert fam.billing.run_due().invoice_count == 0


def test_a_grouped_child_is_cancelled_at_once_with_nothing_of_its_own(fam: Family) -> None:
    parent = fam.subscribe("acme")
    team = fam.subscribe("team", fam.child_plan, inheritance={"parent_subscription_id": parent.id})
    for fields in (
        {"cancellation_type": "end_of_period"},
        {"cancellation_type": "immediate", "cancel_immediately_invoice_policy": "generate_invoice"},
        {"cancellation_type": "immediate", "proration_behavior": "create_prorations"},
    ):
        with pytest.raises(InvalidOperation):
            fam.s.subscriptions.cancel(team.id, **fields)
    assert fam.get(team).subscription_status is SubscriptionStatus.ACTIVE
    fam.clock.set(at(2026, 1, 11))
    result = fam.s.subscriptions.cancel(team.id, cancellation_type="immediate")
    assert (result.subscription.subscription_status, result.invoice) == (SubscriptionStatus.CANCELLED, None)
    assert fam.get(parent).subscription_status is SubscriptionStatus.ACTIVE
    fam.clock.set(at(2026, 2, 1))
    fam.billing.run_due()
    assert [line.subscription_id for line in fam.invoices(parent)[-1].line_items] == [None, None]
