"""PostgreSQL's read pool (``SqlStorage.read_engine``): autocommit read-only sessions with no
ping on checkout. The database still refuses writes in them, and a connection the server dropped
is met by a read that runs once more on a fresh connection (``Scoped.read``)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from billingkit import Billing
from billingkit.errors import BillingError
from billingkit.storage.sql.storage import SqlStorage


@pytest.fixture
def pg(request: pytest.FixtureRequest) -> Any:
    from tests.conftest import make_storage

    storage = make_storage("postgres", request, None)
    yield storage
    storage.close()


def test_reads_use_their_own_autocommit_read_only_pool(pg: SqlStorage) -> None:
    assert pg.read_engine is not pg.engine
    with pg.read_engine.connect() as conn:
        assert conn.execute(text("SHOW default_transaction_read_only")).scalar_one() == "on"
    with pg.unit_of_work(read_only=True) as uow:
        assert uow.connection.engine is pg.read_engine
    with pg.unit_of_work() as uow:
        assert uow.connection.engine is pg.engine


def test_a_dropped_read_connection_is_retried_once(pg: SqlStorage) -> None:
    billing = Billing(pg)
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    customer = scoped.customers.create(external_id="c1", name="Ada")
    assert scoped.customers.get(customer.id).id == customer.id  # the read pool holds a connection now
    with pg.read_engine.connect() as conn:
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with pg.engine.connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    outcomes = []
    for _ in range(3):
        try:
            outcomes.append(scoped.customers.get(customer.id).id == customer.id)
        except BillingError:
            outcomes.append(False)
    assert outcomes == [True, True, True]  # the first read met the dropped connection and ran again


def test_a_usage_read_on_a_dropped_connection_is_retried_once(pg: SqlStorage) -> None:
    """Usage runs its statement on the driver's cursor (``storage.sql.driver``); the lost
    connection must still reach SQLAlchemy's handling, which marks it invalidated, so the read
    is retried like any other."""
    from datetime import UTC, datetime

    from billingkit.domain.usage import UsageQuery

    billing = Billing(pg)
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = scoped.meters.create(name="Calls", event_name="api", aggregation={"type": "COUNT"})
    when = datetime(2026, 3, 2, tzinfo=UTC)
    scoped.events.ingest_bulk(
        [{"event_name": "api", "external_customer_id": "c1", "timestamp": when.isoformat()} for _ in range(2)]
    )
    query = UsageQuery(meter.to_spec(), datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC))

    def usage() -> Any:
        (result,) = scoped.usage.aggregate([query])
        return result.value

    assert usage() == 2  # the read pool holds a connection now
    with pg.read_engine.connect() as conn:
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with pg.engine.connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    assert [usage() for _ in range(3)] == [2, 2, 2]  # the first met the dropped connection and ran again
