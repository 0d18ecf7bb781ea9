"""The wallet transaction ledger: every movement of a wallet's credits, as an append-only row.

A wallet's credit balance is the sum of its credit rows minus the sum of its debit rows; nothing
holds a running balance that could disagree with the rows. A row is never edited: a correction,
a refund or an expiry is a new row of the opposite type. Each row carries an ``idempotency_key``
derived from what caused it (an invoice, a credit grant application, a credit note, a request),
unique in its environment, so applying one cause twice stores one row (:func:`movement_key`).

A wallet (:class:`Wallet`) is the account the rows belong to. It caches the sum of its completed
rows as ``credit_balance`` and every movement updates that cache under the wallet's ``version`` in
the movement's own unit of work: two concurrent movements of one wallet cannot both commit (the
second is a ``VersionConflict``), which is what serialises consumption of the same credits. A test
checks the cache equals the sum of the rows.

Debits draw from named credit rows: a debit row's ``source_transaction_id`` is the credit row it
consumed, so the credits still available on a credit row are its ``credit_amount`` minus the
debits drawing from it (one grouped sum). A debit that spans several credit rows is several rows.

The only change a stored row ever sees is a pending credit (an invoiced purchase, not yet paid)
becoming ``completed`` or ``failed``, once (``Ledger.settle``); a pending row counts in no balance.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from billingkit.domain.catalog.features import AlertSettings
from billingkit.domain.money import quantize_exponent
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import MAX_KEY, DecimalText, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "CREDIT_EXPONENT",
    "AlertState",
    "AutoTopup",
    "AutoTopupCooldown",
    "CooldownUnit",
    "Draw",
    "Lot",
    "TransactionReason",
    "TransactionReferenceType",
    "TransactionStatus",
    "TransactionType",
    "Wallet",
    "WalletConfig",
    "WalletPriceType",
    "WalletStatus",
    "WalletTransaction",
    "WalletType",
    "consumption_order",
    "credits_for",
    "credits_value",
    "draw_money",
    "draws_for_amount",
    "draws_for_credits",
    "movement_key",
]

#: Credits are kept to 10 decimal places: a money amount turned into credits at a rate that does
#: not divide it (10.00 usd at 3 usd a credit) is rounded half up there, e.g. 3.3333333333.
CREDIT_EXPONENT = Decimal("1e-10")


def credits_value(credits: Decimal, conversion_rate: Decimal, currency: str) -> Decimal:
    """What ``credits`` are worth in ``currency`` at ``conversion_rate`` (currency per credit),
    rounded down to the currency's minor unit (credits never pay more than they hold):
    ``credits_value(Decimal("3.3333333333"), Decimal(3), "usd")`` is ``Decimal("9.99")``."""
    return (credits * conversion_rate).quantize(quantize_exponent(currency), rounding=ROUND_FLOOR)


def credits_for(amount: Decimal, conversion_rate: Decimal) -> Decimal:
    """The credits worth ``amount`` (money) at ``conversion_rate``, to :data:`CREDIT_EXPONENT`
    half up: ``credits_for(Decimal("10.00"), Decimal("0.5"))`` is ``Decimal("20")``."""
    if conversion_rate <= 0:
        raise ValidationError("conversion_rate must be greater than 0", field="conversion_rate")
    credits = (amount / conversion_rate).quantize(CREDIT_EXPONENT, rounding=ROUND_HALF_UP)
    # Without trailing zeros, and never in exponent form (20, not 2E+1).
    return Decimal(format(credits.normalize(), "f"))


class TransactionType(StrEnum):
    """Which way credits move: into the wallet or out of it."""

    CREDIT = "credit"
    DEBIT = "debit"


class TransactionStatus(StrEnum):
    """A credit bought on an invoice is ``pending`` until the invoice is paid, then ``completed``
    (or ``failed`` when the purchase is abandoned). Every other row is ``completed`` from the start."""

    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"


class TransactionReason(StrEnum):
    """Why credits moved (the reference's ``transaction_reason``)."""

    INVOICE_PAYMENT = "INVOICE_PAYMENT"
    FREE_CREDIT_GRANT = "FREE_CREDIT_GRANT"
    SUBSCRIPTION_CREDIT_GRANT = "SUBSCRIPTION_CREDIT_GRANT"
    PURCHASED_CREDIT_INVOICED = "PURCHASED_CREDIT_INVOICED"
    PURCHASED_CREDIT_DIRECT = "PURCHASED_CREDIT_DIRECT"
    CREDIT_NOTE = "CREDIT_NOTE"
    CREDIT_EXPIRED = "CREDIT_EXPIRED"
    WALLET_TERMINATION = "WALLET_TERMINATION"
    MANUAL_BALANCE_DEBIT = "MANUAL_BALANCE_DEBIT"
    CREDIT_ADJUSTMENT = "CREDIT_ADJUSTMENT"
    INVOICE_VOID_REFUND = "INVOICE_VOID_REFUND"
    PURCHASED_CREDIT_BONUS = "PURCHASED_CREDIT_BONUS"


class TransactionReferenceType(StrEnum):
    """What ``reference_id`` names (the reference's ``WalletTxReferenceType``)."""

    PAYMENT = "PAYMENT"
    EXTERNAL = "EXTERNAL"
    REQUEST = "REQUEST"
    INVOICE = "INVOICE"


_KEY_SEPARATOR = "|"


def movement_key(cause: str, *parts: str) -> str:
    """The idempotency key of the movement ``cause`` makes for ``parts`` (the ids and instants
    that identify one application of it), in the reference's ``<cause>|<part>|...`` form:
    ``movement_key("invoice_void_refund", "inv_1")`` is ``"invoice_void_refund|inv_1"``.

    No piece may be empty or contain ``|``, so two different causes or part lists never give one
    key; the key is at most 255 characters. Raises ``ValidationError`` naming ``idempotency_key``.
    """
    pieces = (cause, *parts)
    for piece in pieces:
        if not isinstance(piece, str) or not piece or _KEY_SEPARATOR in piece:
            raise ValidationError(
                f"each part of a movement key is non-empty text without {_KEY_SEPARATOR!r}, not {piece!r}",
                field="idempotency_key",
            )
    key = _KEY_SEPARATOR.join(pieces)
    if len(key) > MAX_KEY:
        raise ValidationError(f"a movement key is at most {MAX_KEY} characters", field="idempotency_key")
    return key


class WalletTransaction(EnvironmentResource):
    """``credit_amount`` credits moving into (``credit``) or out of (``debit``) wallet
    ``wallet_id``, worth ``amount`` in the wallet's currency. Both are positive: the direction
    is ``type``, so a correction is a row of the other type, never a negative one.

    ``idempotency_key`` names the cause (see :func:`movement_key`) and is unique in the
    environment. ``reference_type``/``reference_id`` name the invoice, payment or request behind
    the movement; ``parent_transaction_id`` the credit a bonus was earned with. Credits may carry
    an ``expiry_date`` and a ``priority`` (lower is consumed first); debits carry neither.

    Fields the reference updates in place are not stored here: a pending top-up is not a movement
    until it is paid, and the credits left on a credit row and the balance around a row are sums
    over later rows. Raises ``ValidationError`` naming the field.
    """

    wallet_id: str
    customer_id: str
    type: TransactionType
    credit_amount: DecimalText
    amount: DecimalText
    transaction_reason: TransactionReason
    idempotency_key: str
    reference_type: TransactionReferenceType | None = None
    reference_id: str | None = None
    parent_transaction_id: str | None = None
    expiry_date: UtcDatetime | None = None
    priority: int | None = None
    description: str | None = None
    metadata: dict[str, str] = {}
    transaction_status: TransactionStatus = TransactionStatus.COMPLETED
    source_transaction_id: str | None = None

    @model_validator(mode="after")
    def _movement_rules(self) -> Self:
        for name in ("credit_amount", "amount"):
            value: Decimal = getattr(self, name)
            if value <= 0:
                raise ValidationError(f"{name} must be greater than 0, not {value}", field=name)
        if not self.idempotency_key or len(self.idempotency_key) > MAX_KEY:
            raise ValidationError(
                f"idempotency_key must be 1 to {MAX_KEY} characters", field="idempotency_key"
            )
        if self.type is TransactionType.DEBIT:
            for name in ("expiry_date", "priority"):
                if getattr(self, name) is not None:
                    raise ValidationError(f"{name} is only allowed on credit transactions", field=name)
            if self.transaction_status is not TransactionStatus.COMPLETED:
                raise ValidationError("a debit is completed when it is recorded", field="transaction_status")
        elif self.source_transaction_id is not None:
            raise ValidationError(
                "source_transaction_id names the credit a debit draws from; a credit has none",
                field="source_transaction_id",
            )
        if self.priority is not None and self.priority < 0:
            raise ValidationError("priority must not be negative", field="priority")
        return self

    def __repr__(self) -> str:
        return (
            f"<WalletTransaction {self.id} {self.type.value} {self.credit_amount} credits "
            f"wallet={self.wallet_id} {self.transaction_reason.value}>"
        )

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# -- wallets ----------------------------------------------------------------------------------


class WalletType(StrEnum):
    """``PRE_PAID``: credits pay invoice lines. ``POST_PAID``: a payment method invoices are paid
    with after they are issued."""

    PRE_PAID = "PRE_PAID"
    POST_PAID = "POST_PAID"


class WalletStatus(StrEnum):
    ACTIVE = "active"
    FROZEN = "frozen"
    CLOSED = "closed"


class WalletPriceType(StrEnum):
    """Which invoice lines a wallet's credits may pay (``ALL`` = USAGE and FIXED)."""

    ALL = "ALL"
    USAGE = "USAGE"
    FIXED = "FIXED"


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WalletConfig(_Part):
    allowed_price_types: tuple[WalletPriceType, ...] = (WalletPriceType.ALL,)

    @model_validator(mode="after")
    def _not_empty(self) -> Self:
        if not self.allowed_price_types:
            raise ValidationError(
                "allowed_price_types names at least one of ALL, USAGE, FIXED",
                field="config.allowed_price_types",
            )
        return self

    def price_types(self) -> frozenset[str]:
        """The invoice price types the credits pay: ``{"USAGE", "FIXED"}`` for ``ALL``."""
        if WalletPriceType.ALL in self.allowed_price_types:
            return frozenset({"USAGE", "FIXED"})
        return frozenset(t.value for t in self.allowed_price_types)


class CooldownUnit(StrEnum):
    SECOND = "second"
    MINUTE = "minute"
    HOUR = "hour"
    DAY = "day"


class AutoTopupCooldown(_Part):
    """A wait of ``value`` ``unit`` s (the reference's ``types.Duration``)."""

    unit: CooldownUnit = CooldownUnit.SECOND
    value: Annotated[int, Field(ge=0, le=2_147_483_647)] = 0


class AutoTopup(_Part):
    """Top the wallet up by ``amount`` credits when its balance falls below ``threshold``
    (``invoicing``: as an invoiced purchase), at most once per ``cooldown``. Stored as given;
    nothing acts on it yet (see docs/decisions.md). ``threshold`` and ``amount`` are JSON numbers
    on the reference's wire: a number is read as the decimal it is written as (``10.5``), a
    decimal string is read exactly."""

    enabled: bool = False
    threshold: DecimalText | None = None
    amount: DecimalText | None = None
    invoicing: bool = False
    cooldown: AutoTopupCooldown | None = None

    @model_validator(mode="before")
    @classmethod
    def _numbers_as_written(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {
                key: str(value) if key in ("threshold", "amount") and isinstance(value, float) else value
                for key, value in data.items()
            }
        return data


class AlertState(StrEnum):
    OK = "ok"
    INFO = "info"
    WARNING = "warning"
    IN_ALARM = "in_alarm"


class Wallet(EnvironmentResource):
    """Customer ``customer_id``'s account of prepaid credits in ``currency``.

    One credit is worth ``conversion_rate`` of the currency; a purchase of ``amount`` buys
    ``amount / topup_conversion_rate`` credits. ``credit_balance`` is the cached sum of the
    wallet's completed ledger rows (credits minus debits); ``balance`` its worth in the currency.
    ``version`` moves with every movement (see the module docstring).
    """

    customer_id: str
    currency: str
    name: str | None = None
    description: str | None = None
    wallet_type: WalletType = WalletType.PRE_PAID
    wallet_status: WalletStatus = WalletStatus.ACTIVE
    conversion_rate: DecimalText = Decimal(1)
    topup_conversion_rate: DecimalText = Decimal(1)
    config: WalletConfig = WalletConfig()
    auto_topup: AutoTopup | None = None
    alert_settings: AlertSettings | None = None
    alert_state: AlertState = AlertState.OK
    credit_balance: DecimalText = Decimal(0)
    metadata: dict[str, str] = {}
    version: int = 1
    #: The earliest expiry among the wallet's lots with credits left (internal: the worker's due
    #: field for credit expiry, kept by ``services.wallet_ledger``); ``None`` when nothing expires.
    next_expiry_at: UtcDatetime | None = None

    @model_validator(mode="after")
    def _rates(self) -> Self:
        for name in ("conversion_rate", "topup_conversion_rate"):
            if getattr(self, name) <= 0:
                raise ValidationError(f"{name} must be greater than 0", field=name)
        return self

    @property
    def balance(self) -> Decimal:
        """``credit_balance`` in the currency (rounded down to its minor unit)."""
        return credits_value(self.credit_balance, self.conversion_rate, self.currency)

    def __repr__(self) -> str:
        return (
            f"<Wallet {self.id} {self.wallet_type.value} {self.currency} {self.credit_balance} credits "
            f"{self.wallet_status.value}>"
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form, with ``balance`` beside ``credit_balance``."""
        data = self.model_dump(mode="json", exclude={"next_expiry_at"})
        data["balance"] = str(self.balance)
        return data


# -- consuming credits --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lot:
    """A completed credit row with ``credits_left`` (its credits minus the debits drawing from it)."""

    transaction: WalletTransaction
    credits_left: Decimal

    @property
    def id(self) -> str:
        return self.transaction.id


@dataclass(frozen=True, slots=True)
class Draw:
    """``credits`` taken from ``lot``, worth ``amount`` of the wallet's currency."""

    lot: Lot
    credits: Decimal
    amount: Decimal


_NEVER = datetime.max.replace(tzinfo=UTC)


def _lot_order(lot: Lot) -> tuple[bool, int, datetime, Decimal, str]:
    row = lot.transaction
    return (row.priority is None, row.priority or 0, row.expiry_date or _NEVER, -row.credit_amount, row.id)


def consumption_order(lots: Iterable[Lot], *, at: datetime | None = None) -> list[Lot]:
    """The lots credits are taken from, in order (reference notes §6.2): ``priority`` ascending
    (none last), then expiry ascending (none last), then the larger credit first, then id. Lots
    with nothing left, and with ``at``, lots expired at ``at`` (expiry at or before it), are left out.
    Example: A (priority 1, 30), B (no priority, 100, expires in May), C (no priority, 50, expires
    in April) -> A, C, B."""
    usable = [
        lot
        for lot in lots
        if lot.credits_left > 0
        and (at is None or lot.transaction.expiry_date is None or lot.transaction.expiry_date > at)
    ]
    return sorted(usable, key=_lot_order)


def draw_money(lot: Lot, amount: Decimal, conversion_rate: Decimal, currency: str) -> Draw:
    """The draw paying ``amount`` (money, at most the lot's worth) from ``lot``: all its credits
    when ``amount`` is its whole worth, else the credits worth ``amount`` (never more than left)."""
    worth = credits_value(lot.credits_left, conversion_rate, currency)
    if amount > worth:
        raise ValidationError(f"{amount} is more than the {worth} lot {lot.id} is worth", field="amount")
    credits = (
        lot.credits_left if amount == worth else min(lot.credits_left, credits_for(amount, conversion_rate))
    )
    return Draw(lot, credits, amount)


def draws_for_amount(
    lots: Sequence[Lot], amount: Decimal, conversion_rate: Decimal, currency: str
) -> list[Draw]:
    """Pay ``amount`` (money) from ``lots`` taken in the order given (see
    :func:`consumption_order`); ``InvalidOperation`` when they are worth less than ``amount``.
    Example: lots worth 30.00 and 100.00 paying 45.00 -> 30.00 from the first, 15.00 from the second."""
    draws: list[Draw] = []
    left = amount
    for lot in lots:
        if left <= 0:
            break
        worth = credits_value(lot.credits_left, conversion_rate, currency)
        if worth <= 0:
            continue
        paid = min(worth, left)
        draws.append(draw_money(lot, paid, conversion_rate, currency))
        left -= paid
    if left > 0:
        raise InvalidOperation(
            f"the wallet's credits are worth {amount - left} {currency}, less than {amount}"
        )
    return draws


def draws_for_credits(
    lots: Sequence[Lot], credits: Decimal, conversion_rate: Decimal, currency: str
) -> list[Draw]:
    """Take ``credits`` from ``lots`` in the order given; ``InvalidOperation`` when they hold fewer.
    Each draw's ``amount`` is its credits' worth (rounded down to the currency's minor unit)."""
    draws: list[Draw] = []
    left = credits
    for lot in lots:
        if left <= 0:
            break
        taken = min(lot.credits_left, left)
        if taken <= 0:
            continue
        draws.append(Draw(lot, taken, credits_value(taken, conversion_rate, currency)))
        left -= taken
    if left > 0:
        raise InvalidOperation(f"the wallet holds {credits - left} credits, fewer than {credits}")
    return draws
