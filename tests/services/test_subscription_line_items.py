"""A subscription's line items beyond the plan's, through the library, on every store: extra and
overridden lines and entitlement overrides on create; adding, changing, ending and searching
lines afterwards; what each refuses (naming the field, writing nothing).

The ``clock`` fixture starts at 2026-05-01 09:30 UTC; subscriptions here start 1 May 00:00, so
the first period is [1 May, 1 Jun): 31 days.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property
from typing import Any

import pytest

from billingkit import (
    Billing,
    InvalidOperation,
    NotFound,
    Scoped,
    TestClock,
    ValidationError,
    VersionConflict,
)
from billingkit.domain.catalog import EntitlementEntityType, PriceEntityType
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.subscriptions import Subscription
from billingkit.services.subscription_line_items import _save
from tests.services.conftest import stored

D = Decimal
MAY1 = datetime(2026, 5, 1, tzinfo=UTC)


def at(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


def fee(amount: str, period: str = "MONTHLY", **extra: Any) -> dict[str, Any]:
    """An inline FIXED ADVANCE price (a subscription's own)."""
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "billing_period": period,
        "invoice_cadence": "ADVANCE",
        **extra,
    }


class Shop:
    """A plan with a 30.00 monthly fee (ADVANCE) and 0.10 a call (ARREAR) with 100 calls free
    (soft limit), an add-on price of 12.00 and a customer."""

    def __init__(self, s: Scoped) -> None:
        self.s = s
        self.meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
        self.feature = s.features.create(name="API", type="metered", meter_id=self.meter.id, lookup_key="api")
        self.plan = s.plans.create(
            name="Pro",
            prices=[
                {**fee("30"), "currency": "usd", "display_name": "Base"},
                {
                    "type": "USAGE",
                    "billing_model": "FLAT_FEE",
                    "amount": "0.10",
                    "currency": "usd",
                    "billing_period": "MONTHLY",
                    "invoice_cadence": "ARREAR",
                    "meter_id": self.meter.id,
                },
            ],
            entitlements=[{"feature_id": self.feature.id, "usage_limit": 100, "is_soft_limit": True}],
        )
        detail = s.plans.get(self.plan.id)
        self.base = next(p for p in detail.prices if p.type.value == "FIXED")
        self.calls = next(p for p in detail.prices if p.type.value == "USAGE")
        self.entitlement = detail.entitlements[0]
        self.customer = s.customers.create(external_id="ada", name="Ada")

    @cached_property
    def addon_price_id(self) -> str:
        addon = self.s.addons.create(name="Support", lookup_key="support")
        price = self.s.prices.create(
            entity_type="ADDON", entity_id=addon.id, currency="usd", display_name="Support", **fee("12")
        )
        return price.id

    def subscribe(self, **fields: Any) -> Subscription:
        request = {
            "customer_id": self.customer.id,
            "plan_id": self.plan.id,
            "currency": "usd",
            "billing_period": "MONTHLY",
            "start_date": MAY1,
            **fields,
        }
        return self.s.subscriptions.create(**request)

    def invoices(self, sub: Subscription) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def counts(self) -> tuple[int, int, int, int]:
        """Subscriptions, prices, entitlements and invoices stored: to show nothing was written."""
        return (
            self.s.subscriptions.list(limit=1).total,
            self.s.prices.list(limit=1, allow_expired_prices=True).total,
            self.s.entitlements.list(limit=1).total,
            self.s.invoices.list(limit=1).total,
        )


@pytest.fixture
def shop(test_env: Scoped) -> Shop:
    return Shop(test_env)


# -- on create ---------------------------------------------------------------------------------------


def test_extra_and_overridden_lines_on_create_bill_on_the_opening_invoice(shop: Shop) -> None:
    sub = shop.subscribe(
        override_line_items=[{"price_id": shop.base.id, "amount": "24"}],
        line_items=[
            {"price_id": shop.addon_price_id, "quantity": "2"},
            {"price": fee("50", "ONETIME", display_name="Setup")},
            {"price": fee("5", display_name="Backup"), "start_date": at(5, 16), "metadata": {"k": "v"}},
        ],
    )
    base, calls, support, setup, backup = sub.line_items
    assert (base.entity_type, calls.price_id) == ("plan", shop.calls.id)
    assert [(li.entity_type, li.entity_id) for li in (support, setup, backup)] == [
        ("subscription", sub.id)
    ] * 3
    assert (support.price_id, support.quantity, support.display_name) == (
        shop.addon_price_id,
        D(2),
        "Support",
    )
    assert (setup.billing_period.value, setup.start_date, backup.start_date) == ("ONETIME", MAY1, at(5, 16))
    assert backup.metadata == {"k": "v"}
    owned = shop.s.prices.get(base.price_id)
    assert (owned.entity_type, owned.entity_id, owned.parent_price_id, owned.amount) == (
        PriceEntityType.SUBSCRIPTION,
        sub.id,
        shop.base.id,
        D(24),
    )
    inline = shop.s.prices.get(setup.price_id)
    assert (inline.entity_type, inline.entity_id, inline.currency, inline.billing_cadence.value) == (
        PriceEntityType.SUBSCRIPTION,
        sub.id,
        "usd",
        "ONETIME",
    )
    (opening,) = shop.invoices(sub)
    # 24.00 (overridden base) + 2 x 12.00 + 50.00 once + 5.00 x 16/31 days (16 May..1 Jun) = 2.58
    assert [(ln.display_name, ln.amount) for ln in opening.line_items] == [
        ("Base", D("24.00")),
        ("Support", D("24.00")),
        ("Setup", D("50.00")),
        ("Backup", D("2.58")),
    ]
    assert opening.amount_due == D("100.58")
    assert opening.line_items[1].entity_type == "subscription"
    # Every line is found by its id alone.
    assert shop.s.subscriptions.line_items(subscription_line_item_ids=[setup.id]).items[0].line_item == setup


def test_entitlement_overrides_are_the_subscription_s_own_entitlements(shop: Shop) -> None:
    sub = shop.subscribe(override_entitlements=[{"entitlement_id": shop.entitlement.id, "usage_limit": 500}])
    (override,) = shop.s.entitlements.list(entity_type="SUBSCRIPTION").items
    assert (override.entity_type, override.entity_id, override.parent_entitlement_id) == (
        EntitlementEntityType.SUBSCRIPTION,
        sub.id,
        shop.entitlement.id,
    )
    # The rest is the plan's: the feature, the soft limit, the reset.
    assert (override.feature_id, override.usage_limit, override.is_soft_limit) == (shop.feature.id, 500, True)
    assert shop.s.entitlements.get(shop.entitlement.id).usage_limit == 100  # the catalogue is untouched


def test_an_entitlement_override_changes_the_usage_charge(shop: Shop, clock: TestClock) -> None:
    plain = shop.subscribe()
    raised = shop.subscribe(
        override_entitlements=[{"entitlement_id": shop.entitlement.id, "usage_limit": 500}]
    )
    unlimited = shop.subscribe(
        override_entitlements=[{"entitlement_id": shop.entitlement.id, "usage_limit": None}]
    )
    shop.s.events.ingest_bulk(
        [
            {"event_id": f"e{i}", "event_name": "api", "external_customer_id": "ada", "timestamp": at(5, 2)}
            for i in range(800)
        ]
    )
    clock.set(at(6, 1, 1))
    shop.s.billing.run_due()
    charged = [
        next(
            ln.amount
            for ln in shop.invoices(sub)[-1].line_items
            if ln.price_type and ln.price_type.value == "USAGE"
        )
        for sub in (plain, raised, unlimited)
    ]
    # 800 calls: (800 - 100) x 0.10 = 70.00; (800 - 500) x 0.10 = 30.00; unlimited: 0.00
    assert charged == [D("70.00"), D("30.00"), D("0.00")]


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"line_items": [{"price_id": "price_x"}]}, "line_items[0].price_id"),
        ({"line_items": [{}]}, "line_items[0].price_id"),  # neither price_id nor price
        ({"line_items": [{"price_id": "PRICE", "price": fee("1")}]}, "line_items[0].price_id"),  # both
        ({"line_items": [{"price": fee("1", "QUARTERLY")}]}, "line_items[0].price.billing_period"),
        ({"line_items": [{"price": {**fee("1"), "amount": "-1"}}]}, "line_items[0].price.amount"),
        (
            {"line_items": [{"price": {**fee("1"), "billing_model": "TIERED"}}]},
            "line_items[0].price.tier_mode",
        ),
        ({"line_items": [{"price_id": "CALLS", "quantity": "3"}]}, "line_items[0].quantity"),
        ({"line_items": [{"price": fee("1"), "start_date": at(4, 30)}]}, "line_items[0].start_date"),
        (
            {"end_date": at(8, 1), "line_items": [{"price": fee("1"), "end_date": at(9, 1)}]},
            "line_items[0].end_date",
        ),
        (
            {"line_items": [{"price": fee("1"), "subscription_phase_id": "phase_x"}]},
            "line_items[0].subscription_phase_id",
        ),
        ({"line_items": [{"price": fee("1"), "commitment_amount": "10"}]}, "line_items[0].commitment_type"),
        (
            {"override_line_items": [{"price_id": "price_x", "amount": "1"}]},
            "override_line_items[0].price_id",
        ),
        ({"override_entitlements": [{"entitlement_id": "ent_x"}]}, "override_entitlements[0].entitlement_id"),
        (
            {
                "override_entitlements": [
                    {"entitlement_id": "ENT", "usage_limit": 5},
                    {"entitlement_id": "ENT"},
                ]
            },
            "override_entitlements[1].entitlement_id",
        ),
    ],
)
def test_bad_line_items_on_create_are_refused_and_write_nothing(
    shop: Shop, request_fields: dict[str, Any], field: str
) -> None:
    names = {"PRICE": shop.base.id, "CALLS": shop.calls.id, "ENT": shop.entitlement.id}

    def named(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: named(v) for k, v in value.items()}
        if isinstance(value, list):
            return [named(v) for v in value]
        return names.get(value, value) if isinstance(value, str) else value

    before = shop.counts()
    with pytest.raises(ValidationError) as caught:
        shop.subscribe(**named(request_fields))
    assert caught.value.field == field, caught.value.message
    assert shop.counts() == before


def test_a_price_of_another_currency_or_subscription_is_refused(shop: Shop) -> None:
    euro = shop.s.plans.create(name="Euro", prices=[{**fee("9"), "currency": "eur"}])
    euro_price = shop.s.plans.get(euro.id).prices[0]
    with pytest.raises(ValidationError, match="bills in usd") as caught:
        shop.subscribe(line_items=[{"price_id": euro_price.id}])
    assert caught.value.field == "line_items[0].price_id"
    other = shop.subscribe(line_items=[{"price": fee("3")}])
    with pytest.raises(ValidationError, match="not found"):
        shop.subscribe(line_items=[{"price_id": other.line_items[-1].price_id}])


# -- adding ------------------------------------------------------------------------------------------


def test_adding_a_line_starts_it_now_and_bills_it_from_the_next_period(shop: Shop, clock: TestClock) -> None:
    sub = shop.subscribe()
    clock.set(at(5, 11))
    change = shop.s.subscriptions.add_line_item(sub.id, price=fee("31", display_name="Seat"))
    assert (change.line_item.start_date, change.invoice, change.credited) == (at(5, 11), None, None)
    assert change.subscription.version == sub.version + 1
    assert [li.id for li in shop.s.subscriptions.get(sub.id).line_items][-1] == change.line_item.id
    updated = shop.s.notifications.list(event_type="subscription.updated", entity_id=sub.id).items
    assert len(updated) == 1
    clock.set(at(6, 1, 1))
    shop.s.billing.run_due()
    renewal = shop.invoices(sub)[-1]
    assert [(ln.display_name, ln.amount) for ln in renewal.line_items if ln.price_type.value == "FIXED"] == [
        ("Base", D("30.00")),
        ("Seat", D("31.00")),
    ]


def test_adding_with_prorations_charges_the_rest_of_the_period_at_once(shop: Shop, clock: TestClock) -> None:
    sub = shop.subscribe()
    clock.set(at(5, 11))
    change = shop.s.subscriptions.add_line_item(
        sub.id, price=fee("31", display_name="Seat"), quantity="2", proration_behavior="create_prorations"
    )
    invoice = change.invoice
    assert invoice is not None
    # 2 x 31.00 x 21 of 31 days (11 May..1 Jun) = 42.00
    assert (invoice.billing_reason, invoice.amount_due, invoice.period_start, invoice.period_end) == (
        BillingReason.SUBSCRIPTION_UPDATE,
        D("42.00"),
        at(5, 11),
        at(6, 1),
    )
    assert invoice.invoice_number is not None and change.subscription.billing_sequence == 2
    (line,) = invoice.line_items
    assert (line.subscription_line_item_id, line.quantity, line.entity_type) == (
        change.line_item.id,
        D(2),
        "subscription",
    )


def test_a_one_time_charge_dated_in_the_current_period_is_invoiced_at_once(
    shop: Shop, clock: TestClock
) -> None:
    sub = shop.subscribe()
    clock.set(at(5, 11))
    now = shop.s.subscriptions.add_line_item(sub.id, price=fee("50", "ONETIME", display_name="Setup"))
    assert now.invoice is not None and now.invoice.amount_due == D("50.00")  # in full, whatever the date
    later = shop.s.subscriptions.add_line_item(
        sub.id, price=fee("20", "ONETIME", display_name="Training"), start_date=at(6, 10)
    )
    assert later.invoice is None
    clock.set(at(6, 1, 1))
    shop.s.billing.run_due()
    clock.set(at(7, 1, 1))
    shop.s.billing.run_due()
    one_time = [
        (inv.billing_reason.value, ln.display_name, ln.amount)
        for inv in shop.invoices(sub)
        for ln in inv.line_items
        if ln.display_name in ("Setup", "Training")
    ]
    # Each once: Setup at once, Training on the invoice whose ADVANCE window holds 10 Jun.
    assert one_time == [
        ("SUBSCRIPTION_UPDATE", "Setup", D("50.00")),
        ("SUBSCRIPTION_CYCLE", "Training", D("20.00")),
    ]


def test_adding_to_a_draft_starts_with_it_and_moves_with_its_activation(shop: Shop, clock: TestClock) -> None:
    draft = shop.subscribe(subscription_status="draft", start_date=at(5, 5))
    change = shop.s.subscriptions.add_line_item(draft.id, price=fee("10", display_name="Extra"))
    assert change.line_item.start_date == at(5, 5) and change.invoice is None
    active = shop.s.subscriptions.activate(draft.id, start_date=at(5, 8))
    assert active.line_items[-1].start_date == at(5, 8)
    (opening,) = shop.invoices(active)
    assert [(ln.display_name, ln.amount) for ln in opening.line_items] == [
        ("Base", D("30.00")),
        ("Extra", D("10.00")),
    ]


def test_a_draft_line_that_ends_before_the_activation_start_is_never_charged(shop: Shop) -> None:
    draft = shop.subscribe(subscription_status="draft", start_date=at(5, 5))
    shop.s.subscriptions.add_line_item(draft.id, price=fee("10", display_name="Launch"), end_date=at(5, 7))
    active = shop.s.subscriptions.activate(draft.id, start_date=at(5, 8))
    launch = active.line_items[-1]
    assert (launch.start_date, launch.end_date) == (at(5, 7), at(5, 7))
    (opening,) = shop.invoices(active)
    assert [(ln.display_name, ln.amount) for ln in opening.line_items] == [("Base", D("30.00"))]


def test_adding_refusals(shop: Shop, clock: TestClock) -> None:
    sub = shop.subscribe()
    clock.set(at(6, 2))
    shop.s.billing.run_due()  # June is current now
    with pytest.raises(ValidationError, match="earlier periods are invoiced") as caught:
        shop.s.subscriptions.add_line_item(sub.id, price=fee("1"), start_date=at(5, 20))
    assert caught.value.field == "start_date"
    with pytest.raises(ValidationError) as caught:
        shop.s.subscriptions.add_line_item(sub.id, price_id=shop.calls.id, commitment_type="amount")
    assert caught.value.field == "commitment_amount"
    ended = shop.subscribe(end_date=at(6, 1))
    shop.s.billing.run_due()
    assert shop.s.subscriptions.get(ended.id).subscription_status.value == "cancelled"
    with pytest.raises(InvalidOperation, match="cancelled"):
        shop.s.subscriptions.add_line_item(ended.id, price=fee("1"))


def test_a_line_commitment_is_stored_on_an_added_usage_line(shop: Shop) -> None:
    sub = shop.subscribe()
    change = shop.s.subscriptions.add_line_item(
        sub.id,
        price_id=shop.calls.id,
        commitment_type="amount",
        commitment_amount=25.5,  # a JSON number, as the reference's SDK sends it
        commitment_overage_factor="1.5",
        commitment_true_up_enabled=True,
    )
    line = change.line_item
    assert (line.commitment_type, line.commitment_amount, line.commitment_overage_factor) == (
        "amount",
        D("25.5"),
        D("1.5"),
    )
    assert line.commitment_true_up_enabled is True


def test_a_phase_line_lives_in_its_phase(shop: Shop) -> None:
    sub = shop.subscribe()
    phase = stored(
        shop.s, "subscription_phases", subscription_id=sub.id, start_date=at(6, 1), end_date=at(8, 1)
    )
    change = shop.s.subscriptions.add_line_item(sub.id, price=fee("9"), subscription_phase_id=phase.id)
    line = change.line_item
    assert (line.subscription_phase_id, line.start_date, line.end_date) == (phase.id, at(6, 1), at(8, 1))
    other = stored(shop.s, "subscription_phases", subscription_id="subs_other", start_date=at(6, 1))
    with pytest.raises(ValidationError) as caught:
        shop.s.subscriptions.add_line_item(sub.id, price=fee("9"), subscription_phase_id=other.id)
    assert caught.value.field == "subscription_phase_id"


# -- changing ----------------------------------------------------------------------------------------


def test_a_price_change_ends_the_line_and_starts_a_replacement(shop: Shop, clock: TestClock) -> None:
    sub = shop.subscribe()
    base = sub.line_items[0]
    clock.set(at(5, 21))
    change = shop.s.subscriptions.update_line_item(base.id, amount="40", metadata={"why": "upgrade"})
    new = change.line_item
    assert new.id != base.id and (new.start_date, new.end_date, new.quantity) == (at(5, 21), None, D(1))
    assert new.metadata == {"why": "upgrade"}
    stored = {li.id: li for li in shop.s.subscriptions.get(sub.id).line_items}
    assert stored[base.id].end_date == at(5, 21) and stored[base.id].price_id == shop.base.id
    price = shop.s.prices.get(new.price_id)
    assert (price.entity_type, price.parent_price_id, price.amount) == (
        PriceEntityType.SUBSCRIPTION,
        shop.base.id,
        D(40),
    )
    assert change.invoice is None and change.credited is None  # proration_behavior none
    # The replacement is found by its id, the ended line no longer changes.
    assert shop.s.subscriptions.update_line_item(new.id, metadata={"a": "b"}).line_item.id == new.id
    with pytest.raises(InvalidOperation, match="ended at"):
        shop.s.subscriptions.update_line_item(base.id, amount="41")


def test_a_quantity_change_with_prorations_credits_the_old_and_charges_the_new(
    shop: Shop, clock: TestClock
) -> None:
    sub = shop.subscribe(line_items=[{"price": fee("31", display_name="Seat"), "quantity": "2"}])
    seat = sub.line_items[-1]
    clock.set(at(5, 21))
    change = shop.s.subscriptions.update_line_item(
        seat.id, quantity="5", proration_behavior="create_prorations"
    )
    # 11 of 31 days left (21 May..1 Jun): credit 2 x 31.00 x 11/31 = 22.00, charge 5 x 31.00 x
    # 11/31 = 55.00, netted on one invoice: 33.00 due, nothing through the wallet.
    assert change.credited is None
    invoice = change.invoice
    assert invoice is not None
    assert (invoice.subtotal, invoice.total_prepaid_credits_applied, invoice.amount_due) == (
        D("33.00"),
        D("0"),
        D("33.00"),
    )
    assert [(ln.subscription_line_item_id, ln.quantity, ln.amount) for ln in invoice.line_items] == [
        (change.line_item.id, D(5), D("55.00")),
        (seat.id, D(2), D("-22.00")),
    ]
    assert (
        invoice.idempotency_key
        == f"subscription_change|line_item_end|{seat.id}|{MAY1.isoformat()}|{at(6, 1).isoformat()}"
    )
    assert change.line_item.quantity == D(5) and change.line_item.price_id == seat.price_id
    assert shop.s.wallets.list_for_customer(shop.customer.id) == []


def test_metadata_and_commitment_changes_are_made_in_place(shop: Shop) -> None:
    sub = shop.subscribe()
    calls = sub.line_items[1]
    change = shop.s.subscriptions.update_line_item(
        calls.id, metadata={"team": "x"}, commitment_type="quantity", commitment_quantity="1000"
    )
    assert change.line_item.id == calls.id
    assert (change.line_item.metadata, change.line_item.commitment_quantity) == ({"team": "x"}, D(1000))
    again = shop.s.subscriptions.update_line_item(calls.id, commitment_overage_factor="2")
    assert (again.line_item.commitment_quantity, again.line_item.commitment_overage_factor) == (D(1000), D(2))
    with pytest.raises(ValidationError) as caught:
        shop.s.subscriptions.update_line_item(calls.id, quantity="4")
    assert caught.value.field == "quantity"


def test_a_draft_s_line_changes_in_place(shop: Shop) -> None:
    draft = shop.subscribe(subscription_status="draft")
    base = draft.line_items[0]
    change = shop.s.subscriptions.update_line_item(base.id, amount="20")
    assert change.line_item.id == base.id and change.line_item.price_id != base.price_id


def test_a_stale_subscription_is_a_version_conflict(shop: Shop) -> None:
    sub = shop.subscribe()

    def race(uow, ctx):  # type: ignore[no-untyped-def]
        stored = uow.subscriptions.find(sub.id)
        uow.subscriptions.update(stored, expected_version=stored.version)  # another writer saved it first
        return _save(uow, ctx, stored, stored)

    with pytest.raises(VersionConflict):
        shop.s.run(race)


# -- end dates (spec rule 7) ---------------------------------------------------------------------------


def test_a_terminated_line_s_end_moves_earlier_or_later_and_stays_terminated(
    shop: Shop, clock: TestClock
) -> None:
    sub = shop.subscribe(end_date=at(9, 1))
    base = sub.line_items[0]
    shop.s.subscriptions.delete_line_item(base.id, effective_from=at(7, 1))
    assert shop.s.subscriptions.update_line_item(base.id, end_date=at(6, 15)).line_item.end_date == at(6, 15)
    assert shop.s.subscriptions.update_line_item(base.id, end_date=at(8, 20)).line_item.end_date == at(8, 20)
    for end, text in ((None, "keeps its termination"), (at(9, 2), "subscription's end"), (MAY1, "after")):
        with pytest.raises(ValidationError, match=text) as caught:
            shop.s.subscriptions.update_line_item(base.id, end_date=end)
        assert caught.value.field == "end_date"
    with pytest.raises(ValidationError, match="goes alone"):
        shop.s.subscriptions.update_line_item(base.id, end_date=at(7, 1), amount="1")


def test_an_invoiced_one_time_charge_cannot_be_backdated_or_reinstated(shop: Shop, clock: TestClock) -> None:
    sub = shop.subscribe(line_items=[{"price": fee("50", "ONETIME")}])
    setup = sub.line_items[-1]
    with pytest.raises(ValidationError, match="backdating"):
        shop.s.subscriptions.update_line_item(setup.id, end_date=MAY1)
    with pytest.raises(ValidationError, match="backdating"):
        shop.s.subscriptions.delete_line_item(setup.id, effective_from=MAY1)
    assert shop.s.subscriptions.update_line_item(setup.id, end_date=at(5, 20)).line_item.end_date == at(5, 20)
    with pytest.raises(InvalidOperation, match="invoiced"):
        shop.s.subscriptions.update_line_item(setup.id, amount="10")
    later = shop.s.subscriptions.add_line_item(sub.id, price=fee("20", "ONETIME"), start_date=at(7, 1))
    cancelled = shop.s.subscriptions.delete_line_item(later.line_item.id)
    assert cancelled.line_item.end_date == at(7, 1)  # cancelled before its date: never charged


# -- deleting ----------------------------------------------------------------------------------------


def test_deleting_with_prorations_credits_unused_time_once(shop: Shop, clock: TestClock) -> None:
    sub = shop.subscribe()
    base = sub.line_items[0]
    clock.set(at(5, 21))
    change = shop.s.subscriptions.delete_line_item(base.id, proration_behavior="create_prorations")
    # 30.00 x 11/31 days (21 May..1 Jun) = 10.645... -> 10.65
    assert (change.line_item.end_date, change.credited) == (at(5, 21), D("10.65"))
    with pytest.raises(InvalidOperation, match="ended at"):
        shop.s.subscriptions.delete_line_item(base.id, proration_behavior="create_prorations")
    # Moving the end earlier does not credit again: one credit per line and period.
    shop.s.subscriptions.update_line_item(base.id, end_date=at(5, 11))
    wallet = shop.s.wallets.list_for_customer(shop.customer.id)[0]
    assert [row.credit_amount for row in shop.s.wallets.transactions(wallet.id).items] == [D("10.65")]


def test_a_credit_note_on_the_fee_lowers_the_unused_time_credit(shop: Shop, clock: TestClock) -> None:
    """The cap is what was paid for the line: billed less finalized credit notes (one rule for
    cancellation, add-on removal and line deletion: services.line_billing)."""
    sub = shop.subscribe()
    base = sub.line_items[0]
    (opening,) = shop.invoices(sub)
    fee_line = next(ln for ln in opening.line_items if ln.subscription_line_item_id == base.id)
    refund = shop.s.credit_notes.create(
        invoice_id=opening.id,
        reason="BILLING_ERROR",
        line_items=[{"invoice_line_item_id": fee_line.id, "amount": "25"}],
    )
    assert refund.credit_note_status.value == "FINALIZED"
    clock.set(at(5, 21))
    change = shop.s.subscriptions.delete_line_item(base.id, proration_behavior="create_prorations")
    # Unused time is worth 10.65 (30.00 x 11/31), but only 30.00 - 25.00 = 5.00 is left paid for.
    assert change.credited == D("5.00")


def test_deleting_refusals_and_drafts(shop: Shop, clock: TestClock) -> None:
    sub = shop.subscribe()
    clock.set(at(6, 2))
    shop.s.billing.run_due()
    with pytest.raises(ValidationError, match="earlier periods are invoiced") as caught:
        shop.s.subscriptions.delete_line_item(sub.line_items[0].id, effective_from=at(5, 20))
    assert caught.value.field == "effective_from"
    draft = shop.subscribe(subscription_status="draft")
    gone = shop.s.subscriptions.delete_line_item(draft.line_items[0].id)
    assert gone.line_item == draft.line_items[0]
    assert [li.id for li in shop.s.subscriptions.get(draft.id).line_items] == [draft.line_items[1].id]
    with pytest.raises(NotFound):
        shop.s.subscriptions.delete_line_item(draft.line_items[0].id)


# -- searching ---------------------------------------------------------------------------------------


def test_line_items_are_searched_across_subscriptions(shop: Shop, clock: TestClock, billing: Billing) -> None:
    first = shop.subscribe(line_items=[{"price_id": shop.addon_price_id}])
    bob = shop.s.customers.create(external_id="bob", name="Bob")
    second = shop.subscribe(customer_id=bob.id)
    clock.set(at(5, 20))
    shop.s.subscriptions.delete_line_item(second.line_items[1].id)
    lines = shop.s.subscriptions.line_items
    assert lines().total == 4  # 3 + 2, less the ended one
    assert lines(active_filter=False).total == 5
    assert [v.line_item.id for v in lines(subscription_ids=[first.id]).items] == [
        li.id for li in first.line_items
    ]
    assert {v.subscription.id for v in lines(customer_ids=[bob.id], active_filter=False).items} == {second.id}
    assert [v.line_item.price_id for v in lines(entity_type="subscription").items] == [shop.addon_price_id]
    assert lines(price_ids=[shop.calls.id], active_filter=False).total == 2
    assert lines(meter_ids=[shop.meter.id]).total == 1
    page = lines(limit=2, offset=1, order="asc", expand="prices,meters")
    assert (page.total, len(page.items), page.items[0].line_item.id) == (4, 2, first.line_items[1].id)
    data = page.items[0].to_dict()
    assert data["price"]["id"] == shop.calls.id and data["meter"]["id"] == shop.meter.id
    assert data["subscription_id"] == first.id and data["created_at"] == "2026-05-01T09:30:00Z"
    with pytest.raises(ValidationError) as caught:
        lines(expand="plans")
    assert caught.value.field == "expand"
    with pytest.raises(ValidationError) as caught:
        lines(current_period_start=at(5, 1))
    assert caught.value.field == "current_period_start"
