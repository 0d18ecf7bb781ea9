"""Wallets through the library, on every store: create (initial credits, one open wallet per
type, currency and rate), read, list, search, update, terminate. Amounts exact; after every
scenario each wallet's cached balance is checked against the sum of its ledger rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Scoped, TestClock
from billingkit.domain.wallets import TransactionReason, TransactionStatus, TransactionType, WalletStatus
from billingkit.errors import AlreadyExists, InvalidOperation, NotFound, ValidationError
from billingkit.testing.wallets import assert_wallets_balanced

D = Decimal
NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def customer_id(test_env: Scoped) -> str:
    return test_env.customers.create(external_id="c1", name="Ada").id


def events(env: Scoped, event_type: str) -> list[dict[str, Any]]:
    return [e.payload for e in env.notifications.list(event_type=event_type, limit=100).items]


def wallet_count(env: Scoped) -> int:
    return env.wallets.search().total


def test_create_answers_the_wallet_with_its_balance_and_lands_initial_credits(
    test_env: Scoped, customer_id: str
) -> None:
    wallet = test_env.wallets.create(
        customer_id=customer_id,
        currency="USD",
        name="Prepaid",
        conversion_rate="2",
        initial_credits_to_load="50",
        initial_credits_to_load_expiry_date=20260630,
        metadata={"team": "a"},
        config={"allowed_price_types": ["USAGE"]},
        auto_topup={
            "enabled": True,
            "threshold": "10",
            "amount": "100",
            "cooldown": {"unit": "day", "value": 1},
        },
        alert_settings={"alert_enabled": True, "critical": {"threshold": "5", "condition": "below"}},
    )
    assert (wallet.currency, wallet.wallet_type.value, wallet.wallet_status.value) == (
        "usd",
        "PRE_PAID",
        "active",
    )
    # 50 credits at 2 usd a credit are worth 100.00; the top-up rate defaults to the conversion rate.
    assert (wallet.credit_balance, wallet.balance, wallet.topup_conversion_rate) == (D(50), D("100.00"), D(2))
    assert wallet.next_expiry_at == datetime(2026, 6, 30, 23, 59, 59, tzinfo=UTC)
    data = wallet.to_dict()
    assert (data["balance"], data["credit_balance"], data["config"]) == (
        "100.00",
        "50",
        {"allowed_price_types": ["USAGE"]},
    )
    assert data["auto_topup"] == {
        "enabled": True,
        "threshold": "10",
        "amount": "100",
        "invoicing": False,
        "cooldown": {"unit": "day", "value": 1},
    }
    assert test_env.wallets.get(wallet.id) == wallet

    (row,) = test_env.wallets.transactions(wallet.id).items
    assert (row.type, row.transaction_reason, row.credit_amount, row.amount) == (
        TransactionType.CREDIT,
        TransactionReason.FREE_CREDIT_GRANT,
        D(50),
        D("100.00"),
    )
    assert (row.credits_available, row.expiry_date, row.idempotency_key) == (
        D(50),
        datetime(2026, 6, 30, 23, 59, 59, tzinfo=UTC),
        f"wallet_initial_credits|{wallet.id}",
    )
    (created,) = events(test_env, "wallet.created")
    assert created["wallet"]["id"] == wallet.id and created["wallet"]["wallet_type"] == "PRE_PAID"
    (moved,) = events(test_env, "wallet.transaction.created")
    assert moved["transaction"]["credit_amount"] == "50" and moved["transaction"]["wallet_id"] == wallet.id
    assert_wallets_balanced(test_env, wallet.id)


def test_create_by_external_id_with_a_separate_top_up_rate(test_env: Scoped, customer_id: str) -> None:
    wallet = test_env.wallets.create(
        external_customer_id="c1", currency="eur", wallet_type="POST_PAID", topup_conversion_rate="0.5"
    )
    assert (
        wallet.customer_id,
        wallet.wallet_type.value,
        wallet.conversion_rate,
        wallet.topup_conversion_rate,
    ) == (
        customer_id,
        "POST_PAID",
        D(1),
        D("0.5"),
    )
    assert (wallet.credit_balance, wallet.balance) == (D(0), D("0.00"))
    assert test_env.wallets.transactions(wallet.id).total == 0


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "customer_id"),
        ({"customer_id": "<c>", "conversion_rate": "0"}, "conversion_rate"),
        ({"customer_id": "<c>", "topup_conversion_rate": "-1"}, "topup_conversion_rate"),
        ({"customer_id": "<c>", "initial_credits_to_load": "-5"}, "initial_credits_to_load"),
        (
            {
                "customer_id": "<c>",
                "initial_credits_to_load": "5",
                "initial_credits_to_load_expiry_date": 20260230,
            },
            "initial_credits_to_load_expiry_date",
        ),
        (
            # yesterday: credits that expire in the past
            {
                "customer_id": "<c>",
                "initial_credits_to_load": "5",
                "initial_credits_to_load_expiry_date": 20260430,
            },
            "initial_credits_to_load_expiry_date",
        ),
        (
            {
                "customer_id": "<c>",
                "initial_credits_to_load": "5",
                "initial_credits_expiry_date_utc": "2026-05-01T09:00:00Z",
            },
            "initial_credits_expiry_date_utc",
        ),
        ({"customer_id": "<c>", "auto_topup": {"enabled": True, "amount": "10"}}, "auto_topup.threshold"),
        ({"customer_id": "<c>", "config": {"allowed_price_types": []}}, "config.allowed_price_types"),
        ({"customer_id": "<c>", "external_customer_id": "other"}, "external_customer_id"),
        ({"customer_id": "<c>", "price_unit": "pts"}, "price_unit"),
        ({"customer_id": "<c>", "wallet_type": "SOMETIMES"}, "wallet_type"),
    ],
)
def test_create_refuses_bad_input_and_writes_nothing(
    test_env: Scoped, customer_id: str, fields: dict[str, Any], field: str
) -> None:
    body = {"currency": "usd", **{k: customer_id if v == "<c>" else v for k, v in fields.items()}}
    with pytest.raises(ValidationError) as raised:
        test_env.wallets.create(**body)
    assert raised.value.field == field
    assert wallet_count(test_env) == 0
    assert test_env.notifications.list(event_type="wallet.created").total == 0


def test_an_unknown_customer_is_not_found(test_env: Scoped) -> None:
    with pytest.raises(NotFound):
        test_env.wallets.create(customer_id="cust_nope", currency="usd")
    with pytest.raises(NotFound):
        test_env.wallets.create(external_customer_id="nope", currency="usd")
    assert wallet_count(test_env) == 0


def test_one_open_wallet_per_type_currency_and_rate(test_env: Scoped, customer_id: str) -> None:
    first = test_env.wallets.create(customer_id=customer_id, currency="usd")
    with pytest.raises(AlreadyExists) as raised:
        test_env.wallets.create(customer_id=customer_id, currency="usd", initial_credits_to_load="5")
    assert raised.value.details["wallet_id"] == first.id
    # Another rate, another currency or another type is another wallet.
    at_two = test_env.wallets.create(customer_id=customer_id, currency="usd", conversion_rate="2")
    in_eur = test_env.wallets.create(customer_id=customer_id, currency="eur")
    post = test_env.wallets.create(customer_id=customer_id, currency="usd", wallet_type="POST_PAID")
    # A closed wallet no longer counts.
    test_env.wallets.terminate(first.id)
    again = test_env.wallets.create(customer_id=customer_id, currency="usd")
    listed = test_env.wallets.list_for_customer(customer_id)
    assert [w.id for w in listed] == [first.id, at_two.id, in_eur.id, post.id, again.id]
    assert [w.id for w in test_env.wallets.for_customer(lookup_key="c1")] == [w.id for w in listed]
    assert [w.id for w in test_env.wallets.for_customer(id=customer_id)] == [w.id for w in listed]
    with pytest.raises(ValidationError) as missing:
        test_env.wallets.for_customer()
    assert missing.value.field == "id"
    with pytest.raises(NotFound):
        test_env.wallets.for_customer(lookup_key="nobody")
    with pytest.raises(NotFound):
        test_env.wallets.list_for_customer("cust_nope")


def test_search_by_the_reference_filter_and_the_library_fields(test_env: Scoped, customer_id: str) -> None:
    other = test_env.customers.create(external_id="c2", name="Bob").id
    a = test_env.wallets.create(customer_id=customer_id, currency="usd")
    b = test_env.wallets.create(customer_id=customer_id, currency="eur")
    c = test_env.wallets.create(customer_id=other, currency="usd", wallet_type="POST_PAID")
    test_env.wallets.terminate(b.id)
    assert [w.id for w in test_env.wallets.search().items] == [c.id, b.id, a.id]  # newest first
    assert [w.id for w in test_env.wallets.search(wallet_ids=[a.id, c.id]).items] == [c.id, a.id]
    # The reference's ``status`` is the wallet status here.
    assert [w.id for w in test_env.wallets.search(status="closed").items] == [b.id]
    assert [w.id for w in test_env.wallets.search(status="active", order="asc").items] == [a.id, c.id]
    assert [w.id for w in test_env.wallets.search(customer_id=customer_id, currency="USD").items] == [a.id]
    assert [w.id for w in test_env.wallets.search(wallet_type="POST_PAID").items] == [c.id]
    assert [w.id for w in test_env.wallets.search(sort="created_at", order="asc", limit=2).items] == [
        a.id,
        b.id,
    ]
    page = test_env.wallets.search(limit=1, offset=1)
    assert (len(page.items), page.total, page.offset) == (1, 3, 1)
    with pytest.raises(ValidationError) as raised:
        test_env.wallets.search(alert_enabled=True)
    assert raised.value.field == "alert_enabled"


def test_update_changes_what_it_may_and_records_wallet_updated(
    test_env: Scoped, customer_id: str, clock: TestClock
) -> None:
    wallet = test_env.wallets.create(
        customer_id=customer_id, currency="usd", name="Old", initial_credits_to_load="5"
    )
    clock.advance(timedelta(minutes=1))
    updated = test_env.wallets.update(
        wallet.id,
        name="New",
        description="team credits",
        metadata={"k": "v"},
        config={"allowed_price_types": ["FIXED"]},
        auto_topup={"enabled": True, "threshold": "1", "amount": "10"},
        alert_settings={"alert_enabled": False},
    )
    assert (updated.name, updated.description, updated.metadata, updated.config.price_types()) == (
        "New",
        "team credits",
        {"k": "v"},
        frozenset({"FIXED"}),
    )
    assert updated.auto_topup is not None and updated.auto_topup.amount == D(10)
    assert (updated.version, updated.credit_balance, updated.updated_at) == (
        wallet.version + 1,
        D(5),
        NOW + timedelta(minutes=1),
    )
    (event,) = events(test_env, "wallet.updated")
    assert event["wallet"]["name"] == "New"
    # Nothing changed: no new version, no event.
    same = test_env.wallets.update(wallet.id, name="New")
    assert same.version == updated.version and len(events(test_env, "wallet.updated")) == 1
    # Clearing what may be cleared; refusing what may not.
    cleared = test_env.wallets.update(wallet.id, description=None, auto_topup=None)
    assert (cleared.description, cleared.auto_topup) == (None, None)
    for field, value in (("metadata", None), ("config", None), ("auto_topup", {"enabled": True})):
        with pytest.raises(ValidationError) as raised:
            test_env.wallets.update(wallet.id, **{field: value})
        assert raised.value.field.startswith(field)
    for field in ("currency", "conversion_rate", "wallet_type"):
        with pytest.raises(ValidationError) as raised:
            test_env.wallets.update(wallet.id, **{field: "x"})
        assert raised.value.field == field
    assert test_env.wallets.get(wallet.id).version == cleared.version
    with pytest.raises(NotFound):
        test_env.wallets.update("wallet_nope", name="x")


def test_terminate_debits_every_lot_and_closes_the_wallet(test_env: Scoped, customer_id: str) -> None:
    wallet = test_env.wallets.create(
        customer_id=customer_id, currency="usd", conversion_rate="0.5", initial_credits_to_load="50"
    )
    test_env.wallets.top_up(
        wallet.id, credits_to_add="30.5", transaction_reason="PURCHASED_CREDIT_DIRECT", priority=1
    )
    test_env.wallets.top_up(
        wallet.id,
        credits_to_add="20",
        transaction_reason="FREE_CREDIT_GRANT",
        expiry_date_utc="2026-06-01T00:00:00Z",
    )
    closed = test_env.wallets.terminate(wallet.id)
    assert (closed.wallet_status, closed.credit_balance, closed.balance, closed.next_expiry_at) == (
        WalletStatus.CLOSED,
        D(0),
        D("0.00"),
        None,
    )
    debits = test_env.wallets.transactions(wallet.id, type="debit", order="asc").items
    # One debit per lot, in the consumption order: priority 1 first, then the expiring lot, then
    # the rest; each names its lot and is worth its credits at 0.5 usd a credit.
    lots = {row.id: row for row in test_env.wallets.transactions(wallet.id, type="credit").items}
    assert [(lots[d.source_transaction_id].credit_amount, d.credit_amount, d.amount) for d in debits] == [
        (D("30.5"), D("30.5"), D("15.25")),
        (D(20), D(20), D("10.00")),
        (D(50), D(50), D("25.00")),
    ]
    assert {d.transaction_reason for d in debits} == {TransactionReason.WALLET_TERMINATION}
    assert all(row.credits_available == 0 for row in lots.values())
    (terminated,) = events(test_env, "wallet.terminated")
    assert terminated["wallet"]["wallet_status"] == "closed"
    assert D(terminated["wallet"]["credit_balance"]) == 0 and terminated["wallet"]["balance"] == "0.00"
    assert_wallets_balanced(test_env, wallet.id)

    # A closed wallet refuses everything that would change it.
    with pytest.raises(InvalidOperation):
        test_env.wallets.terminate(wallet.id)
    with pytest.raises(InvalidOperation):
        test_env.wallets.update(wallet.id, name="x")
    with pytest.raises(InvalidOperation):
        test_env.wallets.top_up(wallet.id, credits_to_add="1", transaction_reason="FREE_CREDIT_GRANT")
    assert test_env.wallets.transactions(wallet.id).total == 6


def test_terminating_an_empty_wallet_only_closes_it(test_env: Scoped, customer_id: str) -> None:
    wallet = test_env.wallets.create(customer_id=customer_id, currency="usd")
    closed = test_env.wallets.terminate(wallet.id)
    assert (closed.wallet_status, closed.version) == (WalletStatus.CLOSED, wallet.version + 1)
    assert test_env.wallets.transactions(wallet.id).total == 0
    with pytest.raises(NotFound):
        test_env.wallets.terminate("wallet_nope")


def test_a_wallet_with_a_purchase_awaiting_payment_is_not_terminated(
    test_env: Scoped, customer_id: str
) -> None:
    wallet = test_env.wallets.create(customer_id=customer_id, currency="usd", initial_credits_to_load="5")
    bought = test_env.wallets.top_up(
        wallet.id, credits_to_add="10", transaction_reason="PURCHASED_CREDIT_INVOICED"
    )
    with pytest.raises(InvalidOperation, match=str(bought.invoice_id)):
        test_env.wallets.terminate(wallet.id)
    assert test_env.wallets.get(wallet.id).wallet_status is WalletStatus.ACTIVE
    test_env.invoices.void(str(bought.invoice_id))
    closed = test_env.wallets.terminate(wallet.id)
    assert closed.credit_balance == 0
    rows = {row.id: row for row in test_env.wallets.transactions(wallet.id).items}
    assert rows[bought.wallet_transaction.id].transaction_status is TransactionStatus.FAILED
    assert_wallets_balanced(test_env)


def test_reads_are_scoped_to_the_environment(test_env: Scoped, prod_env: Scoped, customer_id: str) -> None:
    wallet = test_env.wallets.create(customer_id=customer_id, currency="usd", initial_credits_to_load="5")
    with pytest.raises(NotFound):
        prod_env.wallets.get(wallet.id)
    with pytest.raises(NotFound):
        prod_env.wallets.transactions(wallet.id)
    assert prod_env.wallets.search_transactions().total == 0
    assert prod_env.wallets.search().total == 0
