"""Cost sheets: what serving usage costs the seller, priced per meter.

A cost sheet owns ordinary prices (``entity_type="COSTSHEET"``, ``entity_id`` = the sheet's id),
usage prices on meters like a plan's, that are never billed to a customer: cost analytics applies
them to customers' usage to set cost against revenue.
"""

from __future__ import annotations

from typing import Any

from billingkit.domain.resources import EnvironmentResource

__all__ = ["Costsheet"]


class Costsheet(EnvironmentResource):
    """A named set of cost prices; ``lookup_key`` is unique among live sheets of an environment."""

    name: str
    lookup_key: str | None = None
    description: str | None = None
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<Costsheet {self.id} {self.name!r}>"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
