"""Credit notes through the library, on every store: refunds to the PRE_PAID wallet, adjustments
of what is due, idempotent creation (spec rule 2), the recheck at finalization (rule 3), void,
numbers, lists, and every refusal writing nothing. Amounts are exact, with the arithmetic next
to them."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, CreditNote, Invoice, Scoped
from billingkit.domain.queries import ListQuery
from billingkit.domain.wallets import TransactionReason, TransactionReferenceType, TransactionType, Wallet
from billingkit.errors import (
    AlreadyExists,
    IdempotencyConflict,
    InvalidOperation,
    NotFound,
    PermissionDenied,
    ValidationError,
    VersionConflict,
)
from billingkit.facade.operations import run_retrying
from billingkit.services.access import BootstrapResult

D = Decimal


@pytest.fixture
def env(billing: Billing, setup: BootstrapResult) -> Scoped:
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


@pytest.fixture
def customer_id(env: Scoped) -> str:
    return env.customers.create(external_id="c1", name="Ada").id


def invoice(env: Scoped, customer_id: str, *amounts: str, paid: bool = True) -> Invoice:
    """A finalized direct invoice of ``amounts`` (one line each), paid in full by hand unless not."""
    total = str(sum((D(a) for a in amounts), D(0)))
    created = env.invoices.create(
        customer_id=customer_id,
        currency="usd",
        line_items=[
            {"amount": a, "quantity": "1", "display_name": f"Item {i}", "price_id": f"price_{i}"}
            for i, a in enumerate(amounts)
        ],
        subtotal=total,
        total=total,
        amount_due=total,
    )
    return env.invoices.update_payment(created.id, payment_status="SUCCEEDED") if paid else created


def note(env: Scoped, inv: Invoice, *amounts: str, **fields: Any) -> CreditNote:
    body: dict[str, Any] = {
        "invoice_id": inv.id,
        "reason": "BILLING_ERROR",
        "line_items": [
            {"invoice_line_item_id": line.id, "amount": a}
            for line, a in zip(inv.line_items, amounts, strict=False)
        ],
    }
    return env.credit_notes.create(**{**body, **fields})


def wallets(env: Scoped) -> list[Wallet]:
    with env.billing.storage.unit_of_work(env.tenant_id, env.environment_id) as uow:
        return list(uow.wallets.list(ListQuery()).items)


def ledger(env: Scoped) -> list[Any]:
    with env.billing.storage.unit_of_work(env.tenant_id, env.environment_id) as uow:
        return list(uow.wallet_transactions.list(ListQuery(status=None)).items)


def events(env: Scoped) -> list[str]:
    return [e.event_type for e in env.notifications.list(limit=500).items]


def state(env: Scoped) -> tuple[int, list[str], int, list[Wallet]]:
    """What a refused call must leave unchanged: notes, notifications, ledger rows, wallets."""
    return env.credit_notes.list().total, events(env), len(ledger(env)), wallets(env)


def test_a_refund_note_pays_the_prepaid_wallet_and_marks_the_invoice(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00")
    before = events(env)
    cn = note(env, inv, "70.00", memo="double charge", metadata={"ticket": "T-1"})

    assert (cn.credit_note_type.value, cn.credit_note_status.value, cn.refund_status) == (
        "REFUND",
        "FINALIZED",
        "SUCCEEDED",
    )
    assert (cn.total_amount, cn.currency, cn.credit_note_number) == (D("70.00"), "usd", "CN-202605-00001")
    assert (cn.customer_id, cn.memo, cn.metadata, cn.finalized_at) == (
        customer_id,
        "double charge",
        {"ticket": "T-1"},
        env.billing.clock.now(),
    )
    (line,) = cn.line_items
    assert (line.invoice_line_item_id, line.amount, line.display_name) == (
        inv.line_items[0].id,
        D("70.00"),
        "Item 0",
    )

    after = env.invoices.get(inv.id)
    # paid 100.00, refunded 70.00: partially refunded; what was due does not move
    assert (after.refunded_amount, after.payment_status.value, after.amount_due, after.amount_remaining) == (
        D("70.00"),
        "PARTIALLY_REFUNDED",
        D("100.00"),
        D("0"),
    )
    (wallet,) = wallets(env)
    assert (wallet.customer_id, wallet.currency, wallet.wallet_type.value, wallet.credit_balance) == (
        customer_id,
        "usd",
        "PRE_PAID",
        D("70.00"),
    )
    (row,) = ledger(env)
    assert (row.type, row.credit_amount, row.amount, row.transaction_reason) == (
        TransactionType.CREDIT,
        D("70.00"),
        D("70.00"),
        TransactionReason.CREDIT_NOTE,
    )
    assert (row.idempotency_key, row.reference_type, row.reference_id, row.metadata) == (
        f"credit_note|{cn.id}",
        TransactionReferenceType.INVOICE,
        inv.id,
        {"credit_note_id": cn.id},
    )
    assert events(env)[len(before) :] == [
        "credit_note.created",
        "wallet.created",
        "wallet.transaction.created",
        "invoice.update.payment",
        "credit_note.updated",
    ]
    payload = env.notifications.list(event_type="credit_note.updated").items[0].payload
    assert payload["credit_note"]["total_amount"] == "70.00"
    assert payload["credit_note"]["credit_note_status"] == "FINALIZED"


def test_refunding_the_rest_refunds_the_invoice_and_then_nothing_is_left(
    env: Scoped, customer_id: str
) -> None:
    inv = invoice(env, customer_id, "60.00", "40.00")
    note(env, inv, "60.00")
    second = note(
        env,
        inv,
        "0",
        reason="DUPLICATE",
        line_items=[{"invoice_line_item_id": inv.line_items[1].id, "amount": "40"}],
    )
    assert second.credit_note_number == "CN-202605-00002"
    after = env.invoices.get(inv.id)
    assert (after.refunded_amount, after.payment_status.value) == (D("100.00"), "REFUNDED")
    assert wallets(env)[0].credit_balance == D("100.00")  # one wallet, both refunds
    with pytest.raises(InvalidOperation, match="REFUNDED: nothing is left to credit"):
        note(env, inv, "1.00", reason="FRAUDULENT")


def test_an_adjustment_lowers_what_is_due_until_nothing_is(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00", paid=False)
    first = note(env, inv, "30.00")
    assert (first.credit_note_type.value, first.refund_status) == ("ADJUSTMENT", None)
    after = env.invoices.get(inv.id)
    # due 100.00 - 30.00 = 70.00, still to collect
    assert (
        after.adjustment_amount,
        after.amount_due,
        after.amount_remaining,
        after.payment_status.value,
    ) == (
        D("30.00"),
        D("70.00"),
        D("70.00"),
        "PENDING",
    )
    assert wallets(env) == []  # an adjustment moves no money
    with pytest.raises(InvalidOperation, match=r"exceeds the amount still due of invoice .*: 70.00 usd"):
        note(env, inv, "70.01", reason="DUPLICATE")
    note(env, inv, "70.00", reason="DUPLICATE")
    settled = env.invoices.get(inv.id)
    assert (
        settled.adjustment_amount,
        settled.amount_due,
        settled.amount_remaining,
        settled.payment_status.value,
    ) == (
        D("100.00"),
        D("0.00"),
        D("0.00"),
        "SUCCEEDED",
    )
    assert events(env)[-2:] == ["invoice.update.payment", "credit_note.updated"]


def test_a_partly_paid_invoice_is_adjusted_down_to_what_was_paid(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00", paid=False)
    env.invoices.update_payment(inv.id, payment_status="PENDING", amount="40.00")
    cn = note(env, inv, "60.00")
    assert cn.credit_note_type.value == "ADJUSTMENT"
    after = env.invoices.get(inv.id)
    assert (after.amount_due, after.amount_paid, after.amount_remaining, after.payment_status.value) == (
        D("40.00"),
        D("40.00"),
        D("0.00"),
        "SUCCEEDED",
    )


def test_a_repeated_request_answers_the_first_note_and_records_nothing(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00")
    first = note(env, inv, "70.00")
    seen = state(env)
    again = note(env, inv, "70")  # the same content: 70 is 70.00
    assert again == first
    assert state(env) == seen  # no second credit_note.created, no second refund
    assert env.invoices.get(inv.id).refunded_amount == D("70.00")


def test_a_repeated_request_does_not_finalize_the_first_draft(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00")
    draft = note(env, inv, "70.00", process_credit_note=False)
    seen = state(env)
    again = note(env, inv, "70.00")  # process_credit_note defaults to true
    assert (again.id, again.credit_note_status.value) == (draft.id, "DRAFT")
    assert state(env) == seen


def test_the_callers_key_holds_its_first_content(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00")
    first = note(env, inv, "10.00", idempotency_key="refund-42")
    assert first.idempotency_key == "refund-42"
    assert note(env, inv, "10.00", idempotency_key="refund-42", memo="memo is not content") == first
    seen = state(env)
    with pytest.raises(IdempotencyConflict, match="refund-42") as raised:
        note(env, inv, "20.00", idempotency_key="refund-42")
    assert raised.value.details["credit_note_id"] == first.id
    assert state(env) == seen
    # the same content under another key is another note
    other = note(env, inv, "10.00", idempotency_key="refund-43")
    assert other.id != first.id and env.invoices.get(inv.id).refunded_amount == D("20.00")


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"invoice_id": "inv_missing"}, NotFound, "invoice inv_missing not found"),
        ({"line_items": []}, ValidationError, "at least one line item"),
        ({"line_items": [{"invoice_line_item_id": "li_x", "amount": "1"}]}, ValidationError, "not a line of"),
        ({"amount": "0"}, ValidationError, "greater than 0"),
        ({"amount": "1.005"}, ValidationError, "more decimals than usd"),
        ({"amount": "100.01"}, InvalidOperation, "exceeds the refundable amount"),
        ({"reason": "BORED"}, ValidationError, "reason"),
        ({"credit_note_number": "CN-202605-00009"}, ValidationError, "has the form of the numbers"),
    ],
)
def test_a_refused_create_writes_nothing(
    env: Scoped, customer_id: str, change: dict[str, Any], error: type[Exception], match: str
) -> None:
    inv = invoice(env, customer_id, "100.00")
    change = dict(change)
    body: dict[str, Any] = {
        "invoice_id": inv.id,
        "reason": "BILLING_ERROR",
        "line_items": [
            {"invoice_line_item_id": inv.line_items[0].id, "amount": change.pop("amount", "10.00")}
        ],
    }
    seen = state(env)
    with pytest.raises(error, match=match):
        env.credit_notes.create(**{**body, **change})
    assert state(env) == seen
    assert env.invoices.get(inv.id).version == inv.version


def test_only_a_finalized_invoice_is_credited(env: Scoped, customer_id: str) -> None:
    draft = env.invoices.create(
        customer_id=customer_id,
        currency="usd",
        invoice_status="DRAFT",
        line_items=[{"amount": "10", "quantity": "1", "display_name": "Item", "price_id": "p"}],
        subtotal="10",
        total="10",
        amount_due="10",
    )
    seen = state(env)
    with pytest.raises(InvalidOperation, match="is DRAFT: only a FINALIZED invoice is credited"):
        note(env, draft, "5")
    assert state(env) == seen
    voided = env.invoices.void(draft.id)
    seen = state(env)
    with pytest.raises(InvalidOperation, match="is VOIDED"):
        note(env, voided, "5")
    assert state(env) == seen


def test_a_draft_moves_nothing_until_finalized(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00")
    draft = note(env, inv, "70.00", process_credit_note=False)
    assert (
        draft.credit_note_status.value,
        draft.credit_note_number,
        draft.refund_status,
        draft.finalized_at,
    ) == (
        "DRAFT",
        None,
        "PENDING",
        None,
    )
    assert env.invoices.get(inv.id).version == inv.version and wallets(env) == []
    done = env.credit_notes.finalize(draft.id)
    assert (done.credit_note_status.value, done.credit_note_number, done.refund_status) == (
        "FINALIZED",
        "CN-202605-00001",
        "SUCCEEDED",
    )
    assert env.credit_notes.get(draft.id) == done
    assert wallets(env)[0].credit_balance == D("70.00")
    with pytest.raises(InvalidOperation, match="is FINALIZED: only a DRAFT is finalized"):
        env.credit_notes.finalize(draft.id)
    with pytest.raises(InvalidOperation, match="only a DRAFT credit note can be voided"):
        env.credit_notes.void(draft.id)


def test_finalize_rechecks_the_capacity_and_a_refusal_takes_no_number(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00")
    first = note(env, inv, "70.00", idempotency_key="a", process_credit_note=False)
    second = note(env, inv, "70.00", idempotency_key="b", process_credit_note=False)  # drafts both fit
    env.credit_notes.finalize(first.id)
    seen = state(env)
    with pytest.raises(InvalidOperation, match=r"exceeds the refundable amount of invoice .*: 30.00 usd"):
        env.credit_notes.finalize(second.id)
    assert state(env) == seen
    assert env.credit_notes.get(second.id).credit_note_status.value == "DRAFT"
    voided = env.credit_notes.void(second.id)
    assert (voided.credit_note_status.value, voided.refund_status, voided.voided_at) == (
        "VOIDED",
        "VOIDED",
        env.billing.clock.now(),
    )
    assert events(env)[-1] == "credit_note.updated"
    with pytest.raises(InvalidOperation, match="already voided"):
        env.credit_notes.void(second.id)
    with pytest.raises(InvalidOperation, match="VOIDED: only a DRAFT is finalized"):
        env.credit_notes.finalize(second.id)
    # the refused finalize gave its number back: the next note is 00002, no gap
    third = note(env, inv, "30.00", idempotency_key="c")
    assert third.credit_note_number == "CN-202605-00002"
    assert wallets(env)[0].credit_balance == D("100.00")


def test_a_voided_invoice_refuses_the_finalization_of_its_drafts(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00", paid=False)
    draft = note(env, inv, "10.00", process_credit_note=False)
    env.invoices.void(inv.id)
    with pytest.raises(InvalidOperation, match="is VOIDED: only a FINALIZED invoice is credited"):
        env.credit_notes.finalize(draft.id)


def test_a_number_of_ones_own_is_kept_and_unique(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00")
    mine = note(env, inv, "10.00", credit_note_number="REF-1")
    assert mine.credit_note_number == "REF-1"
    seen = state(env)
    with pytest.raises(AlreadyExists):
        note(env, inv, "20.00", credit_note_number="REF-1")
    assert state(env) == seen
    assert note(env, inv, "20.00").credit_note_number == "CN-202605-00001"


def test_list_filters(env: Scoped, customer_id: str) -> None:
    paid = invoice(env, customer_id, "100.00")
    due = invoice(env, customer_id, "50.00", paid=False)
    refund = note(env, paid, "10.00")
    draft = note(env, paid, "20.00", process_credit_note=False)
    adjustment = note(env, due, "5.00")
    other = env.customers.create(external_id="c2", name="Bob").id

    def ids(**search: Any) -> set[str]:
        return {n.id for n in env.credit_notes.list(**search).items}

    assert ids() == {refund.id, draft.id, adjustment.id}
    assert ids(invoice_id=paid.id) == {refund.id, draft.id}
    assert ids(invoice_ids=[due.id]) == {adjustment.id}
    assert ids(credit_note_status=["DRAFT"]) == {draft.id}
    assert ids(credit_note_type="ADJUSTMENT") == {adjustment.id}
    assert ids(customer_id=customer_id) == {refund.id, draft.id, adjustment.id}
    assert ids(customer_id=other) == set()
    page = env.credit_notes.list(limit=2, offset=1)
    assert (len(page.items), page.total, page.offset) == (2, 3, 1)


def test_a_reader_may_read_but_not_credit(billing: Billing, env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id, "100.00")
    cn = note(env, inv, "10.00")
    account, _ = env.users.create(type="service_account", name="reader", roles=["all_reader"])
    reader = billing.authenticate(env.api_keys.create(name="k", service_account_id=account.id).api_key)
    assert reader.credit_notes.get(cn.id) == cn
    seen = state(env)
    with pytest.raises(PermissionDenied):
        note(reader, inv, "1.00", reason="DUPLICATE")
    with pytest.raises(PermissionDenied):
        reader.credit_notes.void(cn.id)
    assert state(env) == seen


class _Flaky:
    """A service that conflicts ``times`` times, then answers how often it ran."""

    def __init__(self, times: int) -> None:
        self.times, self.calls = times, 0

    def __call__(self, uow: Any, ctx: Any) -> int:
        self.calls += 1
        if self.calls <= self.times:
            raise VersionConflict("changed meanwhile")
        return self.calls


def test_a_conflict_reruns_in_a_new_unit_of_work_then_propagates(env: Scoped) -> None:
    assert run_retrying(env, _Flaky(2), 3) == 3
    flaky = _Flaky(5)
    with pytest.raises(VersionConflict):
        run_retrying(env, flaky, 3)
    assert flaky.calls == 4  # the first run and three reruns
