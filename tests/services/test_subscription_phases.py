"""Subscription phases through the library, on every store: phases on create (lines, overrides,
extra lines, coupons), what is refused (each error names its field, nothing is written), and
phases added, moved and deleted later (only where nothing is invoiced yet).

The ``clock`` fixture starts at 2026-05-01 09:30 UTC; a monthly subscription created then is
invoiced (its ADVANCE charges) until 2026-06-01 09:30, its settled instant.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, NotFound, Scoped, TestClock, ValidationError
from billingkit.domain.catalog import PriceEntityType
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.errors import VersionConflict
from billingkit.services.subscription_lines import find_line_item

D = Decimal
START = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def month(m: int, year: int = 2026) -> datetime:
    """The subscription's boundary in month ``m``: the 1st at 09:30 UTC."""
    return datetime(year + (m - 1) // 12, (m - 1) % 12 + 1, 1, 9, 30, tzinfo=UTC)


def iso(value: datetime) -> str:
    return value.isoformat()


class World:
    def __init__(self, s: Scoped) -> None:
        self.s = s
        self.meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
        self.plan = s.plans.create(
            name="Pro",
            prices=[
                {
                    "type": "FIXED",
                    "billing_model": "FLAT_FEE",
                    "amount": "30",
                    "currency": "usd",
                    "billing_period": "MONTHLY",
                    "invoice_cadence": "ADVANCE",
                    "display_name": "Base",
                }
            ],
        )
        self.base_price = s.plans.get(self.plan.id).prices[0].id
        self.customer = s.customers.create(external_id="c1", name="Ada")

    def subscribe(self, **fields: Any) -> Subscription:
        return self.s.subscriptions.create(
            customer_id=self.customer.id,
            plan_id=self.plan.id,
            currency="usd",
            billing_period="MONTHLY",
            **fields,
        )

    def lines(self, sub: Subscription) -> list[SubscriptionLineItem]:
        return list(self.s.subscriptions.get(sub.id).line_items)

    def events(self, event_type: str) -> list[Any]:
        return list(self.s.notifications.list(event_type=event_type, limit=100).items)


@pytest.fixture
def w(test_env: Scoped) -> World:
    return World(test_env)


def usage_price(w: World, amount: str = "0.5") -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": w.meter.id,
        "display_name": "Calls",
    }


def spans(
    lines: list[SubscriptionLineItem],
) -> list[tuple[str | None, str, datetime | None, datetime | None]]:
    return sorted(
        ((li.subscription_phase_id, li.entity_type, li.start_date, li.end_date) for li in lines),
        key=lambda row: (row[2] or START, row[0] or ""),
    )


# -- on create -----------------------------------------------------------------------------------


def test_phases_on_create_copy_the_plan_lines_and_add_their_own(w: World) -> None:
    sub = w.subscribe(
        phases=[
            {
                "start_date": iso(START),
                "end_date": iso(month(8)),
                "override_line_items": [{"price_id": w.base_price, "amount": "10"}],
                "line_items": [{"price": usage_price(w)}],
                "metadata": {"stage": "launch"},
            },
            {"start_date": iso(month(8))},
        ]
    )
    first, second = w.s.subscriptions.phases(sub.id)
    assert (first.start_date, first.end_date, first.metadata) == (START, month(8), {"stage": "launch"})
    assert (second.start_date, second.end_date) == (month(8), None)
    by_phase = {li.subscription_phase_id: li for li in sub.line_items if li.entity_type == "plan"}
    # the plan line: ended at its start, phases bill its time
    assert (by_phase[None].start_date, by_phase[None].end_date) == (START, START)
    assert by_phase[None].price_id == w.base_price
    launch = by_phase[first.id]
    assert (launch.start_date, launch.end_date) == (START, month(8))
    override = w.s.prices.get(launch.price_id)
    assert (override.entity_type, override.entity_id, override.parent_price_id, override.amount) == (
        PriceEntityType.SUBSCRIPTION,
        sub.id,
        w.base_price,
        D("10"),
    )
    assert (by_phase[second.id].price_id, by_phase[second.id].start_date) == (w.base_price, month(8))
    (extra,) = [li for li in sub.line_items if li.entity_type == "subscription"]
    assert (extra.subscription_phase_id, extra.entity_id, extra.start_date, extra.end_date) == (
        first.id,
        sub.id,
        START,
        month(8),
    )
    assert (extra.meter_id, extra.quantity, extra.display_name) == (w.meter.id, D(0), "Calls")
    inline = w.s.prices.get(extra.price_id)
    assert (inline.entity_type, inline.currency, inline.amount) == (
        PriceEntityType.SUBSCRIPTION,
        "usd",
        D("0.5"),
    )
    # the opening invoice bills the launch price: 10.00 for May
    (invoice,) = w.s.invoices.list(subscription_id=sub.id).items
    assert invoice.total == D("10.00")
    created = w.events("subscription.phase.created")
    assert [e.payload["phase"] for e in created] == [
        {
            "id": first.id,
            "subscription_id": sub.id,
            "start_date": "2026-05-01T09:30:00Z",
            "end_date": "2026-08-01T09:30:00Z",
        },
        {"id": second.id, "subscription_id": sub.id, "start_date": "2026-08-01T09:30:00Z", "end_date": None},
    ]
    # every new line is indexed: a line item is found by its id alone
    found = w.s.run(lambda uow, ctx: find_line_item(uow, extra.id))
    assert found[0].id == sub.id


def test_a_phase_later_in_the_subscription_leaves_the_plan_line_around_it(w: World) -> None:
    sub = w.subscribe(phases=[{"start_date": iso(month(7)), "end_date": iso(month(9)), "metadata": {}}])
    (phase,) = w.s.subscriptions.phases(sub.id)
    assert spans(sub.line_items) == [
        (None, "plan", START, month(7)),
        (phase.id, "plan", month(7), month(9)),
        (None, "plan", month(9), None),
    ]


def test_a_phase_override_reprices_the_subscriptions_own_override(w: World) -> None:
    """``override_line_items`` of the subscription and of a phase name the same plan price: the
    plan line bills the subscription's override, the phase's copy the phase's (made from it)."""
    sub = w.subscribe(
        override_line_items=[{"price_id": w.base_price, "amount": "25"}],
        phases=[
            {
                "start_date": iso(month(7)),
                "end_date": iso(month(9)),
                "override_line_items": [{"price_id": w.base_price, "amount": "5"}],
            }
        ],
    )
    (phase,) = w.s.subscriptions.phases(sub.id)
    plan_lines = [li for li in sub.line_items if li.subscription_phase_id is None]
    (copy,) = [li for li in sub.line_items if li.subscription_phase_id == phase.id]
    own = w.s.prices.get(plan_lines[0].price_id)
    assert {li.price_id for li in plan_lines} == {own.id}
    assert (own.amount, own.parent_price_id) == (D("25"), w.base_price)
    phase_price = w.s.prices.get(copy.price_id)
    assert (phase_price.amount, phase_price.parent_price_id) == (D("5"), own.id)
    (invoice,) = w.s.invoices.list(subscription_id=sub.id).items
    assert invoice.total == D("25.00")  # May, before the phase


def test_phase_coupons_carry_the_phase_and_end_with_it(w: World) -> None:
    w.s.coupons.create(
        name="Half", coupon_code="HALF", type="percentage", cadence="forever", percentage_off="50"
    )
    w.s.coupons.create(
        name="Two off", coupon_code="TWO", type="fixed", cadence="forever", amount_off="2", currency="usd"
    )
    sub = w.subscribe(
        phases=[
            {
                "start_date": iso(month(6)),
                "end_date": iso(month(8)),
                "subscription_coupons": [
                    {"coupon_code": "HALF"},
                    {"coupon_code": "TWO", "price_id": w.base_price, "start_date": iso(month(7))},
                ],
            }
        ]
    )
    (phase,) = w.s.subscriptions.phases(sub.id)
    copy = next(li for li in sub.line_items if li.subscription_phase_id == phase.id)
    views = w.s.coupons.associations(subscription_ids=[sub.id]).items
    got = sorted(
        (
            v.association.start_date,
            v.association.end_date,
            v.association.subscription_phase_id,
            v.association.subscription_line_item_id or "",
        )
        for v in views
    )
    assert got == [(month(6), month(8), phase.id, ""), (month(7), month(8), phase.id, copy.id)]


@pytest.mark.parametrize(
    ("phases", "field"),
    [
        (
            [
                {"start_date": "2026-05-01T09:30:00Z", "end_date": "2026-07-01T00:00:00Z"},
                {"start_date": "2026-06-15T00:00:00Z"},
            ],
            "phases[1].start_date",
        ),
        ([{"start_date": "2026-04-01T00:00:00Z"}], "phases[0].start_date"),
        ([{"start_date": "2026-06-01T00:00:00Z", "end_date": "2026-06-01T00:00:00Z"}], "phases[0].end_date"),
        (
            [
                {
                    "start_date": "2026-06-01T00:00:00Z",
                    "override_line_items": [{"price_id": "price_nope", "amount": "1"}],
                }
            ],
            "phases[0].override_line_items[0].price_id",
        ),
        ([{"start_date": "2026-06-01T00:00:00Z", "line_items": [{}]}], "phases[0].line_items[0].price_id"),
        (
            [
                {
                    "start_date": "2026-06-01T00:00:00Z",
                    "end_date": "2026-08-01T00:00:00Z",
                    "line_items": [
                        {
                            "price": {
                                "type": "FIXED",
                                "billing_model": "FLAT_FEE",
                                "amount": "1",
                                "billing_period": "MONTHLY",
                                "invoice_cadence": "ADVANCE",
                            },
                            "start_date": "2026-05-15T00:00:00Z",
                        }
                    ],
                }
            ],
            "phases[0].line_items[0].start_date",
        ),
        (
            [
                {
                    "start_date": "2026-06-01T00:00:00Z",
                    "line_items": [
                        {
                            "price": {
                                "type": "FIXED",
                                "billing_model": "FLAT_FEE",
                                "billing_period": "MONTHLY",
                                "invoice_cadence": "ADVANCE",
                            }
                        }
                    ],
                }
            ],
            "phases[0].line_items[0].price.amount",
        ),
        (
            [
                {
                    "start_date": "2026-06-01T00:00:00Z",
                    "line_items": [
                        {
                            "price": {
                                "type": "FIXED",
                                "billing_model": "FLAT_FEE",
                                "amount": "1",
                                "billing_period": "ANNUAL",
                                "invoice_cadence": "ADVANCE",
                            }
                        }
                    ],
                }
            ],
            "phases[0].line_items[0].price.billing_period",
        ),
        (
            [{"start_date": "2026-06-01T00:00:00Z", "subscription_coupons": [{"coupon_code": "NOPE"}]}],
            "phases[0].subscription_coupons[0].coupon_code",
        ),
        (
            [
                {
                    "start_date": "2026-06-01T00:00:00Z",
                    "end_date": "2026-07-01T00:00:00Z",
                    "subscription_coupons": [{"coupon_code": "NOPE", "start_date": "2026-07-01T00:00:00Z"}],
                }
            ],
            "phases[0].subscription_coupons[0].start_date",
        ),
    ],
)
def test_bad_phases_name_their_field_and_write_nothing(
    w: World, phases: list[dict[str, Any]], field: str
) -> None:
    prices_before = w.s.prices.list(limit=100).total
    with pytest.raises(ValidationError) as caught:
        w.subscribe(phases=phases)
    assert caught.value.field == field, caught.value.message
    assert w.s.subscriptions.list().total == 0
    assert w.s.prices.list(limit=100).total == prices_before
    assert w.events("subscription.phase.created") == []


def test_a_usage_line_takes_no_quantity_and_a_line_bills_like_the_subscription(w: World) -> None:
    with pytest.raises(ValidationError) as caught:
        w.subscribe(
            phases=[{"start_date": iso(month(6)), "line_items": [{"price": usage_price(w), "quantity": "3"}]}]
        )
    assert caught.value.field == "phases[0].line_items[0].quantity"
    weekly = w.s.plans.create(
        name="Weekly",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "1",
                "currency": "usd",
                "billing_period": "WEEKLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    weekly_price = w.s.plans.get(weekly.id).prices[0].id
    with pytest.raises(ValidationError) as caught:
        w.subscribe(phases=[{"start_date": iso(month(6)), "line_items": [{"price_id": weekly_price}]}])
    assert caught.value.field == "phases[0].line_items[0].price_id"
    assert "WEEKLY" in caught.value.message


def test_a_draft_takes_no_phases(w: World) -> None:
    with pytest.raises(ValidationError) as caught:
        w.subscribe(subscription_status="draft", phases=[{"start_date": iso(month(6))}])
    assert caught.value.field == "phases"
    draft = w.subscribe(subscription_status="draft")
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.add_phase(draft.id, start_date=iso(month(7)))


# -- later ---------------------------------------------------------------------------------------


def test_a_phase_added_later_starts_where_nothing_is_invoiced(w: World) -> None:
    sub = w.subscribe()
    with pytest.raises(ValidationError) as caught:  # May is invoiced until 1 June 09:30
        w.s.subscriptions.add_phase(sub.id, start_date=iso(datetime(2026, 5, 20, tzinfo=UTC)))
    assert caught.value.field == "start_date" and "invoiced" in caught.value.message
    phase = w.s.subscriptions.add_phase(
        sub.id,
        start_date=iso(month(6)),
        end_date=iso(month(8)),
        override_line_items=[{"price_id": w.base_price, "amount": "12", "quantity": "2"}],
    )
    stored = w.s.subscriptions.get(sub.id)
    assert stored.version == sub.version + 1
    assert spans(stored.line_items) == [
        (None, "plan", START, month(6)),
        (phase.id, "plan", month(6), month(8)),
        (None, "plan", month(8), None),
    ]
    copy = next(li for li in stored.line_items if li.subscription_phase_id == phase.id)
    assert copy.quantity == D(2) and w.s.prices.get(copy.price_id).amount == D("12")
    after = next(li for li in stored.line_items if li.start_date == month(8))
    assert w.s.run(lambda uow, ctx: find_line_item(uow, after.id))[1] == after
    assert [e.entity_id for e in w.events("subscription.phase.created")] == [phase.id]
    (updated,) = w.events("subscription.updated")
    assert updated.payload["subscription"]["id"] == sub.id
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.add_phase(sub.id, start_date=iso(month(7)))
    assert caught.value.field == "start_date" and "overlaps" in caught.value.message


def test_moving_a_phase_keeps_its_override_and_its_coupons_follow(w: World) -> None:
    w.s.coupons.create(
        name="Half", coupon_code="HALF", type="percentage", cadence="forever", percentage_off="50"
    )
    sub = w.subscribe()
    phase = w.s.subscriptions.add_phase(
        sub.id,
        start_date=iso(month(7)),
        end_date=iso(month(9)),
        override_line_items=[{"price_id": w.base_price, "amount": "5"}],
        subscription_coupons=[{"coupon_code": "HALF"}],
    )
    moved = w.s.subscriptions.update_phase(phase.id, start_date=iso(month(8)), end_date=iso(month(11)))
    assert (moved.start_date, moved.end_date, moved.version) == (month(8), month(11), phase.version + 1)
    lines = w.lines(sub)
    assert spans(lines) == [
        (None, "plan", START, month(8)),
        (phase.id, "plan", month(8), month(11)),
        (None, "plan", month(11), None),
    ]
    copy = next(li for li in lines if li.subscription_phase_id == phase.id)
    assert w.s.prices.get(copy.price_id).amount == D("5")
    (view,) = w.s.coupons.associations(subscription_ids=[sub.id]).items
    assert (view.association.start_date, view.association.end_date) == (month(8), month(11))
    assert [e.entity_id for e in w.events("subscription.phase.updated")] == [phase.id]
    # metadata alone changes no line: no subscription.updated for it
    before = len(w.events("subscription.updated"))
    w.s.subscriptions.update_phase(phase.id, metadata={"note": "x"})
    assert len(w.events("subscription.updated")) == before
    assert w.s.subscriptions.get_phase(phase.id).metadata == {"note": "x"}


def test_a_started_phase_keeps_its_start_and_may_only_end_where_nothing_is_invoiced(
    billing: Billing, clock: TestClock, w: World
) -> None:
    sub = w.subscribe(phases=[{"start_date": iso(START), "end_date": iso(month(10))}])
    (phase,) = w.s.subscriptions.phases(sub.id)
    # the plan line, unbilled, starts where the phase ends
    assert spans(sub.line_items) == [(phase.id, "plan", START, month(10)), (None, "plan", month(10), None)]
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.update_phase(phase.id, start_date=iso(month(6)))
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.delete_phase(phase.id)
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.update_phase(phase.id, end_date=iso(datetime(2026, 5, 20, tzinfo=UTC)))
    assert caught.value.field == "end_date"
    ended = w.s.subscriptions.update_phase(phase.id, end_date=iso(month(6)))
    assert ended.end_date == month(6)
    assert spans(w.lines(sub)) == [(phase.id, "plan", START, month(6)), (None, "plan", month(6), None)]
    clock.set(month(7))
    billing.run_due()
    with pytest.raises(InvalidOperation):  # ended before what is now invoiced
        w.s.subscriptions.update_phase(phase.id, end_date=iso(month(12)))


def test_deleting_a_future_phase_gives_its_time_back_and_archives_its_coupons(w: World) -> None:
    w.s.coupons.create(
        name="Half", coupon_code="HALF", type="percentage", cadence="forever", percentage_off="50"
    )
    sub = w.subscribe(
        phases=[
            {"start_date": iso(START), "end_date": iso(month(7))},
            {
                "start_date": iso(month(7)),
                "subscription_coupons": [{"coupon_code": "HALF"}],
                "line_items": [{"price": usage_price(w)}],
            },
        ]
    )
    first, second = w.s.subscriptions.phases(sub.id)
    gone = w.s.subscriptions.delete_phase(second.id)
    assert gone.status is Status.ARCHIVED
    assert [p.id for p in w.s.subscriptions.phases(sub.id)] == [first.id]
    with pytest.raises(NotFound):
        w.s.subscriptions.get_phase(second.id)
    # the plan line (ended at its start) takes the time back from 1 July on; the phase's lines go
    assert spans(w.lines(sub)) == [(first.id, "plan", START, month(7)), (None, "plan", month(7), None)]
    assert w.s.coupons.associations(subscription_ids=[sub.id]).items == []
    (deleted,) = w.events("subscription.phase.deleted")
    assert deleted.payload["phase"]["id"] == second.id
    with pytest.raises(NotFound):
        w.s.subscriptions.delete_phase(second.id)


def test_v2_expands_the_live_phases_in_order(w: World) -> None:
    sub = w.subscribe(
        phases=[{"start_date": iso(month(6)), "end_date": iso(month(7))}, {"start_date": iso(month(9))}]
    )
    view = w.s.subscriptions.get_v2(sub.id, expand="phases").to_dict()
    assert [(p["start_date"], p["end_date"]) for p in view["phases"]] == [
        ("2026-06-01T09:30:00Z", "2026-07-01T09:30:00Z"),
        ("2026-09-01T09:30:00Z", None),
    ]
    assert "phases" not in w.s.subscriptions.get_v2(sub.id).to_dict()
    with pytest.raises(NotFound):
        w.s.subscriptions.phases("subs_missing")


def test_a_stale_subscription_version_writes_no_phase(w: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The subscription is saved against the version the operation read: when another change
    saved it in between (here: a stale read is forced), the whole operation fails."""
    from billingkit.services import subscription_phases

    stale = w.subscribe()
    first = w.s.subscriptions.add_phase(stale.id, start_date=iso(month(7)), end_date=iso(month(8)))
    monkeypatch.setattr(subscription_phases, "_changeable", lambda uow, sub_id: stale)
    with pytest.raises(VersionConflict):
        w.s.subscriptions.add_phase(stale.id, start_date=iso(month(9)))
    assert [p.id for p in w.s.subscriptions.phases(stale.id)] == [first.id]
    assert len(w.events("subscription.phase.created")) == 1
