"""Tax associations: which tax rate applies to whom (a subscription, a customer, the whole
environment, one invoice), in what order, from when to when, and the precedence rule that picks
the rates an invoice is taxed with (the arithmetic itself is :mod:`billingkit.domain.taxes`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from billingkit.domain.catalog.tax_rates import TaxRate, TaxRateStatus
from billingkit.domain.resources import EnvironmentResource, Status
from billingkit.domain.validation import UtcDatetime

__all__ = [
    "DEFAULT_TAX_PRIORITY",
    "TaxAssociation",
    "TaxRateEntityType",
    "applicable_tax_rates",
    "tax_association_applies",
]

#: The priority of an association created without one (lower numbers apply first).
DEFAULT_TAX_PRIORITY = 100


class TaxRateEntityType(StrEnum):
    """What an association ties a rate to (the reference's ``types.TaxRateEntityType``)."""

    CUSTOMER = "customer"
    SUBSCRIPTION = "subscription"
    INVOICE = "invoice"
    TENANT = "tenant"


class TaxAssociation(EnvironmentResource):
    """Tax rate ``tax_rate_id`` applies to ``entity_type`` ``entity_id`` while
    ``start_date <= t < end_date`` (no ``end_date``: open-ended), for invoices in ``currency`` (none:
    any currency), when ``auto_apply``; rates of one entity apply in ``priority`` order (lower
    first, then oldest first). A tenant association's ``entity_id`` is the tenant id and covers the
    whole environment it is stored in."""

    tax_rate_id: str
    entity_type: TaxRateEntityType
    entity_id: str
    priority: int = DEFAULT_TAX_PRIORITY
    auto_apply: bool = True
    currency: str | None = None
    start_date: UtcDatetime
    end_date: UtcDatetime | None = None
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<TaxAssociation {self.id} {self.tax_rate_id} -> {self.entity_type.value} {self.entity_id}>"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def tax_association_applies(association: TaxAssociation, *, at: datetime, currency: str) -> bool:
    """Whether ``association`` taxes an invoice in ``currency`` computed at ``at``: live,
    ``auto_apply``, in force at ``at`` and in the invoice's currency (or none)."""
    return (
        association.status is Status.PUBLISHED
        and association.auto_apply
        and association.start_date <= at
        and (association.end_date is None or at < association.end_date)
        and association.currency in (None, currency)
    )


def applicable_tax_rates(
    associations: Iterable[TaxAssociation],
    rates: Mapping[str, TaxRate],
    *,
    levels: Sequence[tuple[TaxRateEntityType, str]],
    at: datetime,
    currency: str,
) -> tuple[tuple[TaxAssociation, TaxRate], ...]:
    """The rates an invoice in ``currency`` computed at ``at`` is taxed with, each with the
    association that brought it.

    ``levels`` lists the entities from the most specific to the least (a subscription, its customer,
    the tenant); the first level with at least one association that applies
    (:func:`tax_association_applies`, and whose rate in ``rates`` is live and ``ACTIVE``) gives all
    the rates, the later levels none. Within the level: by ``priority``, then ``created_at``, then
    id; a rate associated twice applies once (its first association). Example: a subscription with
    VAT (priority 1) and a fee (priority 5) and a customer with GST -> VAT, fee.
    """
    by_entity: dict[tuple[TaxRateEntityType, str], list[tuple[TaxAssociation, TaxRate]]] = {}
    for association in associations:
        rate = rates.get(association.tax_rate_id)
        if (
            rate is None
            or rate.status is not Status.PUBLISHED
            or rate.tax_rate_status is not TaxRateStatus.ACTIVE
            or not tax_association_applies(association, at=at, currency=currency)
        ):
            continue
        key = (association.entity_type, association.entity_id)
        by_entity.setdefault(key, []).append((association, rate))
    for level in levels:
        found = by_entity.get(level)
        if not found:
            continue
        found.sort(key=lambda pair: (pair[0].priority, pair[0].created_at, pair[0].id))
        seen: set[str] = set()
        chosen = []
        for association, rate in found:
            if rate.id not in seen:
                seen.add(rate.id)
                chosen.append((association, rate))
        return tuple(chosen)
    return ()
