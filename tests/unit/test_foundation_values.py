"""Clocks, ids and the error table."""

from __future__ import annotations

from calendar import monthrange
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit import TestClock, errors
from billingkit.domain.ids import IdFactory, encode_ulid


def test_test_clock_sets_and_advances() -> None:
    clock = TestClock(datetime(2026, 1, 31, tzinfo=UTC))
    assert clock.advance(days=1) == datetime(2026, 2, 1, tzinfo=UTC)
    assert clock.advance(timedelta(hours=2)) == datetime(2026, 2, 1, 2, tzinfo=UTC)
    assert clock.set(datetime(2025, 1, 1, tzinfo=UTC)) == clock.now()
    with pytest.raises(errors.ValidationError):
        clock.set(datetime(2026, 1, 1))
    with pytest.raises(errors.ValidationError):
        clock.advance(days=-1)


def test_test_clock_calendar_steps_clamp_to_short_months() -> None:
    clock = TestClock(datetime(2024, 1, 31, 9, 30, tzinfo=UTC))
    assert clock.advance(months=1) == datetime(2024, 2, 29, 9, 30, tzinfo=UTC)  # leap year
    clock.set(datetime(2026, 1, 31, tzinfo=UTC))
    assert clock.advance(months=1) == datetime(2026, 2, 28, tzinfo=UTC)
    # Each step clamps on its own: from 28 Feb the day stays 28 (periods instead keep the anchor).
    assert clock.advance(months=1) == datetime(2026, 3, 28, tzinfo=UTC)
    clock.set(datetime(2024, 2, 29, tzinfo=UTC))
    assert clock.advance(years=1) == datetime(2025, 2, 28, tzinfo=UTC)
    # Calendar steps first, then fixed ones; a negative part is fine while the total moves forward.
    assert clock.advance(months=1, days=-1) == datetime(2025, 3, 27, tzinfo=UTC)
    assert clock.advance(weeks=1, days=1, hours=1, minutes=1, seconds=1) == datetime(
        2025, 4, 4, 1, 1, 1, tzinfo=UTC
    )
    assert clock.advance(timedelta(hours=1), days=1) == datetime(2025, 4, 5, 2, 1, 1, tzinfo=UTC)
    assert clock.advance() == clock.now()  # no step: stays put


@pytest.mark.parametrize(
    ("steps", "field"),
    [
        ({"days": -1}, "days"),
        ({"months": -1}, "months"),
        ({"years": -1, "days": 300}, "years"),  # net backwards
        ({"months": 1, "days": -40}, "days"),  # mixed, lands before now
        ({"delta": timedelta(seconds=-1)}, "delta"),
        ({"months": 1.5}, "months"),
        ({"years": True}, "years"),
        ({"hours": "1"}, "hours"),
        ({"seconds": float("nan")}, "seconds"),
        ({"delta": 5}, "delta"),
        ({"years": 10_000}, "years"),
    ],
)
def test_test_clock_refuses_backward_or_bad_steps_naming_the_argument(
    steps: dict[str, object], field: str
) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    clock = TestClock(start)
    with pytest.raises(errors.ValidationError) as caught:
        clock.advance(**steps)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert clock.now() == start  # a refused step does not move the clock


def test_test_clock_backward_step_message_says_where_it_would_land() -> None:
    clock = TestClock(datetime(2026, 3, 1, tzinfo=UTC))
    with pytest.raises(errors.ValidationError, match=r"months=1, days=-40 lands on 2026-02-20.*set\(\)"):
        clock.advance(months=1, days=-40)


def test_test_clock_set_may_move_backwards() -> None:
    clock = TestClock(datetime(2026, 3, 1, tzinfo=UTC))
    assert clock.set(datetime(2025, 1, 1, 5, tzinfo=timezone(timedelta(hours=5)))) == datetime(
        2025, 1, 1, tzinfo=UTC
    )
    assert clock.now().tzinfo is UTC


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9000, 12, 31), timezones=st.just(UTC)),
    st.integers(min_value=0, max_value=12 * 900),
)
def test_advancing_by_months_never_moves_back_and_lands_on_the_clamped_day(
    start: datetime, months: int
) -> None:
    clock = TestClock(start)
    after = clock.advance(months=months)
    assert after >= start
    year, month = divmod(start.year * 12 + start.month - 1 + months, 12)
    assert (after.year, after.month) == (year, month + 1)
    assert after.day == min(start.day, monthrange(year, month + 1)[1])
    assert after.time() == start.time()


def test_ids_are_prefixed_sortable_and_strictly_increasing_within_a_millisecond() -> None:
    frozen = datetime(2026, 6, 1, tzinfo=UTC)
    entropy = iter([b"\x01" * 10, b"\x00" * 10, b"\x00" * 10])
    factory = IdFactory(lambda: frozen, lambda n: next(entropy))
    a, b, c = (factory.new("cust") for _ in range(3))
    assert a < b < c
    assert all(x.startswith("cust_") and len(x) == 5 + 26 for x in (a, b, c))
    later = IdFactory(lambda: frozen + timedelta(milliseconds=1), lambda n: b"\x00" * 10).new("cust")
    assert later > c


def test_ulid_encoding_known_value() -> None:
    # 2**128 - 1 is 26 base32 digits: a leading 7 then 25 Z's.
    assert encode_ulid(2**128 - 1) == "7" + "Z" * 25
    assert encode_ulid(0) == "0" * 26
    assert encode_ulid(32) == "0" * 24 + "10"
    for outside in (-1, 2**128):
        with pytest.raises(ValueError):
            encode_ulid(outside)


@given(st.integers(min_value=0, max_value=2**128 - 1), st.integers(min_value=0, max_value=2**128 - 1))
def test_ulid_digits_read_back_and_sort_like_the_numbers(a: int, b: int) -> None:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32
    text = encode_ulid(a)
    assert len(text) == 26
    value = 0
    for digit in text:
        value = value * 32 + alphabet.index(digit)
    assert value == a
    assert (text < encode_ulid(b)) == (a < b)


@pytest.mark.parametrize(
    ("cls", "code", "status"),
    [
        (errors.ValidationError, "validation_error", 400),
        (errors.InvalidOperation, "invalid_operation", 400),
        (errors.Unauthorized, "unauthorized", 401),
        (errors.PermissionDenied, "permission_denied", 403),
        (errors.NotFound, "not_found", 404),
        (errors.AlreadyExists, "already_exists", 409),
        (errors.VersionConflict, "version_conflict", 409),
        (errors.AppendOnly, "append_only", 409),
        (errors.IdempotencyConflict, "idempotency_conflict", 409),
        (errors.PayloadTooLarge, "payload_too_large", 413),
        (errors.InternalError, "internal_error", 500),
    ],
)
def test_error_codes_and_statuses(cls: type[errors.BillingError], code: str, status: int) -> None:
    err = cls("something")
    assert (err.code, err.http_status) == (code, status)
    assert err.to_dict() == {"code": code, "http_status_code": status, "message": "something"}
    assert isinstance(err, errors.BillingError)


def test_validation_error_names_its_field() -> None:
    err = errors.ValidationError("bad", field="items[3].name")
    assert err.to_dict()["details"] == {"field": "items[3].name"}


def test_parse_enum_names_the_field_and_the_allowed_values() -> None:
    from billingkit.domain.periods import BillingCycle
    from billingkit.domain.validation import parse_enum

    assert parse_enum(BillingCycle, "calendar", field="billing_cycle") is BillingCycle.CALENDAR
    with pytest.raises(errors.ValidationError) as info:
        parse_enum(BillingCycle, "lunar", field="billing_cycle")
    assert info.value.field == "billing_cycle"
    assert info.value.details["allowed_values"] == ["anniversary", "calendar"]
    assert "lunar" in info.value.message


def test_passwords_are_hashed_at_production_cost(cheap_password_hashing: tuple[int, int, int]) -> None:
    # The suite hashes cheaply (see tests/conftest.py); what ships is scrypt n=2**14, r=8, p=1.
    assert cheap_password_hashing == (2**14, 8, 1)
