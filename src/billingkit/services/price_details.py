"""A price as reads return it: :class:`PriceDetail`, with the related resources a caller asks
for in ``expand`` (meter, pricing unit, group, plan, add-on)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import PrivateAttr

from billingkit.domain.catalog import Addon, Group, Meter, Plan, Price, PriceEntityType, PriceUnit
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Status
from billingkit.ports import UnitOfWork
from billingkit.services.owned_prices import all_prices

__all__ = ["DEFAULT_GET_EXPAND", "PriceDetail", "expand_price", "parse_expand", "price_to_dict"]

#: What ``GET /prices/{id}`` always expands.
DEFAULT_GET_EXPAND = frozenset({"meters", "pricing_unit"})
_EXPANSIONS = frozenset({"meters", "pricing_unit", "groups", "plan", "addon"})
_EXPAND_ALIASES = {
    "meter": "meters",
    "price_unit": "pricing_unit",
    "price_units": "pricing_unit",
    "pricing_units": "pricing_unit",
    "group": "groups",
    "plans": "plan",
    "addons": "addon",
}


class PriceDetail(Price):
    """A price as reads return it: with the related resources named in ``expand`` (``meter``,
    ``pricing_unit``, ``group``, ``plan``, ``addon``); only expanded ones appear in ``to_dict``."""

    meter: Meter | None = None
    pricing_unit: PriceUnit | None = None
    group: Group | None = None
    plan: Plan | None = None
    addon: Addon | None = None
    _group_members: list[str] = PrivateAttr(default_factory=list)

    def price(self) -> Price:
        """The stored price without its expansions."""
        return Price.model_validate(self.model_dump(include=set(Price.model_fields)))

    def to_dict(self) -> dict[str, Any]:
        data = self.price().to_dict()
        for name in ("meter", "pricing_unit", "plan", "addon"):
            if name in self.model_fields_set:
                value = getattr(self, name)
                data[name] = value.to_dict() if value is not None else None
        if "group" in self.model_fields_set:
            data["group"] = self.group.to_dict(self._group_members) if self.group is not None else None
        return data


def parse_expand(expand: str | Iterable[str] | None) -> set[str]:
    """``"meters,pricing_unit"`` (or a list) as the set of known expansions; aliases such as
    ``meter``, ``price_unit``, ``group``, ``plans`` are accepted, unknown names ignored."""
    if expand is None:
        return set()
    parts = expand.split(",") if isinstance(expand, str) else list(expand)
    names = {_EXPAND_ALIASES.get(p.strip(), p.strip()) for p in parts}
    return names & _EXPANSIONS


def expand_price(uow: UnitOfWork, price: Price, expand: Iterable[str]) -> PriceDetail:
    """``price`` with the resources named in ``expand`` (see :func:`parse_expand`); a reference
    that is missing or archived expands to ``None``."""
    wanted = parse_expand(list(expand))
    extra: dict[str, Any] = {}
    members: list[str] = []
    if "meters" in wanted:
        extra["meter"] = _live(uow.meters.find(price.meter_id)) if price.meter_id else None
    if "pricing_unit" in wanted:
        extra["pricing_unit"] = (
            _live(uow.price_units.find(price.price_unit_id)) if price.price_unit_id else None
        )
    if "groups" in wanted:
        group = _live(uow.groups.find(price.group_id)) if price.group_id else None
        extra["group"] = group
        if group is not None:
            members = [
                p.id for p in all_prices(uow, (Filter("group_id", Op.EQ, group.id),), status=Status.PUBLISHED)
            ]
    if "plan" in wanted:
        extra["plan"] = (
            _live(uow.plans.find(price.entity_id)) if price.entity_type is PriceEntityType.PLAN else None
        )
    if "addon" in wanted:
        extra["addon"] = (
            _live(uow.addons.find(price.entity_id)) if price.entity_type is PriceEntityType.ADDON else None
        )
    base = price.price() if isinstance(price, PriceDetail) else price
    detail = PriceDetail.model_validate({**dict(base), **extra})
    detail._group_members = members
    return detail


def _live(item: Any) -> Any:
    return item if item is not None and item.status is Status.PUBLISHED else None


def price_to_dict(uow: UnitOfWork, price: Price, *, expand: set[str]) -> dict[str, Any]:
    """The wire form of ``price`` with ``meter`` ("meters"), ``pricing_unit`` ("pricing_unit"),
    ``group`` ("groups") and ``plan`` / ``addon`` ("plan" / "addon") added when expanded."""
    return expand_price(uow, price, expand).to_dict()
