"""On PostgreSQL a record found by its id is found through the primary key whatever the table's
statistics say: the scope (and version) of a by-id read or write is a guard no index serves
(``storage.sql.mapping.guard``). With ``=`` on the scope and no statistics, as after a burst of
rows on a new database, the planner took a scope index and read the whole scope for every row
updated: the webhook dispatcher spent 4.5 s of a 3,000-delivery pass there (issue 17)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from billingkit.domain.webhooks import WebhookDelivery
from billingkit.storage.sql.storage import SqlStorage, SqlUnitOfWork
from billingkit.testing.contracts.samples import T0, sample, unique_number


@pytest.fixture
def pg(request: pytest.FixtureRequest) -> Any:
    from tests.conftest import make_storage

    storage = make_storage("postgres", request, None)
    yield storage
    storage.close()


def _indexes(plan: dict[str, Any]) -> set[str]:
    """Every index a plan (``EXPLAIN (FORMAT JSON)``'s ``Plan``) reads, and ``"seq"`` for a
    sequential scan."""
    found = {plan["Index Name"]} if "Index Name" in plan else set()
    if plan["Node Type"] == "Seq Scan":
        found.add("seq")
    for child in plan.get("Plans", []):
        found |= _indexes(child)
    return found


def _plans(uow: SqlUnitOfWork, statements: list[tuple[str, Any]]) -> list[tuple[str, set[str]]]:
    explained = []
    for sql, params in statements:
        answer = uow.connection.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {sql}", params).scalar_one()
        plan = (answer if isinstance(answer, list) else json.loads(answer))[0]["Plan"]
        explained.append((sql.split()[0], _indexes(plan)))
    return explained


def test_reads_and_writes_by_id_use_the_primary_key_without_statistics(pg: SqlStorage) -> None:
    tenant_id, environment_id = f"tenant_plan_{unique_number()}", "env_plan"
    statements: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, sql: str, params: Any, context: Any, many: bool) -> None:
        statements.append((sql, params[0] if many else params))

    with pg.unit_of_work(tenant_id, environment_id) as uow:
        # Never committed: the table's statistics (if any) know nothing of these rows.
        deliveries: list[WebhookDelivery] = [
            sample("webhook_deliveries", tenant_id, environment_id, endpoint_id="whep_plan")
            for _ in range(2000)
        ]
        uow.webhook_deliveries.add_many(deliveries)
        event.listen(uow.connection, "before_cursor_execute", record)
        few = deliveries[:3]
        assert [d.id for d in uow.webhook_deliveries.find_many(d.id for d in few)] == sorted(
            d.id for d in few
        )
        later = T0 + timedelta(minutes=5)
        uow.webhook_deliveries.update_many(
            [(d, d.model_copy(update={"next_attempt_at": later})) for d in few]
        )
        uow.webhook_deliveries.update(deliveries[3].model_copy(update={"attempt_count": 1}))
        event.remove(uow.connection, "before_cursor_execute", record)
        plans = _plans(uow, [s for s in statements if s[0].split()[0] in ("SELECT", "UPDATE")])
        assert [verb for verb, _ in plans] == ["SELECT", "UPDATE", "UPDATE"]
        assert all(indexes == {"pk_webhook_deliveries"} for _, indexes in plans), plans
        # The guards still hold: another scope's view changes nothing.
        other = uow.for_scope(tenant_id, "env_other").webhook_deliveries
        assert other.find_many(d.id for d in few) == []
        changed = {d.id: d for d in uow.webhook_deliveries.find_many([deliveries[0].id, deliveries[3].id])}
        assert (changed[deliveries[0].id].next_attempt_at, changed[deliveries[0].id].attempt_count) == (
            later,
            0,
        )
        assert (changed[deliveries[3].id].next_attempt_at, changed[deliveries[3].id].attempt_count) == (T0, 1)
