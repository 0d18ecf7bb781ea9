"""Answer of ``GET /v1/wallets/{id}/balance/real-time``: a wallet with its real-time figures."""

from __future__ import annotations

from billingkit.domain.wallets import AlertState, WalletPriceType, WalletStatus, WalletType
from billingkit.http.schemas.base import DecimalString, EnvironmentRecordResponse, WireModel
from billingkit.http.schemas.features import FeatureAlertSettingsResponse

__all__ = ["WalletAutoTopupResponse", "WalletBalanceResponse", "WalletConfigResponse"]


class WalletConfigResponse(WireModel):
    """Which invoice lines the wallet's credits pay (``ALL`` = USAGE and FIXED)."""

    allowed_price_types: list[WalletPriceType]


class WalletAutoTopupResponse(WireModel):
    """Top the wallet up by ``amount`` credits when it falls below ``threshold``."""

    enabled: bool
    threshold: DecimalString | None
    amount: DecimalString | None
    invoicing: bool
    cooldown: int | None


class WalletBalanceResponse(EnvironmentRecordResponse):
    """The reference's WalletBalanceResponse: the wallet (``balance`` is ``credit_balance`` in its
    currency) plus ``real_time_balance`` = balance - ``unpaid_invoices_amount`` -
    ``current_period_usage`` (within the wallet's allowed price types; may be negative),
    ``real_time_credit_balance`` (the same in credits) and ``is_cached_fallback`` (always false:
    computed at each call)."""

    customer_id: str
    currency: str
    name: str | None
    description: str | None
    wallet_type: WalletType
    wallet_status: WalletStatus
    conversion_rate: DecimalString
    topup_conversion_rate: DecimalString
    config: WalletConfigResponse
    auto_topup: WalletAutoTopupResponse | None
    alert_settings: FeatureAlertSettingsResponse | None
    alert_state: AlertState
    credit_balance: DecimalString
    metadata: dict[str, str]
    version: int
    balance: DecimalString
    real_time_balance: DecimalString
    real_time_credit_balance: DecimalString
    current_period_usage: DecimalString
    unpaid_invoices_amount: DecimalString
    is_cached_fallback: bool
