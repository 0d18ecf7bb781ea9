"""Groups: named sets of prices or features.

Membership is stored on the member (``price.group_id`` / ``feature.group_id``); a group's
``entity_ids`` are read from its members.
"""

from __future__ import annotations

from billingkit.domain.catalog import Group, GroupEntityType
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork

__all__ = ["require_group"]


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
