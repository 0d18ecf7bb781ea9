"""The rules of putting credits into a wallet (reference notes §6.2), as pure functions.

- :func:`topup_credits`: how many credits a top-up adds (``credits_to_add``, else ``amount`` at
  the wallet's ``topup_conversion_rate``).
- :func:`purchase_amount`: what an invoiced purchase of credits costs, in the wallet's currency.
- :func:`request_key`: the default idempotency key of a top-up request (the same request within
  one second is one top-up).
- :func:`topup_key`, :func:`bonus_key`, :func:`initial_credits_key`: the movement keys of a
  top-up, of the bonus earned with a purchase, and of a new wallet's initial credits.
- :func:`end_of_day`: the instant a ``YYYYMMDD`` expiry date means.
- :func:`check_auto_topup`: what an enabled auto top-up must say.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from billingkit.domain.money import round_money
from billingkit.domain.wallets import AutoTopup, TransactionReason, credits_for, movement_key
from billingkit.errors import ValidationError

__all__ = [
    "PURCHASE_REASONS",
    "TOPUP_REASONS",
    "bonus_key",
    "check_auto_topup",
    "end_of_day",
    "initial_credits_key",
    "purchase_amount",
    "request_key",
    "topup_credits",
    "topup_key",
]

#: The reasons a top-up request may give (reference notes §6.2); the others name movements
#: billingkit makes itself (debits, expiries, bonuses).
TOPUP_REASONS = frozenset(
    {
        TransactionReason.FREE_CREDIT_GRANT,
        TransactionReason.PURCHASED_CREDIT_INVOICED,
        TransactionReason.PURCHASED_CREDIT_DIRECT,
        TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
        TransactionReason.CREDIT_NOTE,
        TransactionReason.INVOICE_VOID_REFUND,
    }
)

#: Top-ups that buy credits: only these may earn bonus credits.
PURCHASE_REASONS = frozenset(
    {TransactionReason.PURCHASED_CREDIT_INVOICED, TransactionReason.PURCHASED_CREDIT_DIRECT}
)


def topup_credits(
    credits_to_add: Decimal | None, amount: Decimal | None, topup_conversion_rate: Decimal
) -> Decimal:
    """The credits a top-up adds: ``credits_to_add`` when given (it wins over ``amount``, as the
    reference's request says), else ``amount`` (money) divided by ``topup_conversion_rate``, to
    10 places half up. Example: ``amount`` 10.00 at a rate of 0.5 is 20 credits; at 3 it is
    3.3333333333 credits.

    Raises ``ValidationError`` naming ``credits_to_add`` when neither is given, or the one given
    (``credits_to_add`` or ``amount``) when it is not above zero."""
    if credits_to_add is not None:
        if credits_to_add <= 0:
            raise ValidationError("credits_to_add must be greater than 0", field="credits_to_add")
        return credits_to_add
    if amount is None:
        raise ValidationError("credits_to_add or amount is required", field="credits_to_add")
    if amount <= 0:
        raise ValidationError("amount must be greater than 0", field="amount")
    credits = credits_for(amount, topup_conversion_rate)
    if credits <= 0:
        raise ValidationError(f"amount {amount} buys no credits", field="amount")
    return credits


def purchase_amount(
    credits: Decimal,
    topup_conversion_rate: Decimal,
    currency: str,
    amount: Decimal | None = None,
) -> Decimal:
    """What ``credits`` bought at ``topup_conversion_rate`` cost in ``currency``: ``amount`` when
    the request named the money (and not the credits), else ``credits * topup_conversion_rate``
    rounded to the currency (half away from zero). Example: 25 credits at 0.40 usd cost 10.00;
    3.3333333333 credits at 3 cost 10.00 (9.9999999999 rounded).

    Raises ``ValidationError`` naming ``credits_to_add`` when the price rounds to nothing."""
    price = round_money(amount if amount is not None else credits * topup_conversion_rate, currency)
    if price <= 0:
        raise ValidationError(
            f"{credits} credits cost less than the smallest unit of {currency}", field="credits_to_add"
        )
    return price


def _plain(value: Decimal) -> str:
    """``value`` without trailing zeros, never in exponent form: ``10.00`` and ``1E+1`` are ``10``."""
    return format(value.normalize(), "f")


def request_key(wallet_id: str, credits: Decimal, reason: TransactionReason, at: datetime) -> str:
    """The idempotency key of a top-up request that names none (reference notes §6.2): a digest
    of the wallet, the credits, the reason and the request's instant to the second, so the same
    request sent twice within one second is one top-up. In the reference's server-derived form
    ``<scope>-<first 16 hex of sha256("<scope>:k=v;...")>``:
    ``request_key("wallet_1", Decimal("10.00"), PURCHASED_CREDIT_DIRECT, 2026-05-01T09:30:00.7Z)``
    is ``wallet_topup-`` and the first 16 hex digits of the sha256 of
    ``wallet_topup:wallet_id=wallet_1;credits=10;transaction_reason=PURCHASED_CREDIT_DIRECT;at=2026-05-01T09:30:00Z``."""
    second = at.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = (
        f"wallet_topup:wallet_id={wallet_id};credits={_plain(credits)};"
        f"transaction_reason={reason.value};at={second}"
    )
    return f"wallet_topup-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def topup_key(idempotency_key: str) -> str:
    """The movement key of the top-up requested under ``idempotency_key`` (given by the caller or
    :func:`request_key`): ``topup_key("abc")`` is ``"wallet_topup|abc"``, so a caller's key can
    never be taken for a movement billingkit makes itself. A key holding ``|`` is refused
    (``ValidationError`` naming ``idempotency_key``)."""
    return movement_key("wallet_topup", idempotency_key)


def bonus_key(purchase_transaction_id: str) -> str:
    """The movement key of the bonus credits earned with purchase row ``purchase_transaction_id``:
    one bonus per purchase, found again when the purchase settles (``"wallet_topup_bonus|wtx_1"``)."""
    return movement_key("wallet_topup_bonus", purchase_transaction_id)


def initial_credits_key(wallet_id: str) -> str:
    """The movement key of a new wallet's ``initial_credits_to_load``: ``"wallet_initial_credits|<id>"``."""
    return movement_key("wallet_initial_credits", wallet_id)


def end_of_day(yyyymmdd: int, *, field: str) -> datetime:
    """The last second (UTC) of the day ``yyyymmdd`` names: credits that "expire on 2026-06-30"
    are usable through that day, so ``end_of_day(20260630)`` is ``2026-06-30T23:59:59Z``.
    Raises ``ValidationError`` naming ``field`` for a number that is not a calendar date."""
    text = str(yyyymmdd)
    try:
        if len(text) != 8:
            raise ValueError(text)
        day = datetime.strptime(text, "%Y%m%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValidationError(f"{yyyymmdd} is not a date in the form YYYYMMDD", field=field) from None
    return day + timedelta(days=1, seconds=-1)


def check_auto_topup(auto: AutoTopup | None, *, field: str = "auto_topup") -> None:
    """An enabled auto top-up names a ``threshold`` (credits, at least 0) and an ``amount``
    (credits, above 0); a disabled one may name either or neither. Raises ``ValidationError``
    naming ``auto_topup.threshold`` or ``auto_topup.amount``."""
    if auto is None:
        return
    if auto.threshold is not None and auto.threshold < 0:
        raise ValidationError("threshold must not be negative", field=f"{field}.threshold")
    if auto.amount is not None and auto.amount <= 0:
        raise ValidationError("amount must be greater than 0", field=f"{field}.amount")
    if auto.enabled:
        if auto.threshold is None:
            raise ValidationError("an enabled auto top-up needs a threshold", field=f"{field}.threshold")
        if auto.amount is None:
            raise ValidationError("an enabled auto top-up needs an amount", field=f"{field}.amount")
