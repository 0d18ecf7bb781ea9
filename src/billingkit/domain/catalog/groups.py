"""Groups: a named set of prices or of features (for reporting and group spend alerts)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from billingkit.domain.resources import EnvironmentResource

__all__ = ["Group", "GroupEntityType"]


class GroupEntityType(StrEnum):
    PRICE = "price"
    FEATURE = "feature"


class Group(EnvironmentResource):
    """Membership is stored on the members (``price.group_id`` / ``feature.group_id``), so a
    member belongs to at most one group; ``entity_ids`` is read from them."""

    name: str
    lookup_key: str
    entity_type: GroupEntityType
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<Group {self.id} {self.name!r} ({self.entity_type.value})>"

    def to_dict(self, entity_ids: list[str] | None = None) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["entity_ids"] = entity_ids or []
        return data
