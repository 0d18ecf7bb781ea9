"""The per-kind storage contract: what the registry (:mod:`billingkit.domain.kinds`) declares of
each stored kind, every store does. One case per kind and rule, so a new kind is covered as soon
as it is registered (and :func:`~billingkit.testing.contracts.samples.sample` can make one).
Part of :class:`~billingkit.testing.contracts.StorageContract`.

- each uniqueness rule is enforced, among live rows only when the rule says so;
- each versioned kind refuses an update naming a stale version;
- each searchable field, with each declared operator, selects exactly the records the reference
  meaning of a filter (:func:`billingkit.storage.records.matches`) selects.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any

import pytest
from pydantic import ValidationError as PydanticError

from billingkit.domain.kinds import KINDS, Kind, Level
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.domain.resources import Record, Status
from billingkit.errors import AlreadyExists, BillingError, VersionConflict
from billingkit.ports import Storage
from billingkit.storage.records import field_value, matches
from billingkit.testing.contracts.samples import sample

__all__ = ["KindContract"]

_TENANT, _ENVIRONMENT = "tenant_a", "env_a"
_UNIQUE_RULES = [(name, index) for name, kind in KINDS.items() for index in range(len(kind.unique))]


def _scope(kind: Kind) -> tuple[str | None, str | None]:
    """The scope ``sample`` puts a record of ``kind`` in."""
    return (
        None if kind.level is Level.GLOBAL else _TENANT,
        _ENVIRONMENT if kind.level is Level.ENVIRONMENT else None,
    )


def _other_value(value: Any) -> Any:
    """A value of the same type that differs from ``value`` (``None`` for ``None``)."""
    if isinstance(value, Enum):
        return next((member for member in type(value) if member is not value), value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):  # same length: columns bound it (a currency is 3 characters)
        return value[:-1] + ("b" if value.endswith("a") else "a") if value else "a"
    if isinstance(value, Decimal | int):
        return value + 1
    if isinstance(value, datetime):
        return value + timedelta(days=1)
    if isinstance(value, dict):
        return {key: _other_value(item) for key, item in value.items()}
    return None


def _variant(item: Record, field: str) -> Record:
    """``item`` with ``field`` changed, where the model accepts the change; else ``item``."""
    try:
        return type(item).model_validate({**item.__dict__, field: _other_value(getattr(item, field))})
    except (PydanticError, BillingError):
        return item


def _probe(items: list[Record], field: str, op: Op) -> Filter | None:
    """A filter on ``field`` with ``op`` comparing with the value of the middle one of ``items``
    that has a value (so orderings split the records); ``None`` when there is nothing to compare
    with: no metadata, or only missing values for ``in`` (requests send lists of texts, and
    ``NULL IN (...)`` is never true in SQL)."""
    if field == "metadata":
        having = [m for i in items if (m := getattr(i, "metadata", None))]
        if not having:
            return None
        metadata = having[len(having) // 2]
        key = sorted(metadata)[0]
        return Filter(f"metadata.{key}", op, metadata[key])
    values = [v for i in items if (v := field_value(i, field)) is not None]
    value = values[len(values) // 2] if values else None
    if op in (Op.IN, Op.NOT_IN):
        return None if value is None else Filter(field, op, [value])
    if op in (Op.CONTAINS, Op.NOT_CONTAINS):
        text = str(value.value if isinstance(value, Enum) else value)
        return Filter(field, op, text[1:-1].upper() or text.upper())  # inside, another case
    return Filter(field, op, value)


class KindContract:
    """The per-kind part of :class:`~billingkit.testing.contracts.StorageContract` (a ``storage``
    fixture returns a fresh, empty store)."""

    @pytest.mark.parametrize(("kind", "rule"), _UNIQUE_RULES)
    def test_each_uniqueness_rule_holds(self, storage: Storage, kind: str, rule: int) -> None:
        declared = KINDS[kind]
        fields = declared.unique[rule].fields
        first = sample(kind)
        taken = {name: getattr(first, name) for name in fields}
        with storage.unit_of_work(*_scope(declared)) as uow:
            repository = getattr(uow, kind)
            repository.add(first)
            with pytest.raises(AlreadyExists):
                repository.add(sample(kind, **taken))
            if not declared.append_only:  # a ledger's rows are never archived
                repository.update(first.model_copy(update={"status": Status.ARCHIVED}))
                if declared.unique[rule].live_only:
                    repository.add(sample(kind, **taken))  # an archived row frees its values
                else:
                    with pytest.raises(AlreadyExists):
                        repository.add(sample(kind, **taken))
            uow.commit()

    @pytest.mark.parametrize("kind", sorted(name for name, kind in KINDS.items() if kind.versioned))
    def test_each_versioned_kind_refuses_a_stale_version(self, storage: Storage, kind: str) -> None:
        declared = KINDS[kind]
        item = sample(kind)
        with storage.unit_of_work(*_scope(declared)) as uow:
            repository = getattr(uow, kind)
            repository.add(item)
            saved = repository.update(item, expected_version=item.version)
            assert saved.version == item.version + 1
            with pytest.raises(VersionConflict):
                repository.update(item, expected_version=item.version)
            assert repository.get(item.id).version == item.version + 1

    @pytest.mark.parametrize("kind", sorted(KINDS))
    def test_each_searchable_filter_selects_what_the_reference_selects(
        self, storage: Storage, kind: str
    ) -> None:
        declared = KINDS[kind]
        items = [sample(kind), sample(kind)]
        items += [_variant(sample(kind), searchable.field) for searchable in declared.searchable]
        items.append(sample(kind, status=Status.ARCHIVED))
        with storage.unit_of_work(*_scope(declared)) as uow:
            repository = getattr(uow, kind)
            for item in items:
                repository.add(item)
            checked = 0
            for searchable in declared.searchable:
                for op in sorted(searchable.ops):
                    probe = _probe(items, searchable.field, op)
                    if probe is None:
                        continue
                    for status in (Status.PUBLISHED, None):
                        page = repository.list(ListQuery(filters=(probe,), status=status, limit=1000))
                        expected = {
                            i.id
                            for i in items
                            if (status is None or i.status is status) and matches(i, probe)
                        }
                        assert {i.id for i in page.items} == expected, (probe, status)
                        assert page.total == len(expected)
                    checked += 1
            assert checked >= 3  # at least the common ones: id in, created_at gte and lt
