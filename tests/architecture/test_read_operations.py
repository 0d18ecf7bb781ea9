"""Reads are declared as reads: every facade operation whose service only reads runs in a read-only
unit of work (``read_only=True`` on its declaration, ``self._s.read(...)`` in a written-out method),
so it never waits for a writer's lock on SQLite.

What a read is, is told by the service's name (``get_``, ``list_``, ``search_``, ``preview_``...);
the two previews that compute by carrying the change out and rolling it back take the write lock
and are named below. That the reads really write nothing is proven by the whole suite: a write in a
read-only unit of work raises ``ReadOnlyTransaction`` on every store.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from functools import cached_property
from typing import Any

from billingkit.facade import areas, catalog, metering, portal
from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp
from billingkit.facade.scoped import Scoped
from billingkit.services import plan_change_replace, subscription_modify

READ_PREFIXES = ("get_", "list_", "search_", "preview_", "query_", "check_", "expand_", "load_", "usage_")
#: Services named like reads (or used by reads) that are not read-only, and why.
WRITES_NAMED_LIKE_READS = {
    # Previews computed by executing the change and rolling it back: they need the write lock.
    plan_change_replace.preview_plan_change,
    subscription_modify.preview_modify,
}
#: Reads whose names do not start with a read prefix.
READS_NAMED_OTHERWISE = {
    "customer_upcoming_grants",
    "subscription_upcoming_grants",
    "customer_subscriptions",
    "plan_entitlements",
    "plan_credit_grants",
    "addon_entitlements",
    "addon_credit_grants",
    "addon_associations",
    "wallets_of_customer",
    "customer_wallets",
    "aggregate_usage_batch",
    "recompute_invoice",  # prices an invoice again without storing it
    "issue_portal_session",  # signs a token for a customer it reads; stores nothing
}


def _areas() -> Iterator[type[Area]]:
    for value in vars(Scoped).values():
        if isinstance(value, cached_property):
            yield value.func  # type: ignore[misc]


def _operations() -> Iterator[tuple[str, Any]]:
    for area in _areas():
        for name, value in vars(area).items():
            if isinstance(value, IdOp | RequestOp | IdRequestOp):
                yield f"{area.__name__}.{name}", value


def _is_read(fn: Any) -> bool:
    if fn in WRITES_NAMED_LIKE_READS:
        return False
    return fn.__name__.startswith(READ_PREFIXES) or fn.__name__ in READS_NAMED_OTHERWISE


def test_declared_reads_are_read_only_and_writes_are_not() -> None:
    operations = dict(_operations())
    assert len(operations) > 100  # the walk found the areas
    wrong = {label: op.fn.__name__ for label, op in operations.items() if op.read_only != _is_read(op.fn)}
    assert not wrong, f"declare these read_only={{not current}}: {wrong}"
    assert not operations["Subscriptions.preview_modify"].read_only
    assert not operations["Subscriptions.preview_replace_plan"].read_only
    assert operations["Subscriptions.preview_plan_change"].read_only


def test_written_out_reads_run_through_scoped_read() -> None:
    calls = re.compile(r"_s\.(run|read)\(\s*([\w.]+)")
    wrong = []
    for module in (areas, catalog, metering, portal):
        for how, service in calls.findall(inspect.getsource(module)):
            name = service.rpartition(".")[2]
            is_read = name.startswith(READ_PREFIXES) or name in READS_NAMED_OTHERWISE
            if (how == "read") != is_read:
                wrong.append(f"{module.__name__}: _s.{how}({service})")
    assert not wrong, wrong
