"""The webhook dispatcher on every store, with the in-memory transport and a test clock: fan-out
by endpoint and event type, order per resource across failures, backoff and giving up, disabling
endpoints, leases, retry and replay, secrets at rest, and in-process subscribers."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from billingkit import Billing, Settings, TestClock
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.webhooks import DeliveryStatus, retry_delay
from billingkit.errors import InvalidOperation, NotFound, ValidationError
from billingkit.facade.scoped import Scoped
from billingkit.ports import Storage
from billingkit.providers import MemoryWebhookTransport
from billingkit.services.access import BootstrapResult
from billingkit.services.webhook_dispatch import Dispatcher
from tests.store_rows import every_row

URL = "https://hooks.example.com/in"
SETTINGS = Settings(
    webhook_max_attempts=3,
    webhook_retry_base=timedelta(seconds=10),
    webhook_retry_cap=timedelta(seconds=30),
    webhook_disable_after=2,
)


@pytest.fixture
def transport() -> MemoryWebhookTransport:
    return MemoryWebhookTransport()


@pytest.fixture
def billing(storage: Storage, clock: TestClock, transport: MemoryWebhookTransport) -> Billing:
    return Billing(storage, clock, settings=SETTINGS, webhook_transport=transport)


@pytest.fixture
def scoped(billing: Billing, setup: BootstrapResult) -> Scoped:
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


def _sent(transport: MemoryWebhookTransport) -> list[tuple[str, str]]:
    """(event type, webhook-id) of every request sent, in order."""
    return [(json.loads(r.body)["event_type"], r.headers["webhook-id"]) for r, _ in transport.deliveries]


def test_each_endpoint_gets_the_types_it_wants_from_its_creation_on(
    billing: Billing, scoped: Scoped, setup: BootstrapResult, transport: MemoryWebhookTransport
) -> None:
    scoped.customers.create(external_id="before", name="Before")  # no endpoint yet
    created = scoped.webhooks.create(url=URL, event_types=["customer.created"])
    everything = scoped.webhooks.create(url=URL + "/all")
    scoped.webhooks.create(url=URL + "/off", enabled=False)
    prod = billing.scope(setup.tenant.id, setup.environments[1][0].id)
    prod.webhooks.create(url=URL + "/prod")
    customer = scoped.customers.create(external_id="c-1", name="Ada")
    scoped.customers.update(customer.id, name="Ada L")
    report = billing.deliver_webhooks()
    assert (report.events, report.deliveries, report.delivered) == (3, 3, 3)
    by_url = sorted((r.url, json.loads(r.body)["event_type"]) for r, _ in transport.deliveries)
    assert by_url == [
        (URL, "customer.created"),
        (URL + "/all", "customer.created"),
        (URL + "/all", "customer.updated"),
    ]
    assert scoped.webhooks.deliveries(endpoint_id=created.endpoint.id).total == 1
    assert scoped.webhooks.deliveries(endpoint_id=everything.endpoint.id).total == 2
    assert prod.webhooks.deliveries().total == 0
    assert billing.deliver_webhooks().sent == 0  # handed over once


def test_the_body_is_the_envelope_subscribers_get_signed_with_the_endpoint_secret(
    billing: Billing, scoped: Scoped, transport: MemoryWebhookTransport
) -> None:
    seen: list[NotificationEvent] = []
    billing.subscribe("customer.created", seen.append)
    created = scoped.webhooks.create(url=URL, headers={"Authorization": "Bearer abc"})
    scoped.customers.create(external_id="c-1", name="Ada")
    billing.deliver_webhooks()
    [(request, result)] = transport.deliveries
    assert result.delivered
    [event] = seen  # in-process subscribers keep working, with the same envelope
    assert Webhook(created.secret).verify(request.body, dict(request.headers)) == event.payload
    assert request.headers["webhook-id"] == event.id
    assert request.headers["Authorization"] == "Bearer abc"


def test_deliveries_of_one_resource_leave_in_order_across_a_failure(
    billing: Billing, scoped: Scoped, clock: TestClock, transport: MemoryWebhookTransport
) -> None:
    scoped.webhooks.create(url=URL)
    transport.answer(URL, status_code=500)
    customer = scoped.customers.create(external_id="c-1", name="Ada")
    for name in ("B", "C"):
        scoped.customers.update(customer.id, name=name)
    other = scoped.customers.create(external_id="c-2", name="Other")
    billing.deliver_webhooks()
    # Only the first event of each customer left; the later ones wait behind it.
    assert sorted(_sent(transport)) == sorted(
        [("customer.created", e.id) for e in _events(scoped, "customer.created")]
    )
    transport.answer(URL, status_code=200)
    clock.advance(timedelta(seconds=30))
    billing.deliver_webhooks()
    bodies = [json.loads(r.body) for r, res in transport.deliveries if res.delivered]
    ada = [(b["event_type"], b["customer"]["name"]) for b in bodies if b["customer"]["id"] == customer.id]
    assert ada == [("customer.created", "Ada"), ("customer.updated", "B"), ("customer.updated", "C")]
    assert [b["customer"]["id"] for b in bodies].count(other.id) == 1
    assert {d.delivery_status for d in scoped.webhooks.deliveries().items} == {DeliveryStatus.DELIVERED}


def _events(scoped: Scoped, event_type: str) -> list[NotificationEvent]:
    return list(scoped.notifications.list(event_type=event_type, limit=100).items)


def test_retries_back_off_then_the_delivery_fails_and_the_next_one_goes(
    billing: Billing, scoped: Scoped, clock: TestClock, transport: MemoryWebhookTransport
) -> None:
    scoped.webhooks.create(url=URL)
    transport.answer(URL, status_code=None, error="connection refused")
    customer = scoped.customers.create(external_id="c-1", name="Ada")
    scoped.customers.update(customer.id, name="B")
    start = clock.now()
    billing.deliver_webhooks()
    [first] = scoped.webhooks.deliveries(event_type="customer.created").items
    assert first.attempt_count == 1 and first.error == "connection refused" and first.response_code is None
    assert first.next_attempt_at is not None
    assert (
        timedelta(seconds=5) <= first.next_attempt_at - start <= timedelta(seconds=10)
    )  # base 10 s, jittered
    clock.set(first.next_attempt_at - timedelta(microseconds=1))
    assert billing.deliver_webhooks().sent == 0  # not due yet
    clock.set(first.next_attempt_at)
    billing.deliver_webhooks()
    second = scoped.webhooks.delivery(first.id)
    assert second.attempt_count == 2
    assert second.next_attempt_at is not None
    assert timedelta(seconds=10) <= second.next_attempt_at - clock.now() <= timedelta(seconds=20)
    clock.set(second.next_attempt_at)
    transport.answer(URL, status_code=200)  # too late for the first: its third attempt answers 500
    transport.answer(URL, status_code=503)
    billing.deliver_webhooks()
    failed = scoped.webhooks.delivery(first.id)
    assert failed.delivery_status is DeliveryStatus.FAILED and failed.next_attempt_at is None
    assert [a["response_code"] for a in failed.attempts] == [None, None, 503]
    # The update waited behind the failed delivery and is now due.
    [update] = scoped.webhooks.deliveries(event_type="customer.updated").items
    assert update.attempt_count == 1


def test_backoff_doubles_up_to_the_cap_with_jitter_in_its_upper_half() -> None:
    rng = random.Random(7)
    base, cap = timedelta(seconds=5), timedelta(minutes=1)
    for failures, exact in [(1, 5), (2, 10), (3, 20), (4, 40), (5, 60), (9, 60), (10_000, 60)]:
        delays = [retry_delay(failures, base=base, cap=cap, rng=rng) for _ in range(50)]
        assert all(timedelta(seconds=exact / 2) <= d <= timedelta(seconds=exact) for d in delays)
        assert len(set(delays)) > 1  # jittered


def test_an_endpoint_failing_delivery_after_delivery_is_disabled_and_enabling_resets_it(
    billing: Billing, scoped: Scoped, clock: TestClock, transport: MemoryWebhookTransport
) -> None:
    endpoint = scoped.webhooks.create(url=URL).endpoint
    transport.answer(URL, status_code=500)
    for n in range(3):
        scoped.customers.create(external_id=f"c-{n}", name=f"C{n}")
    for _ in range(3):
        billing.deliver_webhooks()
        clock.advance(timedelta(seconds=31))
    report = billing.deliver_webhooks()
    disabled = scoped.webhooks.get(endpoint.id)
    assert not disabled.enabled and disabled.failure_streak >= 2
    assert disabled.disabled_reason is not None and "failed deliveries in a row" in disabled.disabled_reason
    assert {d.delivery_status for d in scoped.webhooks.deliveries().items} == {DeliveryStatus.FAILED}
    assert report.sent == 0
    scoped.customers.create(external_id="later", name="Later")
    assert billing.deliver_webhooks().deliveries == 0  # a disabled endpoint gets nothing new
    enabled = scoped.webhooks.update(endpoint.id, enabled=True)
    assert enabled.enabled and enabled.failure_streak == 0 and enabled.disabled_reason is None


def test_a_claimed_delivery_whose_dispatcher_died_is_due_again_after_the_lease(
    billing: Billing, scoped: Scoped, clock: TestClock, transport: MemoryWebhookTransport
) -> None:
    scoped.webhooks.create(url=URL)
    scoped.customers.create(external_id="c-1", name="Ada")
    dead = Dispatcher(
        billing.storage,
        billing.providers,
        billing.settings,
        clock=clock.now,
        signing_clock=clock.now,
        ids=billing.ids.new,
    )
    dead.fan_out()
    assert len(dead._claim()) == 1  # claimed, then the dispatcher "dies" before sending
    assert billing.deliver_webhooks().sent == 0  # leased to the dead one
    clock.advance(SETTINGS.webhook_lease)
    assert billing.deliver_webhooks().delivered == 1
    [event] = _events(scoped, "customer.created")
    assert _sent(transport) == [("customer.created", event.id)]


def test_a_deleted_endpoint_fails_its_pending_deliveries(
    billing: Billing, scoped: Scoped, transport: MemoryWebhookTransport
) -> None:
    endpoint = scoped.webhooks.create(url=URL).endpoint
    scoped.customers.create(external_id="c-1", name="Ada")
    scoped.webhooks.delete(endpoint.id)
    billing.deliver_webhooks()
    assert transport.deliveries == []
    with pytest.raises(NotFound):
        scoped.webhooks.get(endpoint.id)


def test_retry_and_replay_send_again_with_the_event_id(
    billing: Billing, scoped: Scoped, clock: TestClock, transport: MemoryWebhookTransport
) -> None:
    endpoint = scoped.webhooks.create(url=URL).endpoint
    transport.answer(URL, status_code=500)
    customer = scoped.customers.create(external_id="c-1", name="Ada")
    for _ in range(3):
        billing.deliver_webhooks()
        clock.advance(timedelta(seconds=31))
    [failed] = scoped.webhooks.deliveries().items
    assert failed.delivery_status is DeliveryStatus.FAILED
    transport.answer(URL, status_code=200)
    queued = scoped.webhooks.retry(failed.id)
    assert queued.delivery_status is DeliveryStatus.PENDING and queued.next_attempt_at == clock.now()
    billing.deliver_webhooks()
    assert scoped.webhooks.delivery(failed.id).delivery_status is DeliveryStatus.DELIVERED
    with pytest.raises(InvalidOperation):
        scoped.webhooks.retry(failed.id)  # delivered: replay it instead
    scoped.customers.update(customer.id, name="B")
    billing.deliver_webhooks()
    replayed = scoped.webhooks.replay(event_id=failed.event_id)
    since = scoped.webhooks.replay(endpoint_id=endpoint.id, since=customer.created_at)
    assert len(replayed.deliveries) == 1 and len(since.deliveries) == 2
    before = len(transport.deliveries)
    billing.deliver_webhooks()
    ids = [r.headers["webhook-id"] for r, _ in transport.deliveries[before:]]
    assert sorted(ids) == sorted(
        [failed.event_id, failed.event_id, _events(scoped, "customer.updated")[0].id]
    )
    with pytest.raises(ValidationError):
        scoped.webhooks.replay(since=customer.created_at)  # since needs an endpoint
    with pytest.raises(NotFound):
        scoped.webhooks.replay(event_id="sys_event_missing")


def test_secrets_are_encrypted_at_rest_shown_once_and_rotated(
    billing: Billing, scoped: Scoped, storage: Storage, transport: MemoryWebhookTransport
) -> None:
    created = scoped.webhooks.create(url=URL)
    secret = created.secret
    assert secret.startswith("whsec_") and len(secret) > 30
    assert secret not in str(every_row(storage))  # only its ciphertext is stored
    assert secret not in repr(created) + repr(created.endpoint) + repr(billing.settings)
    assert "secret" not in scoped.webhooks.get(created.endpoint.id).to_dict()
    assert all("secret" not in e.to_dict() for e in scoped.webhooks.list().items)
    rotated = scoped.webhooks.rotate_secret(created.endpoint.id)
    assert rotated.secret != secret
    scoped.customers.create(external_id="c-1", name="Ada")
    billing.deliver_webhooks()
    [(request, _)] = transport.deliveries
    Webhook(rotated.secret).verify(request.body, dict(request.headers))
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(request.body, dict(request.headers))


def test_a_secret_sealed_under_another_key_fails_the_attempt_and_rotation_mends_it(
    storage: Storage, clock: TestClock, setup: BootstrapResult, transport: MemoryWebhookTransport
) -> None:
    first = Billing(storage, clock, settings=SETTINGS, webhook_transport=transport)  # a random key
    environment = setup.environments[0][0].id
    endpoint = first.scope(setup.tenant.id, environment).webhooks.create(url=URL).endpoint
    restarted = Billing(storage, clock, settings=SETTINGS, webhook_transport=transport)  # another one
    scoped = restarted.scope(setup.tenant.id, environment)
    clock.advance(timedelta(seconds=1))  # ids of two Billings order by time only
    scoped.customers.create(external_id="c-1", name="Ada")
    restarted.deliver_webhooks()
    [delivery] = scoped.webhooks.deliveries().items
    assert transport.deliveries == []
    assert delivery.error is not None and "rotate" in delivery.error
    scoped.webhooks.rotate_secret(endpoint.id)
    clock.advance(timedelta(seconds=31))
    assert restarted.deliver_webhooks().delivered == 1


class _CountingStorage:
    """The store, counting the units of work a caller opens, by kind."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.opened: list[str] = []

    def unit_of_work(self, *scope: str | None, read_only: bool = False) -> object:
        self.opened.append("read" if read_only else "write")
        return self.storage.unit_of_work(*scope, read_only=read_only)


def test_an_idle_pass_only_reads_and_a_due_retry_is_still_found(
    billing: Billing, scoped: Scoped, clock: TestClock, transport: MemoryWebhookTransport
) -> None:
    """The worker polls every second beside the server: with nothing due, a pass is one read-only
    unit of work (no write connection, no lock); once a retry falls due, the pass sends it."""
    scoped.webhooks.create(url=URL)
    transport.answer(URL, status_code=503)  # the first attempt fails; its retry is due later
    scoped.customers.create(external_id="c-1", name="Ada")
    counting = _CountingStorage(billing.storage)

    def dispatcher() -> Dispatcher:
        return Dispatcher(
            counting,  # type: ignore[arg-type]
            billing.providers,
            billing.settings,
            clock=clock.now,
            signing_clock=clock.now,
            ids=billing.ids.new,
        )

    assert dispatcher().run().failed_attempts == 1
    counting.opened.clear()
    assert dispatcher().run().sent == 0  # the retry is not due yet
    assert counting.opened == ["read"]
    transport.answer(URL, status_code=200)
    clock.advance(SETTINGS.webhook_retry_cap + timedelta(seconds=1))
    assert dispatcher().run().delivered == 1
    assert "write" in counting.opened
