"""The webhook dispatcher: notifications from the outbox to the endpoints that want them.

One pass (:meth:`Dispatcher.run`, what ``Billing.deliver_webhooks`` calls) repeats rounds until
nothing is left to send now. A round:

1. **Fan out** (one short unit of work per batch): claim notifications whose ``dispatch_at`` has
   come (``uow.claim_due``, any scope), add one ``pending`` delivery per enabled endpoint of the
   notification's environment that wants its type and existed when it was recorded, and clear
   ``dispatch_at``. Both happen in one commit, so an event is handed over exactly once.
2. **Claim** (one short unit of work): claim due deliveries and keep, per endpoint and entity, only
   the earliest pending one (deliveries of one resource leave in the order their events were
   recorded; a later one waits, rescheduled to when the earlier one is next due). Deliveries of a
   deleted or disabled endpoint fail here. The kept ones are leased: ``next_attempt_at`` moves to
   ``now + Settings.webhook_lease``, so a dispatcher killed while sending leaves them due again
   when the lease ends.
3. **Send**, outside any transaction: each request is signed with Standard Webhooks headers
   (:mod:`billingkit.services.webhook_signing`) and the batch goes to the transport at once
   (``WebhookTransport.deliver_many``: concurrent, bounded, with timeouts for the HTTP one).
4. **Record** (one short unit of work): a 2xx answer delivers; anything else (an error status,
   500 included, a refused connection, a timeout) is a failed attempt, retried after
   :func:`~billingkit.domain.webhooks.retry_delay` until ``Settings.webhook_max_attempts``, then
   the delivery is ``failed``. Endpoints whose deliveries fail ``Settings.webhook_disable_after``
   times in a row are disabled. The next delivery of each finished resource becomes due at once.

A delivery is sent at least once and never lost: every state change commits before the next
step, a crash between steps leaves the work due, and a receiver that got a request twice (a crash
after sending, before recording) sees the same ``webhook-id`` both times.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar, cast

from billingkit.domain.gateways import DeliveryResult, WebhookRequest
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op
from billingkit.domain.resources import Status
from billingkit.domain.webhooks import (
    DeliveryStatus,
    WebhookDelivery,
    WebhookEndpoint,
    attempt_record,
    retry_delay,
)
from billingkit.errors import BillingError
from billingkit.ports import Storage, UnitOfWork
from billingkit.services.context import Providers
from billingkit.services.settings import Settings
from billingkit.services.webhook_signing import signed_request

__all__ = ["CLAIMED", "DispatchReport", "Dispatcher", "new_deliveries"]

log = logging.getLogger("billingkit.webhooks")

#: The kinds whose due work the dispatcher claims (not the due-work runner: it sends outside any
#: unit of work).
CLAIMED = ("notifications", "webhook_deliveries")

Scope = tuple[str, str]
Key = tuple[str, str]  # (endpoint id, entity id): one resource's order at one endpoint
Item = TypeVar("Item", WebhookDelivery, NotificationEvent)


@dataclass
class DispatchReport:
    """What one pass did: notifications handed to endpoints (``events``), deliveries made from
    them, requests ``sent``, deliveries ``delivered``, attempts that failed (``failed_attempts``),
    deliveries given up (``failed``) and endpoints disabled."""

    events: int = 0
    deliveries: int = 0
    sent: int = 0
    delivered: int = 0
    failed_attempts: int = 0
    failed: int = 0
    disabled_endpoints: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Outgoing:
    delivery: WebhookDelivery
    request: WebhookRequest | None  # None: it could not be built (the error says why)
    error: str | None = None


def new_deliveries(
    ids: Callable[[str], str],
    event: NotificationEvent,
    endpoints: Sequence[WebhookEndpoint],
    now: datetime,
) -> list[WebhookDelivery]:
    """One ``pending`` delivery of ``event`` per endpoint of ``endpoints``, due ``now``."""
    return [
        WebhookDelivery(
            id=ids("whdel"),
            tenant_id=event.tenant_id,
            environment_id=event.environment_id,
            created_at=now,
            updated_at=now,
            created_by="system",
            updated_by="system",
            endpoint_id=endpoint.id,
            event_id=event.id,
            event_type=event.event_type,
            entity_type=event.entity_type,
            entity_id=event.entity_id,
            next_attempt_at=now,
        )
        for endpoint in endpoints
    ]


def _all(uow: UnitOfWork, kind: str, *filters: Filter) -> list[object]:
    """Every published item of ``kind`` in ``uow``'s scope matching ``filters``, page by page."""
    repo = getattr(uow, kind)
    items: list[object] = []
    while True:
        page = repo.list(ListQuery(filters=filters, limit=MAX_LIMIT, offset=len(items)))
        items += page.items
        if len(page.items) < MAX_LIMIT:
            return items


def _by_scope(items: Sequence[Item]) -> dict[Scope, list[Item]]:
    """``items`` grouped by (tenant, environment), each group in the given order."""
    groups: dict[Scope, list[Item]] = defaultdict(list)
    for item in items:
        groups[(item.tenant_id, item.environment_id)].append(item)
    return groups


class Dispatcher:
    """One pass of the dispatcher over ``storage`` (see the module docstring). ``clock`` gives
    the billing time (due times, leases, backoff); ``signing_clock`` the wall-clock instant of
    each signature (``webhook-timestamp``: receivers check it against their own clock)."""

    def __init__(
        self,
        storage: Storage,
        providers: Providers,
        settings: Settings,
        *,
        clock: Callable[[], datetime],
        signing_clock: Callable[[], datetime],
        ids: Callable[[str], str],
        rng: random.Random | None = None,
    ) -> None:
        self._storage = storage
        self._providers = providers
        self._settings = settings
        self._clock = clock
        self._signing_clock = signing_clock
        self._ids = ids
        self._rng = rng or random.Random()
        self._secrets: dict[str, str] = {}  # ciphertext -> secret, for this pass only
        self.report = DispatchReport()

    def run(self) -> DispatchReport:
        """Rounds until one hands nothing over and sends nothing; nothing at all when no
        notification and no delivery is due (see :meth:`idle`)."""
        if self.idle():
            return self.report
        while True:
            handed = self.fan_out()
            sent = self.round()
            if not handed and not sent:
                return self.report

    def idle(self) -> bool:
        """Whether nothing is due now: two reads in a read-only unit of work. The worker polls
        every second beside a serving process, so an idle pass must not take a write connection
        or lock: on PostgreSQL a pass that did (two claims in write transactions) made the
        server's ingestion requests alternate between pooled connections and cost HTTP
        ingestion a quarter of its throughput."""
        now = self._clock()
        with self._storage.unit_of_work(read_only=True) as uow:
            return not (uow.has_due("notifications", now) or uow.has_due("webhook_deliveries", now))

    # -- 1. fan out ---------------------------------------------------------------------------
    def fan_out(self) -> int:
        """Hand every notification due now to its endpoints; how many were handed over."""
        total = 0
        batch = self._settings.webhook_batch_size
        while True:
            now = self._clock()
            with self._storage.unit_of_work() as uow:
                events = cast("list[NotificationEvent]", uow.claim_due("notifications", now, batch))
                if not events:
                    return total
                made = 0
                for (tenant_id, environment_id), group in _by_scope(events).items():
                    scoped = uow.for_scope(tenant_id, environment_id)
                    endpoints = cast(
                        "list[WebhookEndpoint]",
                        _all(scoped, "webhook_endpoints", Filter("enabled", Op.EQ, True)),
                    )
                    deliveries: list[WebhookDelivery] = []
                    for event in group:
                        wanted = [e for e in endpoints if e.wants(event.event_type) and _older(e, event)]
                        deliveries += new_deliveries(self._ids, event, wanted, now)
                    scoped.notifications.update_many(
                        [(e, e.model_copy(update={"dispatch_at": None})) for e in group]
                    )
                    if deliveries:
                        scoped.webhook_deliveries.add_many(deliveries)
                    made += len(deliveries)
                uow.commit()
            total += len(events)
            self.report.events += len(events)
            self.report.deliveries += made
            if len(events) < batch:
                return total

    # -- 2. claim -----------------------------------------------------------------------------
    def round(self) -> int:
        """Claim, send and record one batch; how many requests were sent."""
        outgoing = self._claim()
        if not outgoing:
            return 0
        sendable = [o for o in outgoing if o.request is not None]
        results = self._providers.webhook_transport.deliver_many(
            [cast("WebhookRequest", o.request) for o in sendable]
        )
        answers = {o.delivery.id: result for o, result in zip(sendable, results, strict=True)}
        for o in outgoing:
            if o.request is None:
                answers[o.delivery.id] = DeliveryResult(None, o.error)
        self._record(outgoing, answers)
        self.report.sent += len(sendable)
        return len(outgoing)

    def _claim(self) -> list[_Outgoing]:
        now = self._clock()
        settings = self._settings
        with self._storage.unit_of_work() as uow:
            due = cast(
                "list[WebhookDelivery]", uow.claim_due("webhook_deliveries", now, settings.webhook_batch_size)
            )
            if not due:
                return []
            outgoing: list[_Outgoing] = []
            for (tenant_id, environment_id), group in _by_scope(due).items():
                scoped = uow.for_scope(tenant_id, environment_id)
                outgoing += self._claim_scope(scoped, group, now)
            uow.commit()
        return outgoing

    def _claim_scope(self, uow: UnitOfWork, due: list[WebhookDelivery], now: datetime) -> list[_Outgoing]:
        lease_end = now + self._settings.webhook_lease
        heads = _heads(uow, {d.entity_id for d in due})
        taken: list[WebhookDelivery] = []
        changes: list[tuple[WebhookDelivery, WebhookDelivery]] = []
        for delivery in due:
            head = heads[(delivery.endpoint_id, delivery.entity_id)]
            if head.id != delivery.id:
                # An earlier event of this resource is still on its way: wait for it (it nudges
                # this one when it is done).
                later = max(head.next_attempt_at or now, now) + timedelta(microseconds=1)
                changes.append((delivery, delivery.model_copy(update={"next_attempt_at": later})))
            else:
                taken.append(delivery)
        endpoints = {e.id: e for e in uow.webhook_endpoints.find_many({d.endpoint_id for d in taken})}
        events = {e.id: e for e in uow.notifications.find_many({d.event_id for d in taken})}
        outgoing: list[_Outgoing] = []
        for delivery in taken:
            endpoint = endpoints.get(delivery.endpoint_id)
            event = events.get(delivery.event_id)
            stop = _why_not(endpoint, event)
            if stop is not None:
                final = {"delivery_status": DeliveryStatus.FAILED, "next_attempt_at": None, "error": stop}
                changes.append((delivery, delivery.model_copy(update={**final, "updated_at": now})))
                self.report.failed += 1
                continue
            assert endpoint is not None and event is not None
            leased = delivery.model_copy(update={"next_attempt_at": lease_end})
            changes.append((delivery, leased))
            outgoing.append(self._outgoing(leased, endpoint, event))
        uow.webhook_deliveries.update_many(changes)
        return outgoing

    def _outgoing(
        self, delivery: WebhookDelivery, endpoint: WebhookEndpoint, event: NotificationEvent
    ) -> _Outgoing:
        secret = self._secrets.get(endpoint.secret_ciphertext)
        if secret is None:
            try:
                secret = self._providers.webhook_secrets.open(endpoint.secret_ciphertext)
            except BillingError as exc:
                return _Outgoing(delivery, None, exc.message)
            self._secrets[endpoint.secret_ciphertext] = secret
        request = signed_request(
            endpoint,
            secret,
            message_id=delivery.message_id,
            payload=event.payload,
            at=self._signing_clock(),
            timeout=self._settings.webhook_timeout,
        )
        return _Outgoing(delivery, request)

    # -- 4. record ----------------------------------------------------------------------------
    def _record(self, outgoing: list[_Outgoing], answers: dict[str, DeliveryResult]) -> None:
        now = self._clock()
        with self._storage.unit_of_work() as uow:
            for (tenant_id, environment_id), group in _by_scope([o.delivery for o in outgoing]).items():
                scoped = uow.for_scope(tenant_id, environment_id)
                self._record_scope(scoped, group, answers, now)
            uow.commit()

    def _record_scope(
        self, uow: UnitOfWork, sent: list[WebhookDelivery], answers: dict[str, DeliveryResult], now: datetime
    ) -> None:
        settings = self._settings
        stored = uow.webhook_deliveries.find_many(d.id for d in sent)
        changes: list[tuple[WebhookDelivery, WebhookDelivery]] = []
        finished: set[Key] = set()
        streaks: dict[str, int | None] = {}  # endpoint -> failed deliveries added (None: reset)
        for delivery in stored:
            result = answers.get(delivery.id)
            if result is None or delivery.delivery_status is not DeliveryStatus.PENDING:
                continue  # another dispatcher finished it (its lease had ended)
            count = delivery.attempt_count + 1
            entry = attempt_record(now, result.status_code, result.elapsed * 1000, result.error)
            update: dict[str, object] = {
                "attempt_count": count,
                "response_code": result.status_code,
                "latency_ms": entry["latency_ms"],
                "error": result.error,
                "attempts": [*delivery.attempts, entry],
                "updated_at": now,
            }
            key = (delivery.endpoint_id, delivery.entity_id)
            if result.delivered:
                update.update(
                    delivery_status=DeliveryStatus.DELIVERED, next_attempt_at=None, delivered_at=now
                )
                finished.add(key)
                streaks[delivery.endpoint_id] = None
                self.report.delivered += 1
            elif count >= settings.webhook_max_attempts:
                update.update(delivery_status=DeliveryStatus.FAILED, next_attempt_at=None)
                finished.add(key)
                added = streaks.get(delivery.endpoint_id, 0)
                streaks[delivery.endpoint_id] = None if added is None else added + 1
                self.report.failed_attempts += 1
                self.report.failed += 1
            else:
                wait = retry_delay(
                    count, base=settings.webhook_retry_base, cap=settings.webhook_retry_cap, rng=self._rng
                )
                update["next_attempt_at"] = now + wait
                self.report.failed_attempts += 1
            changes.append((delivery, delivery.model_copy(update=update)))
        saved = uow.webhook_deliveries.update_many(changes)
        done = {d.id for d in saved}
        changes = _nudged(uow, finished, done, now)
        if changes:
            uow.webhook_deliveries.update_many(changes)
        self._streaks(uow, streaks, now)

    def _streaks(self, uow: UnitOfWork, streaks: dict[str, int | None], now: datetime) -> None:
        """Reset the failure streak of endpoints that delivered; add to it for those whose
        deliveries failed, disabling those that reach ``Settings.webhook_disable_after``."""
        limit = self._settings.webhook_disable_after
        changes: list[tuple[WebhookEndpoint, WebhookEndpoint]] = []
        for endpoint in uow.webhook_endpoints.find_many(streaks):
            added = streaks[endpoint.id]
            streak = 0 if added is None else endpoint.failure_streak + added
            update: dict[str, object] = {"failure_streak": streak}
            if limit is not None and streak >= limit and endpoint.enabled:
                reason = f"disabled after {streak} failed deliveries in a row"
                update.update(enabled=False, disabled_reason=reason, updated_at=now)
                self.report.disabled_endpoints.append(endpoint.id)
                log.warning("webhook endpoint %s %s", endpoint.id, reason)
            if streak != endpoint.failure_streak or "enabled" in update:
                changes.append((endpoint, endpoint.model_copy(update=update)))
        if changes:
            uow.webhook_endpoints.update_many(changes)


def _heads(uow: UnitOfWork, entity_ids: set[str]) -> dict[Key, WebhookDelivery]:
    """Per (endpoint, entity) of ``entity_ids``: its earliest pending delivery (by event)."""
    pending = cast(
        "list[WebhookDelivery]",
        _all(
            uow,
            "webhook_deliveries",
            Filter("entity_id", Op.IN, sorted(entity_ids)),
            Filter("delivery_status", Op.EQ, DeliveryStatus.PENDING.value),
        ),
    )
    heads: dict[Key, WebhookDelivery] = {}
    for delivery in pending:
        key = (delivery.endpoint_id, delivery.entity_id)
        current = heads.get(key)
        if current is None or (delivery.event_id, delivery.id) < (current.event_id, current.id):
            heads[key] = delivery
    return heads


def _nudged(
    uow: UnitOfWork, finished: set[Key], done: set[str], now: datetime
) -> list[tuple[WebhookDelivery, WebhookDelivery]]:
    """The next pending delivery of each finished resource, made due ``now`` (it waited)."""
    if not finished:
        return []
    heads = _heads(uow, {entity for _, entity in finished})
    return [
        (head, head.model_copy(update={"next_attempt_at": now}))
        for key, head in heads.items()
        if key in finished
        and head.id not in done
        and head.next_attempt_at is not None
        and head.next_attempt_at > now
    ]


def _older(endpoint: WebhookEndpoint, event: NotificationEvent) -> bool:
    """True when ``endpoint`` was created before ``event`` was recorded: by time, then (within
    one instant) by the time-ordered part of their ids."""
    return (endpoint.created_at, endpoint.id.rsplit("_", 1)[-1]) < (
        event.created_at,
        event.id.rsplit("_", 1)[-1],
    )


def _why_not(endpoint: WebhookEndpoint | None, event: NotificationEvent | None) -> str | None:
    """Why a delivery cannot be sent at all (it fails at once), or ``None``."""
    if endpoint is None or endpoint.status is not Status.PUBLISHED:
        return "the endpoint was deleted"
    if not endpoint.enabled:
        return "the endpoint is disabled"
    if event is None:
        return "the event no longer exists"
    return None
