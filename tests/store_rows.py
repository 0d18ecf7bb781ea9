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
    """Table (or kind) name -> its rows, for every table of ``storage``. An API key's
    ``last_used_at`` is left out: authenticating a request may note the key's use (at most once
    per ``Settings.api_key_last_used_interval``), which is not a write of the request itself."""
    if isinstance(storage, MemoryStorage):
        with storage._lock:
            rows = copy.deepcopy(
                {
                    "rows": storage._rows,
                    "counters": storage._counters,
                    "events": storage._events.rows,
                }
            )
        keys = rows["rows"]["api_keys"]
        for key_id, key in keys.items():
            keys[key_id] = key.model_copy(update={"last_used_at": None})
        return rows
    assert isinstance(storage, SqlStorage)
    out: dict[str, Any] = {}
    with storage.engine.connect() as conn:
        for table in metadata.sorted_tables:
            order = list(table.primary_key.columns) or list(table.columns)
            columns = [c for c in table.columns if (table.name, c.name) != ("api_keys", "last_used_at")]
            out[table.name] = [tuple(row) for row in conn.execute(select(*columns).order_by(*order))]
    return out
