"""The storage contract, part five: read-only units of work (``unit_of_work(..., read_only=True)``).

They read what was committed, and refuse every kind of write with
:class:`~billingkit.errors.ReadOnlyTransaction`, leaving nothing written and the store usable by
the next write unit of work.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from billingkit.domain.queries import ListQuery
from billingkit.domain.usage import UsageEvent
from billingkit.errors import ReadOnlyTransaction
from billingkit.ports import Storage, UnitOfWork
from billingkit.testing.contracts.samples import T0, sample

__all__ = ["ReadOnlyContract"]

SCOPE = ("tenant_a", "env_a")


def _event(event_id: str) -> UsageEvent:
    return UsageEvent(
        event_id=event_id,
        event_name="api.request",
        external_customer_id="cust-ro",
        timestamp=T0,
        properties={"n": 1},
    )


#: One write of each kind a unit of work offers: (name, write). Each must be refused.
WRITES: list[tuple[str, Callable[[UnitOfWork, Any], object]]] = [
    ("add", lambda uow, stored: uow.customers.add(sample("customers"))),
    ("add_many", lambda uow, stored: uow.customers.add_many([sample("customers"), sample("customers")])),
    ("update", lambda uow, stored: uow.customers.update(stored.model_copy(update={"name": "Changed"}))),
    (
        "update_many",
        lambda uow, stored: uow.customers.update_many(
            [(stored, stored.model_copy(update={"name": "Changed"}))]
        ),
    ),
    ("counter", lambda uow, stored: uow.counters.next("inv:202603")),
    ("events", lambda uow, stored: uow.events.insert_new([_event("evt_read_only")], T0)),
    ("claim", lambda uow, stored: uow.claim_due("subscriptions", T0 + timedelta(days=400), 10)),
]


class ReadOnlyContract:
    """Read-only units of work: they read the committed state and refuse every write."""

    def _stored_customer(self, storage: Storage) -> Any:
        customer = sample("customers", name="Before")
        with storage.unit_of_work(*SCOPE) as uow:
            uow.customers.add(customer)
            uow.commit()
        return customer

    def test_a_read_only_unit_of_work_reads_what_was_committed(self, storage: Storage) -> None:
        customer = self._stored_customer(storage)
        with storage.unit_of_work(*SCOPE, read_only=True) as uow:
            assert uow.read_only is True
            assert uow.customers.get(customer.id) == customer
            assert [c.id for c in uow.customers.list(ListQuery()).items] == [customer.id]
            assert uow.for_scope(*SCOPE).read_only is True
        with storage.unit_of_work(*SCOPE) as uow:
            assert uow.read_only is False

    @pytest.mark.parametrize("write", [name for name, _ in WRITES])
    def test_every_write_in_a_read_only_unit_of_work_is_refused(self, storage: Storage, write: str) -> None:
        customer = self._stored_customer(storage)
        attempt = dict(WRITES)[write]
        # (PostgreSQL ends the transaction at the refused statement: the unit of work is done.)
        with storage.unit_of_work(*SCOPE, read_only=True) as uow, pytest.raises(ReadOnlyTransaction):
            attempt(uow, customer)
        with storage.unit_of_work(*SCOPE) as uow:
            assert [c.name for c in uow.customers.list(ListQuery()).items] == ["Before"]
            assert uow.events.find("evt_read_only") is None
            # The connection a read-only unit of work used writes again in a write unit of work.
            assert uow.counters.next("inv:202603") == 1
            uow.customers.update(customer.model_copy(update={"name": "After"}))
            uow.commit()
        with storage.unit_of_work(*SCOPE, read_only=True) as uow:
            assert uow.customers.get(customer.id).name == "After"

    def test_a_refused_write_in_another_scope_view_is_refused_too(self, storage: Storage) -> None:
        with storage.unit_of_work(None, None, read_only=True) as uow, pytest.raises(ReadOnlyTransaction):
            uow.for_scope(*SCOPE).customers.add(sample("customers"))
        with storage.unit_of_work(*SCOPE) as uow:
            assert uow.customers.list(ListQuery()).items == []
