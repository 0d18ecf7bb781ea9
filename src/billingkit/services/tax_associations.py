"""Tax associations: tie a tax rate to a subscription, a customer or the whole environment
(``tenant``); read, reprioritise, archive, list.

Rules: the rate is named by ``tax_rate_code`` and must be live and ``ACTIVE``; the entity is
``entity_type`` + ``entity_id``, or ``external_customer_id`` for a customer, and must be live (a
tenant association's ``entity_id`` is the caller's tenant id, filled in when omitted); ``invoice``
associations are not created here (an invoice names its rates when it is created). ``start_date``
defaults to now and must be before ``end_date``; ``priority`` (lower first) defaults to 100 and
``auto_apply`` to true; ``currency`` (optional) limits the association to invoices in that
currency. Only ``auto_apply``, ``priority`` and ``metadata`` change afterwards. Every answer embeds
the ``tax_rate``. Which associations tax an invoice: :mod:`billingkit.services.tax_resolution`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, ClassVar, Self

from pydantic import Field, model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import (
    DEFAULT_TAX_PRIORITY,
    TaxAssociation,
    TaxRate,
    TaxRateEntityType,
    TaxRateStatus,
)
from billingkit.domain.queries import Filter, Op, Page
from billingkit.domain.resources import Status
from billingkit.domain.validation import (
    INT32_MAX,
    CurrencyCode,
    Identifier,
    InputModel,
    Key,
    Metadata,
    UtcDatetime,
)
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import PartialUpdate, archive, build, get_live, new_fields, update_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "Priority",
    "TaxAssociationCreate",
    "TaxAssociationDetail",
    "TaxAssociationSearch",
    "TaxAssociationUpdate",
    "active_tax_rate",
    "create_tax_association",
    "delete_tax_association",
    "get_tax_association",
    "list_tax_associations",
    "update_tax_association",
]

ENTITY = "tax_association"
LABEL = "tax association"
#: Lower applies first.
Priority = Annotated[int, Field(ge=0, le=INT32_MAX)]


class TaxAssociationCreate(InputModel):
    """The reference's ``CreateTaxAssociationRequest``."""

    tax_rate_code: Key
    entity_type: TaxRateEntityType | None = None
    entity_id: Identifier | None = None
    external_customer_id: Key | None = None
    priority: Priority = DEFAULT_TAX_PRIORITY
    auto_apply: bool = True
    currency: CurrencyCode | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    metadata: Metadata = {}

    @model_validator(mode="after")
    def _fields_agree(self) -> Self:
        if self.entity_type is None and self.external_customer_id is None:
            raise ValidationError(
                "entity_type (with entity_id) or external_customer_id is required", field="entity_type"
            )
        if self.external_customer_id is not None and self.entity_type not in (
            None,
            TaxRateEntityType.CUSTOMER,
        ):
            raise ValidationError(
                "external_customer_id names a customer; entity_type must be customer", field="entity_type"
            )
        if self.entity_type is TaxRateEntityType.INVOICE:
            raise ValidationError(
                "an invoice's tax rates are given when the invoice is created (tax_rates, "
                "tax_rate_overrides), not by an association",
                field="entity_type",
            )
        needs_id = self.entity_type in (TaxRateEntityType.SUBSCRIPTION, TaxRateEntityType.CUSTOMER)
        if needs_id and self.entity_id is None and self.external_customer_id is None:
            raise ValidationError(
                f"entity_id is required for a {self.entity_type} association", field="entity_id"
            )
        if self.start_date is not None and self.end_date is not None and self.end_date <= self.start_date:
            raise ValidationError("end_date must be after start_date", field="end_date")
        return self


class TaxAssociationUpdate(PartialUpdate):
    """The reference's ``TaxAssociationUpdateRequest``: the rate, entity and window are fixed."""

    required = frozenset({"auto_apply", "priority", "metadata"})

    auto_apply: bool | None = None
    priority: Priority | None = None
    metadata: Metadata | None = None


class TaxAssociationSearch(SearchRequest):
    """``GET /taxes/associations``: by entity, by rate, or by a customer's external id."""

    kind: ClassVar[str] = "tax_associations"

    entity_type: Annotated[TaxRateEntityType | None, Searches("entity_type", Op.EQ)] = None
    entity_id: Annotated[str | None, Searches("entity_id", Op.EQ)] = None
    tax_rate_id: Annotated[str | None, Searches("tax_rate_id", Op.EQ)] = None
    external_customer_id: Key | None = None


class TaxAssociationDetail(TaxAssociation):
    """An association as reads return it: with its ``tax_rate`` (as stored now, even if archived
    since; ``None`` only if the rate row is gone)."""

    tax_rate: TaxRate | None = None

    def association(self) -> TaxAssociation:
        """The stored association without the embedded rate."""
        return TaxAssociation.model_validate(self.model_dump(include=set(TaxAssociation.model_fields)))

    def to_dict(self) -> dict[str, Any]:
        data = self.association().to_dict()
        data["tax_rate"] = self.tax_rate.to_dict() if self.tax_rate is not None else None
        return data


def _detail(association: TaxAssociation, rate: TaxRate | None) -> TaxAssociationDetail:
    return TaxAssociationDetail.model_validate({**dict(association), "tax_rate": rate})


def active_tax_rate(uow: UnitOfWork, code: str, *, field: str) -> TaxRate:
    """The live tax rate with ``code``; a ``ValidationError`` on ``field`` when there is none or it
    is not ``ACTIVE`` (an inactive rate taxes nothing, so tying it to anything would be a no-op)."""
    rate = uow.tax_rates.find_one(code=code)
    if rate is None or rate.status is not Status.PUBLISHED:
        raise ValidationError(f"no tax rate with code {code!r}", field=field)
    if rate.tax_rate_status is not TaxRateStatus.ACTIVE:
        raise ValidationError(f"tax rate {code!r} is {rate.tax_rate_status.value}, not ACTIVE", field=field)
    return rate


def _entity_id(uow: UnitOfWork, ctx: Context, data: TaxAssociationCreate) -> tuple[TaxRateEntityType, str]:
    """The association's entity, checked to exist; a ``ValidationError`` naming the field that
    names no live entity."""
    kind = data.entity_type or TaxRateEntityType.CUSTOMER
    if kind is TaxRateEntityType.TENANT:
        if data.entity_id not in (None, ctx.tenant_id):
            raise ValidationError("a tenant association's entity_id is your tenant id", field="entity_id")
        return kind, ctx.tenant_id
    if kind is TaxRateEntityType.CUSTOMER:
        if data.entity_id is None:
            found = uow.customers.find_one(external_id=data.external_customer_id)
            if found is None:
                raise ValidationError(
                    f"no customer with external id {data.external_customer_id!r}",
                    field="external_customer_id",
                )
            return kind, found.id
        customer = uow.customers.find(data.entity_id)
        if customer is None or customer.status is not Status.PUBLISHED:
            raise ValidationError(f"customer {data.entity_id} not found", field="entity_id")
        return kind, customer.id
    assert data.entity_id is not None  # the request model requires it for a subscription
    sub = uow.subscriptions.find(data.entity_id)
    if sub is None or sub.status is not Status.PUBLISHED:
        raise ValidationError(f"subscription {data.entity_id} not found", field="entity_id")
    if data.currency is not None and data.currency != sub.currency:
        raise ValidationError(
            f"currency {data.currency} differs from the subscription's {sub.currency}", field="currency"
        )
    return kind, sub.id


def create_tax_association(
    uow: UnitOfWork, ctx: Context, *, data: TaxAssociationCreate
) -> TaxAssociationDetail:
    """Tie the rate ``data.tax_rate_code`` to an entity. Raises ``ValidationError`` naming the
    field for an unknown or inactive rate, an unknown entity or a window that ends before it starts;
    nothing is written then."""
    ctx.require(ENTITY, Action.WRITE)
    rate = active_tax_rate(uow, data.tax_rate_code, field="tax_rate_code")
    entity_type, entity_id = _entity_id(uow, ctx, data)
    start = data.start_date or ctx.now
    if data.end_date is not None and data.end_date <= start:
        raise ValidationError("end_date must be after start_date", field="end_date")
    fields = {
        **new_fields(ctx, "taxassoc"),
        **data.model_dump(include={"priority", "auto_apply", "currency", "end_date", "metadata"}),
        "tax_rate_id": rate.id,
        "entity_type": entity_type,
        "entity_id": entity_id,
        "start_date": start,
    }
    association = uow.tax_associations.add(build(TaxAssociation, fields))
    return _detail(association, rate)


def _with_rate(uow: UnitOfWork, association: TaxAssociation) -> TaxAssociationDetail:
    return _detail(association, uow.tax_rates.find(association.tax_rate_id))


def get_tax_association(uow: UnitOfWork, ctx: Context, *, tax_association_id: str) -> TaxAssociationDetail:
    ctx.require(ENTITY, Action.READ)
    return _with_rate(uow, get_live(uow.tax_associations, LABEL, tax_association_id))


def update_tax_association(
    uow: UnitOfWork, ctx: Context, *, tax_association_id: str, data: TaxAssociationUpdate
) -> TaxAssociationDetail:
    """Change ``auto_apply``, ``priority`` or ``metadata``."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.tax_associations, LABEL, tax_association_id)
    changes = data.changes()
    if changes:
        current = uow.tax_associations.update(update_fields(current, changes, ctx))
    return _with_rate(uow, current)


def delete_tax_association(uow: UnitOfWork, ctx: Context, *, tax_association_id: str) -> TaxAssociationDetail:
    """Archive the association: it taxes no invoice computed afterwards (invoices already
    computed keep their taxes). Answers the archived association."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.tax_associations, LABEL, tax_association_id)
    return _with_rate(uow, archive(uow.tax_associations, current, ctx))


def list_tax_associations(
    uow: UnitOfWork, ctx: Context, *, search: TaxAssociationSearch
) -> Page[TaxAssociationDetail]:
    """A page of associations (newest first by default); ``external_customer_id`` narrows to that
    customer's (an unknown one matches nothing)."""
    ctx.require(ENTITY, Action.READ)
    query = search.to_query()
    if search.external_customer_id is not None:
        customer = uow.customers.find_one(external_id=search.external_customer_id)
        if customer is None:
            return Page(items=[], total=0, limit=query.limit, offset=query.offset)
        query = replace(
            query,
            filters=(
                *query.filters,
                Filter("entity_type", Op.EQ, TaxRateEntityType.CUSTOMER.value),
                Filter("entity_id", Op.EQ, customer.id),
            ),
        )
    page = uow.tax_associations.list(query)
    rates = {rate.id: rate for rate in uow.tax_rates.find_many({a.tax_rate_id for a in page.items})}
    items = [_detail(a, rates.get(a.tax_rate_id)) for a in page.items]
    return Page(items=items, total=page.total, limit=page.limit, offset=page.offset, extra=page.extra)
