"""Alerts: settings that watch a value (a subscription's spend, a wallet's balance, an
entitlement's usage), their state, and the history of its changes (reference ``/alerts/setting``,
``/alerts/search``; docs/alerts.md).

The one state machine every evaluator shares is here and pure: :func:`state_for` maps a value and
the thresholds to a state (``ok``, ``info``, ``warning``, ``in_alarm``); :func:`change` says what
moving from one state to another means (nothing, reached, recovered). A notification is recorded
only on a change of state, never once per evaluation.

Where state lives: every change of an alert's state is one :class:`AlertLog` row, numbered per
alert (``alert_key``, ``sequence``) with a unique rule on the pair, so of two evaluators that saw
the same old state only one can write the change (the other's insert conflicts and it re-reads).
An :class:`AlertSetting` also carries its current ``alert_state`` (written under its ``version``).
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from billingkit.domain.catalog.features import AlertCondition, AlertSettings, AlertThreshold
from billingkit.domain.resources import EnvironmentResource, iso
from billingkit.domain.validation import DecimalText, UtcDatetime
from billingkit.domain.wallets import AlertState

__all__ = [
    "SEVERITY",
    "AlertEntityType",
    "AlertInfo",
    "AlertLog",
    "AlertSetting",
    "AlertType",
    "Change",
    "alert_key",
    "change",
    "level_threshold",
    "state_for",
]


class AlertEntityType(StrEnum):
    WALLET = "wallet"
    FEATURE = "feature"
    SUBSCRIPTION = "subscription"
    SUBSCRIPTION_LINE_ITEM = "subscription_line_item"
    GROUP = "group"
    ENTITLEMENT_GRANT = "entitlement_grant"


class AlertType(StrEnum):
    LOW_ONGOING_BALANCE = "low_ongoing_balance"
    LOW_CREDIT_BALANCE = "low_credit_balance"
    FEATURE_WALLET_BALANCE = "feature_wallet_balance"
    SUBSCRIPTION_SPEND = "subscription_spend"
    SUBSCRIPTION_LINE_ITEM_SPEND = "subscription_line_item_spend"
    SUBSCRIPTION_GROUP_SPEND = "subscription_group_spend"
    ENTITLEMENT_GRANT_THRESHOLD = "entitlement_grant_threshold"
    ENTITLEMENT_GRANT_EXHAUSTED = "entitlement_grant_exhausted"


#: The levels from the most severe down, with the state each one means when reached.
SEVERITY: tuple[tuple[str, AlertState], ...] = (
    ("critical", AlertState.IN_ALARM),
    ("warning", AlertState.WARNING),
    ("info", AlertState.INFO),
)


def _reached(value: Decimal, level: AlertThreshold) -> bool:
    """``above``: the value is at or over the threshold; ``below``: at or under it (a threshold
    is reached when the value gets to it, from either side)."""
    if level.condition is AlertCondition.ABOVE:
        return value >= level.threshold
    return value <= level.threshold


def state_for(value: Decimal, config: AlertSettings) -> AlertState:
    """The state of a value under ``config``: the most severe level reached, else ``ok``."""
    for name, state in SEVERITY:
        level: AlertThreshold | None = getattr(config, name)
        if level is not None and _reached(value, level):
            return state
    return AlertState.OK


def level_threshold(config: AlertSettings, state: AlertState) -> Decimal | None:
    """The threshold of the level whose state is ``state`` (``None`` for ``ok`` or an unset level)."""
    for name, level_state in SEVERITY:
        if level_state is state:
            level: AlertThreshold | None = getattr(config, name)
            return level.threshold if level is not None else None
    return None


Change = Literal["reached", "recovered"] | None


def change(old: AlertState, new: AlertState) -> Change:
    """What moving from ``old`` to ``new`` means: ``None`` (no change), ``"recovered"`` (back to
    ``ok``) or ``"reached"`` (any other new state, escalating or not)."""
    if old is new:
        return None
    return "recovered" if new is AlertState.OK else "reached"


def alert_key(alert_type: AlertType, entity_id: str, parent_entity_id: str | None) -> str:
    """What identifies one alert's state: its type, its entity and the entity's parent."""
    return f"{alert_type.value}:{entity_id}:{parent_entity_id or ''}"


class AlertInfo(BaseModel):
    """What an alert log row saw: the thresholds, the ``value`` and when (``timestamp``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alert_settings: AlertSettings
    value: DecimalText
    timestamp: UtcDatetime

    def to_dict(self) -> dict[str, Any]:
        """The wire form: the reference types ``value_at_time`` as a date-time and ``timestamp``
        as text, so both carry the instant (ISO 8601) and ``value`` (billingkit's addition, a
        decimal string) the value."""
        return {
            "alert_settings": self.alert_settings.model_dump(mode="json"),
            "value": str(self.value),
            "value_at_time": iso(self.timestamp),
            "timestamp": iso(self.timestamp),
        }


class AlertSetting(EnvironmentResource):
    """An alert on ``entity_type`` ``entity_id`` (a line item or a group within its subscription
    ``parent_entity_id``; an entitlement within its subscription). ``customer_id`` is the customer
    whose usage moves the watched value (internal: ingestion evaluates the customers it touched).
    ``next_check_at`` is when the worker evaluates it next (internal: the due-work field)."""

    entity_type: AlertEntityType
    entity_id: str
    parent_entity_type: AlertEntityType | None = None
    parent_entity_id: str | None = None
    customer_id: str
    config: AlertSettings
    enabled: bool = True
    alert_state: AlertState = AlertState.OK
    version: int = 1
    next_check_at: UtcDatetime | None = None

    @property
    def alert_type(self) -> AlertType:
        return _SETTING_TYPES[self.entity_type]

    @property
    def active(self) -> bool:
        """Whether evaluations look at it: enabled, with alerts enabled in its config."""
        return self.enabled and self.config.alert_enabled

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude={"next_check_at", "version", "customer_id"})


_SETTING_TYPES = {
    AlertEntityType.SUBSCRIPTION: AlertType.SUBSCRIPTION_SPEND,
    AlertEntityType.SUBSCRIPTION_LINE_ITEM: AlertType.SUBSCRIPTION_LINE_ITEM_SPEND,
    AlertEntityType.GROUP: AlertType.SUBSCRIPTION_GROUP_SPEND,
    AlertEntityType.ENTITLEMENT_GRANT: AlertType.ENTITLEMENT_GRANT_THRESHOLD,
}


class AlertLog(EnvironmentResource):
    """One change of an alert's state: the ``sequence``-th of alert ``alert_key``."""

    alert_key: str
    sequence: int
    alert_type: AlertType
    alert_status: AlertState
    entity_type: AlertEntityType
    entity_id: str
    parent_entity_type: AlertEntityType | None = None
    parent_entity_id: str | None = None
    customer_id: str | None = None
    alert_info: AlertInfo

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"alert_key", "sequence", "alert_info"})
        data["alert_info"] = self.alert_info.to_dict()
        return data
