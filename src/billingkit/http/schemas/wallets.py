"""Answers of ``/v1/wallets`` and ``/v1/customers/.../wallets``: credit accounts, their top-ups
and their ledger (the reference's ``WalletResponse``, ``TopUpWalletResponse``,
``WalletTransactionResponse``)."""

from __future__ import annotations

from billingkit.domain.wallets import (
    AlertState,
    CooldownUnit,
    TransactionReason,
    TransactionReferenceType,
    TransactionStatus,
    TransactionType,
    WalletPriceType,
    WalletStatus,
    WalletType,
)
from billingkit.http.schemas.base import (
    DecimalString,
    EnvironmentRecordResponse,
    PaginationResponse,
    Timestamp,
    WireModel,
)
from billingkit.http.schemas.checkout import CheckoutSessionResponse
from billingkit.http.schemas.features import FeatureAlertSettingsResponse

__all__ = [
    "AutoTopupCooldownResponse",
    "AutoTopupResponse",
    "ListWalletTransactionsResponse",
    "ListWalletsResponse",
    "TopUpWalletResponse",
    "WalletConfigResponse",
    "WalletResponse",
    "WalletTransactionResponse",
]


class WalletConfigResponse(WireModel):
    """Which invoice lines the credits may pay: ``ALL``, ``USAGE``, ``FIXED``."""

    allowed_price_types: list[WalletPriceType]


class AutoTopupCooldownResponse(WireModel):
    unit: CooldownUnit
    value: int


class AutoTopupResponse(WireModel):
    """Top up ``amount`` credits when the balance falls below ``threshold`` (stored, not acted
    on yet)."""

    enabled: bool
    threshold: DecimalString | None
    amount: DecimalString | None
    invoicing: bool
    cooldown: AutoTopupCooldownResponse | None


class WalletResponse(EnvironmentRecordResponse):
    """Customer ``customer_id``'s credits in ``currency``: ``credit_balance`` credits, worth
    ``balance`` (credits times ``conversion_rate``, rounded down to the currency's minor unit)."""

    customer_id: str
    currency: str
    name: str | None
    description: str | None
    wallet_type: WalletType
    wallet_status: WalletStatus
    conversion_rate: DecimalString
    topup_conversion_rate: DecimalString
    config: WalletConfigResponse
    auto_topup: AutoTopupResponse | None
    alert_settings: FeatureAlertSettingsResponse | None
    alert_state: AlertState
    credit_balance: DecimalString
    metadata: dict[str, str]
    version: int
    balance: DecimalString


class ListWalletsResponse(WireModel):
    items: list[WalletResponse]
    pagination: PaginationResponse


class WalletTransactionResponse(EnvironmentRecordResponse):
    """One movement: ``credit_amount`` credits into (``credit``) or out of (``debit``) the wallet,
    worth ``amount``; ``credits_available`` is what is left of a completed credit."""

    wallet_id: str
    customer_id: str
    type: TransactionType
    credit_amount: DecimalString
    amount: DecimalString
    transaction_reason: TransactionReason
    idempotency_key: str
    reference_type: TransactionReferenceType | None
    reference_id: str | None
    parent_transaction_id: str | None
    expiry_date: Timestamp | None
    priority: int | None
    description: str | None
    metadata: dict[str, str]
    transaction_status: TransactionStatus
    source_transaction_id: str | None
    credits_available: DecimalString
    currency: str
    conversion_rate: DecimalString
    topup_conversion_rate: DecimalString


class ListWalletTransactionsResponse(WireModel):
    items: list[WalletTransactionResponse]
    pagination: PaginationResponse


class TopUpWalletResponse(WireModel):
    """The wallet after the top-up, the purchase (or grant) transaction, and the invoice selling
    the credits (``PURCHASED_CREDIT_INVOICED`` only)."""

    wallet: WalletResponse
    wallet_transaction: WalletTransactionResponse
    invoice_id: str | None = None
    #: Only with ``checkout``: the session the credits wait for.
    checkout_session: CheckoutSessionResponse | None = None
