"""Prefixed, sortable identifiers: ``<prefix>_<ULID>``.

A ULID is 48 bits of milliseconds since the epoch plus 80 random bits, in Crockford base32, so ids sort
by creation time. :class:`IdFactory` keeps ids strictly increasing within one factory even when several
are made in the same millisecond (the random part is incremented), so keyset pages never reorder.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime

__all__ = ["IdFactory", "encode_ulid"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80


# Every pair of base32 digits, indexed by the 10 bits they encode.
_PAIRS = tuple(a + b for a in _ALPHABET for b in _ALPHABET)
_SHIFTS = tuple(range(120, -1, -10))


def encode_ulid(value: int) -> str:
    """Encode a 128-bit integer as a 26-character Crockford base32 ULID string.

    26 digits hold 130 bits (the value's 128 behind two zero bits): 13 pairs of digits, each
    looked up from 10 bits at once."""
    if not 0 <= value < 1 << 128:
        raise ValueError("a ULID is a 128-bit unsigned integer")
    pairs = _PAIRS
    return "".join([pairs[(value >> shift) & 1023] for shift in _SHIFTS])


class IdFactory:
    """Makes ids from a time source and an entropy source (both injectable for tests)."""

    def __init__(
        self,
        now: Callable[[], datetime],
        entropy: Callable[[int], bytes] = os.urandom,
    ) -> None:
        self._now = now
        self._entropy = entropy
        self._lock = threading.Lock()
        self._last = 0

    def new(self, prefix: str) -> str:
        """Return ``"<prefix>_<ULID>"``, greater than every id this factory made before."""
        millis = int(self._now().timestamp() * 1000)
        random_part = int.from_bytes(self._entropy(_RANDOM_BITS // 8), "big")
        candidate = (millis << _RANDOM_BITS) | random_part
        with self._lock:
            if candidate <= self._last:
                candidate = self._last + 1
            self._last = candidate
        return f"{prefix}_{encode_ulid(candidate)}"
