"""The SDK with its own default HTTP client against the adapter served by uvicorn on a real socket:
what the in-process tests cannot see (the server's framing, headers, keep-alive) works too."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from flexprice import Flexprice
from flexprice.models import errors

from billingkit import Billing
from billingkit.http import create_app
from billingkit.services.access import BootstrapResult
from tests.compat.conftest import known, status_and_code


@pytest.fixture
def server_url(billing: Billing) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(create_app(billing), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(timeout=10)


def test_default_client_over_a_socket(server_url: str, setup: BootstrapResult) -> None:
    sdk = Flexprice(server_url=server_url, api_key_auth=setup.environments[0][1].api_key)
    customer = known(
        sdk.customers.create_customer(external_id="cust-1", name="Ada", metadata={"tier": "gold"})
    )
    assert known(sdk.customers.get_customer_by_external_id(external_id="cust-1")) == customer
    answer = sdk.events.ingest_event(
        event_name="api.request",
        external_customer_id="cust-1",
        event_id="req-1",
        timestamp="2026-05-01T09:00:00Z",
    )
    assert answer == {"message": "Event accepted for processing", "event_id": "req-1"}
    found = known(sdk.events.get_event(id="req-1", external_customer_id="cust-1"))
    assert (found.event.id, found.event.timestamp) == ("req-1", "2026-05-01T09:00:00Z")
    with pytest.raises(errors.FlexpriceError) as taken:
        sdk.customers.create_customer(external_id="cust-1", name="Again")
    assert status_and_code(taken.value) == (409, "already_exists")
