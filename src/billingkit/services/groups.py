"""Groups: named sets of prices or features.

Membership is stored on the member (``price.group_id`` / ``feature.group_id``), so a member
belongs to at most one group; a group's ``entity_ids`` are read from its live members. Rules:
``lookup_key`` is unique among live groups of an environment; ``entity_type`` (``price`` or
``feature``) is fixed; members must be live entities of that type (adding one moves it from its
previous group); deleting a group archives it and clears ``group_id`` on its live members. A
feature joining or leaving a group this way records ``feature.updated``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import Feature, Group, GroupEntityType, Price
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.validation import InputModel, Metadata, NonEmptyStr
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.notifications import notify
from billingkit.services.records import archive, build, get_live, new_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "GroupCreate",
    "GroupDetail",
    "GroupSearch",
    "add_group_members",
    "create_group",
    "delete_group",
    "get_group",
    "group_details",
    "list_groups",
    "require_group",
]

ENTITY = "group"
LABEL = "group"
Text = Annotated[NonEmptyStr, Field(max_length=255)]
EntityIds = Annotated[list[Annotated[NonEmptyStr, Field(max_length=64)]], Field(max_length=1000)]


@dataclass(frozen=True, slots=True)
class GroupDetail:
    """A group with the ids of its live members (oldest first)."""

    group: Group
    entity_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return self.group.to_dict(list(self.entity_ids))


class GroupCreate(InputModel):
    name: Text
    lookup_key: Text
    entity_type: GroupEntityType
    metadata: Metadata = {}
    entity_ids: EntityIds = []


class GroupSearch(SearchRequest):
    """``name`` matches case-insensitively anywhere in the group's name."""

    kind: ClassVar[str] = "groups"

    group_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    entity_type: Annotated[GroupEntityType | None, Searches("entity_type", Op.EQ)] = None
    lookup_key: Annotated[str | None, Searches("lookup_key", Op.EQ)] = None
    name: Annotated[str | None, Searches("name", Op.CONTAINS)] = None


def require_group(
    uow: UnitOfWork, group_id: str, entity_type: GroupEntityType, *, field: str = "group_id"
) -> Group:
    """The live group ``group_id`` of ``entity_type``, for a member joining it; a missing group or
    one holding the other kind of entity is a ``ValidationError`` on ``field``."""
    group = uow.groups.find(group_id)
    if group is None or group.status.value != "published":
        raise ValidationError(f"group {group_id} not found", field=field)
    if group.entity_type is not entity_type:
        raise ValidationError(
            f"group {group_id} holds {group.entity_type.value}s, not {entity_type.value}s", field=field
        )
    return group


def _all_members(uow: UnitOfWork, entity_type: GroupEntityType, group_ids: Sequence[str]) -> list[Any]:
    """Live members of the groups, oldest first."""
    repo: Any = uow.features if entity_type is GroupEntityType.FEATURE else uow.prices
    out: list[Any] = []
    while True:
        page = repo.list(
            ListQuery(
                filters=(Filter("group_id", Op.IN, list(group_ids)),),
                sort=(Sort("created_at", descending=False),),
                limit=MAX_LIMIT,
                offset=len(out),
            )
        )
        out.extend(page.items)
        if not page.items or len(out) >= page.total:
            return out


def group_details(uow: UnitOfWork, groups: Iterable[Group]) -> list[GroupDetail]:
    """``groups`` with their live members' ids (one query per entity type)."""
    groups = list(groups)
    members: dict[str, list[str]] = {g.id: [] for g in groups}
    for entity_type in GroupEntityType:
        ids = [g.id for g in groups if g.entity_type is entity_type]
        if ids:
            for item in _all_members(uow, entity_type, ids):
                members[item.group_id].append(item.id)
    return [GroupDetail(g, tuple(members[g.id])) for g in groups]


def _set_group(uow: UnitOfWork, ctx: Context, member: Feature | Price, group_id: str | None) -> None:
    updated = member.model_copy(update={"group_id": group_id, **ctx.touch()})
    if isinstance(updated, Feature):
        uow.features.update(updated)
        notify(uow, ctx, "feature.updated", updated)
    else:
        uow.prices.update(updated)


def _find_members(
    uow: UnitOfWork, entity_type: GroupEntityType, entity_ids: Sequence[str]
) -> list[Feature | Price]:
    """The live entities ``entity_ids`` (duplicates once); else ``ValidationError`` on ``entity_ids[i]``."""
    repo: Any = uow.features if entity_type is GroupEntityType.FEATURE else uow.prices
    found: dict[str, Feature | Price] = {}
    for index, entity_id in enumerate(entity_ids):
        item = repo.find(entity_id)
        if item is None or item.status.value != "published":
            raise ValidationError(f"{entity_type.value} {entity_id} not found", field=f"entity_ids[{index}]")
        found[item.id] = item
    return list(found.values())


def _move_into(uow: UnitOfWork, ctx: Context, group: Group, members: Sequence[Feature | Price]) -> None:
    for item in members:
        if item.group_id != group.id:
            _set_group(uow, ctx, item, group.id)


def create_group(uow: UnitOfWork, ctx: Context, *, data: GroupCreate) -> GroupDetail:
    """Create a group and move ``entity_ids`` into it; ``AlreadyExists`` when a live group has the
    lookup key; a missing or archived member is a ``ValidationError`` on ``entity_ids[i]``."""
    ctx.require(ENTITY, Action.WRITE)
    fields = data.model_dump(exclude={"entity_ids"})
    group = build(Group, {**new_fields(ctx, "group"), **fields})
    members = _find_members(uow, group.entity_type, data.entity_ids)
    uow.groups.add(group)
    _move_into(uow, ctx, group, members)
    return group_details(uow, [group])[0]


def get_group(uow: UnitOfWork, ctx: Context, *, group_id: str) -> GroupDetail:
    ctx.require(ENTITY, Action.READ)
    return group_details(uow, [get_live(uow.groups, LABEL, group_id)])[0]


def add_group_members(
    uow: UnitOfWork, ctx: Context, *, group_id: str, entity_ids: Sequence[str]
) -> GroupDetail:
    """Move the live entities ``entity_ids`` (of the group's type) into the group."""
    ctx.require(ENTITY, Action.WRITE)
    group = get_live(uow.groups, LABEL, group_id)
    _move_into(uow, ctx, group, _find_members(uow, group.entity_type, entity_ids))
    return group_details(uow, [group])[0]


def delete_group(uow: UnitOfWork, ctx: Context, *, group_id: str) -> Group:
    """Archive the group and clear ``group_id`` on its live members."""
    ctx.require(ENTITY, Action.WRITE)
    group = get_live(uow.groups, LABEL, group_id)
    for member in _all_members(uow, group.entity_type, [group.id]):
        _set_group(uow, ctx, member, None)
    return archive(uow.groups, group, ctx)


def list_groups(uow: UnitOfWork, ctx: Context, *, search: GroupSearch) -> Page[GroupDetail]:
    """A page of groups, each with its members' ids."""
    ctx.require(ENTITY, Action.READ)
    page = uow.groups.list(search.to_query())
    return Page(group_details(uow, page.items), page.total, page.limit, page.offset)
