"""The call context every service receives: who calls, in which scope, at what time."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from billingkit.domain.access import Action, Actor
from billingkit.domain.ids import IdFactory
from billingkit.domain.notifications import NotificationEvent
from billingkit.errors import InvalidOperation

__all__ = ["Context"]


@dataclass(frozen=True, slots=True)
class Context:
    """``now`` is read once from the clock port per call, so one call sees one instant."""

    tenant_id: str
    environment_id: str | None
    actor: Actor
    now: datetime
    ids: IdFactory
    recorded: list[NotificationEvent] = field(default_factory=list)

    def require(self, entity: str, action: Action) -> None:
        self.actor.require(entity, action)

    @property
    def env(self) -> str:
        """The environment id; services of environment-owned resources need one."""
        if self.environment_id is None:
            raise InvalidOperation("this operation needs an environment (X-Environment-ID)")
        return self.environment_id

    def stamp(self) -> dict[str, object]:
        """Common fields for a new resource in this scope."""
        return {
            "tenant_id": self.tenant_id,
            "environment_id": self.env,
            "created_at": self.now,
            "updated_at": self.now,
            "created_by": self.actor.id,
            "updated_by": self.actor.id,
        }

    def touch(self) -> dict[str, object]:
        """Common fields to change on an update."""
        return {"updated_at": self.now, "updated_by": self.actor.id}
