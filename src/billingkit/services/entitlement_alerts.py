"""Entitlement grant alerts: a customer's usage of an entitled feature against the setting's
thresholds, and the grant running out (reference alert types ``entitlement_grant_threshold`` and
``entitlement_grant_exhausted``; ``entitlement.grant.exhausted``).

A setting with ``entity_type`` ``entitlement_grant`` names an entitlement (``entity_id``) and the
subscription it is used on (``parent_entity_id``). Its value is the usage that the entitlement
check (:func:`billingkit.services.entitlement_checks.check_entitlement`) counts for the
subscription's customer and the entitlement's feature in the current usage window, against the
limit the customer's granting subscriptions add up to. Two alerts:

- the threshold alert (the setting's thresholds on the usage, normally ``above``): its changes are
  logged (``/alerts/search``) and kept as the setting's ``alert_state``; the spec has no
  notification kind for them;
- the exhaustion alert: ``in_alarm`` while the usage is at or over a set limit, else ``ok``; the
  change to ``in_alarm`` records ``entitlement.grant.exhausted`` (a new window starts it at ``ok``
  again, logged without a notification).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal

from billingkit.domain.alert_payloads import entitlement_alert_fields
from billingkit.domain.alerts import AlertEntityType, AlertSetting, AlertType
from billingkit.domain.catalog import Entitlement
from billingkit.domain.entitlement_checks import EntitlementCheck
from billingkit.domain.resources import Status
from billingkit.domain.wallets import AlertState
from billingkit.errors import NotFound
from billingkit.ports import UnitOfWork
from billingkit.services.alert_states import Observation, Transition
from billingkit.services.context import Context
from billingkit.services.entitlement_checks import check_entitlement
from billingkit.services.notifications import notify

__all__ = ["entitlement_observations", "notify_entitlement_change"]


def _check(
    uow: UnitOfWork, ctx: Context, customer_id: str, entitlement: Entitlement
) -> EntitlementCheck | None:
    try:
        return check_entitlement(uow, ctx, customer=customer_id, feature=entitlement.feature_id)
    except NotFound:  # the customer or the feature is gone: nothing to measure
        return None


def entitlement_observations(
    uow: UnitOfWork, ctx: Context, settings: Sequence[AlertSetting]
) -> tuple[list[Observation], dict[str, Entitlement]]:
    """The threshold and the exhaustion observation of each active entitlement grant setting whose
    entitlement is live, and those entitlements by id (their notifications carry them)."""
    wanted = [s for s in settings if s.active and s.entity_type is AlertEntityType.ENTITLEMENT_GRANT]
    entitlements = {
        e.id: e
        for e in uow.entitlements.find_many({s.entity_id for s in wanted})
        if e.status is Status.PUBLISHED
    }
    observations: list[Observation] = []
    for setting in wanted:
        entitlement = entitlements.get(setting.entity_id)
        check = _check(uow, ctx, setting.customer_id, entitlement) if entitlement is not None else None
        if check is None:
            continue
        usage = check.usage
        exhausted = check.limit is not None and usage >= check.limit
        threshold = Observation(
            alert_type=AlertType.ENTITLEMENT_GRANT_THRESHOLD,
            entity_type=AlertEntityType.ENTITLEMENT_GRANT,
            entity_id=setting.entity_id,
            config=setting.config,
            value=usage,
            customer_id=setting.customer_id,
            parent_entity_type=setting.parent_entity_type,
            parent_entity_id=setting.parent_entity_id,
        )
        state = AlertState.IN_ALARM if exhausted else AlertState.OK
        observations += [
            threshold,
            replace(threshold, alert_type=AlertType.ENTITLEMENT_GRANT_EXHAUSTED, state=state),
        ]
    return observations, entitlements


def notify_entitlement_change(
    uow: UnitOfWork, ctx: Context, transition: Transition, entitlements: dict[str, Entitlement]
) -> None:
    """Record ``entitlement.grant.exhausted`` when an exhaustion alert goes to ``in_alarm``."""
    seen = transition.observation
    if (
        seen.alert_type is not AlertType.ENTITLEMENT_GRANT_EXHAUSTED
        or transition.new is not AlertState.IN_ALARM
    ):
        return
    entitlement = entitlements[seen.entity_id]
    notify(
        uow,
        ctx,
        "entitlement.grant.exhausted",
        entitlement,
        fields=entitlement_alert_fields(
            customer_id=seen.customer_id or "",
            subscription_id=seen.parent_entity_id or "",
            usage=seen.value,
            limit=Decimal(entitlement.usage_limit) if entitlement.usage_limit is not None else None,
            triggered_at=ctx.now,
        ),
    )
