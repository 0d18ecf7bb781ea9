"""``LoginThrottle`` on its own: concurrency, bounded memory, forgetting, configuration."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from billingkit import LoginThrottle, TooManyRequests, ValidationError

T0 = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def test_parallel_attempts_cannot_slip_past_the_limit() -> None:
    throttle = LoginThrottle()
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(40)

    def attempt() -> None:
        start.wait()
        try:
            throttle.attempt("a@b.test", T0)
            result = "counted"
        except TooManyRequests as exc:
            result = f"refused {exc.retry_after}"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=attempt) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["counted"] * 5 + ["refused 900"] * 35


def test_memory_is_bounded_and_stale_keys_are_forgotten() -> None:
    throttle = LoginThrottle(max_entries=3)
    for i in range(5):
        throttle.attempt(f"user{i}@b.test", T0 + timedelta(seconds=i))
    assert len(throttle) == 3  # the two least recently tried were dropped
    # A key idle for 24 hours is forgotten (user2 and user3 here; user4 is a second short).
    throttle.attempt("x@b.test", T0 + timedelta(hours=24, seconds=3))
    assert len(throttle) == 2


def test_flooding_the_table_does_not_free_a_locked_key() -> None:
    throttle = LoginThrottle(max_entries=3)
    for _ in range(5):
        throttle.attempt("victim@b.test", T0)  # locked now, and the oldest key
    for i in range(10):
        throttle.attempt(f"made-up-{i}@b.test", T0 + timedelta(seconds=1 + i))
    assert len(throttle) == 3
    with pytest.raises(TooManyRequests):
        throttle.attempt("victim@b.test", T0 + timedelta(seconds=20))
    # A table of locked keys still counts a new key's attempts (the oldest locked one goes).
    full = LoginThrottle(max_entries=2)
    for name in ("a", "b", "c"):
        for _ in range(5):
            full.attempt(name, T0)
    assert len(full) == 2
    with pytest.raises(TooManyRequests):
        full.attempt("c", T0)


def test_forgetting_resets_the_lockout_level() -> None:
    throttle = LoginThrottle()
    for _ in range(5):
        throttle.attempt("k", T0)
    later = T0 + timedelta(minutes=15)
    for _ in range(5):
        throttle.attempt("k", later)
    with pytest.raises(TooManyRequests) as info:
        throttle.attempt("k", later)
    assert info.value.retry_after == 30 * 60  # the second lockout doubles
    much_later = later + timedelta(minutes=30, hours=24)
    for _ in range(5):
        throttle.attempt("k", much_later)
    with pytest.raises(TooManyRequests) as info:
        throttle.attempt("k", much_later)
    assert info.value.retry_after == 15 * 60  # a day idle: back to the first level


def test_settings_are_checked() -> None:
    with pytest.raises(ValidationError):
        LoginThrottle(max_failures=0)
    with pytest.raises(ValidationError):
        LoginThrottle(lockout=timedelta(hours=2), max_lockout=timedelta(hours=1))
    custom = LoginThrottle(max_failures=2, lockout=timedelta(seconds=30), max_lockout=timedelta(seconds=30))
    custom.attempt("x", T0)
    custom.attempt("x", T0)
    with pytest.raises(TooManyRequests) as info:
        custom.attempt("x", T0 + timedelta(seconds=10))
    assert info.value.retry_after == 20
    custom.succeeded("x")
    custom.attempt("x", T0 + timedelta(seconds=10))


def test_keys_are_lowercased_and_bounded() -> None:
    assert LoginThrottle.key("  Ada@Example.TEST ") == "ada@example.test"
    assert len(LoginThrottle.key("x" * 1_000_000)) == 320
