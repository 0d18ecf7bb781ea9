"""The money rules of credit notes: the type an invoice's payment status gives, the capacities of
the invoice and of each line, what a finalized note changes on its invoice, and the content key.
Worked examples in tables, with the arithmetic next to them; properties with hypothesis."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.credit_note_rules import (
    check_credit,
    content_fingerprint,
    credit_note_number,
    credit_note_type,
    default_idempotency_key,
    finalized_changes,
    invoice_capacity,
    line_capacity,
    looks_assigned,
)
from billingkit.domain.credit_notes import CreditNoteReason, CreditNoteType
from billingkit.domain.invoices import (
    BillingReason,
    Invoice,
    InvoiceLineItem,
    InvoiceStatus,
    PaymentStatus,
)
from billingkit.errors import InvalidOperation, ValidationError

D = Decimal
T0 = datetime(2026, 5, 1, tzinfo=UTC)
ADJUSTMENT, REFUND = CreditNoteType.ADJUSTMENT, CreditNoteType.REFUND


def _line(line_id: str, amount: str, **fields: Any) -> InvoiceLineItem:
    return InvoiceLineItem(
        id=line_id,
        display_name=f"Line {line_id}",
        quantity=D(1),
        amount=D(amount),
        period_start=T0,
        period_end=T0,
        **fields,
    )


def _invoice(*lines: InvoiceLineItem, **fields: Any) -> Invoice:
    subtotal = sum((line.amount for line in lines), D(0))
    values: dict[str, Any] = {
        "id": "inv_1",
        "tenant_id": "tenant_a",
        "environment_id": "env_a",
        "created_at": T0,
        "updated_at": T0,
        "created_by": "test",
        "updated_by": "test",
        "invoice_number": "INV-202605-00001",
        "invoice_status": InvoiceStatus.FINALIZED,
        "payment_status": PaymentStatus.SUCCEEDED,
        "customer_id": "cust_1",
        "currency": "usd",
        "billing_reason": BillingReason.MANUAL,
        "subtotal": subtotal,
        "total": subtotal,
        "amount_due": subtotal,
        "amount_paid": subtotal,
        "amount_remaining": D(0),
        "line_items": lines or (_line("li_1", "100.00"),),
    }
    if not lines:
        for name in ("subtotal", "total", "amount_due", "amount_paid"):
            values[name] = D("100.00")
    values.update(fields)
    return Invoice(**values)


PAID = _invoice()  # one line of 100.00, paid in full
DUE = _invoice(payment_status=PaymentStatus.PENDING, amount_paid=D(0), amount_remaining=D("100.00"))


@pytest.mark.parametrize(
    ("status", "paid", "expected"),
    [
        (PaymentStatus.SUCCEEDED, "100.00", REFUND),
        (PaymentStatus.OVERPAID, "120.00", REFUND),
        (PaymentStatus.PARTIALLY_REFUNDED, "100.00", REFUND),
        (PaymentStatus.PENDING, "0", ADJUSTMENT),
        (PaymentStatus.PENDING, "40.00", ADJUSTMENT),  # still collecting: lower what is due first
        (PaymentStatus.FAILED, "0", ADJUSTMENT),
        (PaymentStatus.PROCESSING, "0", ADJUSTMENT),
        (PaymentStatus.INITIATED, "0", ADJUSTMENT),
    ],
)
def test_the_type_follows_whether_the_money_was_collected(
    status: PaymentStatus, paid: str, expected: CreditNoteType
) -> None:
    assert credit_note_type(_invoice(payment_status=status, amount_paid=D(paid))) is expected


@pytest.mark.parametrize("status", [PaymentStatus.REFUNDED, PaymentStatus.VOIDED])
def test_nothing_is_left_to_credit_once_refunded(status: PaymentStatus) -> None:
    with pytest.raises(InvalidOperation, match="nothing is left to credit"):
        credit_note_type(_invoice(payment_status=status))


@pytest.mark.parametrize(
    ("fields", "note_type", "capacity"),
    [
        # ADJUSTMENT: what is still due.
        (
            {"payment_status": PaymentStatus.PENDING, "amount_paid": D(0), "amount_remaining": D(100)},
            ADJUSTMENT,
            "100",
        ),
        # due 100.00, 40.00 paid -> 60.00 still due
        (
            {"payment_status": PaymentStatus.PENDING, "amount_paid": D(40), "amount_remaining": D(60)},
            ADJUSTMENT,
            "60",
        ),
        # REFUND: paid 100.00, nothing refunded
        ({}, REFUND, "100.00"),
        # paid 80.00 + 20.00 in prepaid credits, 30.00 refunded: 80 + 20 - 30 = 70.00
        (
            {"amount_paid": D(80), "total_prepaid_credits_applied": D(20), "refunded_amount": D(30)},
            REFUND,
            "70",
        ),
        # overpaid: everything paid is refundable (lines bound it further)
        ({"amount_paid": D(120), "payment_status": PaymentStatus.OVERPAID}, REFUND, "120"),
        # more refunded than paid (never by notes; clamped, not negative)
        ({"refunded_amount": D(150)}, REFUND, "0"),
    ],
)
def test_invoice_capacity(fields: dict[str, Any], note_type: CreditNoteType, capacity: str) -> None:
    assert invoice_capacity(_invoice(**fields), note_type) == D(capacity)


def test_line_capacity_is_the_charge_after_discounts_plus_its_tax_share() -> None:
    # subtotal 200.00 = 150.00 + 50.00; invoice-level discount 20.00 spread 15.00 / 5.00;
    # tax 20% of 180.00 = 36.00: line 1 = 135.00 + 36 x 135/180 (27.00) = 162.00,
    # line 2 = 45.00 + 36 x 45/180 (9.00) = 54.00; together the invoice's total, 216.00.
    first = _line("li_1", "150.00", invoice_level_discount=D("15.00"))
    second = _line("li_2", "50.00", invoice_level_discount=D("5.00"))
    invoice = _invoice(first, second, total_discount=D("20.00"), total_tax=D("36.00"), total=D("216.00"))
    assert (line_capacity(invoice, first), line_capacity(invoice, second)) == (D("162.00"), D("54.00"))


def test_a_tax_share_is_rounded_to_the_currency() -> None:
    # tax 10.00 over three lines of 10.00: 10 x 10/30 = 3.333... -> 3.33 each
    lines = [_line(f"li_{i}", "10.00") for i in range(3)]
    invoice = _invoice(*lines, total_tax=D("10.00"))
    assert [line_capacity(invoice, line) for line in lines] == [D("13.33")] * 3


def test_a_line_discount_lowers_its_capacity() -> None:
    line = _line("li_1", "100.00", line_item_discount=D("25.00"))
    assert line_capacity(_invoice(line, total_discount=D("25.00")), line) == D("75.00")


@pytest.mark.parametrize(
    ("invoice", "note_type", "lines", "credited", "total"),
    [
        (PAID, REFUND, [("li_1", D("70.00"))], {}, "70.00"),
        (PAID, REFUND, [("li_1", D("30.00"))], {"li_1": D("70.00")}, "30.00"),  # 70 + 30 = the line
        (DUE, ADJUSTMENT, [("li_1", D("100"))], {}, "100"),
        (
            _invoice(_line("a", "60.00"), _line("b", "40.00")),
            REFUND,
            [("a", D(60)), ("b", D("0.01"))],
            {},
            "60.01",
        ),
    ],
)
def test_a_credit_that_fits_answers_its_total(
    invoice: Invoice,
    note_type: CreditNoteType,
    lines: list[tuple[str, Decimal]],
    credited: dict[str, Decimal],
    total: str,
) -> None:
    assert check_credit(invoice, note_type, lines, credited) == D(total)


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        ([], "line_items"),
        ([("li_9", D(1))], "line_items[0].invoice_line_item_id"),
        ([("li_1", D(1)), ("li_1", D(2))], "line_items[1].invoice_line_item_id"),
        ([("li_1", D(0))], "line_items[0].amount"),
        ([("li_1", D("-5"))], "line_items[0].amount"),
        ([("li_1", D("0.001"))], "line_items[0].amount"),  # finer than a cent
    ],
)
def test_malformed_lines_name_their_field(lines: list[tuple[str, Decimal]], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        check_credit(PAID, REFUND, lines, {})
    assert raised.value.field == field


@pytest.mark.parametrize(
    ("invoice", "note_type", "lines", "credited", "message"),
    [
        # paid 100.00, 70.00 refunded already: 70.00 more exceeds the 30.00 left
        (
            _invoice(refunded_amount=D(70), payment_status=PaymentStatus.PARTIALLY_REFUNDED),
            REFUND,
            [("li_1", D(70))],
            {"li_1": D(70)},
            "exceeds the refundable amount of invoice INV-202605-00001: 30",
        ),
        (DUE, ADJUSTMENT, [("li_1", D("100.01"))], {}, "exceeds the amount still due"),
        # the invoice could take it (150 paid on two lines) but line a (60.00) cannot
        (
            _invoice(_line("a", "60.00"), _line("b", "90.00")),
            REFUND,
            [("a", D("60.01"))],
            {},
            "exceeds the 60.00 usd still creditable on it",
        ),
        (
            _invoice(_line("a", "60.00"), _line("b", "90.00")),
            REFUND,
            [("a", D("10"))],
            {"a": D("55")},
            "exceeds the 5.00 usd still creditable",
        ),
    ],
)
def test_a_credit_above_a_capacity_is_refused(
    invoice: Invoice,
    note_type: CreditNoteType,
    lines: list[tuple[str, Decimal]],
    credited: dict[str, Decimal],
    message: str,
) -> None:
    with pytest.raises(InvalidOperation, match=message):
        check_credit(invoice, note_type, lines, credited)


@pytest.mark.parametrize(
    ("status", "why"),
    [
        (InvoiceStatus.DRAFT, "finalize it first"),
        (InvoiceStatus.VOIDED, "voided invoice"),
        (InvoiceStatus.SKIPPED, "charged nothing"),
    ],
)
def test_only_a_finalized_invoice_is_credited(status: InvoiceStatus, why: str) -> None:
    with pytest.raises(
        InvalidOperation, match=f"is {status.value}: only a FINALIZED invoice is credited.*{why}"
    ):
        check_credit(_invoice(invoice_status=status), REFUND, [("li_1", D(1))], {})


@pytest.mark.parametrize(
    ("invoice", "note_type", "total", "expected"),
    [
        # due 100.00, nothing paid, adjusted 30.00 -> due 70.00, remaining 70.00, still PENDING
        (
            DUE,
            ADJUSTMENT,
            "30.00",
            {"adjustment_amount": D("30.00"), "amount_due": D("70.00"), "amount_remaining": D("70.00")},
        ),
        # due 100.00, 40.00 paid, adjusted 60.00 -> due 40.00 (= paid), remaining 0: SUCCEEDED
        (
            _invoice(payment_status=PaymentStatus.PENDING, amount_paid=D(40), amount_remaining=D(60)),
            ADJUSTMENT,
            "60",
            {
                "adjustment_amount": D(60),
                "amount_due": D(40),
                "amount_remaining": D(0),
                "payment_status": PaymentStatus.SUCCEEDED,
            },
        ),
        # paid 100.00, refunded 70.00 -> PARTIALLY_REFUNDED
        (
            PAID,
            REFUND,
            "70.00",
            {"refunded_amount": D("70.00"), "payment_status": PaymentStatus.PARTIALLY_REFUNDED},
        ),
        # then 30.00 more -> everything paid came back: REFUNDED
        (
            _invoice(refunded_amount=D(70), payment_status=PaymentStatus.PARTIALLY_REFUNDED),
            REFUND,
            "30.00",
            {"refunded_amount": D("100.00"), "payment_status": PaymentStatus.REFUNDED},
        ),
        # 80.00 paid + 20.00 in credits; 80.00 refunded is not everything
        (
            _invoice(amount_paid=D(80), total_prepaid_credits_applied=D(20)),
            REFUND,
            "80",
            {"refunded_amount": D(80), "payment_status": PaymentStatus.PARTIALLY_REFUNDED},
        ),
    ],
)
def test_what_a_finalized_note_changes_on_its_invoice(
    invoice: Invoice, note_type: CreditNoteType, total: str, expected: dict[str, Any]
) -> None:
    assert finalized_changes(invoice, note_type, D(total)) == expected


def test_the_content_key_ignores_how_an_amount_is_written_but_not_what_is_asked() -> None:
    lines = [("li_1", D("10"))]
    key = default_idempotency_key("inv_1", CreditNoteReason.DUPLICATE, lines)
    assert key.startswith("cn-") and len(key) == 3 + 64
    assert key == default_idempotency_key("inv_1", CreditNoteReason.DUPLICATE, [("li_1", D("10.00"))])
    others = [
        default_idempotency_key("inv_2", CreditNoteReason.DUPLICATE, lines),
        default_idempotency_key("inv_1", CreditNoteReason.FRAUDULENT, lines),
        default_idempotency_key("inv_1", CreditNoteReason.DUPLICATE, [("li_1", D("10.01"))]),
        default_idempotency_key("inv_1", CreditNoteReason.DUPLICATE, [("li_2", D("10"))]),
    ]
    assert len({key, *others}) == 5
    assert content_fingerprint("inv_1", CreditNoteReason.DUPLICATE, lines) == key.removeprefix("cn-")


def test_numbers_and_what_looks_like_one() -> None:
    assert credit_note_number("202605", 1) == "CN-202605-00001"
    assert looks_assigned("CN-202605-00001") and looks_assigned("CN-202605-123456")
    assert not any(looks_assigned(n) for n in ("CN-2026-00001", "cn-202605-00001", "REF-1", "CN-202605-1a"))


# -- properties ---------------------------------------------------------------------------------

cents = st.integers(min_value=1, max_value=10**9).map(lambda n: D(n) / 100)


@given(
    amounts=st.lists(cents, min_size=1, max_size=5),
    paid_share=st.integers(min_value=0, max_value=100),
    notes=st.lists(st.lists(st.tuples(st.integers(0, 4), cents), min_size=1, max_size=3), max_size=8),
)
def test_no_sequence_of_refunds_exceeds_what_was_paid(
    amounts: list[Decimal], paid_share: int, notes: list[list[tuple[int, Decimal]]]
) -> None:
    """Whatever notes are asked in turn, the ones accepted never refund more than was paid nor
    credit any line beyond its amount, and the invoice's status tells whether all came back."""
    lines = [_line(f"li_{i}", str(a)) for i, a in enumerate(amounts)]
    subtotal = sum(amounts, D(0))
    paid = (subtotal * paid_share / 100).quantize(D("0.01"))
    invoice = _invoice(*lines, amount_paid=paid)
    credited: dict[str, Decimal] = {}
    for asked in notes:
        wanted = {}
        for index, amount in asked:
            wanted[f"li_{index % len(lines)}"] = amount
        try:
            total = check_credit(invoice, REFUND, list(wanted.items()), credited)
        except InvalidOperation:
            continue
        invoice = invoice.model_copy(update=finalized_changes(invoice, REFUND, total))
        for line_id, amount in wanted.items():
            credited[line_id] = credited.get(line_id, D(0)) + amount
    assert invoice.refunded_amount <= paid
    assert all(credited[line.id] <= line.amount for line in lines if line.id in credited)
    if invoice.refunded_amount == paid and paid > 0:
        assert invoice.payment_status is PaymentStatus.REFUNDED


@given(due=cents, paid_share=st.integers(0, 99), asked=st.lists(cents, max_size=6))
def test_adjustments_never_take_what_is_due_below_what_was_paid(
    due: Decimal, paid_share: int, asked: list[Decimal]
) -> None:
    paid = (due * paid_share / 100).quantize(D("0.01"), rounding=ROUND_FLOOR)  # below what is due
    invoice = _invoice(
        _line("li_1", str(due)),
        payment_status=PaymentStatus.PENDING,
        amount_paid=paid,
        amount_remaining=due - paid,
    )
    credited = D(0)
    for amount in asked:
        try:
            total = check_credit(invoice, ADJUSTMENT, [("li_1", amount)], {"li_1": credited})
        except InvalidOperation:
            continue
        invoice = invoice.model_copy(update=finalized_changes(invoice, ADJUSTMENT, total))
        credited += total
    assert invoice.amount_due == due - invoice.adjustment_amount >= paid
    assert invoice.amount_remaining == invoice.amount_due - paid >= 0
    assert (invoice.payment_status is PaymentStatus.SUCCEEDED) == (invoice.amount_remaining == 0)
