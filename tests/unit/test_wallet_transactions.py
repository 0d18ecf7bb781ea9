"""The wallet transaction row: what a ledger movement may hold, and movement keys."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit.domain.wallets import TransactionType, WalletTransaction, movement_key
from billingkit.errors import ValidationError
from billingkit.ports import Ledger, Repository
from billingkit.storage.kinds import KINDS

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _row(**fields: Any) -> WalletTransaction:
    values: dict[str, Any] = {
        "id": "wtx_1",
        "tenant_id": "tenant_a",
        "environment_id": "env_a",
        "created_at": T0,
        "updated_at": T0,
        "created_by": "test",
        "updated_by": "test",
        "wallet_id": "wallet_1",
        "customer_id": "cust_1",
        "type": "credit",
        "credit_amount": "10.005",
        "amount": "20.01",
        "transaction_reason": "SUBSCRIPTION_CREDIT_GRANT",
        "idempotency_key": "credit_grant|cga_1",
    }
    return WalletTransaction(**{**values, **fields})


def test_a_movement_holds_exact_positive_amounts_and_its_direction() -> None:
    row = _row(expiry_date=T0, priority=0)
    assert (row.type, row.credit_amount, row.amount) == (
        TransactionType.CREDIT,
        Decimal("10.005"),
        Decimal("20.01"),
    )
    assert row.to_dict()["credit_amount"] == "10.005"
    assert "credit 10.005 credits" in repr(row)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"credit_amount": "0"}, "credit_amount"),
        ({"amount": "-0.01"}, "amount"),  # a correction is a row of the other type, not a negative one
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"idempotency_key": "k" * 256}, "idempotency_key"),
        ({"type": "debit", "expiry_date": T0}, "expiry_date"),  # only credits expire
        ({"type": "debit", "priority": 1}, "priority"),
        ({"priority": -1}, "priority"),
    ],
)
def test_a_movement_refuses_what_a_ledger_row_cannot_hold(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        _row(**fields)
    assert refused.value.field == field


def test_movement_keys_join_the_cause_and_its_parts() -> None:
    assert movement_key("invoice_void_refund", "inv_1") == "invoice_void_refund|inv_1"
    assert (
        movement_key("proration_credit_cancel", "subs_1", "immediate", "2026-03-01T00:00:00Z")
        == "proration_credit_cancel|subs_1|immediate|2026-03-01T00:00:00Z"
    )


# ("refund", "inv|1") would be the key of ("refund", "inv", "1"): a separator inside a part is refused.
@pytest.mark.parametrize("parts", [("", "inv_1"), ("refund", ""), ("refund", "inv|1"), ("refund", "x" * 250)])
def test_movement_keys_that_could_collide_are_refused(parts: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as refused:
        movement_key(*parts)
    assert refused.value.field == "idempotency_key"


def test_the_ledger_port_offers_no_change_to_a_stored_row() -> None:
    # The ledgers: money movements, and the history of alert state changes.
    assert {name for name, kind in KINDS.items() if kind.append_only} == {"wallet_transactions", "alert_logs"}
    assert {"update", "update_many"} <= set(dir(Repository)) - set(dir(Ledger))
    assert {"add", "add_many", "get", "list", "sum", "sum_by"} <= set(dir(Ledger))
