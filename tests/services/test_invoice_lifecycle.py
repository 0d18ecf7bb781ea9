"""The invoice lifecycle through the library, on every store: direct invoices (money, idempotency),
finalize, void, edits with ``apply_discount`` and versions, payments by hand, and the finalization
delay with the worker. Amounts are exact, with the arithmetic written next to them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, Settings, TestClock
from billingkit.domain.invoices import InvoiceStatus, PaymentStatus
from billingkit.errors import (
    IdempotencyConflict,
    InvalidOperation,
    NotFound,
    ValidationError,
    VersionConflict,
)
from tests.wallet_reads import ledger

D = Decimal
START = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def world(storage: Any) -> tuple[TestClock, Billing, Scoped]:
    clock = TestClock(START)
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    return clock, billing, billing.scope(setup.tenant.id, setup.environments[0][0].id)


@pytest.fixture
def env(world: tuple[TestClock, Billing, Scoped]) -> Scoped:
    return world[2]


@pytest.fixture
def customer_id(env: Scoped) -> str:
    return env.customers.create(external_id="c1", name="Ada").id


def lines(*amounts: str) -> list[dict[str, Any]]:
    return [
        {"amount": amount, "quantity": "1", "display_name": f"Item {i}", "price_id": f"price_{i}"}
        for i, amount in enumerate(amounts)
    ]


def direct(env: Scoped, customer_id: str, **fields: Any) -> Any:
    body: dict[str, Any] = {
        "customer_id": customer_id,
        "currency": "usd",
        "line_items": lines("100.00"),
        "subtotal": "100.00",
        "total": "100.00",
        "amount_due": "100.00",
    }
    return env.invoices.create(**{**body, **fields})


def test_direct_invoice_money_follows_the_adjustment_order(env: Scoped, customer_id: str) -> None:
    ten = env.coupons.create(name="10 %", type="percentage", cadence="once", percentage_off="10")
    twenty = env.coupons.create(name="20 off", type="fixed", cadence="once", amount_off="20", currency="usd")
    env.tax_rates.create(name="VAT", code="VAT20", tax_rate_type="percentage", percentage_value="20")
    invoice = env.invoices.create(
        customer_id=customer_id,
        currency="USD",
        line_items=lines("120.00", "80.00"),
        line_item_coupons=[{"coupon_id": ten.id, "line_item_id": "price_0"}],
        coupons=[twenty.id],
        tax_rates=["VAT20"],
        # 200.00 - (12.00 + 20.00) = 168.00 taxed at 20 % = 33.60 -> 201.60
        subtotal="200.00",
        total="201.60",
        amount_due="201.60",
    )
    assert (invoice.subtotal, invoice.total_discount, invoice.total_tax, invoice.total) == (
        D("200.00"),
        D("32.00"),
        D("33.60"),
        D("201.60"),
    )
    # 10 % of 120.00 = 12.00 on the first line; 20.00 spread over 108.00 and 80.00: 11.49 + 8.51
    assert [(li.line_item_discount, li.invoice_level_discount) for li in invoice.line_items] == [
        (D("12.00"), D("11.49")),
        (D("0"), D("8.51")),
    ]
    assert invoice.invoice_status is InvoiceStatus.FINALIZED
    assert (invoice.invoice_type.value, invoice.billing_reason.value) == ("ONE_OFF", "MANUAL")
    assert invoice.invoice_number == "INV-202605-00001"
    assert (invoice.amount_remaining, invoice.payment_status) == (D("201.60"), PaymentStatus.PENDING)
    apps = {app.coupon_id: app for app in invoice.coupon_applications}
    assert apps[ten.id].invoice_line_item_id == invoice.line_items[0].id
    assert (apps[twenty.id].discounted_amount, apps[twenty.id].coupon_association_id) == (D("20.00"), None)
    assert [(t.taxable_amount, t.tax_amount) for t in invoice.taxes] == [(D("168.00"), D("33.60"))]
    # Each application is one redemption (reference notes §5).
    assert env.coupons.get(ten.id).total_redemptions == 1
    assert env.coupons.get(twenty.id).total_redemptions == 1
    assert env.invoices.get(invoice.id) == invoice


def test_a_figure_that_does_not_add_up_is_refused_and_nothing_is_stored(
    env: Scoped, customer_id: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        direct(env, customer_id, total="99.99")
    assert caught.value.field == "total"
    assert caught.value.details["computed"] == "100.00"
    assert env.invoices.list().total == 0
    with pytest.raises(ValidationError) as caught:
        direct(env, customer_id, invoice_number="MY-1")
    assert caught.value.field == "invoice_number"


def test_same_idempotency_key_and_body_is_one_invoice_other_body_conflicts(
    env: Scoped, customer_id: str
) -> None:
    first = direct(env, customer_id, idempotency_key="order-42")
    again = direct(env, customer_id, idempotency_key="order-42")
    assert again == first
    assert env.invoices.list().total == 1
    assert len(env.notifications.list(event_type="invoice.update.finalized").items) == 1
    with pytest.raises(IdempotencyConflict) as caught:
        direct(
            env,
            customer_id,
            idempotency_key="order-42",
            line_items=lines("50.00"),
            subtotal="50.00",
            total="50.00",
            amount_due="50.00",
        )
    assert caught.value.code == "idempotency_conflict"
    # The same money written another way is the same body: "100" is "100.00".
    same = direct(
        env,
        customer_id,
        idempotency_key="order-42",
        line_items=lines("100"),
        subtotal="100",
        total="100.0",
        amount_due="100",
    )
    assert same.id == first.id
    # Without a key every call is a new invoice.
    assert direct(env, customer_id).id != direct(env, customer_id).id


def test_void_then_nothing_else_is_allowed(env: Scoped, customer_id: str) -> None:
    invoice = direct(env, customer_id)
    voided = env.invoices.void(invoice.id)
    assert (voided.invoice_status, voided.voided_at) == (InvoiceStatus.VOIDED, START)
    assert voided.payment_status is PaymentStatus.PENDING  # nothing was paid, nothing refunded
    assert voided.invoice_number == invoice.invoice_number  # the number stays used
    for attempt in (
        lambda: env.invoices.void(invoice.id),
        lambda: env.invoices.finalize(invoice.id),
        lambda: env.invoices.update_payment(invoice.id, payment_status="SUCCEEDED"),
        lambda: env.invoices.update(invoice.id, metadata={"a": "b"}),
    ):
        with pytest.raises(InvalidOperation) as caught:
            attempt()
        assert "voided" in caught.value.message
    assert [e.entity_id for e in env.notifications.list(event_type="invoice.update.voided").items] == [
        invoice.id
    ]


def test_voiding_a_partly_paid_invoice_refunds_what_was_paid_to_a_prepaid_wallet(
    env: Scoped, customer_id: str
) -> None:
    invoice = direct(env, customer_id)
    env.invoices.update_payment(invoice.id, payment_status="PENDING", amount="40.00")
    voided = env.invoices.void(invoice.id)
    # 40.00 paid + 0.00 in credits - 0.00 refunded before = 40.00 back
    assert (voided.refunded_amount, voided.payment_status, voided.amount_paid) == (
        D("40.00"),
        PaymentStatus.REFUNDED,
        D("40.00"),
    )
    (wallet,), (row,) = ledger(env)
    assert (wallet.customer_id, wallet.currency, wallet.wallet_type.value, wallet.credit_balance) == (
        customer_id,
        "usd",
        "PRE_PAID",
        D("40.00"),
    )
    assert (row.transaction_reason.value, row.credit_amount, row.reference_id, row.idempotency_key) == (
        "INVOICE_VOID_REFUND",
        D("40.00"),
        invoice.id,
        f"invoice_void_refund|{invoice.id}",
    )


def test_finalizing_a_draft_continues_the_sequence(env: Scoped, customer_id: str) -> None:
    draft = direct(env, customer_id, invoice_status="DRAFT")
    assert (draft.invoice_status, draft.invoice_number, draft.finalized_at) == (
        InvoiceStatus.DRAFT,
        None,
        None,
    )
    assert direct(env, customer_id).invoice_number == "INV-202605-00001"
    finalized = env.invoices.finalize(draft.id)
    assert finalized.invoice_number == "INV-202605-00002"
    assert (finalized.finalized_at, finalized.issue_date) == (START, START)
    with pytest.raises(InvalidOperation, match="already finalized"):
        env.invoices.finalize(draft.id)
    with pytest.raises(NotFound):
        env.invoices.finalize("inv_missing")


def test_a_stale_version_is_a_conflict(env: Scoped, customer_id: str) -> None:
    invoice = direct(env, customer_id, invoice_status="DRAFT")
    assert invoice.version == 1
    edited = env.invoices.update(invoice.id, metadata={"po": "7"}, version=1)
    assert (edited.version, edited.metadata) == (2, {"po": "7"})
    with pytest.raises(VersionConflict):
        env.invoices.update(invoice.id, metadata={"po": "8"}, version=1)
    assert env.invoices.get(invoice.id).metadata == {"po": "7"}
    assert len(env.notifications.list(event_type="invoice.update").items) == 2  # created draft, edit


def test_apply_discount_after_archiving_the_coupon_drops_it_and_its_tax(
    env: Scoped, customer_id: str
) -> None:
    coupon = env.coupons.create(name="10 %", type="percentage", cadence="forever", percentage_off="10")
    env.tax_rates.create(name="VAT", code="VAT20", tax_rate_type="percentage", percentage_value="20")
    draft = env.invoices.create(
        customer_id=customer_id,
        currency="usd",
        invoice_status="DRAFT",
        line_items=lines("200.00"),
        coupons=[coupon.id],
        tax_rates=["VAT20"],
        # 10 % of 200.00 = 20.00; VAT 20 % of 180.00 = 36.00; 200.00 - 20.00 + 36.00 = 216.00
        subtotal="200.00",
        total="216.00",
        amount_due="216.00",
    )
    assert (draft.total_discount, draft.total_tax, draft.total) == (D("20.00"), D("36.00"), D("216.00"))
    # Unchanged sources: recomputing gives the same money.
    same = env.invoices.update(draft.id, apply_discount=True)
    assert (same.total_discount, same.total_tax, same.total) == (D("20.00"), D("36.00"), D("216.00"))
    env.coupons.delete(coupon.id)
    recomputed = env.invoices.update(draft.id, apply_discount=True)
    # No discount: VAT 20 % of 200.00 = 40.00; total 240.00; the stale 36.00 tax line is gone.
    assert (recomputed.total_discount, recomputed.total_tax, recomputed.total) == (
        D("0"),
        D("40.00"),
        D("240.00"),
    )
    assert recomputed.coupon_applications == ()
    assert [(t.taxable_amount, t.tax_amount) for t in recomputed.taxes] == [(D("200.00"), D("40.00"))]
    assert (recomputed.amount_due, recomputed.amount_remaining) == (D("240.00"), D("240.00"))
    assert recomputed.line_items[0].invoice_level_discount == D("0")
    finalized = env.invoices.finalize(draft.id)
    with pytest.raises(InvalidOperation, match="only a DRAFT"):
        env.invoices.update(finalized.id, apply_discount=True)


def test_payments_by_hand_follow_the_transitions(env: Scoped, customer_id: str, world: Any) -> None:
    clock = world[0]
    draft = direct(env, customer_id, invoice_status="DRAFT")
    with pytest.raises(InvalidOperation, match="only a FINALIZED"):
        env.invoices.update_payment(draft.id, payment_status="SUCCEEDED")
    invoice = env.invoices.finalize(draft.id)
    part = env.invoices.update_payment(invoice.id, payment_status="PENDING", amount="40.00")
    assert (part.amount_paid, part.amount_remaining, part.paid_at) == (D("40.00"), D("60.00"), None)
    with pytest.raises(ValidationError) as caught:
        env.invoices.update_payment(invoice.id, payment_status="SUCCEEDED", amount="90.00")
    assert caught.value.field == "amount"
    clock.advance(timedelta(hours=1))
    paid = env.invoices.update_payment(invoice.id, payment_status="SUCCEEDED")
    assert (paid.amount_paid, paid.amount_remaining, paid.paid_at) == (
        D("100.00"),
        D("0"),
        START + timedelta(hours=1),
    )
    with pytest.raises(InvalidOperation, match="from SUCCEEDED to PENDING"):
        env.invoices.update_payment(invoice.id, payment_status="PENDING")
    over = env.invoices.update_payment(invoice.id, payment_status="OVERPAID", amount="120.00")
    # 120.00 paid on 100.00 due: 20.00 over, nothing remaining
    assert (over.payment_status, over.overpaid_amount, over.amount_remaining) == (
        PaymentStatus.OVERPAID,
        D("20.00"),
        D("0"),
    )
    assert len(env.notifications.list(event_type="invoice.update.payment").items) == 3


def test_renewal_drafts_wait_for_the_finalization_delay(storage: Any) -> None:
    clock = TestClock(datetime(2026, 3, 1, tzinfo=UTC))
    billing = Billing(storage, clock, settings=Settings(invoice_finalization_delay=timedelta(hours=2)))
    setup = billing.bootstrap()
    env = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    customer = env.customers.create(external_id="c1", name="Ada")
    plan = env.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "20",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "billing_period_count": 1,
                "invoice_cadence": "ADVANCE",
                "display_name": "Base",
            }
        ],
    )
    sub = env.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    (opening,) = env.invoices.list(subscription_id=sub.id).items
    assert (opening.invoice_status, opening.invoice_number) == (InvoiceStatus.FINALIZED, "INV-202603-00001")
    period_end = datetime(2026, 4, 1, tzinfo=UTC)
    clock.set(period_end)
    billing.run_due()
    renewal = next(i for i in env.invoices.list(subscription_id=sub.id).items if i.id != opening.id)
    assert (renewal.invoice_status, renewal.invoice_number, renewal.total) == (
        InvoiceStatus.DRAFT,
        None,
        D("20.00"),
    )
    assert renewal.last_computed_at == period_end
    clock.set(period_end + timedelta(hours=1, minutes=59))
    billing.run_due()
    assert env.invoices.get(renewal.id).invoice_status is InvoiceStatus.DRAFT
    clock.set(period_end + timedelta(hours=2))  # last_computed_at + 2 h
    billing.run_due()
    finalized = env.invoices.get(renewal.id)
    assert (finalized.invoice_status, finalized.invoice_number) == (
        InvoiceStatus.FINALIZED,
        "INV-202604-00001",
    )
    assert finalized.finalized_at == period_end + timedelta(hours=2)
    assert [e.entity_id for e in env.notifications.list(event_type="invoice.update.finalized").items][
        -1
    ] == renewal.id
    billing.run_due()  # nothing left due
    assert env.invoices.get(renewal.id).version == finalized.version


def test_the_finalization_delay_setting_is_checked() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(invoice_finalization_delay=timedelta(seconds=-1))
    assert caught.value.field == "invoice_finalization_delay"
    assert Settings().invoice_finalization_delay == timedelta(0)
