"""When alerts are evaluated: by the worker, and at ingestion when the caller asks for it.

- Alert settings (spend, entitlement grant) are a due-work kind: each active setting is due at its
  ``next_check_at``; :func:`evaluate_due_alerts` (the handler in
  :data:`billingkit.services.due_work.HANDLERS`) evaluates the claimed settings of a scope together
  (one invoice preview per subscription) and moves each to ``now + Settings.alert_check_interval``.
- Wallet and feature balance alerts live on the wallets and features: every due-work run ends with
  :func:`evaluate_balance_alerts`, which evaluates each scope's alerting wallets in a unit of work
  of its own.
- ``POST /events/bulk`` with ``evaluate_alerts_immediately: true`` (``ingest_bulk(...,
  evaluate_alerts_immediately=True)``) evaluates, after the events are stored, the alerts of the
  customers the batch touched (:func:`evaluate_customers`), as the system.

Whoever evaluates, one change of state is logged and notified once: the log's unique
``(alert_key, sequence)`` and the setting's ``version`` make a second evaluator that saw the same
old state fail (``AlreadyExists`` / ``VersionConflict``, nothing written); the worker retries the
item alone and ingestion evaluates again once, each re-reading the state and finding no change.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import cast

from billingkit.domain.alerts import AlertSetting, alert_key
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Record
from billingkit.domain.wallets import AlertState, Wallet, WalletStatus
from billingkit.errors import BillingError
from billingkit.ports import Storage, UnitOfWork
from billingkit.services.alert_states import record_changes
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import Context, DueRun
from billingkit.services.entitlement_alerts import entitlement_observations, notify_entitlement_change
from billingkit.services.feature_alerts import feature_observations, notify_feature_change
from billingkit.services.invoicing import CurrentPeriods
from billingkit.services.records import list_where_in
from billingkit.services.scope_pages import all_scopes, pages
from billingkit.services.spend_alerts import notify_spend_change, spend_observations
from billingkit.services.wallet_alerts import (
    alerting_wallets,
    notify_wallet_change,
    real_time_balances,
    wallet_observations,
)

__all__ = [
    "evaluate_balance_alerts",
    "evaluate_customers",
    "evaluate_due_alerts",
    "evaluate_settings",
    "evaluate_wallets",
]

log = logging.getLogger("billingkit.alerts")


def evaluate_settings(
    uow: UnitOfWork,
    ctx: Context,
    settings: Sequence[AlertSetting],
    *,
    reschedule: bool,
    previews: CurrentPeriods | None = None,
) -> None:
    """Evaluate ``settings`` (of ``uow``'s scope), record the notifications of their changes and
    save each changed ``alert_state``; with ``reschedule``, also move each active one's
    ``next_check_at`` to ``now + alert_check_interval`` (the worker). ``previews``: the current
    periods' invoice previews already computed at this instant."""
    spend, subscriptions = spend_observations(uow, settings, previews or CurrentPeriods(uow, ctx.now))
    granted, entitlements = entitlement_observations(uow, ctx, settings)
    spend_keys = {o.key for o in spend}
    changed: dict[str, AlertState] = {}
    for transition in record_changes(uow, ctx, [*spend, *granted]):
        changed[transition.observation.key] = transition.new
        if transition.observation.key in spend_keys:
            notify_spend_change(uow, ctx, transition, subscriptions)
        else:
            notify_entitlement_change(uow, ctx, transition, entitlements)
    updates = []
    for setting in settings:
        update: dict[str, object] = {}
        state = changed.get(alert_key(setting.alert_type, setting.entity_id, setting.parent_entity_id))
        if state is not None and state is not setting.alert_state:
            update["alert_state"] = state
        if reschedule:
            update["next_check_at"] = ctx.now + ctx.settings.alert_check_interval if setting.active else None
        if update:
            updates.append((setting, setting.model_copy(update={**update, **ctx.touch()})))
    if updates:
        uow.alert_settings.update_many(updates)


def evaluate_wallets(
    uow: UnitOfWork, ctx: Context, wallets: Sequence[Wallet], previews: CurrentPeriods | None = None
) -> None:
    """Evaluate the balance alerts of ``wallets`` (those with alerts enabled) and of the features
    their customers use, recording the notifications of their changes."""
    alerting = alerting_wallets(wallets)
    if not alerting:
        return
    balances = real_time_balances(uow, ctx, alerting, previews or CurrentPeriods(uow, ctx.now))
    own = wallet_observations(alerting, balances)
    by_id = {w.id: w for w in alerting}
    own_keys = {o.key for o in own}
    transitions = record_changes(uow, ctx, [*own, *feature_observations(uow, alerting, balances)])
    for transition in transitions:
        if transition.observation.key not in own_keys:
            notify_feature_change(uow, ctx, transition, by_id)
    notify_wallet_change(uow, ctx, [t for t in transitions if t.observation.key in own_keys], by_id)


def evaluate_due_alerts(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of alert settings: evaluate the claimed settings still due, scope by
    scope, and schedule their next evaluation (see the module doc)."""
    result = BatchResult()
    by_scope: dict[tuple[str, str], list[AlertSetting]] = defaultdict(list)
    for setting in cast("Sequence[AlertSetting]", items):
        if setting.next_check_at is not None and setting.next_check_at <= run.now:
            by_scope[(setting.tenant_id, setting.environment_id)].append(setting)
    for (tenant_id, environment_id), group in by_scope.items():
        ctx = run.context(tenant_id, environment_id)
        evaluate_settings(uow.for_scope(tenant_id, environment_id), ctx, group, reschedule=True)
        result.report.notification_count += len(ctx.recorded)
        result.recorded += ctx.recorded
    return result


def evaluate_balance_alerts(storage: Storage, run: DueRun) -> Iterator[BatchResult]:
    """Evaluate the wallet and feature balance alerts of every scope, one unit of work per scope;
    yields what each committed scope (or failure) did. A scope that fails (another evaluator wrote
    the same change first) is reported and evaluated again at the next run."""
    for tenant_id, environment_id in all_scopes(storage):
        result = BatchResult()
        ctx = run.context(tenant_id, environment_id)
        with storage.unit_of_work(tenant_id, environment_id) as uow:
            wallets = list(pages(uow.wallets, Filter("wallet_status", Op.IN, (WalletStatus.ACTIVE,))))
            if not alerting_wallets(wallets):
                continue
            try:
                evaluate_wallets(uow, ctx, wallets)
                uow.commit()
            except BillingError as exc:
                log.warning(
                    "cannot evaluate the wallet alerts of %s/%s: %s", tenant_id, environment_id, exc.message
                )
                result.report.failures.append((environment_id, exc.code, exc.message))
                yield result
                continue
        result.report.notification_count += len(ctx.recorded)
        result.recorded += ctx.recorded
        yield result


def evaluate_customers(uow: UnitOfWork, ctx: Context, *, external_customer_ids: Iterable[str]) -> None:
    """Evaluate every alert of the customers with these external ids: their active alert
    settings (not rescheduled) and their wallets' balance alerts. What ingestion runs for a batch
    sent with ``evaluate_alerts_immediately``; a few statements when none has an alert."""
    customers = list_where_in(uow.customers, "external_id", external_customer_ids)
    ids = {c.id for c in customers}
    if not ids:
        return
    settings = list_where_in(uow.alert_settings, "customer_id", ids, Filter("enabled", Op.EQ, True))
    if settings:
        evaluate_settings(uow, ctx, settings, reschedule=False)
    wallets = list_where_in(
        uow.wallets, "customer_id", ids, Filter("wallet_status", Op.IN, (WalletStatus.ACTIVE,))
    )
    evaluate_wallets(uow, ctx, wallets)
