"""Every row a store holds, in a form that compares equal when nothing was written: the proof a
preview (or a refused request) wrote nothing. Memory: every kind's rows, counters and usage events;
SQL: every table, read in primary-key order."""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy import select

from billingkit.ports import Storage
from billingkit.storage.memory.storage import MemoryStorage
from billingkit.storage.sql.columns import metadata
from billingkit.storage.sql.storage import SqlStorage


def every_row(storage: Storage) -> dict[str, Any]:
    """Table (or kind) name -> its rows, for every table of ``storage``."""
    if isinstance(storage, MemoryStorage):
        with storage._lock:
            return copy.deepcopy(
                {
                    "rows": storage._rows,
                    "counters": storage._counters,
                    "events": storage._events.rows,
                }
            )
    assert isinstance(storage, SqlStorage)
    out: dict[str, Any] = {}
    with storage.engine.connect() as conn:
        for table in metadata.sorted_tables:
            order = list(table.primary_key.columns) or list(table.columns)
            out[table.name] = [tuple(row) for row in conn.execute(select(table).order_by(*order))]
    return out
