"""Alert settings and the alert log: create, read, update, delete and search settings
(``/alerts/setting``), search the history of state changes (``/alerts/search``).

Rules (docs/alerts.md):

- ``entity_type`` ``subscription`` (``entity_id`` a subscription), ``subscription_line_item`` and
  ``group`` (``entity_id`` a line item of, or a group priced on, the subscription
  ``parent_entity_id``: required) or ``entitlement_grant`` (``entity_id`` an entitlement,
  ``parent_entity_id`` the subscription using it). Wallet and feature alerts are the
  ``alert_settings`` of the wallet and of the feature, not settings of their own: those entity
  types are refused here (400). The entities named must exist (404).
- ``config`` {``alert_enabled`` (default ``true`` here), ``info``, ``warning``, ``critical``:
  {``threshold`` decimal string, ``condition`` ``above``|``below``}}: thresholds share one
  condition and escalate from info to warning to critical; enabled needs at least one.
- An update changes ``config`` field by field (omitted fields keep their value) and ``enabled``;
  the next worker run evaluates the new thresholds. Delete archives.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from billingkit.domain.access import Action
from billingkit.domain.alerts import AlertEntityType, AlertLog, AlertSetting, AlertType
from billingkit.domain.catalog.features import AlertSettings, AlertThreshold, check_alert_settings
from billingkit.domain.queries import Op, Page
from billingkit.domain.validation import InputModel, NonEmptyStr
from billingkit.domain.wallets import AlertState
from billingkit.errors import NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import archive, build, get_live, new_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "AlertConfig",
    "AlertLogSearch",
    "AlertSettingCreate",
    "AlertSettingSearch",
    "AlertSettingUpdate",
    "create_alert_setting",
    "delete_alert_setting",
    "get_alert_setting",
    "search_alert_logs",
    "search_alert_settings",
    "update_alert_setting",
]

ENTITY = "alert"
LABEL = "alert setting"

_OWN_SETTINGS = {
    AlertEntityType.WALLET: "a wallet's alerts are its alert_settings (PUT /wallets/{id})",
    AlertEntityType.FEATURE: "a feature's alerts are its alert_settings (PUT /features/{id})",
}
_WITHIN_SUBSCRIPTION = frozenset(
    {AlertEntityType.SUBSCRIPTION_LINE_ITEM, AlertEntityType.GROUP, AlertEntityType.ENTITLEMENT_GRANT}
)


class AlertConfig(InputModel):
    """The thresholds of an alert (the reference's ``types.AlertSettings``)."""

    alert_enabled: bool | None = None
    critical: AlertThreshold | None = None
    warning: AlertThreshold | None = None
    info: AlertThreshold | None = None


class AlertSettingCreate(InputModel):
    entity_type: AlertEntityType
    entity_id: NonEmptyStr
    parent_entity_type: AlertEntityType | None = None
    parent_entity_id: NonEmptyStr | None = None
    config: AlertConfig
    enabled: bool = True


class AlertSettingUpdate(InputModel):
    config: AlertConfig | None = None
    enabled: bool | None = None


class AlertSettingSearch(SearchRequest):
    """The reference's ``types.AlertSettingsFilter``."""

    kind: ClassVar[str] = "alert_settings"

    entity_type: Annotated[AlertEntityType | None, Searches("entity_type", Op.EQ)] = None
    entity_id: Annotated[str | None, Searches("entity_id", Op.EQ)] = None
    entity_ids: Annotated[list[str] | None, Searches("entity_id", Op.IN)] = None
    parent_entity_type: Annotated[AlertEntityType | None, Searches("parent_entity_type", Op.EQ)] = None
    parent_entity_id: Annotated[str | None, Searches("parent_entity_id", Op.EQ)] = None
    parent_entity_ids: Annotated[list[str] | None, Searches("parent_entity_id", Op.IN)] = None
    enabled: Annotated[bool | None, Searches("enabled", Op.EQ)] = None


class AlertLogSearch(SearchRequest):
    """The reference's ``types.AlertLogFilter``: ``start_time``/``end_time`` bound when the change
    was logged."""

    kind: ClassVar[str] = "alert_logs"

    alert_type: Annotated[AlertType | None, Searches("alert_type", Op.EQ)] = None
    alert_status: Annotated[AlertState | None, Searches("alert_status", Op.EQ)] = None
    entity_type: Annotated[AlertEntityType | None, Searches("entity_type", Op.EQ)] = None
    entity_id: Annotated[str | None, Searches("entity_id", Op.EQ)] = None
    customer_id: Annotated[str | None, Searches("customer_id", Op.EQ)] = None


def _merged(stored: AlertSettings | None, given: AlertConfig, *, enabled_by_default: bool) -> AlertSettings:
    """``given``'s fields over ``stored``'s (a new setting's ``alert_enabled`` defaults to true)."""
    fields: dict[str, Any] = (
        stored.model_dump() if stored is not None else {"alert_enabled": enabled_by_default}
    )
    for name in given.model_fields_set:
        value = getattr(given, name)
        fields[name] = value.model_dump() if isinstance(value, AlertThreshold) else value
    if fields.get("alert_enabled") is None:
        fields["alert_enabled"] = enabled_by_default
    settings = AlertSettings.model_validate(fields)  # parts already validated by AlertConfig
    check_alert_settings(settings, "config")
    return settings


def _customer_of(uow: UnitOfWork, data: AlertSettingCreate) -> str:
    """The customer of the subscription the setting watches; refuses settings on what does not
    exist (404) or does not belong to it (400)."""
    kind = data.entity_type
    if kind in _OWN_SETTINGS:
        raise ValidationError(_OWN_SETTINGS[kind], field="entity_type")
    if kind is AlertEntityType.SUBSCRIPTION:
        if data.parent_entity_id is not None:
            raise ValidationError("a subscription alert has no parent_entity_id", field="parent_entity_id")
        return get_live(uow.subscriptions, "subscription", data.entity_id).customer_id
    if data.parent_entity_id is None:
        raise ValidationError(
            f"a {kind.value} alert needs parent_entity_id (its subscription)", field="parent_entity_id"
        )
    if data.parent_entity_type not in (None, AlertEntityType.SUBSCRIPTION):
        raise ValidationError("parent_entity_type must be subscription", field="parent_entity_type")
    sub = get_live(uow.subscriptions, "subscription", data.parent_entity_id)
    if kind is AlertEntityType.SUBSCRIPTION_LINE_ITEM:
        if all(line.id != data.entity_id for line in sub.line_items):
            raise NotFound(f"line item {data.entity_id} not found on subscription {sub.id}")
    elif kind is AlertEntityType.GROUP:
        get_live(uow.groups, "group", data.entity_id)
    else:
        get_live(uow.entitlements, "entitlement", data.entity_id)
    return sub.customer_id


def create_alert_setting(uow: UnitOfWork, ctx: Context, *, data: AlertSettingCreate) -> AlertSetting:
    """Create an alert setting (see the module doc); the worker evaluates it at its next run."""
    ctx.require(ENTITY, Action.WRITE)
    config = _merged(None, data.config, enabled_by_default=True)
    customer_id = _customer_of(uow, data)
    parent_type = AlertEntityType.SUBSCRIPTION if data.entity_type in _WITHIN_SUBSCRIPTION else None
    setting = build(
        AlertSetting,
        {
            **new_fields(ctx, "alert"),
            "entity_type": data.entity_type,
            "entity_id": data.entity_id,
            "parent_entity_type": parent_type,
            "parent_entity_id": data.parent_entity_id,
            "customer_id": customer_id,
            "config": config,
            "enabled": data.enabled,
        },
    )
    setting = setting.model_copy(update={"next_check_at": ctx.now if setting.active else None})
    return uow.alert_settings.add(setting)


def get_alert_setting(uow: UnitOfWork, ctx: Context, *, alert_setting_id: str) -> AlertSetting:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.alert_settings, LABEL, alert_setting_id)


def update_alert_setting(
    uow: UnitOfWork, ctx: Context, *, alert_setting_id: str, data: AlertSettingUpdate
) -> AlertSetting:
    """Change ``config`` (field by field) and/or ``enabled``; an active setting is due for
    evaluation at once."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.alert_settings, LABEL, alert_setting_id)
    changes: dict[str, Any] = {}
    if data.config is not None:
        changes["config"] = _merged(
            current.config, data.config, enabled_by_default=current.config.alert_enabled
        )
    if data.enabled is not None:
        changes["enabled"] = data.enabled
    if not changes:
        return current
    changed = current.model_copy(update={**changes, **ctx.touch()})
    changed = changed.model_copy(update={"next_check_at": ctx.now if changed.active else None})
    return uow.alert_settings.update(changed, expected_version=current.version)


def delete_alert_setting(uow: UnitOfWork, ctx: Context, *, alert_setting_id: str) -> AlertSetting:
    """Archive the setting: it is no longer evaluated (its log stays)."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.alert_settings, LABEL, alert_setting_id)
    return archive(uow.alert_settings, current.model_copy(update={"next_check_at": None}), ctx)


def search_alert_settings(uow: UnitOfWork, ctx: Context, *, search: AlertSettingSearch) -> Page[AlertSetting]:
    ctx.require(ENTITY, Action.READ)
    return uow.alert_settings.list(search.to_query())


def search_alert_logs(uow: UnitOfWork, ctx: Context, *, search: AlertLogSearch) -> Page[AlertLog]:
    ctx.require(ENTITY, Action.READ)
    return uow.alert_logs.list(search.to_query())
