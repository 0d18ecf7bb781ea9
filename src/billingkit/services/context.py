"""The call context every service receives: who calls, in which scope, at what time, with which
settings and outside parties; and the context a due-work handler receives for one run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from billingkit.domain.access import Action, Actor
from billingkit.domain.ids import IdFactory
from billingkit.domain.notifications import NotificationEvent
from billingkit.errors import InvalidOperation
from billingkit.ports import PaymentProvider, WebhookTransport
from billingkit.services.webhook_secrets import SecretBox

if TYPE_CHECKING:  # settings import services.events, which imports this module
    from billingkit.services.settings import Settings

__all__ = ["Context", "DueRun", "Providers"]


@dataclass(frozen=True, slots=True)
class Providers:
    """The outside parties one ``Billing`` talks to (its composition root fills them in,
    in-process defaults unless the host passed its own), and the box that keeps the secrets
    signing requests to them (``webhook_secrets``, from ``Settings.webhook_secret_key`` when the
    ``Billing`` was made)."""

    payment_provider: PaymentProvider
    webhook_transport: WebhookTransport
    webhook_secrets: SecretBox
    #: Environment id -> the payment provider that environment's checkout sessions use (its own
    #: credentials); an environment not named here uses ``payment_provider``.
    environment_providers: Mapping[str, PaymentProvider] = field(default_factory=dict)

    def for_environment(self, environment_id: str, name: str) -> PaymentProvider | None:
        """The provider called ``name`` that ``environment_id`` is configured with, or ``None``."""
        for provider in (self.environment_providers.get(environment_id), self.payment_provider):
            if provider is not None and provider.name == name:
                return provider
        return None


@dataclass(frozen=True, slots=True)
class Context:
    """``now`` is read once from the clock port per call, so one call sees one instant."""

    tenant_id: str
    environment_id: str | None
    actor: Actor
    now: datetime
    ids: IdFactory
    settings: Settings
    providers: Providers
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


@dataclass(frozen=True, slots=True)
class DueRun:
    """What every due-work handler of one run shares: the instant the run bills at, the id factory,
    the settings and the outside parties. Work on an item runs as the system actor in the item's
    scope (:meth:`context`)."""

    now: datetime
    ids: IdFactory
    settings: Settings
    providers: Providers

    def context(self, tenant_id: str, environment_id: str | None) -> Context:
        return Context(
            tenant_id=tenant_id,
            environment_id=environment_id,
            actor=Actor.system(),
            now=self.now,
            ids=self.ids,
            settings=self.settings,
            providers=self.providers,
        )
