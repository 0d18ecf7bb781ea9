"""Feature wallet balance alerts: a feature's ``alert_settings`` against the wallets of the
customers who use it (reference ``feature.wallet_balance.alert``, alert type
``feature_wallet_balance``).

A feature with ``alert_settings.alert_enabled`` watches the real-time balance (in the wallet's
currency, the figure of the wallet's ongoing balance alert) of every active wallet with alerts
enabled whose customer has an ``active`` or ``trialing`` subscription with a line item metered by
the feature's meter: one alert per (feature, wallet). Each change of its state, either way,
records ``feature.wallet_balance.alert`` with the new ``alert_status`` (``ok`` on recovery).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from decimal import Decimal

from billingkit.domain.alerts import AlertEntityType, AlertType
from billingkit.domain.catalog import Feature
from billingkit.domain.queries import Filter, Op
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.domain.wallets import Wallet
from billingkit.ports import UnitOfWork
from billingkit.services.alert_states import Observation, Transition
from billingkit.services.context import Context
from billingkit.services.notifications import notify
from billingkit.services.records import list_where_in

__all__ = ["feature_observations", "notify_feature_change"]

_USING = (SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING)


def _alerting_features(uow: UnitOfWork, meter_ids: set[str]) -> dict[str, list[Feature]]:
    """meter id -> the live features metered by it with alerts enabled."""
    by_meter: dict[str, list[Feature]] = defaultdict(list)
    for feature in list_where_in(uow.features, "meter_id", meter_ids):
        settings = feature.alert_settings
        if feature.meter_id and settings is not None and settings.alert_enabled:
            by_meter[feature.meter_id].append(feature)
    return by_meter


def feature_observations(
    uow: UnitOfWork, wallets: Sequence[Wallet], balances: dict[str, Decimal]
) -> list[Observation]:
    """One observation per (alerting feature used by the wallet's customer, wallet); ``wallets``
    and ``balances`` as for :func:`billingkit.services.wallet_alerts.wallet_observations`."""
    if not wallets:
        return []
    subs = list_where_in(
        uow.subscriptions,
        "customer_id",
        {w.customer_id for w in wallets},
        Filter("subscription_status", Op.IN, _USING),
    )
    meters: dict[str, set[str]] = defaultdict(set)
    for sub in subs:
        meters[sub.customer_id].update(li.meter_id for li in sub.line_items if li.meter_id)
    features = _alerting_features(uow, {m for used in meters.values() for m in used})
    observations: list[Observation] = []
    for wallet in wallets:
        used = {
            f.id: f for meter in sorted(meters.get(wallet.customer_id, ())) for f in features.get(meter, ())
        }
        for feature in used.values():
            assert feature.alert_settings is not None
            observations.append(
                Observation(
                    alert_type=AlertType.FEATURE_WALLET_BALANCE,
                    entity_type=AlertEntityType.FEATURE,
                    entity_id=feature.id,
                    config=feature.alert_settings,
                    value=balances[wallet.id],
                    customer_id=wallet.customer_id,
                    parent_entity_type=AlertEntityType.WALLET,
                    parent_entity_id=wallet.id,
                )
            )
    return observations


def notify_feature_change(
    uow: UnitOfWork, ctx: Context, transition: Transition, wallets: dict[str, Wallet]
) -> None:
    """Record ``feature.wallet_balance.alert`` for a feature alert's change."""
    seen = transition.observation
    wallet = wallets[seen.parent_entity_id or ""]
    notify(
        uow,
        ctx,
        "feature.wallet_balance.alert",
        transition.new,
        wallet.customer_id,
        seen.entity_id,
        wallet.id,
        wallet.credit_balance,
        seen.value,
        about=("feature", seen.entity_id),
    )
