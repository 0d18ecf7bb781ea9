"""Wallets, top-ups and wallet transactions through the official SDK."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def test_wallet_round_trip(sdk: Flexprice, env: Scoped) -> None:
    customer = sdk.customers.create_customer(external_id="c1", name="Ada")
    created = known(
        sdk.wallets.create_wallet(
            customer_id=customer.id,
            currency="usd",
            conversion_rate="2",
            wallet_type="PRE_PAID",
            initial_credits_to_load="50",
            initial_credits_to_load_expiry_date=20301231,
            auto_topup={
                "enabled": True,
                "threshold": 10,
                "amount": 100,
                "cooldown": {"unit": "hour", "value": 1},
            },
            alert_settings={"alert_enabled": True, "critical": {"threshold": "5", "condition": "below"}},
            metadata={"team": "a"},
        )
    )
    assert isinstance(created, models.WalletResponse)
    assert (created.credit_balance, created.balance, created.wallet_status, created.wallet_type) == (
        "50",
        "100.00",
        "active",
        "PRE_PAID",
    )
    assert created.auto_topup is not None and created.auto_topup.cooldown is not None
    assert (created.auto_topup.threshold, created.auto_topup.amount, created.auto_topup.cooldown.unit) == (
        10.0,
        100.0,
        "hour",
    )
    assert created.config is not None and created.config.allowed_price_types == ["ALL"]
    assert known(sdk.wallets.get_wallet(id=created.id)).model_dump() == created.model_dump()

    updated = known(
        sdk.wallets.update_wallet(id=created.id, name="Renamed", config={"allowed_price_types": ["USAGE"]})
    )
    assert (updated.name, updated.config and updated.config.allowed_price_types) == ("Renamed", ["USAGE"])

    by_id = sdk.wallets.get_wallets_by_customer_id(id=customer.id)
    assert [known(w).id for w in by_id] == [created.id]
    by_lookup = sdk.wallets.get_customer_wallets(lookup_key="c1")
    assert [w.id for w in by_lookup] == [created.id]
    assert [w.id for w in sdk.wallets.get_customer_wallets(id=customer.id)] == [created.id]
    found = known(
        sdk.wallets.query_wallet(wallet_ids=[created.id], status="active", sort="created_at", limit=10)
    )
    assert isinstance(found, models.ListResponseDtoWalletResponse)
    assert [w.id for w in found.items or []] == [created.id]
    assert found.pagination is not None and found.pagination.total == 1

    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.wallets.create_wallet(customer_id=customer.id, currency="usd", conversion_rate="2")
    assert status_and_code(raised.value) == (409, "already_exists")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.wallets.get_wallet(id="wallet_nope")
    assert status_and_code(raised.value) == (404, "not_found")


def test_top_ups_transactions_and_termination(sdk: Flexprice, env: Scoped) -> None:
    customer = sdk.customers.create_customer(external_id="c1", name="Ada")
    wallet = sdk.wallets.create_wallet(customer_id=customer.id, currency="usd", topup_conversion_rate="0.5")
    done = known(
        sdk.wallets.top_up_wallet(
            id=wallet.id,
            amount="10.00",  # at 0.50 usd a credit: 20 credits
            transaction_reason="PURCHASED_CREDIT_DIRECT",
            priority=1,
            expiry_date_utc="2030-01-01T00:00:00Z",
            bonus_credits_to_add="5",
            idempotency_key="order-1",
            description="pack",
        )
    )
    assert isinstance(done, models.TopUpWalletResponse)
    assert done.wallet is not None and done.wallet.credit_balance == "25"
    tx = done.wallet_transaction
    assert tx is not None
    assert (
        tx.type,
        tx.transaction_status,
        tx.transaction_reason,
        tx.credit_amount,
        tx.credits_available,
    ) == (
        "credit",
        "completed",
        "PURCHASED_CREDIT_DIRECT",
        "20",
        "20",
    )
    assert (tx.expiry_date, tx.priority, tx.topup_conversion_rate) == (
        datetime(2030, 1, 1, tzinfo=UTC),
        1,
        "0.5",
    )
    assert done.invoice_id is None

    invoiced = known(
        sdk.wallets.top_up_wallet(
            id=wallet.id, credits_to_add="8", transaction_reason="PURCHASED_CREDIT_INVOICED"
        )
    )
    assert invoiced.invoice_id is not None and invoiced.wallet_transaction is not None
    assert invoiced.wallet_transaction.transaction_status == "pending"
    invoice = sdk.invoices.get_invoice(id=invoiced.invoice_id)
    assert (invoice.invoice_type, invoice.amount_due) == ("CREDIT", "4.00")  # 8 credits at 0.50

    listed = known(sdk.wallets.get_wallet_transactions(id_path_parameter=wallet.id, limit=10))
    assert isinstance(listed, models.ListWalletTransactionsResponse)
    assert [t.transaction_reason for t in listed.items or []] == [
        "PURCHASED_CREDIT_INVOICED",
        "PURCHASED_CREDIT_BONUS",
        "PURCHASED_CREDIT_DIRECT",
    ]
    pending = sdk.wallets.get_wallet_transactions(id_path_parameter=wallet.id, transaction_status="pending")
    assert [t.id for t in pending.items or []] == [invoiced.wallet_transaction.id]
    one = sdk.wallets.get_wallet_transactions(
        id_path_parameter=wallet.id, id_query_parameter=tx.id, type_="credit"
    )
    assert [t.id for t in one.items or []] == [tx.id]
    searched = known(
        sdk.wallets.query_wallet_transaction(
            transaction_reason="PURCHASED_CREDIT_BONUS", credits_available_gt=1
        )
    )
    assert [(t.credit_amount, t.parent_transaction_id) for t in searched.items or []] == [("5", tx.id)]

    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.wallets.top_up_wallet(id=wallet.id, credits_to_add="1", transaction_reason="CREDIT_EXPIRED")
    assert status_and_code(raised.value) == (400, "validation_error")
    with pytest.raises(errors.FlexpriceError) as raised:
        sdk.wallets.terminate_wallet(id=wallet.id)  # the invoiced purchase is still awaiting payment
    assert status_and_code(raised.value) == (400, "invalid_operation")

    sdk.invoices.void_invoice(id=invoiced.invoice_id)
    closed = known(sdk.wallets.terminate_wallet(id=wallet.id))
    assert (closed.wallet_status, closed.balance) == ("closed", "0.00")
    debits = sdk.wallets.get_wallet_transactions(id_path_parameter=wallet.id, type_="debit")
    assert sorted(t.credit_amount for t in debits.items or []) == ["20", "5"]
