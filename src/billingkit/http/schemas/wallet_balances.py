"""Answer of ``GET /v1/wallets/{id}/balance/real-time``: a wallet with its real-time figures."""

from __future__ import annotations

from billingkit.http.schemas.base import DecimalString
from billingkit.http.schemas.wallets import WalletResponse

__all__ = ["WalletBalanceResponse"]


class WalletBalanceResponse(WalletResponse):
    """The reference's WalletBalanceResponse: the wallet (``balance`` is ``credit_balance`` in its
    currency) plus ``real_time_balance`` = balance - ``unpaid_invoices_amount`` -
    ``current_period_usage`` (within the wallet's allowed price types; may be negative),
    ``real_time_credit_balance`` (the same in credits) and ``is_cached_fallback`` (always false:
    computed at each call)."""

    real_time_balance: DecimalString
    real_time_credit_balance: DecimalString
    current_period_usage: DecimalString
    unpaid_invoices_amount: DecimalString
    is_cached_fallback: bool
