"""The customer resource."""

from __future__ import annotations

from typing import Any

from billingkit.domain.display import Displayed
from billingkit.domain.resources import EnvironmentResource

__all__ = ["Customer"]


class Customer(Displayed, EnvironmentResource):
    """Someone you bill. ``external_id`` is your id for them, unique among live customers of an
    environment; ``timezone`` (IANA) is where their calendar billing periods are computed."""

    external_id: str
    name: str
    email: str | None = None
    contact: str | None = None
    timezone: str = "UTC"
    address_line1: str | None = None
    address_line2: str | None = None
    address_city: str | None = None
    address_state: str | None = None
    address_postal_code: str | None = None
    address_country: str | None = None
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<Customer {self.id} external_id={self.external_id!r} {self.name!r}>"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation (the wire shape of the REST adapter)."""
        data = self.model_dump(mode="json")
        data["integrations"] = []
        return data
