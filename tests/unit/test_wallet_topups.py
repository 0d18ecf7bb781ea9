"""The pure rules of topping a wallet up, from tables of worked examples."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.wallet_topups import (
    PURCHASE_REASONS,
    TOPUP_REASONS,
    bonus_key,
    check_auto_topup,
    end_of_day,
    initial_credits_key,
    purchase_amount,
    request_key,
    topup_credits,
    topup_key,
)
from billingkit.domain.wallets import AutoTopup, TransactionReason, credits_for, credits_value
from billingkit.errors import ValidationError

D = Decimal
T0 = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("credits_to_add", "amount", "rate", "credits"),
    [
        ("50", None, "1", "50"),  # credits named: taken as they are
        ("50", "999", "2", "50"),  # both named: credits_to_add wins (the reference's request says so)
        (None, "10.00", "0.5", "20"),  # 10.00 / 0.5 = 20
        (None, "10.00", "3", "3.3333333333"),  # 10 / 3, 10 places half up
        (None, "20.00", "3", "6.6666666667"),  # 20 / 3 = 6.66666666666..., the 11th digit rounds up
        (None, "1", "0.4", "2.5"),  # 1 / 0.4
    ],
)
def test_credits_a_top_up_adds(
    credits_to_add: str | None, amount: str | None, rate: str, credits: str
) -> None:
    got = topup_credits(D(credits_to_add) if credits_to_add else None, D(amount) if amount else None, D(rate))
    assert got == D(credits)
    assert "E" not in str(got)  # 20, never 2E+1


@pytest.mark.parametrize(
    ("credits_to_add", "amount", "field"),
    [
        (None, None, "credits_to_add"),
        ("0", None, "credits_to_add"),
        ("-1", "10", "credits_to_add"),
        (None, "0", "amount"),
        (None, "-5", "amount"),
        (None, "0.00000000001", "amount"),  # rounds to no credits at 10 places
    ],
)
def test_a_top_up_without_credits_is_refused(
    credits_to_add: str | None, amount: str | None, field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        topup_credits(D(credits_to_add) if credits_to_add else None, D(amount) if amount else None, D(1))
    assert raised.value.field == field


@pytest.mark.parametrize(
    ("credits", "rate", "currency", "amount", "price"),
    [
        ("25", "0.40", "usd", None, "10.00"),  # 25 * 0.40
        ("3.3333333333", "3", "usd", None, "10.00"),  # 9.9999999999 rounded to cents
        ("3.3333333333", "3", "usd", "10.00", "10.00"),  # the money named wins
        ("10.005", "1", "usd", None, "10.01"),  # half away from zero
        ("1500", "1", "jpy", None, "1500"),  # no minor unit
        ("2", "1.2345", "kwd", None, "2.469"),  # three places
    ],
)
def test_what_an_invoiced_purchase_costs(
    credits: str, rate: str, currency: str, amount: str | None, price: str
) -> None:
    assert purchase_amount(D(credits), D(rate), currency, D(amount) if amount else None) == D(price)


def test_a_purchase_worth_less_than_a_cent_is_refused() -> None:
    with pytest.raises(ValidationError) as raised:
        purchase_amount(D("0.001"), D(1), "usd")
    assert raised.value.field == "credits_to_add"


def test_the_default_key_is_the_reference_digest_of_wallet_credits_reason_and_second() -> None:
    text = (
        "wallet_topup:wallet_id=wallet_1;credits=10;"
        "transaction_reason=PURCHASED_CREDIT_DIRECT;at=2026-05-01T09:30:00Z"
    )
    expected = "wallet_topup-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    direct = TransactionReason.PURCHASED_CREDIT_DIRECT
    assert request_key("wallet_1", D("10.00"), direct, T0.replace(microsecond=700_000)) == expected
    # The same request within the second: the same key; "10" and "10.00" are the same credits.
    assert request_key("wallet_1", D("10"), direct, T0) == expected
    # Anything else differs: the next second, other credits, another reason, another wallet.
    assert request_key("wallet_1", D("10"), direct, T0.replace(second=1)) != expected
    assert request_key("wallet_1", D("10.01"), direct, T0) != expected
    assert request_key("wallet_1", D("10"), TransactionReason.FREE_CREDIT_GRANT, T0) != expected
    assert request_key("wallet_2", D("10"), direct, T0) != expected


def test_movement_keys_of_top_ups() -> None:
    assert topup_key("abc") == "wallet_topup|abc"
    assert bonus_key("wtx_1") == "wallet_topup_bonus|wtx_1"
    assert initial_credits_key("wallet_1") == "wallet_initial_credits|wallet_1"
    with pytest.raises(ValidationError) as raised:
        topup_key("invoice_void_refund|inv_1")  # a caller's key cannot pose as billingkit's own
    assert raised.value.field == "idempotency_key"


def test_the_reasons_a_top_up_may_give() -> None:
    assert {r.value for r in TOPUP_REASONS} == {
        "FREE_CREDIT_GRANT",
        "PURCHASED_CREDIT_INVOICED",
        "PURCHASED_CREDIT_DIRECT",
        "SUBSCRIPTION_CREDIT_GRANT",
        "CREDIT_NOTE",
        "INVOICE_VOID_REFUND",
    }
    assert PURCHASE_REASONS < TOPUP_REASONS


@pytest.mark.parametrize(
    ("yyyymmdd", "instant"),
    [
        (20260630, datetime(2026, 6, 30, 23, 59, 59, tzinfo=UTC)),
        (20281231, datetime(2028, 12, 31, 23, 59, 59, tzinfo=UTC)),
        (20280229, datetime(2028, 2, 29, 23, 59, 59, tzinfo=UTC)),  # a leap day
    ],
)
def test_a_yyyymmdd_expiry_is_the_end_of_that_day(yyyymmdd: int, instant: datetime) -> None:
    assert end_of_day(yyyymmdd, field="f") == instant


@pytest.mark.parametrize("value", [20260230, 2026063, 202606301, 20261301, -20260101])
def test_a_yyyymmdd_that_is_no_date_is_refused(value: int) -> None:
    with pytest.raises(ValidationError) as raised:
        end_of_day(value, field="initial_credits_to_load_expiry_date")
    assert raised.value.field == "initial_credits_to_load_expiry_date"


@pytest.mark.parametrize(
    ("auto", "field"),
    [
        ({"enabled": True, "amount": "10"}, "auto_topup.threshold"),
        ({"enabled": True, "threshold": "5"}, "auto_topup.amount"),
        ({"enabled": True, "threshold": "5", "amount": "0"}, "auto_topup.amount"),
        ({"enabled": False, "threshold": "-1"}, "auto_topup.threshold"),
    ],
)
def test_an_auto_top_up_must_say_when_and_how_much(auto: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        check_auto_topup(AutoTopup.model_validate(auto))
    assert raised.value.field == field


def test_an_auto_top_up_reads_json_numbers_as_written() -> None:
    auto = AutoTopup.model_validate(
        {"enabled": True, "threshold": 5, "amount": 100.1, "cooldown": {"unit": "hour", "value": 2}}
    )
    check_auto_topup(auto)
    assert (auto.threshold, auto.amount, auto.cooldown and auto.cooldown.value) == (D(5), D("100.1"), 2)
    check_auto_topup(AutoTopup())  # disabled and empty: nothing to say
    check_auto_topup(None)


@given(
    amount=st.decimals(min_value=D("0.01"), max_value=D("100000"), places=2),
    rate=st.decimals(min_value=D("0.01"), max_value=D("100"), places=2),
)
def test_credits_bought_with_money_are_never_worth_more_than_it(amount: Decimal, rate: Decimal) -> None:
    """Buying credits with ``amount`` at ``rate`` and valuing them at the same rate gives back
    ``amount`` or one minor unit less, never more (credits round at 10 places, value rounds down)."""
    credits = topup_credits(None, amount, rate)
    assert credits == credits_for(amount, rate)
    worth = credits_value(credits, rate, "usd")
    assert amount - D("0.01") <= worth <= amount
