"""The state machine of every alert, over the store: from observed values to logged changes.

An evaluator (:mod:`.spend_alerts`, :mod:`.wallet_alerts`, :mod:`.feature_alerts`,
:mod:`.entitlement_alerts`) measures values and hands :class:`Observation` s to
:func:`record_changes`, which reads each alert's current state (its latest log row, one read for
all), computes the new one (:func:`billingkit.domain.alerts.state_for`) and, only where it changed,
adds the next log row. The rows of one call are inserted together; a row whose ``(alert_key,
sequence)`` another evaluator stored first makes the insert fail with ``AlreadyExists`` (nothing
written), so an alert's change is written, and its notification recorded, once. The evaluator
records the notifications of the returned :class:`Transition` s in the same unit of work.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from billingkit.domain.alerts import AlertEntityType, AlertInfo, AlertLog, AlertType, alert_key, state_for
from billingkit.domain.catalog.features import AlertSettings
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.wallets import AlertState
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import IN_CHUNK, new_fields

__all__ = ["Observation", "Transition", "current_states", "record_changes"]


@dataclass(frozen=True, slots=True)
class Observation:
    """``value`` of alert ``alert_type`` on ``entity_type`` ``entity_id`` (within
    ``parent_entity_id``), measured now under ``config``; ``state`` overrides the state the
    thresholds give (exhaustion is a state of its own)."""

    alert_type: AlertType
    entity_type: AlertEntityType
    entity_id: str
    config: AlertSettings
    value: Decimal
    customer_id: str | None = None
    parent_entity_type: AlertEntityType | None = None
    parent_entity_id: str | None = None
    state: AlertState | None = None

    @property
    def key(self) -> str:
        return alert_key(self.alert_type, self.entity_id, self.parent_entity_id)

    @property
    def new_state(self) -> AlertState:
        return self.state if self.state is not None else state_for(self.value, self.config)


@dataclass(frozen=True, slots=True)
class Transition:
    """``observation``'s alert moved from ``old`` to ``new``; ``log`` is the row that says so."""

    observation: Observation
    old: AlertState
    new: AlertState
    log: AlertLog


def current_states(uow: UnitOfWork, keys: Iterable[str]) -> dict[str, tuple[AlertState, int]]:
    """Each alert's state and the sequence of its latest log row (alerts never logged: absent,
    which means ``ok`` at sequence 0). Reads the logs of the keys, 500 keys per statement."""
    wanted = sorted(set(keys))
    latest: dict[str, tuple[AlertState, int]] = {}
    for start in range(0, len(wanted), IN_CHUNK):
        chunk = wanted[start : start + IN_CHUNK]
        offset = 0
        while True:
            page = uow.alert_logs.list(
                ListQuery(
                    filters=(Filter("alert_key", Op.IN, tuple(chunk)),),
                    sort=(Sort("id", descending=False),),
                    limit=MAX_LIMIT,
                    offset=offset,
                    status=None,
                )
            )
            for row in page.items:
                known = latest.get(row.alert_key)
                if known is None or row.sequence > known[1]:
                    latest[row.alert_key] = (row.alert_status, row.sequence)
            if not page.has_more:
                break
            offset += len(page.items)
    return latest


def record_changes(uow: UnitOfWork, ctx: Context, observations: Sequence[Observation]) -> list[Transition]:
    """Log the alerts of ``observations`` whose state changed (see the module doc); returns the
    changes, in the order observed. ``AlreadyExists`` when another evaluator logged one first."""
    if not observations:
        return []
    current = current_states(uow, (o.key for o in observations))
    transitions: list[Transition] = []
    for observation in observations:
        old, sequence = current.get(observation.key, (AlertState.OK, 0))
        new = observation.new_state
        if new is old:
            continue
        log = AlertLog(
            **new_fields(ctx, "alertlog"),
            alert_key=observation.key,
            sequence=sequence + 1,
            alert_type=observation.alert_type,
            alert_status=new,
            entity_type=observation.entity_type,
            entity_id=observation.entity_id,
            parent_entity_type=observation.parent_entity_type,
            parent_entity_id=observation.parent_entity_id,
            customer_id=observation.customer_id,
            alert_info=AlertInfo(
                alert_settings=observation.config, value=observation.value, timestamp=ctx.now
            ),
        )
        current[observation.key] = (new, sequence + 1)
        transitions.append(Transition(observation, old, new, log))
    if transitions:
        uow.alert_logs.add_many([t.log for t in transitions])
    return transitions
