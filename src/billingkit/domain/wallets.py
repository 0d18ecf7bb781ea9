"""The wallet transaction ledger: every movement of a wallet's credits, as an append-only row.

A wallet's credit balance is the sum of its credit rows minus the sum of its debit rows; nothing
holds a running balance that could disagree with the rows. A row is never edited: a correction,
a refund or an expiry is a new row of the opposite type. Each row carries an ``idempotency_key``
derived from what caused it (an invoice, a credit grant application, a credit note, a request),
unique in its environment, so applying one cause twice stores one row (:func:`movement_key`).

Wallets themselves, top-ups, consumption and expiry arrive with the wallet issue; this module
holds the row they all write.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any, Self

from pydantic import model_validator

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import MAX_KEY, DecimalText, UtcDatetime
from billingkit.errors import ValidationError

__all__ = [
    "TransactionReason",
    "TransactionReferenceType",
    "TransactionType",
    "WalletTransaction",
    "movement_key",
]


class TransactionType(StrEnum):
    """Which way credits move: into the wallet or out of it."""

    CREDIT = "credit"
    DEBIT = "debit"


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
