"""PostgreSQL ingestion sends its parts in psycopg's pipeline mode, around SQLAlchemy's execution
(:meth:`billingkit.storage.sql.events.SqlEventStore.insert_new`). A driver error there must still
come out as from any other statement: wrapped by SQLAlchemy, a lost connection invalidated, and the
storage working on afterwards."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from billingkit import Billing
from billingkit.domain.usage import UsageEvent
from billingkit.errors import ValidationError
from billingkit.storage.sql.storage import SqlStorage

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def pg(request: pytest.FixtureRequest) -> Any:
    from tests.conftest import make_storage

    storage = make_storage("postgres", request, None)
    yield storage
    storage.close()


def _events(prefix: str, n: int) -> list[UsageEvent]:
    return [UsageEvent(f"{prefix}{i}", "llm.call", "cust-1", T0, {"tokens": i}) for i in range(n)]


def test_a_connection_lost_mid_batch_is_a_wrapped_error_and_the_next_batch_is_stored(pg: SqlStorage) -> None:
    with pg.unit_of_work("tenant_a", "env_a") as uow:
        pid = uow.connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with pg.engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            admin.commit()
        with pytest.raises(DBAPIError) as lost:
            uow.events.insert_new(_events("a", 600), T0)
    assert lost.value.connection_invalidated
    with pg.unit_of_work("tenant_a", "env_a") as uow:
        assert uow.events.insert_new(_events("a", 600), T0) == {f"a{i}" for i in range(600)}
        uow.commit()
    with pg.unit_of_work("tenant_a", "env_a") as uow:
        assert uow.events.find("a599") is not None


def test_an_invalid_event_in_a_late_part_stores_nothing_through_the_library(pg: SqlStorage) -> None:
    billing = Billing(pg)
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    batch: list[dict[str, Any]] = [
        {"event_id": f"b{i}", "event_name": "llm.call", "external_customer_id": "c1", "properties": {"n": i}}
        for i in range(1000)
    ]
    batch[900]["timestamp"] = "yesterday"
    with pytest.raises(ValidationError) as refused:
        scoped.events.ingest_bulk(batch)
    assert refused.value.field == "events[900].timestamp"
    assert scoped.events.query(external_customer_id="c1", page_size=10).events == ()
    del batch[900]["timestamp"]
    assert len(scoped.events.ingest_bulk(batch).accepted_ids) == 1000
    assert (
        len(scoped.events.query(external_customer_id="c1", page_size=10).events) == 10
    )  # the query sees them
