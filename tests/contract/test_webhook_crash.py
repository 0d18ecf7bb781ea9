"""A dispatcher process killed with SIGKILL in the middle of a batch loses nothing: on a SQLite
file and on PostgreSQL, every event still reaches the receiver at least once, with its id, once
the dead dispatcher's lease ends and another dispatcher picks its deliveries up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from standardwebhooks import Webhook

from billingkit import Billing, Settings
from billingkit.providers.http_webhooks import HttpWebhookTransport
from billingkit.services.webhook_secrets import new_key
from tests.webhook_receiver import receiver

KEY = new_key()
SETTINGS = Settings(
    webhook_secret_key=KEY,
    webhook_batch_size=10,
    webhook_timeout=1.0,
    webhook_lease=timedelta(seconds=2),
    webhook_retry_base=timedelta(milliseconds=50),
    webhook_retry_cap=timedelta(milliseconds=200),
)
EVENTS = 30

DISPATCHER = """
import sys
from datetime import timedelta
from billingkit import Billing, Settings
from billingkit.providers.http_webhooks import HttpWebhookTransport
settings = Settings(
    webhook_secret_key=sys.argv[2], webhook_batch_size=10, webhook_timeout=1.0,
    webhook_lease=timedelta(seconds=2), webhook_concurrency=4,
)
transport = HttpWebhookTransport(concurrency=4)
billing = Billing.from_url(sys.argv[1], settings=settings, webhook_transport=transport)
print("ready", flush=True)
billing.deliver_webhooks()
print("finished", flush=True)
"""


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crash.db'}"
    from tests.conftest import make_storage

    make_storage("postgres", request, tmp_path).close()  # emptied
    return str(request.getfixturevalue("postgres_url"))


def test_a_dispatcher_killed_mid_batch_loses_no_event(database_url: str) -> None:
    with receiver() as hooks:
        hooks.delay = 0.15  # slow answers: the kill lands while requests are in flight
        billing = Billing.from_url(database_url, settings=SETTINGS)
        setup = billing.bootstrap()
        scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
        secret = scoped.webhooks.create(url=hooks.url, event_types=["customer.created"]).secret
        for n in range(EVENTS):
            scoped.customers.create(external_id=f"c-{n}", name=f"Customer {n}")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        child = subprocess.Popen(
            [sys.executable, "-c", DISPATCHER, database_url, KEY], stdout=subprocess.PIPE, env=env, text=True
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        ends = time.monotonic() + 30
        while len(hooks.received) < 6:  # some of the first batches answered, others in flight
            assert time.monotonic() < ends and child.poll() is None, "the dispatcher did not start sending"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        got_before = len(hooks.received)
        assert got_before < EVENTS  # it died mid-way

        transport = HttpWebhookTransport(concurrency=8)
        survivor = Billing.from_url(database_url, settings=SETTINGS, webhook_transport=transport)
        events = {e.id for e in scoped.notifications.list(event_type="customer.created", limit=100).items}
        ends = time.monotonic() + 60
        while not events <= set(hooks.ids()):
            assert time.monotonic() < ends, f"missing {len(events - set(hooks.ids()))} events"
            survivor.deliver_webhooks()
            time.sleep(0.05)
        transport.close()
        survivor.close()
        billing.close()

    assert len(events) == EVENTS
    assert set(hooks.ids()) == events  # every event, each with its own id
    for request in hooks.received:
        body = Webhook(secret).verify(request.body, request.headers)
        assert body["event_type"] == "customer.created"
