"""The top-level payload fields of the alert notifications (reference ``webhookDto.SpendAlertEvent``,
``webhookDto.WalletWebhookPayload``'s ``alert`` (``WalletAlertInfo``) and
``webhookDto.AlertWebhookPayload``). The resources beside them (``subscription``, ``wallet``,
``entitlement``) come from the catalogue's builders (:mod:`billingkit.domain.event_types`).
Money and values are decimal strings, instants ISO 8601 UTC."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.alerts import AlertType
from billingkit.domain.catalog.features import AlertSettings
from billingkit.domain.resources import iso
from billingkit.domain.wallets import AlertState

__all__ = [
    "entitlement_alert_fields",
    "feature_wallet_alert_fields",
    "spend_alert_fields",
    "wallet_alert_fields",
]


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def spend_alert_fields(
    alert_type: AlertType,
    alert_status: AlertState,
    *,
    current_spend: Decimal,
    threshold: Decimal | None,
    triggered_at: datetime,
    subscription_line_item_id: str | None = None,
    group_id: str | None = None,
) -> dict[str, Any]:
    """Beside ``subscription``: the spend alert's type and new state, the current period's spend,
    the threshold reached (or, on recovery, the one the spend came back under), and the line item
    or group it watches (``None`` for a subscription's spend)."""
    return {
        "alert_type": alert_type.value,
        "alert_status": alert_status.value,
        "subscription_line_item_id": subscription_line_item_id,
        "group_id": group_id,
        "current_spend": str(current_spend),
        "threshold": _text(threshold),
        "triggered_at": iso(triggered_at),
    }


def wallet_alert_fields(
    alert_type: AlertType,
    state: AlertState,
    config: AlertSettings,
    *,
    credit_balance: Decimal,
    current_balance: Decimal,
) -> dict[str, Any]:
    """Beside ``wallet``: ``alert`` (``WalletAlertInfo``) with the thresholds, the alert's type and
    new state, the credit balance and the balance the alert compared (for the ongoing balance
    alert, the real-time balance in the wallet's currency)."""
    return {
        "alert": {
            "alert_settings": config.model_dump(mode="json"),
            "alert_type": alert_type.value,
            "state": state.value,
            "credit_balance": str(credit_balance),
            "current_balance": str(current_balance),
        }
    }


def feature_wallet_alert_fields(
    alert_status: AlertState,
    customer_id: str,
    feature_id: str,
    wallet_id: str,
    credit_balance: Decimal,
    current_balance: Decimal,
) -> dict[str, Any]:
    """The flat ``feature.wallet_balance.alert`` payload (``AlertWebhookPayload``); the
    catalogue's builder of that type, so its arguments are positional."""
    return {
        "alert_type": AlertType.FEATURE_WALLET_BALANCE.value,
        "alert_status": alert_status.value,
        "customer_id": customer_id,
        "feature_id": feature_id,
        "wallet_id": wallet_id,
        "credit_balance": str(credit_balance),
        "current_balance": str(current_balance),
    }


def entitlement_alert_fields(
    *, customer_id: str, subscription_id: str, usage: Decimal, limit: Decimal | None, triggered_at: datetime
) -> dict[str, Any]:
    """Beside ``entitlement`` in ``entitlement.grant.exhausted``: whose grant ran out, its usage in
    the current window and the limit it reached."""
    return {
        "alert_type": AlertType.ENTITLEMENT_GRANT_EXHAUSTED.value,
        "alert_status": AlertState.IN_ALARM.value,
        "customer_id": customer_id,
        "subscription_id": subscription_id,
        "usage": str(usage),
        "usage_limit": _text(limit),
        "triggered_at": iso(triggered_at),
    }
