"""Credit expiry and its postponement (reference notes §6.2): worked examples and properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.credit_expiry import EXPIRY_RETRY, covers, plan_expiry
from billingkit.domain.wallets import Lot, WalletTransaction
from billingkit.services.invoice_credits import credits_instant

NOW = datetime(2026, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def lot(lot_id: str, left: str, *, expiry: datetime | None, created: datetime = NOW - 40 * DAY) -> Lot:
    row = WalletTransaction(
        id=lot_id,
        tenant_id="t",
        environment_id="e",
        created_at=created,
        updated_at=created,
        created_by="test",
        updated_by="test",
        wallet_id="wallet_1",
        customer_id="cust_1",
        type="credit",
        credit_amount=Decimal(100),
        amount=Decimal(100),
        transaction_reason="FREE_CREDIT_GRANT",
        idempotency_key=f"k|{lot_id}",
        expiry_date=expiry,
    )
    return Lot(row, Decimal(left))


def ids(lots: tuple[Lot, ...]) -> list[str]:
    return [one.id for one in lots]


def test_the_module_example() -> None:
    a = lot("A", "10", expiry=NOW - DAY)
    b = lot("B", "5", expiry=datetime(2026, 4, 1, tzinfo=UTC))
    plan = plan_expiry([a, b], NOW, billing_pending=False)
    assert (ids(plan.expire), ids(plan.held), plan.next_expiry_at) == (
        ["A"],
        [],
        datetime(2026, 4, 1, tzinfo=UTC),
    )
    plan = plan_expiry([a, b], NOW, billing_pending=True)
    assert (ids(plan.expire), ids(plan.held), plan.next_expiry_at) == ([], ["A"], NOW + EXPIRY_RETRY)


def test_expiry_at_now_counts_as_passed_and_lots_without_expiry_or_credits_never_expire() -> None:
    plan = plan_expiry(
        [
            lot("at_now", "1", expiry=NOW),
            lot("never", "50", expiry=None),
            lot("empty", "0", expiry=NOW - DAY),
        ],
        NOW,
        billing_pending=False,
    )
    assert (ids(plan.expire), ids(plan.held), plan.next_expiry_at) == (["at_now"], [], None)


def test_an_unpaid_invoice_covering_the_lots_creation_holds_only_that_lot() -> None:
    january = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC))
    granted_in_january = lot("jan", "10", expiry=NOW - DAY, created=datetime(2026, 1, 15, tzinfo=UTC))
    granted_in_february = lot("feb", "10", expiry=NOW - DAY, created=datetime(2026, 2, 1, tzinfo=UTC))
    plan = plan_expiry(
        [granted_in_january, granted_in_february], NOW, billing_pending=False, unpaid_periods=[january]
    )
    # The period's end is excluded: a lot made at 1 Feb 00:00 is February's.
    assert (ids(plan.expire), ids(plan.held)) == (["feb"], ["jan"])
    assert plan.next_expiry_at == NOW + EXPIRY_RETRY


def test_the_retry_never_postpones_an_earlier_expiry() -> None:
    soon = NOW + timedelta(minutes=5)
    plan = plan_expiry(
        [lot("held", "1", expiry=NOW - DAY), lot("soon", "1", expiry=soon)], NOW, billing_pending=True
    )
    assert plan.next_expiry_at == soon


def test_covers_is_half_open_and_an_open_end_covers_everything_after() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert covers((start, start + DAY), start)
    assert not covers((start, start + DAY), start + DAY)
    assert not covers((start, None), start - DAY)
    assert covers((start, None), start + 1000 * DAY)


def test_credits_instant_is_the_closing_periods_last_instant_when_billed_at_or_after_its_end() -> None:
    end = NOW - DAY
    last = end - timedelta(microseconds=1)
    assert credits_instant("period_end", end, NOW) == last
    # Billed at the very end: credits expiring exactly then (a BILLING_CYCLE grant) still pay.
    assert credits_instant("period_end", NOW, NOW) == NOW - timedelta(microseconds=1)
    assert credits_instant("period_end", NOW + DAY, NOW) == NOW  # an end ahead: now
    assert credits_instant("period_start", end, NOW) == NOW
    assert credits_instant("preview", end, NOW) == NOW


offsets = st.integers(min_value=-100, max_value=100)


@given(
    st.lists(st.tuples(offsets, st.integers(min_value=0, max_value=5)), max_size=8),
    st.booleans(),
)
def test_every_lot_past_its_expiry_is_expired_or_held_and_the_next_due_time_is_ahead(
    specs: list[tuple[int, int]], pending: bool
) -> None:
    lots = [lot(f"l{i}", str(left), expiry=NOW + timedelta(hours=h)) for i, (h, left) in enumerate(specs)]
    plan = plan_expiry(lots, NOW, billing_pending=pending)
    past = {one.id for one in lots if one.credits_left > 0 and one.transaction.expiry_date <= NOW}  # type: ignore[operator]
    assert set(ids(plan.expire)) | set(ids(plan.held)) == past
    assert not (set(ids(plan.expire)) & set(ids(plan.held)))
    assert (plan.expire == ()) or not pending
    ahead = [one.transaction.expiry_date for one in lots if one.credits_left > 0 and one.id not in past]
    if plan.held:
        ahead.append(NOW + EXPIRY_RETRY)
    assert plan.next_expiry_at == (min(ahead) if ahead else None)  # type: ignore[type-var]
    assert plan.next_expiry_at is None or plan.next_expiry_at > NOW
