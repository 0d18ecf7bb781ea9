"""``scoped.customers``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.customers import Customer
from billingkit.domain.queries import ListQuery, Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import customers as svc

__all__ = ["Customers"]


class Customers:
    """Customers of one environment.

    Inputs are validated by :class:`~billingkit.services.customers.CustomerCreate` /
    ``CustomerUpdate``: pass one of those models, or their fields as keyword arguments.
    """

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.CustomerCreate | None = None, /, **fields: Any) -> Customer:
        """Create a customer. Fields: ``external_id`` and ``name`` (required), ``email``,
        ``contact``, ``timezone`` (IANA, default UTC), ``address_line1``, ``address_line2``,
        ``address_city``, ``address_state``, ``address_postal_code``, ``address_country``
        (ISO alpha-2), ``metadata`` (str -> str). Raises ``ValidationError``, ``AlreadyExists``."""
        data = request or parse_input(svc.CustomerCreate, fields)
        return self._s.run(svc.create_customer, data=data)

    def get(self, customer_id: str) -> Customer:
        """The live customer with this id, or ``NotFound``."""
        return self._s.run(svc.get_customer, customer_id=customer_id)

    def get_by_external_id(self, external_id: str) -> Customer:
        return self._s.run(svc.get_customer_by_external_id, external_id=external_id)

    def update(
        self, customer_id: str, request: svc.CustomerUpdate | None = None, /, **fields: Any
    ) -> Customer:
        """Change the given fields only; ``None`` clears an optional field."""
        data = request or parse_input(svc.CustomerUpdate, fields)
        return self._s.run(svc.update_customer, customer_id=customer_id, data=data)

    def delete(self, customer_id: str) -> Customer:
        """Archive the customer; returns it with status ``archived``."""
        return self._s.run(svc.delete_customer, customer_id=customer_id)

    def list(self, query: ListQuery | None = None, /, **search: Any) -> Page[Customer]:
        """A page of customers. Pass a ``ListQuery`` or search fields (``limit``, ``offset``,
        ``external_id``, ``email``, ``metadata``, ``filters``, ``sort``, ...)."""
        if query is not None:
            return self._s.run(svc.list_customers, query=query)
        return self.search(**search)

    def search(self, request: svc.CustomerSearch | None = None, /, **fields: Any) -> Page[Customer]:
        data = request or parse_input(svc.CustomerSearch, fields)
        return self._s.run(svc.search_customers, search=data)
