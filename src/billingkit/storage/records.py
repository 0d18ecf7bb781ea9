"""What every store means by a stored record's fields: reading a field (``metadata.<key>``
included), which fields a query may name, what changed between two versions, and what a
:class:`~billingkit.domain.queries.Filter` selects.

Neutral ground shared by the adapters, so neither imports the other: the memory store filters
with :func:`matches`, the SQL store translates the same filters into SQL, and the storage
contract suite holds both to :func:`matches` as the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from billingkit.domain.kinds import Kind
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Record
from billingkit.errors import ValidationError

__all__ = ["changed_fields", "check_fields", "field_value", "matcher", "matches", "plain_value"]


def plain_value(value: Any) -> Any:
    """An enum member's value; anything else as it is."""
    return value.value if isinstance(value, Enum) else value


def field_value(item: Record, name: str) -> Any:
    """Attribute ``name`` of ``item``, or a metadata value for ``metadata.<key>``."""
    if name.startswith("metadata."):
        metadata = getattr(item, "metadata", None) or {}
        return metadata.get(name.removeprefix("metadata."))
    return getattr(item, name)


def check_fields(kind: Kind, names: Iterable[str], *, field: str) -> None:
    """``ValidationError`` on ``field`` unless every name is a field of ``kind``'s model (or
    ``metadata.<key>``)."""
    known = kind.model.model_fields
    for name in names:
        base = name.split(".", 1)[0]
        if base not in known or (name != base and base != "metadata"):
            raise ValidationError(f"unknown field {name!r} for {kind.label}", field=field)


def changed_fields(before: Record, after: Record) -> list[str]:
    """The model fields whose values differ between two versions of one resource."""
    old = before.__dict__  # a model's fields live in its __dict__: no attribute lookups
    return [name for name, value in after.__dict__.items() if old[name] != value]


def matcher(flt: Filter) -> Callable[[Record], bool]:
    """:func:`matches` for one filter applied to many items: an ``in`` list becomes a set once,
    not once per item (500 ids against 13,000 invoices was 6.5 million set insertions)."""
    if flt.op in (Op.IN, Op.NOT_IN):
        options = frozenset(plain_value(v) for v in flt.value)
        wanted = flt.op is Op.IN
        name = flt.field
        return lambda item: (plain_value(field_value(item, name)) in options) == wanted
    return lambda item: matches(item, flt)


def matches(item: Record, flt: Filter) -> bool:
    """Whether ``item`` passes ``flt``. Enums compare by value; ``contains`` ignores case; an
    ordering comparison with a missing (``None``) value is false."""
    value = plain_value(field_value(item, flt.field))
    target = flt.value
    if flt.op in (Op.IN, Op.NOT_IN):
        options = {plain_value(v) for v in target}
        return (value in options) == (flt.op is Op.IN)
    if flt.op is Op.EQ:
        return bool(value == plain_value(target))
    if flt.op is Op.NE:
        return bool(value != plain_value(target))
    if flt.op in (Op.CONTAINS, Op.NOT_CONTAINS):
        found = value is not None and str(target).lower() in str(value).lower()
        return found == (flt.op is Op.CONTAINS)
    if value is None:
        return False
    if flt.op in (Op.GT, Op.AFTER):
        return bool(value > target)
    if flt.op is Op.GTE:
        return bool(value >= target)
    if flt.op in (Op.LT, Op.BEFORE):
        return bool(value < target)
    if flt.op is Op.LTE:
        return bool(value <= target)
    raise ValidationError(f"unsupported operator {flt.op}", field="filters")  # pragma: no cover
