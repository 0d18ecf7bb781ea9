"""The alerts area of ``Scoped``: ``scoped.alerts`` (alert settings and the alert log).

Example (an alert when a subscription's spend this period reaches 100.00)::

    setting = scoped.alerts.create(
        entity_type="subscription",
        entity_id=sub.id,
        config={"critical": {"threshold": "100.00", "condition": "above"}},
    )
    billing.run_due()  # the worker's run: evaluates it, records the notifications of changes
    scoped.alerts.get(setting.id).alert_state  # "in_alarm" once the spend reached 100.00
    scoped.alerts.logs(entity_id=sub.id).items  # the history of its state changes
"""

from __future__ import annotations

from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp
from billingkit.services import alert_settings

__all__ = ["Alerts"]


class Alerts(Area):
    """Alert settings on a subscription's spend (or a line item's, a group's) and on entitlement
    grants, with their state; the history of state changes of every alert (wallet and feature
    balance alerts included). Rules in :mod:`billingkit.services.alert_settings`, evaluation in
    :mod:`billingkit.services.alert_runs`; docs/alerts.md."""

    create = RequestOp(alert_settings.create_alert_setting, alert_settings.AlertSettingCreate)
    get = IdOp(alert_settings.get_alert_setting, read_only=True)
    update = IdRequestOp(
        alert_settings.update_alert_setting, alert_settings.AlertSettingUpdate, conflict_retries=1
    )
    delete = IdOp(alert_settings.delete_alert_setting)
    search = RequestOp(
        alert_settings.search_alert_settings, alert_settings.AlertSettingSearch, read_only=True
    )
    logs = RequestOp(alert_settings.search_alert_logs, alert_settings.AlertLogSearch, read_only=True)
