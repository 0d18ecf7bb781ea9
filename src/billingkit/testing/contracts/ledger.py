"""The ledger contract: what every store does with an append-only kind (money that moves).

Proven on the wallet transaction ledger (``uow.wallet_transactions``): rows are added and read
back; ``update`` and ``update_many`` are refused with :class:`AppendOnly` and change nothing; a
repeated movement key is :class:`AlreadyExists` and writes nothing; ``sum``/``sum_by`` are exact
(equal to the exact sum of the stored ``Decimal``s, never through binary floating point), zero
over no rows, and count only the ledger's own scope; a rolled-back unit of work leaves no rows.
Subclass it with a ``storage`` fixture, as ``tests/contract/test_ledger.py`` does.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billingkit.domain.resources import Status
from billingkit.domain.usage import EXACT
from billingkit.domain.wallets import TransactionReason, TransactionStatus, TransactionType, WalletTransaction
from billingkit.errors import AlreadyExists, AppendOnly, InvalidOperation, NotFound, ValidationError
from billingkit.ports import Ledger, Storage, UnitOfWork

__all__ = ["LedgerContract", "movement"]

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SCOPE = ("tenant_a", "env_a")
_numbers = itertools.count()


def movement(
    credit_amount: str | Decimal,
    type: TransactionType = TransactionType.CREDIT,
    *,
    wallet_id: str = "wallet_1",
    tenant_id: str = SCOPE[0],
    environment_id: str = SCOPE[1],
    **fields: Any,
) -> WalletTransaction:
    """A wallet transaction of ``credit_amount`` credits (worth the same in money unless
    ``amount`` is given) with a movement key of its own unless ``idempotency_key`` is given."""
    n = next(_numbers)
    debit = type is TransactionType.DEBIT
    reason = TransactionReason.CREDIT_ADJUSTMENT if debit else TransactionReason.FREE_CREDIT_GRANT
    values: dict[str, Any] = {
        "id": f"wtx_{n:08d}",
        "tenant_id": tenant_id,
        "environment_id": environment_id,
        "created_at": T0 + timedelta(seconds=n),
        "updated_at": T0 + timedelta(seconds=n),
        "created_by": "test",
        "updated_by": "test",
        "wallet_id": wallet_id,
        "customer_id": "cust_1",
        "type": type,
        "credit_amount": credit_amount,
        "amount": credit_amount,
        "transaction_reason": reason,
        "idempotency_key": f"contract|{n}",
    }
    return WalletTransaction(**{**values, **fields})


def _ledger(uow: UnitOfWork) -> Ledger[WalletTransaction]:
    return uow.wallet_transactions


def _exact_sum(values: list[Decimal]) -> Decimal:
    """Python's ``sum()`` of the Decimals, in a context that cannot round."""
    with localcontext(EXACT):
        return sum(values, Decimal(0))


# Amounts with 0, 2 or 3 decimal places (the currencies' precisions), from a thousandth up to a
# quadrillion: sums of these need up to 22 significant digits.
_amounts = st.sampled_from([0, 2, 3]).flatmap(
    lambda places: st.decimals(
        min_value=Decimal("0.001"), max_value=Decimal("1e15"), places=places, allow_nan=False
    ).filter(lambda value: value > 0)
)


class LedgerContract:
    """Subclass and provide a ``storage`` fixture returning a fresh, empty store."""

    # -- appending and reading ---------------------------------------------------------------
    def test_appended_rows_read_back_exactly(self, storage: Storage) -> None:
        credit = movement("25.005", reference_type="INVOICE", reference_id="inv_1", priority=2)
        debits = [movement("1.50", TransactionType.DEBIT), movement("2.25", TransactionType.DEBIT)]
        with storage.unit_of_work(*SCOPE) as uow:
            assert _ledger(uow).add(credit) == credit
            _ledger(uow).add_many(debits)
            uow.commit()
        with storage.unit_of_work(*SCOPE) as uow:
            ledger = _ledger(uow)
            assert ledger.get(credit.id) == credit
            assert sorted(ledger.find_many([d.id for d in debits]), key=lambda t: t.id) == debits
            assert ledger.find_one(idempotency_key=credit.idempotency_key) == credit
            assert ledger.find_one(type=TransactionType.DEBIT, credit_amount=Decimal("2.25")) == debits[1]

    # -- settling a pending row ---------------------------------------------------------------
    def test_a_pending_row_settles_once_and_nothing_else_changes(self, storage: Storage) -> None:
        pending = movement("40.00", transaction_status=TransactionStatus.PENDING)
        later = T0 + timedelta(days=2)
        with storage.unit_of_work(*SCOPE) as uow:
            _ledger(uow).add(pending)
            uow.commit()
        with storage.unit_of_work(*SCOPE) as uow:  # rolled back: still pending
            _ledger(uow).settle(pending.id, "completed", updated_at=later, updated_by="payer")
        with storage.unit_of_work(*SCOPE) as uow:
            assert _ledger(uow).get(pending.id) == pending
            settled = _ledger(uow).settle(pending.id, "completed", updated_at=later, updated_by="payer")
            uow.commit()
        expected = pending.model_copy(
            update={
                "transaction_status": TransactionStatus.COMPLETED,
                "updated_at": later,
                "updated_by": "payer",
            }
        )
        assert settled == expected
        with storage.unit_of_work(*SCOPE) as uow:
            assert _ledger(uow).get(pending.id) == expected
            for status in ("completed", "failed"):
                with pytest.raises(InvalidOperation):
                    _ledger(uow).settle(pending.id, status, updated_at=later, updated_by="x")
            assert _ledger(uow).get(pending.id) == expected
            with pytest.raises(ValidationError):
                _ledger(uow).settle(pending.id, "pending", updated_at=later, updated_by="x")
            with pytest.raises(NotFound):
                _ledger(uow).settle("wtx_missing", "failed", updated_at=later, updated_by="x")
        # Another scope cannot see it.
        with storage.unit_of_work("tenant_b", "env_b") as uow, pytest.raises(NotFound):
            _ledger(uow).settle(pending.id, "failed", updated_at=later, updated_by="x")

    def test_a_completed_row_cannot_be_settled(self, storage: Storage) -> None:
        done = movement("5")
        with storage.unit_of_work(*SCOPE) as uow:
            _ledger(uow).add(done)
            with pytest.raises(InvalidOperation):
                _ledger(uow).settle(done.id, "failed", updated_at=T0, updated_by="x")
            assert _ledger(uow).get(done.id) == done

    # -- append-only ---------------------------------------------------------------------------
    def test_updates_are_refused_and_change_nothing(self, storage: Storage) -> None:
        stored = movement("10.00")
        with storage.unit_of_work(*SCOPE) as uow:
            _ledger(uow).add(stored)
            uow.commit()
        edits = [
            stored.model_copy(update={"credit_amount": Decimal("99.00"), "amount": Decimal("99.00")}),
            stored.model_copy(update={"status": Status.ARCHIVED}),  # archiving is a change too
            stored.model_copy(update={"status": Status.DELETED}),
        ]
        repository: Any = None
        with storage.unit_of_work(*SCOPE) as uow:
            repository = uow.wallet_transactions  # the untyped path: the store refuses it too
            for edit in edits:
                with pytest.raises(AppendOnly) as refused:
                    repository.update(edit)
                assert refused.value.code == "append_only" and refused.value.http_status == 409
                with pytest.raises(AppendOnly):
                    repository.update(edit, expected_version=1)
                with pytest.raises(AppendOnly):
                    repository.update_many([(stored, edit)])
            with pytest.raises(NotFound):  # a row the scope cannot see is missing, as on every kind
                repository.update(movement("1", id="wtx_missing"))
            with pytest.raises(NotFound):
                repository.update_many([(stored, edits[0]), (movement("1", id="wtx_gone"),) * 2])
            assert repository.update_many([]) == []
            assert _ledger(uow).get(stored.id) == stored
            uow.commit()
        with storage.unit_of_work(*SCOPE) as uow:
            assert _ledger(uow).get(stored.id) == stored
            assert _ledger(uow).sum("credit_amount") == Decimal("10.00")

    def test_a_movement_key_is_stored_once_per_environment(self, storage: Storage) -> None:
        first = movement("5", idempotency_key="invoice_void_refund|inv_1")
        archived = movement("7", idempotency_key="credit_grant|cga_1", status=Status.ARCHIVED)
        with storage.unit_of_work(*SCOPE) as uow:
            _ledger(uow).add_many([first, archived])
            uow.commit()
        with storage.unit_of_work(*SCOPE) as uow:
            ledger = _ledger(uow)
            earlier = ledger.add(movement("1"))
            again = movement("5", idempotency_key=first.idempotency_key)
            with pytest.raises(AlreadyExists) as refused:
                ledger.add(again)
            assert refused.value.details["field"] == "idempotency_key"
            # An archived row keeps its key: one cause is applied once, whatever became of the row.
            with pytest.raises(AlreadyExists):
                ledger.add(movement("7", idempotency_key=archived.idempotency_key))
            batch = [movement("3"), movement("4", idempotency_key=first.idempotency_key)]
            with pytest.raises(AlreadyExists):
                ledger.add_many(batch)
            twice = [movement("2", idempotency_key="k|twice"), movement("2", idempotency_key="k|twice")]
            with pytest.raises(AlreadyExists):
                ledger.add_many(twice)
            assert ledger.find_many([again.id, *(row.id for row in (*batch, *twice))]) == []
            assert ledger.get(earlier.id) == earlier  # a refused write keeps the earlier ones
            assert ledger.sum("credit_amount") == Decimal("13")
            uow.commit()
        with storage.unit_of_work(SCOPE[0], "env_b") as uow:  # the key is unique per environment
            _ledger(uow).add(movement("5", environment_id="env_b", idempotency_key=first.idempotency_key))
            uow.commit()

    # -- sums ------------------------------------------------------------------------------------
    def test_sums_are_exact_decimals(self, storage: Storage) -> None:
        tenths = [movement("0.1", wallet_id="w_tenths") for _ in range(10)]
        # 38 significant digits: beyond a double (about 16) and Python's default context (28).
        wide = [
            movement("1234567890123456789012345678901234.567", wallet_id="w_wide"),
            movement("0.001", wallet_id="w_wide"),
            movement("8765432109876543210987654321098765.432", wallet_id="w_wide"),
        ]
        with storage.unit_of_work(*SCOPE) as uow:
            _ledger(uow).add_many([*tenths, *wide])
            uow.commit()
        with storage.unit_of_work(*SCOPE) as uow:
            ledger = _ledger(uow)
            tenth_total = ledger.sum("credit_amount", wallet_id="w_tenths")
            # Ten tenths added as binary floats make 0.9999999999999999.
            assert isinstance(tenth_total, Decimal) and tenth_total == Decimal("1.0")
            wide_total = ledger.sum("credit_amount", wallet_id="w_wide")
            assert wide_total == Decimal("10000000000000000000000000000000000.000")
            assert wide_total == _exact_sum([row.credit_amount for row in wide])
            assert ledger.sum("amount") == _exact_sum([row.amount for row in (*tenths, *wide)])

    @settings(
        max_examples=30,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        credits=st.lists(_amounts, max_size=40),
        debits=st.lists(_amounts, max_size=10),
    )
    def test_sums_equal_pythons_sum_of_the_decimals(
        self, storage: Storage, credits: list[Decimal], debits: list[Decimal]
    ) -> None:
        rows = [movement(value) for value in credits]
        rows += [movement(value, TransactionType.DEBIT, wallet_id="wallet_2") for value in debits]
        # Python's sum() in its default context is exact here (at most 22 digits of 28).
        expected_credits, expected_debits = sum(credits, Decimal(0)), sum(debits, Decimal(0))
        assert expected_credits == _exact_sum(credits)
        with storage.unit_of_work(*SCOPE) as uow:  # never committed: each example starts empty
            ledger = _ledger(uow)
            ledger.add_many(rows)
            assert ledger.sum("credit_amount") == expected_credits + expected_debits
            assert ledger.sum("credit_amount", type=TransactionType.CREDIT) == expected_credits
            assert ledger.sum("amount", wallet_id="wallet_2") == expected_debits
            by_type = ledger.sum_by("credit_amount", "type")
            expected = {"credit": expected_credits, "debit": expected_debits}
            assert by_type == {key: total for key, total in expected.items() if key in by_type}
            assert set(by_type) == {row.type.value for row in rows}

    def test_sums_by_group_give_each_wallets_balance(self, storage: Storage) -> None:
        rows = [
            movement("100.00", wallet_id="wallet_a"),
            movement("30.25", TransactionType.DEBIT, wallet_id="wallet_a"),
            movement("0.75", TransactionType.DEBIT, wallet_id="wallet_a", reference_type="INVOICE"),
            movement("50", wallet_id="wallet_b", reference_type="INVOICE"),
            movement("12.5", wallet_id="wallet_c", amount="25.00"),
        ]
        with storage.unit_of_work(*SCOPE) as uow:
            _ledger(uow).add_many(rows)
            uow.commit()
        with storage.unit_of_work(*SCOPE) as uow:
            ledger = _ledger(uow)
            assert ledger.sum_by("credit_amount", "wallet_id") == {
                "wallet_a": Decimal("131.00"),
                "wallet_b": Decimal("50"),
                "wallet_c": Decimal("12.5"),
            }
            by_type = ledger.sum_by("credit_amount", "type", wallet_id="wallet_a")
            assert by_type == {"credit": Decimal("100.00"), "debit": Decimal("31.00")}
            assert by_type["credit"] - by_type["debit"] == Decimal("69.00")  # wallet_a's balance
            assert ledger.sum_by("amount", "reference_type") == {
                None: Decimal("155.25"),
                "INVOICE": Decimal("50.75"),
            }
            assert ledger.sum_by("amount", "type", type=TransactionType.DEBIT, wallet_id="wallet_b") == {}
            assert ledger.sum("amount", reference_type=None, type=TransactionType.CREDIT) == Decimal("125.00")

    def test_sums_over_no_rows_are_zero(self, storage: Storage) -> None:
        with storage.unit_of_work(*SCOPE) as uow:
            ledger = _ledger(uow)
            empty = ledger.sum("credit_amount")
            assert isinstance(empty, Decimal) and empty == Decimal("0")
            assert ledger.sum_by("credit_amount", "wallet_id") == {}
            ledger.add(movement("4.20"))
            assert ledger.sum("credit_amount", wallet_id="wallet_missing") == Decimal("0")
            assert ledger.sum("credit_amount", wallet_id="nul\x00") == Decimal("0")  # no store holds it
            assert ledger.sum_by("credit_amount", "type", wallet_id="nul\x00") == {}

    def test_sums_count_only_their_own_scope(self, storage: Storage) -> None:
        scopes = [SCOPE, ("tenant_a", "env_b"), ("tenant_b", "env_a")]
        for number, (tenant_id, environment_id) in enumerate(scopes, start=1):
            with storage.unit_of_work(tenant_id, environment_id) as uow:
                rows = [
                    movement(amount, tenant_id=tenant_id, environment_id=environment_id)
                    for amount in (str(number), "0.01")
                ]
                _ledger(uow).add_many(rows)
                uow.commit()
        for number, scope in enumerate(scopes, start=1):
            with storage.unit_of_work(*scope) as uow:
                assert _ledger(uow).sum("credit_amount") == Decimal(number) + Decimal("0.01")
                assert _ledger(uow).sum_by("credit_amount", "wallet_id") == {
                    "wallet_1": Decimal(number) + Decimal("0.01")
                }

    def test_a_rolled_back_unit_of_work_leaves_no_rows(self, storage: Storage) -> None:
        row = movement("9.99")
        with storage.unit_of_work(*SCOPE) as uow:
            _ledger(uow).add(row)
            _ledger(uow).add_many([movement("1"), movement("2")])
            assert _ledger(uow).sum("credit_amount") == Decimal("12.99")
        with storage.unit_of_work(*SCOPE) as uow:
            assert _ledger(uow).find(row.id) is None
            assert _ledger(uow).sum("credit_amount") == Decimal("0")
            _ledger(uow).add(row)
            uow.rollback()
            assert _ledger(uow).find(row.id) is None
        with storage.unit_of_work(*SCOPE) as uow:
            assert _ledger(uow).add(row) == row  # its movement key is free again

    def test_sums_name_real_fields(self, storage: Storage) -> None:
        with storage.unit_of_work(*SCOPE) as uow:
            ledger = _ledger(uow)
            for call in (
                lambda: ledger.sum("wallet_id"),  # text, not a decimal
                lambda: ledger.sum("priority"),  # a number, but not a decimal
                lambda: ledger.sum("missing"),
                lambda: ledger.sum("amount", missing="x"),
                lambda: ledger.sum_by("amount", "credit_amount"),  # groups are text
                lambda: ledger.sum_by("amount", "metadata"),
                lambda: ledger.sum_by("amount", "wallet_id", missing="x"),
            ):
                with pytest.raises(ValidationError):
                    call()
