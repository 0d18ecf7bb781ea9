"""``scoped.groups``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from billingkit.domain.catalog import Group
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import groups as svc

__all__ = ["Groups"]


class Groups:
    """Groups of prices or features in one environment. Reads return
    :class:`~billingkit.services.groups.GroupDetail` (``.group`` and the live members'
    ``.entity_ids``)."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.GroupCreate | None = None, /, **fields: Any) -> svc.GroupDetail:
        """Fields: ``name``, ``lookup_key`` (required; unique among live groups), ``entity_type``
        (``price`` or ``feature``), ``metadata``, ``entity_ids`` (live prices or features to move
        into the group). Example: ``create(name="AI", lookup_key="ai", entity_type="feature")``."""
        data = request or parse_input(svc.GroupCreate, fields)
        return self._s.run(svc.create_group, data=data)

    def get(self, group_id: str) -> svc.GroupDetail:
        """The live group with its members' ids, or ``NotFound``."""
        return self._s.run(svc.get_group, group_id=group_id)

    def add_members(self, group_id: str, entity_ids: Sequence[str]) -> svc.GroupDetail:
        """Move live prices or features (the group's ``entity_type``) into the group."""
        return self._s.run(svc.add_group_members, group_id=group_id, entity_ids=list(entity_ids))

    def delete(self, group_id: str) -> Group:
        """Archive the group and clear ``group_id`` on its members."""
        return self._s.run(svc.delete_group, group_id=group_id)

    def list(self, request: svc.GroupSearch | None = None, /, **fields: Any) -> Page[svc.GroupDetail]:
        """Filters: ``group_ids``, ``entity_type``, ``lookup_key``, ``name`` (contains), plus the
        common ``limit``, ``offset``, ``sort``, ``status`` and ``filters``."""
        data = request or parse_input(svc.GroupSearch, fields)
        return self._s.run(svc.list_groups, search=data)

    def search(self, request: svc.GroupSearch | None = None, /, **fields: Any) -> Page[svc.GroupDetail]:
        """The same as :meth:`list` (the ``POST /groups/search`` body)."""
        return self.list(request, **fields)
