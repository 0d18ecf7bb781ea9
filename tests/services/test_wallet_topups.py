"""Wallet top-ups through the library, on every store: credits or money, reasons, expiry,
priority, idempotency (given and derived keys), bonus credits, and invoiced purchases that land
when their invoice is paid and fail when it is voided. Amounts exact; every scenario ends with
the cached balances checked against the ledger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Scoped, TestClock
from billingkit.domain.invoices import BillingReason, InvoiceStatus, InvoiceType, PaymentStatus
from billingkit.domain.wallets import TransactionReason, TransactionStatus, TransactionType, WalletStatus
from billingkit.errors import AlreadyExists, IdempotencyConflict, InvalidOperation, NotFound, ValidationError
from billingkit.testing.wallets import assert_wallets_balanced

D = Decimal
NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def customer_id(test_env: Scoped) -> str:
    return test_env.customers.create(external_id="c1", name="Ada").id


@pytest.fixture
def wallet_id(test_env: Scoped, customer_id: str) -> str:
    return test_env.wallets.create(customer_id=customer_id, currency="usd").id


def rows(env: Scoped, wallet_id: str) -> list[Any]:
    return list(env.wallets.transactions(wallet_id, order="asc", limit=100).items)


def count(env: Scoped, event_type: str) -> int:
    return env.notifications.list(event_type=event_type).total


def test_a_direct_top_up_lands_at_once(test_env: Scoped, wallet_id: str) -> None:
    done = test_env.wallets.top_up(
        wallet_id,
        credits_to_add="100",
        transaction_reason="PURCHASED_CREDIT_DIRECT",
        expiry_date_utc="2026-12-31T00:00:00Z",
        priority=2,
        description="March pack",
        metadata={"order": "42"},
    )
    assert (done.wallet.credit_balance, done.wallet.balance, done.invoice_id) == (D(100), D("100.00"), None)
    assert done.wallet.next_expiry_at == datetime(2026, 12, 31, tzinfo=UTC)
    row = done.wallet_transaction
    assert (row.type, row.transaction_status, row.transaction_reason) == (
        TransactionType.CREDIT,
        TransactionStatus.COMPLETED,
        TransactionReason.PURCHASED_CREDIT_DIRECT,
    )
    assert (row.credit_amount, row.amount, row.credits_available, row.priority, row.description) == (
        D(100),
        D("100.00"),
        D(100),
        2,
        "March pack",
    )
    assert (row.metadata, row.currency, row.conversion_rate, row.topup_conversion_rate) == (
        {"order": "42"},
        "usd",
        D(1),
        D(1),
    )
    assert (row.reference_type and row.reference_type.value, row.reference_id) == (
        "REQUEST",
        row.idempotency_key,
    )
    assert row.idempotency_key.startswith("wallet_topup|wallet_topup-")
    assert done.to_dict()["wallet_transaction"]["credit_amount"] == "100"
    assert "invoice_id" not in done.to_dict()
    (event,) = test_env.notifications.list(event_type="wallet.transaction.created").items
    assert event.payload["transaction"]["credit_amount"] == "100"
    assert (
        event.payload["transaction"]["credit_balance_before"],
        event.payload["transaction"]["credit_balance_after"],
    ) == ("0", "100")
    assert_wallets_balanced(test_env, wallet_id)


def test_money_buys_credits_at_the_top_up_rate(test_env: Scoped, customer_id: str) -> None:
    # 1 credit is worth 1 usd, but a top-up buys 1 credit for 0.40 usd: 10.00 usd buys 25 credits,
    # worth 25.00 in the wallet.
    wallet = test_env.wallets.create(customer_id=customer_id, currency="usd", topup_conversion_rate="0.4")
    done = test_env.wallets.top_up(wallet.id, amount="10.00", transaction_reason="PURCHASED_CREDIT_DIRECT")
    assert (done.wallet_transaction.credit_amount, done.wallet_transaction.amount) == (D(25), D("25.00"))
    assert (done.wallet.credit_balance, done.wallet.balance) == (D(25), D("25.00"))
    # credits_to_add wins over amount when both are given.
    both = test_env.wallets.top_up(
        wallet.id, credits_to_add="3", amount="999", transaction_reason="FREE_CREDIT_GRANT"
    )
    assert both.wallet.credit_balance == D(28)
    assert_wallets_balanced(test_env, wallet.id)


def test_the_same_request_within_a_second_is_one_top_up(
    test_env: Scoped, wallet_id: str, clock: TestClock
) -> None:
    first = test_env.wallets.top_up(wallet_id, credits_to_add="10", transaction_reason="FREE_CREDIT_GRANT")
    clock.advance(timedelta(milliseconds=400))
    again = test_env.wallets.top_up(wallet_id, credits_to_add="10.00", transaction_reason="FREE_CREDIT_GRANT")
    assert again.wallet_transaction.id == first.wallet_transaction.id
    assert again.wallet.credit_balance == D(10) and len(rows(test_env, wallet_id)) == 1
    assert count(test_env, "wallet.transaction.created") == 1
    # Another second, other credits or another reason: another top-up.
    clock.advance(timedelta(seconds=1))
    later = test_env.wallets.top_up(wallet_id, credits_to_add="10", transaction_reason="FREE_CREDIT_GRANT")
    other = test_env.wallets.top_up(
        wallet_id, credits_to_add="10", transaction_reason="PURCHASED_CREDIT_DIRECT"
    )
    assert len({first.wallet_transaction.id, later.wallet_transaction.id, other.wallet_transaction.id}) == 3
    assert test_env.wallets.get(wallet_id).credit_balance == D(30)
    assert_wallets_balanced(test_env, wallet_id)


def test_a_given_idempotency_key_is_one_top_up_whatever_the_time(
    test_env: Scoped, customer_id: str, wallet_id: str, clock: TestClock
) -> None:
    first = test_env.wallets.top_up(
        wallet_id, credits_to_add="10", transaction_reason="FREE_CREDIT_GRANT", idempotency_key="order-1"
    )
    assert first.wallet_transaction.idempotency_key == "wallet_topup|order-1"
    clock.advance(timedelta(hours=1))
    again = test_env.wallets.top_up(
        wallet_id, credits_to_add="10", transaction_reason="FREE_CREDIT_GRANT", idempotency_key="order-1"
    )
    assert again.wallet_transaction == first.wallet_transaction and again.wallet.credit_balance == D(10)
    with pytest.raises(IdempotencyConflict) as conflict:
        test_env.wallets.top_up(
            wallet_id, credits_to_add="11", transaction_reason="FREE_CREDIT_GRANT", idempotency_key="order-1"
        )
    assert conflict.value.details["wallet_transaction_id"] == first.wallet_transaction.id
    with pytest.raises(IdempotencyConflict):
        test_env.wallets.top_up(
            wallet_id, credits_to_add="10", transaction_reason="CREDIT_NOTE", idempotency_key="order-1"
        )
    other = test_env.wallets.create(customer_id=customer_id, currency="eur")
    with pytest.raises(AlreadyExists):
        test_env.wallets.top_up(
            other.id, credits_to_add="10", transaction_reason="FREE_CREDIT_GRANT", idempotency_key="order-1"
        )
    assert len(rows(test_env, wallet_id)) == 1 and rows(test_env, other.id) == []
    assert_wallets_balanced(test_env)


def test_bonus_credits_are_a_second_row_earned_with_the_purchase(test_env: Scoped, wallet_id: str) -> None:
    done = test_env.wallets.top_up(
        wallet_id,
        credits_to_add="100",
        transaction_reason="PURCHASED_CREDIT_DIRECT",
        bonus_credits_to_add="15",
        bonus_credits_expiry_date_utc="2026-06-01T00:00:00Z",
        priority=1,
    )
    purchase, bonus = rows(test_env, wallet_id)
    assert purchase.id == done.wallet_transaction.id
    assert (bonus.transaction_reason, bonus.credit_amount, bonus.parent_transaction_id) == (
        TransactionReason.PURCHASED_CREDIT_BONUS,
        D(15),
        purchase.id,
    )
    assert (bonus.expiry_date, purchase.expiry_date, bonus.priority) == (
        datetime(2026, 6, 1, tzinfo=UTC),
        None,
        1,
    )
    assert bonus.idempotency_key == f"wallet_topup_bonus|{purchase.id}"
    assert done.wallet.credit_balance == D(115)
    assert done.wallet.next_expiry_at == datetime(2026, 6, 1, tzinfo=UTC)
    assert_wallets_balanced(test_env, wallet_id)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"transaction_reason": "CREDIT_EXPIRED"}, "transaction_reason"),
        ({"transaction_reason": "PURCHASED_CREDIT_BONUS"}, "transaction_reason"),
        ({"transaction_reason": "NOT_A_REASON"}, "transaction_reason"),
        ({"credits_to_add": None}, "credits_to_add"),
        ({"credits_to_add": "0"}, "credits_to_add"),
        ({"credits_to_add": None, "amount": "-1"}, "amount"),
        ({"expiry_date_utc": "2026-05-01T09:30:00Z"}, "expiry_date_utc"),  # now is not the future
        ({"priority": -1}, "priority"),
        ({"idempotency_key": "a|b"}, "idempotency_key"),
        ({"checkout": {"payment_provider": "razorpay"}}, "checkout"),
        ({"bonus_credits_to_add": "5"}, "bonus_credits_to_add"),  # a grant earns no bonus
        (
            {"transaction_reason": "PURCHASED_CREDIT_DIRECT", "bonus_credits_to_add": "0"},
            "bonus_credits_to_add",
        ),
        ({"bonus_credits_expiry_date_utc": "2027-01-01T00:00:00Z"}, "bonus_credits_expiry_date_utc"),
        (
            {
                "transaction_reason": "PURCHASED_CREDIT_DIRECT",
                "bonus_credits_to_add": "5",
                "bonus_credits_expiry_date_utc": "2026-01-01T00:00:00Z",
            },
            "bonus_credits_expiry_date_utc",
        ),
        ({"transaction_reason": "PURCHASED_CREDIT_INVOICED", "credits_to_add": "0.001"}, "credits_to_add"),
    ],
)
def test_a_bad_top_up_is_refused_and_writes_nothing(
    test_env: Scoped, wallet_id: str, fields: dict[str, Any], field: str
) -> None:
    body: dict[str, Any] = {"credits_to_add": "10", "transaction_reason": "FREE_CREDIT_GRANT", **fields}
    with pytest.raises(ValidationError) as raised:
        test_env.wallets.top_up(wallet_id, **{k: v for k, v in body.items() if v is not None})
    assert raised.value.field == field
    assert rows(test_env, wallet_id) == []
    assert test_env.invoices.list().total == 0
    assert test_env.wallets.get(wallet_id).credit_balance == 0


def test_a_frozen_wallet_takes_no_top_up(test_env: Scoped, wallet_id: str) -> None:
    with test_env.billing.storage.unit_of_work(test_env.tenant_id, test_env.environment_id) as uow:
        wallet = uow.wallets.get(wallet_id)
        uow.wallets.update(wallet.model_copy(update={"wallet_status": WalletStatus.FROZEN}))
        uow.commit()
    with pytest.raises(InvalidOperation, match="frozen"):
        test_env.wallets.top_up(wallet_id, credits_to_add="10", transaction_reason="FREE_CREDIT_GRANT")
    assert rows(test_env, wallet_id) == []
    with pytest.raises(NotFound):
        test_env.wallets.top_up("wallet_nope", credits_to_add="10", transaction_reason="FREE_CREDIT_GRANT")


def test_an_invoiced_purchase_lands_once_when_its_invoice_is_paid(test_env: Scoped, customer_id: str) -> None:
    # 1 credit sells for 0.40 usd and is worth 1 usd: 25 credits cost 10.00; a bonus of 5 comes with them.
    test_env.tax_rates.create(name="VAT", code="VAT20", percentage_value="20")
    test_env.tax_associations.create(tax_rate_code="VAT20", entity_type="customer", entity_id=customer_id)
    wallet = test_env.wallets.create(
        customer_id=customer_id, currency="usd", topup_conversion_rate="0.4", initial_credits_to_load="1"
    )
    bought = test_env.wallets.top_up(
        wallet.id,
        credits_to_add="25",
        transaction_reason="PURCHASED_CREDIT_INVOICED",
        bonus_credits_to_add="5",
    )
    purchase = bought.wallet_transaction
    assert (purchase.transaction_status, purchase.credits_available, bought.wallet.credit_balance) == (
        TransactionStatus.PENDING,
        D(0),
        D(1),
    )
    assert (purchase.reference_type and purchase.reference_type.value, purchase.reference_id) == (
        "INVOICE",
        bought.invoice_id,
    )
    invoice = test_env.invoices.get(str(bought.invoice_id))
    assert (invoice.invoice_type, invoice.billing_reason, invoice.invoice_status, invoice.payment_status) == (
        InvoiceType.CREDIT,
        BillingReason.MANUAL,
        InvoiceStatus.FINALIZED,
        PaymentStatus.PENDING,
    )
    # Untaxed, although the customer has a tax association: the invoice sells exactly the credits.
    assert (invoice.currency, invoice.subtotal, invoice.total_tax, invoice.amount_due) == (
        "usd",
        D("10.00"),
        D(0),
        D("10.00"),
    )
    (line,) = invoice.line_items
    assert (line.display_name, line.amount, line.quantity, line.price_type and line.price_type.value) == (
        "Wallet top-up",
        D("10.00"),
        D(1),
        "FIXED",
    )
    assert invoice.metadata == {"wallet_transaction_id": purchase.id, "wallet_id": wallet.id}
    assert invoice.invoice_number is not None
    bonus = rows(test_env, wallet.id)[-1]
    assert (bonus.transaction_reason, bonus.transaction_status) == (
        TransactionReason.PURCHASED_CREDIT_BONUS,
        TransactionStatus.PENDING,
    )

    # The same request again (same second): the same purchase and invoice, nothing new.
    again = test_env.wallets.top_up(
        wallet.id,
        credits_to_add="25",
        transaction_reason="PURCHASED_CREDIT_INVOICED",
        bonus_credits_to_add="5",
    )
    assert (again.wallet_transaction.id, again.invoice_id) == (purchase.id, bought.invoice_id)
    assert test_env.invoices.list().total == 1 and len(rows(test_env, wallet.id)) == 3

    paid = test_env.invoices.update_payment(str(bought.invoice_id), payment_status="SUCCEEDED")
    assert paid.payment_status is PaymentStatus.SUCCEEDED
    landed = test_env.wallets.get(wallet.id)
    assert (landed.credit_balance, landed.balance) == (D(31), D("31.00"))  # 1 + 25 + 5
    statuses = {row.id: (row.transaction_status, row.credits_available) for row in rows(test_env, wallet.id)}
    assert statuses[purchase.id] == (TransactionStatus.COMPLETED, D(25))
    assert statuses[bonus.id] == (TransactionStatus.COMPLETED, D(5))
    updated = [
        e.payload["updated_transaction"]
        for e in test_env.notifications.list(event_type="wallet.transaction.updated").items
    ]
    assert [(u["id"], u["transaction_status"]) for u in updated] == [
        (purchase.id, "completed"),
        (bonus.id, "completed"),
    ]

    # Paying again moves nothing.
    test_env.invoices.update_payment(str(bought.invoice_id), payment_status="SUCCEEDED")
    assert test_env.wallets.get(wallet.id).credit_balance == D(31)
    assert count(test_env, "wallet.transaction.updated") == 2
    assert_wallets_balanced(test_env, wallet.id)


def test_an_invoiced_purchase_by_amount_and_a_partial_payment(test_env: Scoped, customer_id: str) -> None:
    wallet = test_env.wallets.create(customer_id=customer_id, currency="usd", topup_conversion_rate="3")
    # 10.00 usd at 3 usd a credit: 3.3333333333 credits, sold for exactly the 10.00 asked.
    bought = test_env.wallets.top_up(
        wallet.id, amount="10.00", transaction_reason="PURCHASED_CREDIT_INVOICED"
    )
    assert bought.wallet_transaction.credit_amount == D("3.3333333333")
    invoice = test_env.invoices.get(str(bought.invoice_id))
    assert invoice.amount_due == D("10.00")
    test_env.invoices.update_payment(invoice.id, payment_status="PENDING", amount="4.00")
    assert test_env.wallets.get(wallet.id).credit_balance == 0  # not paid in full: nothing lands
    test_env.invoices.update_payment(invoice.id, payment_status="SUCCEEDED")
    assert test_env.wallets.get(wallet.id).credit_balance == D("3.3333333333")
    assert_wallets_balanced(test_env, wallet.id)


def test_voiding_the_unpaid_invoice_fails_the_purchase_and_its_bonus(
    test_env: Scoped, wallet_id: str
) -> None:
    bought = test_env.wallets.top_up(
        wallet_id,
        credits_to_add="20",
        transaction_reason="PURCHASED_CREDIT_INVOICED",
        bonus_credits_to_add="2",
    )
    test_env.invoices.void(str(bought.invoice_id))
    assert [(r.transaction_status, r.credits_available) for r in rows(test_env, wallet_id)] == [
        (TransactionStatus.FAILED, D(0)),
        (TransactionStatus.FAILED, D(0)),
    ]
    assert test_env.wallets.get(wallet_id).credit_balance == 0
    assert count(test_env, "wallet.transaction.updated") == 2
    failed = test_env.wallets.transactions(wallet_id, transaction_status="failed")
    assert failed.total == 2
    assert_wallets_balanced(test_env, wallet_id)


def test_an_invoice_that_sold_credits_is_never_voided_or_credited_once_they_landed(
    test_env: Scoped, wallet_id: str
) -> None:
    # A void refund or a refund note pays the PRE_PAID wallet: on a paid credit sale the customer
    # would hold the credits and the money back as credits too.
    bought = test_env.wallets.top_up(
        wallet_id, credits_to_add="20", transaction_reason="PURCHASED_CREDIT_INVOICED"
    )
    invoice_id = str(bought.invoice_id)
    (line,) = test_env.invoices.get(invoice_id).line_items
    note = {
        "invoice_id": invoice_id,
        "reason": "BILLING_ERROR",
        "line_items": [{"invoice_line_item_id": line.id, "amount": "5"}],
    }
    with pytest.raises(InvalidOperation, match="void it while it is unpaid instead"):
        test_env.credit_notes.create(**note)  # an adjustment would sell the credits for less
    test_env.invoices.update_payment(invoice_id, payment_status="SUCCEEDED")
    assert test_env.wallets.get(wallet_id).credit_balance == D(20)
    with pytest.raises(InvalidOperation, match="have landed in wallet") as refused:
        test_env.invoices.void(invoice_id)
    assert refused.value.details["wallet_id"] == wallet_id
    with pytest.raises(InvalidOperation, match="cannot be credited"):
        test_env.credit_notes.create(**note)
    invoice = test_env.invoices.get(invoice_id)
    assert (invoice.invoice_status, invoice.refunded_amount) == (InvoiceStatus.FINALIZED, D(0))
    assert test_env.wallets.get(wallet_id).credit_balance == D(20)
    assert test_env.credit_notes.list().total == 0
    assert_wallets_balanced(test_env, wallet_id)
