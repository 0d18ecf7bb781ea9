"""What every store's ledger (a repository over an append-only kind) checks the same way: which
fields can be summed and grouped by, and the refusal of a change to a stored row."""

from __future__ import annotations

from decimal import Decimal
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from billingkit.errors import AppendOnly, InvalidOperation, ValidationError
from billingkit.storage.kinds import Kind

__all__ = [
    "PENDING",
    "SETTLED_STATUSES",
    "check_settle",
    "check_sum",
    "refuse_change",
    "refuse_settle",
    "settle_status",
]

#: The field ``Ledger.settle`` moves.
STATUS_FIELD = "transaction_status"

#: ``Ledger.settle`` moves a row from ``PENDING`` to one of these, once.
PENDING = "pending"
SETTLED_STATUSES = frozenset({"completed", "failed"})


def _field_types(annotation: Any) -> list[Any]:
    """The types a field annotation admits besides ``None`` (unions split, ``Annotated`` unwrapped)."""
    if get_origin(annotation) is Annotated:
        return _field_types(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return [found for arg in get_args(annotation) for found in _field_types(arg)]
    return [] if annotation is NoneType else [annotation]


def _only(annotation: Any, base: type) -> bool:
    types = _field_types(annotation)
    return bool(types) and all(isinstance(t, type) and issubclass(t, base) for t in types)


def check_sum(kind: Kind, field: str, group_by: str | None, equals: dict[str, Any]) -> None:
    """``field`` is a decimal field of ``kind``, ``group_by`` (if any) a text or text-enum field,
    and every name in ``equals`` a field; else ``ValidationError`` naming what is wrong."""
    fields = kind.model.model_fields
    if field not in fields or not _only(fields[field].annotation, Decimal):
        raise ValidationError(f"{field!r} is not a decimal field of {kind.label}", field="field")
    if group_by is not None and (group_by not in fields or not _only(fields[group_by].annotation, str)):
        raise ValidationError(f"{group_by!r} is not a text field of {kind.label}", field="group_by")
    for name in equals:
        if name not in fields:
            raise ValidationError(f"unknown field {name!r} for {kind.label}", field="filters")


def refuse_change(kind: Kind, id: str) -> AppendOnly:
    """The error for a change to the stored row ``id`` of an append-only kind."""
    return AppendOnly(
        f"{kind.label} {id} cannot be changed: {kind.label} records are append-only; "
        "record a correcting one instead",
        details={"id": id},
    )


def check_settle(kind: Kind, status: str) -> None:
    """``kind`` has pending rows (a ``transaction_status`` field) and ``status`` is a settled one;
    else ``ValidationError``."""
    if STATUS_FIELD not in kind.model.model_fields:
        raise ValidationError(f"{kind.label} rows have no status to settle", field="transaction_status")
    if status not in SETTLED_STATUSES:
        raise ValidationError(
            f"a pending row settles as completed or failed, not {status!r}", field="transaction_status"
        )


def refuse_settle(kind: Kind, id: str, current: object) -> InvalidOperation:
    """The error for settling row ``id`` that is no longer pending (``current`` status)."""
    return InvalidOperation(
        f"{kind.label} {id} is {current}, not {PENDING}: it was settled already",
        details={"id": id, "transaction_status": str(current)},
    )


def settle_status(row: object) -> str:
    """The ``transaction_status`` of a stored row, as text."""
    value = getattr(row, STATUS_FIELD)
    return str(getattr(value, "value", value))
