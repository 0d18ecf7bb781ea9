"""The rules of paying an invoice (``domain.payment_rules``) and of voiding a paid one
(``domain.invoice_lifecycle.void_refund``): worked examples, then properties."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.invoice_lifecycle import void_changes, void_refund
from billingkit.domain.invoices import (
    BillingReason,
    Invoice,
    InvoiceLineItem,
    InvoiceStatus,
    PaymentStatus,
)
from billingkit.domain.payment_rules import (
    check_payable,
    check_payment_amount,
    failed_payment_changes,
    payment_key,
    succeeded_payment_changes,
    wallet_payable,
)
from billingkit.errors import InvalidOperation, ValidationError

D = Decimal
T0 = datetime(2026, 5, 1, tzinfo=UTC)
T1 = datetime(2026, 5, 2, tzinfo=UTC)


def invoice(**fields: Any) -> Invoice:
    base: dict[str, Any] = {
        "id": "inv_1",
        "tenant_id": "t",
        "environment_id": "e",
        "created_at": T0,
        "updated_at": T0,
        "created_by": "u",
        "updated_by": "u",
        "customer_id": "cust_1",
        "currency": "usd",
        "billing_reason": BillingReason.MANUAL,
        "invoice_status": InvoiceStatus.FINALIZED,
        "subtotal": D("100.00"),
        "total": D("100.00"),
        "amount_due": D("100.00"),
        "amount_remaining": D("100.00"),
    }
    return Invoice(**{**base, **fields})


def pay(inv: Invoice, amount: str, at: datetime = T0) -> Invoice:
    return inv.model_copy(update=succeeded_payment_changes(inv, D(amount), at))


FIELDS = ("payment_status", "amount_paid", "amount_remaining", "overpaid_amount", "paid_at")


# -- worked examples -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payments", "status", "paid", "remaining", "overpaid", "paid_at"),
    [
        (["60.00"], PaymentStatus.PENDING, "60.00", "40.00", "0", None),
        (["60.00", "40.00"], PaymentStatus.SUCCEEDED, "100.00", "0", "0", T1),
        (["100.00"], PaymentStatus.SUCCEEDED, "100.00", "0", "0", T0),
        (["60.00", "40.00", "25.00"], PaymentStatus.OVERPAID, "125.00", "0", "25.00", T1),
        (["130.00"], PaymentStatus.OVERPAID, "130.00", "0", "30.00", T0),
        (["0.01"], PaymentStatus.PENDING, "0.01", "99.99", "0", None),
    ],
)
def test_succeeded_payments_move_the_invoice_money(
    payments: list[str], status: PaymentStatus, paid: str, remaining: str, overpaid: str, paid_at: Any
) -> None:
    inv = invoice()
    for index, amount in enumerate(payments):
        inv = pay(inv, amount, T0 if index == 0 else T1)
    assert tuple(getattr(inv, f) for f in FIELDS) == (status, D(paid), D(remaining), D(overpaid), paid_at)


def test_a_payment_after_full_payment_keeps_the_first_paid_at() -> None:
    paid = pay(invoice(), "100.00", T0)
    assert pay(paid, "5.00", T1).paid_at == T0


def test_a_failed_invoice_is_paid_by_a_later_success() -> None:
    failed = invoice(payment_status=PaymentStatus.FAILED)
    assert pay(failed, "100.00").payment_status is PaymentStatus.SUCCEEDED


@pytest.mark.parametrize(
    ("fields", "changes"),
    [
        ({}, {"payment_status": PaymentStatus.FAILED}),
        ({"payment_status": PaymentStatus.FAILED}, {}),
        ({"amount_paid": D("60.00"), "amount_remaining": D("40.00")}, {}),
        ({"payment_status": PaymentStatus.SUCCEEDED, "amount_paid": D("100.00")}, {}),
    ],
)
def test_a_failed_payment_marks_the_invoice_failed_only_when_nothing_was_paid(
    fields: dict[str, Any], changes: dict[str, Any]
) -> None:
    assert failed_payment_changes(invoice(**fields)) == changes


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"invoice_status": InvoiceStatus.DRAFT}, "DRAFT: only a FINALIZED invoice"),
        ({"invoice_status": InvoiceStatus.VOIDED}, "VOIDED: only a FINALIZED invoice"),
        ({"payment_status": PaymentStatus.REFUNDED}, "REFUNDED: it takes no more payments"),
    ],
)
def test_only_a_finalized_invoice_that_takes_payments_is_paid(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidOperation, match=message):
        check_payable(invoice(**fields))
    with pytest.raises(InvalidOperation):
        succeeded_payment_changes(invoice(**fields), D("1.00"), T0)


@pytest.mark.parametrize(
    ("amount", "currency"), [("0", "usd"), ("-1.00", "usd"), ("1.001", "usd"), ("1.5", "jpy")]
)
def test_a_payment_amount_is_positive_within_the_currency_precision(amount: str, currency: str) -> None:
    with pytest.raises(ValidationError) as caught:
        check_payment_amount(D(amount), currency)
    assert caught.value.field == "amount"


def test_amounts_within_precision_pass() -> None:
    check_payment_amount(D("1.5"), "usd")
    check_payment_amount(D("1000"), "jpy")
    check_payment_amount(D("0.001"), "kwd")


def _fields(**over: Any) -> dict[str, Any]:
    return {
        "destination_type": "INVOICE",
        "destination_id": "inv_1",
        "amount": D("60.00"),
        "currency": "usd",
        "payment_method_type": "OFFLINE",
        "payment_method_id": None,
        "payment_gateway": None,
        "process_payment": True,
        "save_card_and_make_default": False,
        **over,
    }


def test_the_derived_key_is_deterministic_and_scoped() -> None:
    key = payment_key("t1", "e1", _fields())
    assert key.startswith("payment-") and len(key) == len("payment-") + 16
    assert payment_key("t1", "e1", _fields(amount=D("60"))) == key  # one amount, written two ways
    different = [
        payment_key("t2", "e1", _fields()),
        payment_key("t1", "e2", _fields()),
        payment_key("t1", "e1", _fields(amount=D("60.01"))),
        payment_key("t1", "e1", _fields(payment_method_id="pm_1")),
        payment_key("t1", "e1", _fields(payment_method_type="CARD")),
        payment_key("t1", "e1", _fields(process_payment=False)),
        payment_key("t1", "e1", _fields(destination_id="inv_2")),
        payment_key("t1", "e1", _fields(sequence=1)),
    ]
    assert len({key, *different}) == 1 + len(different)


def _line(price_type: PriceType, amount: str, discount: str = "0", credits: str = "0") -> InvoiceLineItem:
    return InvoiceLineItem(
        id=f"line_{price_type.value}_{amount}",
        display_name="x",
        price_type=price_type,
        quantity=D(1),
        amount=D(amount),
        line_item_discount=D(discount),
        prepaid_credits_applied=D(credits),
        period_start=T0,
        period_end=T1,
    )


def test_a_wallet_pays_what_its_price_types_cover() -> None:
    # USAGE 70.00 - 10.00 discount = 60.00; FIXED 50.00; tax 10.00; remaining 120.00
    inv = invoice(
        line_items=(_line(PriceType.USAGE, "70.00", discount="10.00"), _line(PriceType.FIXED, "50.00")),
        amount_due=D("120.00"),
        amount_remaining=D("120.00"),
    )
    assert wallet_payable(inv, frozenset({"USAGE"})) == D("60.00")
    assert wallet_payable(inv, frozenset({"FIXED"})) == D("50.00")
    assert wallet_payable(inv, frozenset({"USAGE", "FIXED"})) == D("120.00")
    # Once it paid 60.00 of them, a USAGE wallet pays no more of this invoice.
    assert wallet_payable(inv, frozenset({"USAGE"}), D("60.00")) == D("0")
    assert wallet_payable(inv, frozenset({"USAGE"}), D("25.00")) == D("35.00")
    # Never more than remains: 100.00 paid already leaves 20.00.
    partly = inv.model_copy(update={"amount_paid": D("100.00"), "amount_remaining": D("20.00")})
    assert wallet_payable(partly, frozenset({"USAGE"})) == D("20.00")
    # Prepaid credits already paid part of a line.
    credited = invoice(line_items=(_line(PriceType.USAGE, "70.00", credits="30.00"),))
    assert wallet_payable(credited, frozenset({"USAGE"})) == D("40.00")


@pytest.mark.parametrize(
    ("fields", "refund"),
    [
        ({}, "0"),
        ({"amount_paid": D("60.00")}, "60.00"),
        ({"amount_paid": D("100.00"), "total_prepaid_credits_applied": D("30.00")}, "130.00"),
        (
            {
                "amount_paid": D("100.00"),
                "total_prepaid_credits_applied": D("30.00"),
                "refunded_amount": D("50.00"),
            },
            "80.00",
        ),
        ({"amount_paid": D("10.00"), "refunded_amount": D("20.00")}, "0"),
    ],
)
def test_void_refunds_what_was_paid_less_what_was_refunded(fields: dict[str, Any], refund: str) -> None:
    inv = invoice(**fields)
    assert void_refund(inv) == D(refund)
    changes = void_changes(inv, T1)
    assert (changes["invoice_status"], changes["voided_at"]) == (InvoiceStatus.VOIDED, T1)
    if D(refund) > 0:
        assert changes["refunded_amount"] == inv.refunded_amount + D(refund)
        assert changes["payment_status"] is PaymentStatus.REFUNDED
    else:
        assert "refunded_amount" not in changes and "payment_status" not in changes


# -- properties ------------------------------------------------------------------------------

cents = st.integers(min_value=1, max_value=1_000_000).map(lambda n: D(n).scaleb(-2))


@given(
    due=st.integers(min_value=0, max_value=1_000_000).map(lambda n: D(n).scaleb(-2)),
    payments=st.lists(cents, min_size=1, max_size=6),
)
def test_payments_add_up_and_the_status_follows_the_sums(due: Decimal, payments: list[Decimal]) -> None:
    inv = invoice(amount_due=due, total=due, subtotal=due, amount_remaining=due)
    for amount in payments:
        inv = pay(inv, str(amount))
    paid = sum(payments, D(0))
    assert inv.amount_paid == paid
    assert inv.amount_remaining == max(D(0), due - paid)
    assert inv.overpaid_amount == max(D(0), paid - due)
    if paid < due:
        assert (inv.payment_status, inv.paid_at) == (PaymentStatus.PENDING, None)
    else:
        assert inv.payment_status is (PaymentStatus.SUCCEEDED if paid == due else PaymentStatus.OVERPAID)
        assert inv.paid_at == T0
