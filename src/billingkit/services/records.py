"""What every resource service does the same way: live reads, partial updates, archiving, and
building a stored model from validated input without half-writing anything."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar

import pydantic

from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
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


#: Values per ``IN`` list of :func:`list_where_in` (well under every driver's parameter limit).
IN_CHUNK = 500


def list_where_in(
    repo: Repository[R],
    field: str,
    values: Iterable[str],
    *also: Filter,
    status: Status | None = Status.PUBLISHED,
) -> list[R]:
    """Every item of ``repo`` (in ``status``; None: any) whose ``field`` is one of ``values`` and
    that matches the filters ``also``: one ``IN`` list per 500 values, each read in pages of the
    store's largest page, in id order so that no row is skipped or read twice between pages. What
    batch loaders use, so a batch of any size reads a constant number of statements per 500 items.
    """
    wanted = sorted(set(values))
    found: list[R] = []
    for i in range(0, len(wanted), IN_CHUNK):
        chunk = wanted[i : i + IN_CHUNK]
        offset = 0
        while True:
            page = repo.list(
                ListQuery(
                    filters=(*also, Filter(field, Op.IN, chunk)),
                    sort=(Sort("id", descending=False),),
                    limit=MAX_LIMIT,
                    offset=offset,
                    status=status,
                )
            )
            found += page.items
            if not page.has_more:
                break
            offset += len(page.items)
    return found
