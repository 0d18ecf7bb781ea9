"""What every resource service does the same way: live reads, partial updates, archiving, and
building a stored model from validated input without half-writing anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import pydantic

from billingkit.domain.resources import Record, Status
from billingkit.domain.validation import InputModel, from_pydantic
from billingkit.errors import NotFound, ValidationError
from billingkit.ports import Repository
from billingkit.services.context import Context

__all__ = [
    "COMMON_FIELDS",
    "PartialUpdate",
    "archive",
    "build",
    "get_live",
    "live",
    "new_fields",
    "update_fields",
]

R = TypeVar("R", bound=Record)

#: Fields every stored resource has, which a copy never takes from its source.
COMMON_FIELDS = frozenset(
    {"id", "tenant_id", "environment_id", "status", "created_at", "updated_at", "created_by", "updated_by"}
)


class PartialUpdate(InputModel):
    """Base of update requests: only the fields the caller sent change; ``None`` clears an
    optional field. Fields named in ``required`` cannot be cleared."""

    required: ClassVar[frozenset[str]] = frozenset()

    def changes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if value is None and name in self.required:
                raise ValidationError(f"{name} cannot be cleared", field=name)
            out[name] = value
        return out


def live(item: R | None, label: str, what: str) -> R:
    """``item`` when it exists and is published; otherwise :class:`NotFound` ("plan x not found")."""
    if item is None or item.status is not Status.PUBLISHED:
        raise NotFound(f"{label} {what} not found")
    return item


def get_live(repo: Repository[R], label: str, item_id: str) -> R:
    return live(repo.find(item_id), label, item_id)


def new_fields(ctx: Context, prefix: str) -> dict[str, Any]:
    """The id and common fields of a new resource created by ``ctx``."""
    return {"id": ctx.ids.new(prefix), **ctx.stamp()}


def build(model: type[R], fields: dict[str, Any], check: Callable[[R], object] | None = None) -> R:
    """Validate ``fields`` into ``model`` and run its business ``check``; errors name the field."""
    try:
        item = model.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise from_pydantic(exc) from None
    if check is not None:
        check(item)
    return item


def update_fields(
    item: R, changes: dict[str, Any], ctx: Context, check: Callable[[R], object] | None = None
) -> R:
    """``item`` with ``changes`` applied and re-validated, stamped as changed by ``ctx``."""
    return build(type(item), {**item.model_dump(), **changes, **ctx.touch()}, check)


def archive(repo: Repository[R], item: R, ctx: Context) -> R:
    """Soft delete: the row is kept with status ``archived`` and reads as not found afterwards."""
    archived = item.model_copy(update={"status": Status.ARCHIVED, **ctx.touch()})
    repo.update(archived)
    return archived
