"""Webhooks to a real receiver on 127.0.0.1, over HTTP (``HttpWebhookTransport``), on every store:
the signature verifies with the ``standardwebhooks`` library, a retry carries the same
``webhook-id``, and a receiver that is down for a while gets everything once it is back."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from billingkit import Billing, Settings
from billingkit.domain.webhooks import DeliveryStatus
from billingkit.facade.scoped import Scoped
from billingkit.ports import Storage
from billingkit.providers.http_webhooks import HttpWebhookTransport
from tests.webhook_receiver import Receiver, receiver

FAST = Settings(
    webhook_retry_base=timedelta(milliseconds=40),
    webhook_retry_cap=timedelta(milliseconds=200),
    webhook_timeout=5.0,
    webhook_max_attempts=1000,  # however slow this machine is, the test ends before they run out
    webhook_disable_after=None,
)


@pytest.fixture
def transport() -> Iterator[HttpWebhookTransport]:
    sender = HttpWebhookTransport(concurrency=8)
    yield sender
    sender.close()


@pytest.fixture
def live(storage: Storage, transport: HttpWebhookTransport) -> tuple[Billing, Scoped]:
    billing = Billing(storage, settings=FAST, webhook_transport=transport)  # the system clock
    setup = billing.bootstrap()
    return billing, billing.scope(setup.tenant.id, setup.environments[0][0].id)


def _until(billing: Billing, done: Callable[[], bool], seconds: float = 20.0) -> None:
    """Run the dispatcher until ``done()`` (failing after ``seconds``)."""
    ends = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < ends, "the deliveries did not arrive in time"
        billing.deliver_webhooks()
        time.sleep(0.02)


def test_a_receiver_verifies_the_signature_and_a_retry_has_the_same_webhook_id(
    live: tuple[Billing, Scoped],
) -> None:
    billing, scoped = live
    with receiver() as hooks:
        created = scoped.webhooks.create(url=hooks.url, event_types=["customer.created"])
        hooks.answers = [500]  # the first attempt fails
        customer = scoped.customers.create(external_id="c-1", name="Ada")
        _until(billing, lambda: len(hooks.received) == 2)

    first, second = hooks.received
    assert first.webhook_id == second.webhook_id
    [event] = scoped.notifications.list(event_type="customer.created").items
    assert first.webhook_id == event.id
    for request in (first, second):
        body = Webhook(created.secret).verify(request.body, request.headers)
        assert body == {"event_type": "customer.created", "customer": customer.to_dict()}
        assert request.headers["content-type"] == "application/json"
        assert request.headers["webhook-signature"].startswith("v1,")
    # Another secret does not verify: the signature is the endpoint's.
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "QUJD" * 8).verify(first.body, first.headers)
    [delivery] = scoped.webhooks.deliveries(endpoint_id=created.endpoint.id).items
    assert delivery.delivery_status is DeliveryStatus.DELIVERED
    assert [a["response_code"] for a in delivery.attempts] == [500, 200]
    assert delivery.attempt_count == 2 and delivery.response_code == 200


def test_a_receiver_down_for_a_while_gets_every_event_once_when_it_returns(
    live: tuple[Billing, Scoped],
) -> None:
    billing, scoped = live
    hooks = Receiver()  # not started: connections are refused
    scoped.webhooks.create(url=hooks.url, event_types=["customer.created"], headers={"x-team": "billing"})
    for n in range(20):
        scoped.customers.create(external_id=f"c-{n}", name=f"Customer {n}")
    for _ in range(4):
        billing.deliver_webhooks()
        time.sleep(0.05)
    down = scoped.webhooks.deliveries(limit=100).items
    assert len(down) == 20
    assert all(d.delivery_status is DeliveryStatus.PENDING for d in down)
    assert all(d.attempt_count >= 1 and d.response_code is None and d.error for d in down)
    try:
        hooks.start()
        _until(billing, lambda: len({*hooks.ids()}) == 20)
        billing.deliver_webhooks()  # nothing is sent twice once recorded
    finally:
        hooks.stop()
    events = {e.id for e in scoped.notifications.list(event_type="customer.created", limit=100).items}
    assert set(hooks.ids()) == events  # none lost
    assert len(hooks.ids()) == len(events)  # none duplicated
    assert {r.headers["x-team"] for r in hooks.received} == {"billing"}
    delivered = scoped.webhooks.deliveries(limit=100).items
    assert {d.delivery_status for d in delivered} == {DeliveryStatus.DELIVERED}
    # Backoff: the waits between one delivery's attempts grow (doubling, jittered in its upper half).
    slowest = max(delivered, key=lambda d: d.attempt_count)
    assert slowest.attempt_count >= 3
    stamps = [a["at"] for a in slowest.attempts]
    assert stamps == sorted(stamps)
