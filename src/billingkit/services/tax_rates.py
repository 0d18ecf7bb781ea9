"""Tax rates: create, read, update, archive, list and search.

Rules: ``code`` is unique among live tax rates of an environment; a percentage rate has
0 <= ``percentage_value`` <= 100 and a fixed rate ``fixed_value`` >= 0 (the core's
:class:`~billingkit.domain.taxes.TaxRate` rules); the type and value are fixed at creation (an invoice
already taxed at a rate must stay explainable), so a different rate is a new tax rate.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import TaxRate, TaxRateScope, TaxRateStatus, TaxRateType, check_tax_rate
from billingkit.domain.queries import Op, Page
from billingkit.domain.validation import DecimalText, Description, InputModel, Metadata, Name, NonEmptyStr
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import PartialUpdate, archive, build, get_live, new_fields, update_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "TaxRateCreate",
    "TaxRateSearch",
    "TaxRateUpdate",
    "create_tax_rate",
    "delete_tax_rate",
    "get_tax_rate",
    "list_tax_rates",
    "update_tax_rate",
]

ENTITY = "tax_rate"
LABEL = "tax rate"
Code = Annotated[NonEmptyStr, Field(max_length=64)]


class TaxRateCreate(InputModel):
    name: Name
    code: Code
    tax_rate_type: TaxRateType = TaxRateType.PERCENTAGE
    percentage_value: DecimalText | None = None
    fixed_value: DecimalText | None = None
    description: Description | None = None
    scope: TaxRateScope = TaxRateScope.INTERNAL
    metadata: Metadata = {}


class TaxRateUpdate(PartialUpdate):
    required = frozenset({"name", "code", "tax_rate_status", "metadata"})

    name: Name | None = None
    code: Code | None = None
    description: Description | None = None
    tax_rate_status: TaxRateStatus | None = None
    metadata: Metadata | None = None


class TaxRateSearch(SearchRequest):
    kind: ClassVar[str] = "tax_rates"

    tax_rate_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    tax_rate_codes: Annotated[list[str] | None, Searches("code", Op.IN)] = None
    scope: Annotated[TaxRateScope | None, Searches("scope", Op.EQ)] = None
    tax_rate_status: Annotated[TaxRateStatus | None, Searches("tax_rate_status", Op.EQ)] = None


def create_tax_rate(uow: UnitOfWork, ctx: Context, *, data: TaxRateCreate) -> TaxRate:
    """Create a tax rate; ``AlreadyExists`` when a live rate has the code."""
    ctx.require(ENTITY, Action.WRITE)
    rate = build(TaxRate, {**new_fields(ctx, "taxrate"), **data.model_dump()}, check_tax_rate)
    return uow.tax_rates.add(rate)


def get_tax_rate(uow: UnitOfWork, ctx: Context, *, tax_rate_id: str) -> TaxRate:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.tax_rates, LABEL, tax_rate_id)


def update_tax_rate(uow: UnitOfWork, ctx: Context, *, tax_rate_id: str, data: TaxRateUpdate) -> TaxRate:
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.tax_rates, LABEL, tax_rate_id)
    changes = data.changes()
    if not changes:
        return current
    return uow.tax_rates.update(update_fields(current, changes, ctx, check_tax_rate))


def delete_tax_rate(uow: UnitOfWork, ctx: Context, *, tax_rate_id: str) -> TaxRate:
    ctx.require(ENTITY, Action.WRITE)
    return archive(uow.tax_rates, get_live(uow.tax_rates, LABEL, tax_rate_id), ctx)


def list_tax_rates(uow: UnitOfWork, ctx: Context, *, search: TaxRateSearch) -> Page[TaxRate]:
    ctx.require(ENTITY, Action.READ)
    return uow.tax_rates.list(search.to_query())
