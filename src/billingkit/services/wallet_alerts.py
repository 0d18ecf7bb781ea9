"""Wallet balance alerts: a wallet's own ``alert_settings`` against its credit balance and its
ongoing (real-time) balance (reference notes §6.2; ``low_credit_balance``,
``low_ongoing_balance``).

Per active wallet whose ``alert_settings.alert_enabled`` is set, two alerts share its thresholds:

- the credit balance alert compares ``credit_balance`` (credits); a change to a state other than
  ``ok`` records ``wallet.credit_balance.dropped``, back to ``ok`` ``wallet.credit_balance.recovered``;
- the ongoing balance alert compares the real-time balance (the wallet's balance less unpaid
  invoices and current-period usage, in its currency:
  :func:`billingkit.services.wallet_balances.real_time_balances`); from ``ok`` to another state
  it records ``wallet.ongoing_balance.dropped``, back to ``ok`` ``wallet.ongoing_balance.recovered``,
  and from one state other than ``ok`` to another (``warning`` -> ``in_alarm``, or back)
  ``wallet.ongoing_balance.updated``.

The wallet's ``alert_state`` becomes the more severe of the two states. The real-time balances are
handed on to the feature alerts (:mod:`billingkit.services.feature_alerts`), which compare the
same figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from billingkit.domain.alert_payloads import wallet_alert_fields
from billingkit.domain.alerts import SEVERITY, AlertEntityType, AlertType, alert_key
from billingkit.domain.wallets import AlertState, Wallet, WalletStatus
from billingkit.ports import UnitOfWork
from billingkit.services.alert_states import Observation, Transition, current_states
from billingkit.services.context import Context
from billingkit.services.invoicing import CurrentPeriods
from billingkit.services.notifications import notify
from billingkit.services.wallet_balances import real_time_balances as read_balances

__all__ = ["alerting_wallets", "notify_wallet_change", "real_time_balances", "wallet_observations", "worst"]

_WALLET_TYPES = (AlertType.LOW_CREDIT_BALANCE, AlertType.LOW_ONGOING_BALANCE)
_RANK = {state: rank for rank, (_, state) in enumerate(reversed(SEVERITY), start=1)}


def worst(*states: AlertState) -> AlertState:
    """The most severe of ``states`` (``ok`` when none is set)."""
    return max(states, key=lambda state: _RANK.get(state, 0), default=AlertState.OK)


def alerting_wallets(wallets: Sequence[Wallet]) -> list[Wallet]:
    """The active wallets with alerts enabled."""
    return [
        w
        for w in wallets
        if w.wallet_status is WalletStatus.ACTIVE
        and w.alert_settings is not None
        and w.alert_settings.alert_enabled
    ]


def real_time_balances(
    uow: UnitOfWork, ctx: Context, wallets: Sequence[Wallet], previews: CurrentPeriods
) -> dict[str, Decimal]:
    """Each wallet's real-time balance in its currency, by wallet id (read together)."""
    found = read_balances(uow, ctx, wallets, previews)
    return {wallet_id: balance.real_time_balance for wallet_id, balance in found.items()}


def wallet_observations(wallets: Sequence[Wallet], balances: dict[str, Decimal]) -> list[Observation]:
    """The credit and the ongoing balance alert of each wallet (``wallets`` from
    :func:`alerting_wallets`, ``balances`` from :func:`real_time_balances`)."""
    observations: list[Observation] = []
    for wallet in wallets:
        assert wallet.alert_settings is not None
        values = (wallet.credit_balance, balances[wallet.id])
        for alert_type, value in zip(_WALLET_TYPES, values, strict=True):
            observations.append(
                Observation(
                    alert_type=alert_type,
                    entity_type=AlertEntityType.WALLET,
                    entity_id=wallet.id,
                    config=wallet.alert_settings,
                    value=value,
                    customer_id=wallet.customer_id,
                )
            )
    return observations


def _event_type(transition: Transition) -> str:
    old, new = transition.old, transition.new
    if transition.observation.alert_type is AlertType.LOW_CREDIT_BALANCE:
        return "wallet.credit_balance.recovered" if new is AlertState.OK else "wallet.credit_balance.dropped"
    if new is AlertState.OK:
        return "wallet.ongoing_balance.recovered"
    return "wallet.ongoing_balance.dropped" if old is AlertState.OK else "wallet.ongoing_balance.updated"


def notify_wallet_change(
    uow: UnitOfWork,
    ctx: Context,
    transitions: Sequence[Transition],
    wallets: dict[str, Wallet],
) -> None:
    """Record each wallet alert change's notification, then set the changed wallets'
    ``alert_state`` to the more severe of their two alerts (under the wallet's version)."""
    changed: dict[str, Wallet] = {}
    for transition in transitions:
        seen = transition.observation
        wallet = wallets[seen.entity_id]
        assert wallet.alert_settings is not None
        notify(
            uow,
            ctx,
            _event_type(transition),
            wallet,
            fields=wallet_alert_fields(
                seen.alert_type,
                transition.new,
                wallet.alert_settings,
                credit_balance=wallet.credit_balance,
                current_balance=seen.value
                if seen.alert_type is AlertType.LOW_ONGOING_BALANCE
                else wallet.balance,
            ),
        )
        changed[wallet.id] = wallet
    if not changed:
        return
    states = current_states(
        uow, (alert_key(t, wallet_id, None) for wallet_id in changed for t in _WALLET_TYPES)
    )
    updates = []
    for wallet in changed.values():
        state = worst(
            *(states.get(alert_key(t, wallet.id, None), (AlertState.OK, 0))[0] for t in _WALLET_TYPES)
        )
        if state is not wallet.alert_state:
            updates.append((wallet, wallet.model_copy(update={"alert_state": state, **ctx.touch()})))
    if updates:
        uow.wallets.update_many(updates)
