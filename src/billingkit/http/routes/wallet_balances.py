"""``/v1/wallets/{id}/balance/real-time`` (the other wallet routes live with the wallets)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.wallet_balances import WalletBalanceResponse

router = APIRouter(prefix="/wallets", tags=["wallets"], route_class=WireRoute)


@router.get("/{wallet_id}/balance/real-time")
def get_wallet_real_time_balance(
    caller: EnvCaller,
    wallet_id: str,
    expand: Annotated[str | None, Query(max_length=255)] = None,
) -> WalletBalanceResponse:
    """The wallet's balance less its customer's unpaid invoices and current-period usage.
    ``expand`` (the reference's ``credits_available_breakdown``) is accepted and adds nothing."""
    return WalletBalanceResponse.model_validate(caller.wallets.real_time_balance(wallet_id).to_dict())
