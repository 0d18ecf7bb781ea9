"""What a plan change in place answers (the reference's ``SubscriptionChangeV2Response``), for
:mod:`billingkit.services.plan_change_in_place`: the subscription as it is (or would be) after
the change, the line items it carried, ended and created, the add-ons it carried or dropped, and
the money: the invoice of a net charge or the wallet credit of a net credit, each ``issued`` by
an execute or shown as a ``preview``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from billingkit.domain.addon_associations import AddonAssociation
from billingkit.domain.catalog import Plan
from billingkit.domain.invoices import Invoice
from billingkit.domain.money import ZERO
from billingkit.domain.resources import iso
from billingkit.domain.subscription_changes import SubscriptionChangeType
from billingkit.domain.subscription_schedules import SubscriptionSchedule
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.services.wallet_transactions import WalletTransactionDetail

__all__ = [
    "AddonChange",
    "EntityChangeBehaviour",
    "LineAction",
    "LineChange",
    "PlanChangeResult",
    "plan_summary",
]


class EntityChangeBehaviour(StrEnum):
    """What a plan change does to an add-on association: keep it (``carry``) or end it (``drop``)."""

    CARRY = "carry"
    DROP = "drop"


class LineAction(StrEnum):
    """``created``: a new line from the change; ``updated``: a line carried to the new plan's
    price; ``ended``: a line the change closed."""

    CREATED = "created"
    UPDATED = "updated"
    ENDED = "ended"


@dataclass(frozen=True, slots=True)
class LineChange:
    """``line`` as the change leaves it, and what the change did to it."""

    action: LineAction
    line: SubscriptionLineItem

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.line.id,
            "change_action": self.action.value,
            "price_id": self.line.price_id,
            "quantity": str(self.line.quantity),
            "start_date": iso(self.line.start_date),
            "end_date": iso(self.line.end_date),
        }


@dataclass(frozen=True, slots=True)
class AddonChange:
    """Add-on ``association`` (as the change leaves it) carried or dropped."""

    behaviour: EntityChangeBehaviour
    association: AddonAssociation

    def to_dict(self) -> dict[str, Any]:
        return {
            "behaviour": self.behaviour.value,
            "entity_id": self.association.id,
            "entity_type": "addon",
            "reference_id": self.association.addon_id,
        }


def plan_summary(plan: Plan) -> dict[str, Any]:
    """The reference's ``PlanSummary`` of ``plan``."""
    return {
        "description": plan.description,
        "id": plan.id,
        "lookup_key": plan.lookup_key,
        "name": plan.name,
    }


@dataclass(frozen=True, slots=True)
class PlanChangeResult:
    """What a plan change did, or (``preview``) would do.

    ``subscription``: after the change (unchanged when the change is scheduled); ``line_changes``
    and ``addon_changes``: what happened to each line and add-on; ``invoice``: the invoice of a
    net charge; ``wallet_transaction``: the wallet credit of a net credit (``wallet_credit``
    holds its amount); ``schedule``/``scheduled_at``: an ``end_of_period`` change kept for the
    boundary. ``replayed`` is true when an idempotency key found an earlier change: ``to_dict()``
    then gives the answer that change gave (``answer``), byte for byte.
    """

    subscription: Subscription
    change_type: SubscriptionChangeType
    from_plan: Plan
    to_plan: Plan
    effective_at: datetime
    preview: bool = False
    line_changes: tuple[LineChange, ...] = ()
    addon_changes: tuple[AddonChange, ...] = ()
    invoice: Invoice | None = None
    wallet_transaction: WalletTransactionDetail | None = None
    schedule: SubscriptionSchedule | None = None
    scheduled_at: datetime | None = None
    warnings: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    replayed: bool = False
    answer: dict[str, Any] | None = None

    @property
    def is_scheduled(self) -> bool:
        return self.scheduled_at is not None

    @property
    def wallet_credit(self) -> Decimal:
        """What the change credits (or would credit) to the customer's wallet; 0 when none."""
        txn = self.wallet_transaction
        return txn.credit_amount if txn is not None else ZERO

    def _invoices(self) -> list[dict[str, Any]]:
        status = "preview" if self.preview else "issued"
        out: list[dict[str, Any]] = []
        if self.invoice is not None:
            out.append(
                {
                    "id": self.invoice.id,
                    "action": "created",
                    "status": status,
                    "invoice": self.invoice.to_dict(),
                }
            )
        if self.wallet_transaction is not None:
            out.append(
                {
                    "id": self.wallet_transaction.id,
                    "action": "wallet_credit",
                    "status": status,
                    "wallet_transaction": self.wallet_transaction.to_dict(),
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``SubscriptionChangeV2Response`` (a replay: the first answer)."""
        if self.answer is not None:
            return copy.deepcopy(self.answer)
        sub = self.subscription
        touched = bool(self.line_changes) and not self.is_scheduled
        return {
            "change_type": self.change_type.value,
            "changed_resources": {
                "invoices": self._invoices(),
                "line_items": [change.to_dict() for change in self.line_changes],
                "subscriptions": [
                    {
                        "id": sub.id,
                        "action": "updated",
                        "status": sub.subscription_status.value,
                        "current_period_end": iso(sub.current_period_end),
                        "trial_end": iso(sub.trial_end),
                    }
                ]
                if touched
                else [],
            },
            "effective_at": iso(self.effective_at),
            "entity_changes": [change.to_dict() for change in self.addon_changes],
            "from_plan": plan_summary(self.from_plan),
            "is_scheduled": self.is_scheduled,
            "metadata": dict(self.metadata),
            "schedule_id": self.schedule.id if self.schedule is not None else None,
            "scheduled_at": iso(self.scheduled_at),
            "subscription": sub.to_dict(),
            "to_plan": plan_summary(self.to_plan),
            "warnings": list(self.warnings),
        }
