"""``services.records.list_where_in``: what every batch loader (billing snapshots, coupon and tax
associations, cumulative commitments) reads with, on every store."""

from __future__ import annotations

from typing import Any

from billingkit.domain.queries import MAX_LIMIT, Filter, Op
from billingkit.domain.resources import Status
from billingkit.services.records import IN_CHUNK, list_where_in
from billingkit.testing.contracts.samples import sample

COUNT = 1203  # more than two IN lists of values, and more rows than one page


def test_many_values_and_many_rows_are_each_read_once(storage: Any) -> None:
    customers = [
        sample("customers", external_id=f"c{i:05d}", email="team@acme.test", metadata={"tier": "gold"})
        for i in range(COUNT)
    ]
    archived = sample("customers", external_id="gone", email="team@acme.test", status=Status.ARCHIVED)
    with storage.unit_of_work("tenant_a", "env_a") as uow:
        uow.customers.add_many([*customers, archived])
        uow.commit()
    expected = sorted(c.id for c in customers)
    external_ids = [c.external_id for c in customers] + ["gone", "nobody"]
    assert len(external_ids) > 2 * IN_CHUNK and COUNT > MAX_LIMIT
    with storage.unit_of_work("tenant_a", "env_a") as uow:
        by_value = list_where_in(uow.customers, "external_id", external_ids)  # three IN lists
        by_page = list_where_in(uow.customers, "email", ["team@acme.test"])  # one value, two pages
        with_archived = list_where_in(uow.customers, "email", ["team@acme.test"], status=None)
        filtered = list_where_in(
            uow.customers, "external_id", external_ids[:10], Filter("metadata.tier", Op.EQ, "gold")
        )
    assert sorted(c.id for c in by_value) == expected
    assert sorted(c.id for c in by_page) == expected
    assert len(with_archived) == COUNT + 1
    assert len(filtered) == 10
