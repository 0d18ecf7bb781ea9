"""``HttpWebhookTransport`` against a real receiver on 127.0.0.1: answers in request order, a slow
receiver times out, a refused connection and a redirect are failures (never followed), and the
worker's dispatcher thread delivers without anyone calling ``deliver_webhooks``."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from billingkit import Billing, MemoryWebhookTransport, Worker
from billingkit.domain.gateways import WebhookRequest
from billingkit.providers.http_webhooks import HttpWebhookTransport
from tests.webhook_receiver import Receiver, receiver


@pytest.fixture
def transport() -> Iterator[HttpWebhookTransport]:
    sender = HttpWebhookTransport(concurrency=3)
    yield sender
    sender.close()


def _request(url: str, n: int, timeout: float = 5.0) -> WebhookRequest:
    return WebhookRequest(url=url, body=b'{"n": %d}' % n, headers={"webhook-id": f"msg_{n}"}, timeout=timeout)


def test_a_batch_is_answered_in_request_order(transport: HttpWebhookTransport) -> None:
    with receiver() as hooks:
        hooks.answers = [200, 500, 204, 404, 200]
        results = transport.deliver_many([_request(hooks.url, n) for n in range(5)])
    assert len(results) == 5
    assert sorted(r.status_code or 0 for r in results) == [200, 200, 204, 404, 500]
    by_id = {r.webhook_id: r.body for r in hooks.received}
    assert by_id == {f"msg_{n}": b'{"n": %d}' % n for n in range(5)}
    assert all(r.elapsed > 0 for r in results)
    assert [r.delivered for r in results].count(True) == 3


def test_a_slow_receiver_times_out_and_a_closed_port_is_refused(transport: HttpWebhookTransport) -> None:
    with receiver() as hooks:
        hooks.delay = 1.0
        [slow] = transport.deliver_many([_request(hooks.url, 1, timeout=0.2)])
    assert slow.status_code is None and slow.error == "no answer within 0.2 s" and not slow.delivered
    closed = Receiver()  # never started
    [refused] = transport.deliver_many([_request(closed.url, 2)])
    assert refused.status_code is None and refused.error and "Connect" in refused.error


def test_a_redirect_is_a_failure_and_not_followed(transport: HttpWebhookTransport) -> None:
    with receiver() as hooks:
        hooks.answers = [307]
        [moved] = transport.deliver_many([_request(hooks.url, 1)])
    assert moved.status_code == 307 and not moved.delivered
    assert len(hooks.received) == 1


def test_the_worker_dispatches_webhooks_on_its_own_thread() -> None:
    sent = MemoryWebhookTransport()
    billing = Billing(webhook_transport=sent)
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    scoped.webhooks.create(url="https://hooks.example.com/in")
    scoped.customers.create(external_id="c-1", name="Ada")
    worker = Worker(billing, interval=60, webhook_interval=0.01).start()
    deadline = time.monotonic() + 10
    while not sent.deliveries and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.stop()
    assert len(sent.deliveries) == 1 and worker.dispatches >= 1
    assert worker.last_dispatch is not None
