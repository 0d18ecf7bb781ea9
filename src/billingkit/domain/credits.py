"""Prepaid credits: wallet balances and credit grants paying invoice lines.

Rules: sources are used in order of ``priority`` (lower number first, none last), then earliest
expiry (none last), then the larger balance, then id. Each source pays eligible lines (by price
type; USAGE only unless the source allows more) in line order, never more than what is left on a
line after discounts and never more than its balance rounded down to the currency's minor unit.
Expired sources pay nothing.
Example: grant A (priority 1) 30.00 and wallet B (priority 2) 100.00 against a usage line of 45.00
after discounts -> A pays 30.00, B pays 15.00, the line owes 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_FLOOR, Decimal
from typing import NamedTuple

from billingkit.domain.invariants import (
    require_choice,
    require_decimal,
    require_int,
    require_optional_utc,
    require_str,
)
from billingkit.domain.money import ZERO, quantize_exponent
from billingkit.errors import ValidationError

__all__ = [
    "CREDIT_SOURCE_KINDS",
    "PRICE_TYPES",
    "CreditAllocation",
    "CreditResult",
    "CreditSource",
    "apply_credits",
    "credit_order",
]

CREDIT_SOURCE_KINDS = ("wallet", "credit_grant")
PRICE_TYPES = ("USAGE", "FIXED")
_USAGE_ONLY = frozenset({"USAGE"})
_NEVER = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class CreditSource:
    """A prepaid balance that can pay invoice lines.

    ``balance`` is in the invoice currency (credits * conversion rate, converted by the caller),
    >= 0. ``priority`` is an int >= 0 or None (consumed last). ``expires_at`` is an aware instant or
    None. ``allowed_price_types`` ⊆ {USAGE, FIXED} (the wallet config's ``ALL`` = both; default
    USAGE). Raises ``ValidationError`` naming the field.
    """

    id: str
    balance: Decimal
    kind: str = "wallet"
    priority: int | None = None
    expires_at: datetime | None = None
    allowed_price_types: frozenset[str] = _USAGE_ONLY

    def __post_init__(self) -> None:
        require_str(self.id, field="id")
        object.__setattr__(self, "balance", require_decimal(self.balance, field="balance", minimum=ZERO))
        require_choice(self.kind, CREDIT_SOURCE_KINDS, field="kind")
        if self.priority is not None:
            require_int(self.priority, field="priority", minimum=0)
        object.__setattr__(self, "expires_at", require_optional_utc(self.expires_at, field="expires_at"))
        types = self.allowed_price_types
        if not isinstance(types, frozenset) or not types:
            raise ValidationError(
                "allowed_price_types must be a non-empty frozenset", field="allowed_price_types"
            )
        for price_type in types:
            require_choice(price_type, PRICE_TYPES, field="allowed_price_types")


class CreditAllocation(NamedTuple):
    """``amount`` (money) paid by source ``source_id`` on invoice line ``line_index``."""

    source_id: str
    source_kind: str
    line_index: int
    line_item_id: str
    amount: Decimal


class CreditResult(NamedTuple):
    """Credits per line (input order), per source (consumption order) and each allocation."""

    line_credits: tuple[Decimal, ...]
    source_debits: tuple[tuple[str, Decimal], ...]
    allocations: tuple[CreditAllocation, ...]
    total: Decimal


def _sort_key(source: CreditSource) -> tuple[bool, int, datetime, Decimal, str]:
    # A missing expiry sorts after every real one (datetime.max stands for "never").
    return (
        source.priority is None,
        source.priority or 0,
        source.expires_at or _NEVER,
        -source.balance,
        source.id,
    )


def credit_order(sources: Sequence[CreditSource]) -> list[CreditSource]:
    """Sources in consumption order (reference notes §6.2): priority asc (None last), expiry asc
    (None last), the larger balance first, then id."""
    return sorted(sources, key=_sort_key)


def apply_credits(
    sources: Sequence[CreditSource],
    line_item_ids: Sequence[str],
    price_types: Sequence[str],
    amounts: Sequence[Decimal],
    *,
    currency: str,
    as_of: datetime | None = None,
) -> CreditResult:
    """Pay lines' ``amounts`` (money left after discounts, >= 0) from prepaid ``sources``.

    ``price_types[i]`` (USAGE/FIXED) decides which sources may pay line ``i``. Sources expiring at or
    before ``as_of`` are skipped. No line is credited below zero. Example: lines [USAGE 45.00, FIXED
    20.00], one USAGE-only wallet of 100.00 -> credits [45.00, 0]. Raises ``ValidationError`` on
    mismatched or negative inputs.
    """
    count = len(amounts)
    if len(line_item_ids) != count or len(price_types) != count:
        raise ValidationError("line ids, price types and amounts differ in length", field="lines")
    need = list(amounts)
    for index, amount in enumerate(need):
        if not isinstance(amount, Decimal) or not amount.is_finite() or amount < ZERO:
            raise ValidationError("line amounts must be non-negative decimals", field=f"amounts[{index}]")
    unit = quantize_exponent(currency)
    credits = [ZERO] * count
    debits: list[tuple[str, Decimal]] = []
    allocations: list[CreditAllocation] = []
    for source in credit_order(sources):
        if as_of is not None and source.expires_at is not None and source.expires_at <= as_of:
            continue
        available = source.balance.quantize(unit, rounding=ROUND_FLOOR)
        used = ZERO
        allowed = source.allowed_price_types
        for i in range(count):
            if available <= ZERO:
                break
            owed = need[i]
            if owed <= ZERO or price_types[i] not in allowed:
                continue
            paid = owed if owed < available else available
            need[i] = owed - paid
            credits[i] += paid
            available -= paid
            used += paid
            allocations.append(CreditAllocation(source.id, source.kind, i, line_item_ids[i], paid))
        if used > ZERO:
            debits.append((source.id, used))
    return CreditResult(tuple(credits), tuple(debits), tuple(allocations), sum(credits, ZERO))
