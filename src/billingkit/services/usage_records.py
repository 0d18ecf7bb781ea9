"""Usage records: ``POST /usage-records/search`` (the reference's UsageRecordFilter,
ListUsageRecordsResponse).

In the reference a usage record is a row kept per subscription and billing window for reporting
usage to cloud marketplaces. billingkit reports to no marketplace, so a usage record is a read
view over what was billed, derived at each search and never stored:

* one record per FINALIZED subscription invoice that has USAGE lines: its subscription, customer,
  the subscription's plan, the invoice's period and currency; ``quantity`` and ``amount`` are the
  exact sums of its USAGE lines' quantities (the usage measured) and amounts (charged after
  included usage, before discounts);
* ``id`` is ``usgrec_`` followed by the invoice id's ULID, so a record keeps its id;
  ``created_at`` / ``created_by`` are the invoice's finalization, ``updated_*`` its last update;
* ``synced`` is always ``false`` and ``syncs`` empty; ``status`` ``published`` (drafts, voided
  and skipped invoices give no record).

Filters as the reference: ``subscription_id``, ``customer_id``, ``customer_external_id``,
``plan_id``, ``currency``, ``period_start`` / ``period_end`` (exact), ``synced``, ``status``,
``start_time`` / ``end_time`` (``created_at`` in ``[start_time, end_time)``, as every search),
and ``filters`` on the record's fields. ``sort`` (default ``created_at`` by ``order``, newest
first), ``limit`` / ``offset`` page the matches; ``pagination.offset`` echoes the request (D5).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.invoices import Invoice, InvoiceStatus, InvoiceType
from billingkit.domain.money import ZERO
from billingkit.domain.queries import MAX_LIMIT, MAX_OFFSET, Filter, Op, Page
from billingkit.domain.resources import Status, iso
from billingkit.domain.validation import InputModel, UtcDatetime
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import list_where_in
from billingkit.services.search import FilterCondition, SortCondition

__all__ = ["UsageRecord", "UsageRecordSearch", "search_usage_records"]

PREFIX = "usgrec"

#: The fields ``filters`` and ``sort`` may name.
FIELDS = frozenset(
    {
        "id",
        "subscription_id",
        "customer_id",
        "customer_external_id",
        "plan_id",
        "currency",
        "period_start",
        "period_end",
        "quantity",
        "amount",
        "created_at",
        "updated_at",
        "synced",
    }
)


class UsageRecordSearch(InputModel):
    """The reference's UsageRecordFilter (see the module doc)."""

    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 50
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0
    order: Literal["asc", "desc"] = "desc"
    sort: list[SortCondition] | None = None
    status: Status | None = Status.PUBLISHED
    filters: list[FilterCondition] = []
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None
    expand: Annotated[str, Field(max_length=200)] | None = None
    subscription_id: str | None = None
    customer_id: str | None = None
    customer_external_id: str | None = None
    plan_id: str | None = None
    currency: str | None = None
    period_start: UtcDatetime | None = None
    period_end: UtcDatetime | None = None
    synced: bool | None = None


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One billed period's usage of a subscription (the reference's UsageRecordResponse)."""

    id: str
    tenant_id: str
    environment_id: str
    subscription_id: str
    customer_id: str
    customer_external_id: str | None
    plan_id: str | None
    period_start: datetime
    period_end: datetime
    quantity: Decimal
    amount: Decimal
    currency: str
    created_at: datetime
    updated_at: datetime
    created_by: str
    updated_by: str
    status: Status = Status.PUBLISHED
    synced: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant_id": self.tenant_id,
            "environment_id": self.environment_id,
            "subscription_id": self.subscription_id,
            "customer_id": self.customer_id,
            "customer_external_id": self.customer_external_id,
            "plan_id": self.plan_id,
            "period_start": iso(self.period_start),
            "period_end": iso(self.period_end),
            "quantity": str(self.quantity),
            "amount": str(self.amount),
            "currency": self.currency,
            "synced": self.synced,
            "syncs": {},
            "status": self.status.value,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "created_by": self.created_by,
            "updated_by": self.updated_by,
        }


def _record(invoice: Invoice, plan_id: str | None, external_id: str | None) -> UsageRecord | None:
    lines = [line for line in invoice.line_items if line.price_type is PriceType.USAGE]
    if not lines or invoice.subscription_id is None:
        return None
    assert invoice.period_start is not None and invoice.period_end is not None
    return UsageRecord(
        id=f"{PREFIX}_{invoice.id.rsplit('_', 1)[-1]}",
        tenant_id=invoice.tenant_id,
        environment_id=invoice.environment_id,
        subscription_id=invoice.subscription_id,
        customer_id=invoice.customer_id,
        customer_external_id=external_id,
        plan_id=plan_id,
        period_start=invoice.period_start,
        period_end=invoice.period_end,
        quantity=sum((line.quantity for line in lines), ZERO),
        amount=sum((line.amount for line in lines), ZERO),
        currency=invoice.currency,
        created_at=invoice.finalized_at or invoice.created_at,
        updated_at=invoice.updated_at,
        created_by=invoice.created_by,
        updated_by=invoice.updated_by,
    )


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _passes(record: UsageRecord, flt: Filter) -> bool:
    """Whether ``record`` passes ``flt`` (the stores' meaning: ``contains`` ignores case; an
    ordering comparison with a missing value is false)."""
    value = _plain(getattr(record, flt.field))
    target = flt.value
    if flt.op in (Op.IN, Op.NOT_IN):
        return (value in {_plain(v) for v in target}) == (flt.op is Op.IN)
    if flt.op in (Op.CONTAINS, Op.NOT_CONTAINS):
        found = value is not None and str(target).lower() in str(value).lower()
        return found == (flt.op is Op.CONTAINS)
    if flt.op in (Op.EQ, Op.NE):
        return bool(value == _plain(target)) == (flt.op is Op.EQ)
    if value is None:
        return False
    try:
        if flt.op in (Op.GT, Op.AFTER):
            return bool(value > target)
        if flt.op is Op.GTE:
            return bool(value >= target)
        if flt.op in (Op.LT, Op.BEFORE):
            return bool(value < target)
        return bool(value <= target)
    except TypeError as exc:
        raise ValidationError(
            f"filter on {flt.field} needs a value of its type (data_type)", field="filters"
        ) from exc


def _check_fields(search: UsageRecordSearch) -> None:
    for condition in search.filters:
        if condition.field not in FIELDS:
            raise ValidationError(f"unknown field {condition.field!r} for usage record", field="filters")
    for sort in search.sort or ():
        if sort.field not in FIELDS:
            raise ValidationError(f"unknown sort field {sort.field!r} for usage record", field="sort")


def search_usage_records(uow: UnitOfWork, ctx: Context, *, search: UsageRecordSearch) -> Page[UsageRecord]:
    """A page of usage records (see the module doc). Writes nothing. Raises ``ValidationError``
    for a filter or sort on an unknown field, or a filter value of the wrong type."""
    ctx.require("invoice", Action.READ)
    ctx.require("subscription", Action.READ)
    _check_fields(search)
    empty: Page[UsageRecord] = Page(items=[], total=0, limit=search.limit, offset=search.offset)
    if search.synced is True or search.status not in (None, Status.PUBLISHED):
        return empty
    also = [Filter("invoice_status", Op.IN, (InvoiceStatus.FINALIZED,))]
    for name in ("subscription_id", "customer_id", "currency"):
        given = getattr(search, name)
        if given:
            also.append(Filter(name, Op.EQ, given.lower() if name == "currency" else given))
    if search.customer_external_id:
        customer = uow.customers.find_one(external_id=search.customer_external_id)
        if customer is None:
            return empty
        also.append(Filter("customer_id", Op.EQ, customer.id))
    invoices = list_where_in(uow.invoices, "invoice_type", [InvoiceType.SUBSCRIPTION.value], *also)
    subs = {
        s.id: s
        for s in uow.subscriptions.find_many({i.subscription_id for i in invoices if i.subscription_id})
    }
    customers = {c.id: c for c in uow.customers.find_many({i.customer_id for i in invoices})}
    records: list[UsageRecord] = []
    for invoice in invoices:
        sub = subs.get(invoice.subscription_id or "")
        customer = customers.get(invoice.customer_id)
        record = _record(invoice, sub.plan_id if sub else None, customer.external_id if customer else None)
        if record is not None:
            records.append(record)
    wanted = [f.to_filter() for f in search.filters]
    for name in ("plan_id", "period_start", "period_end"):
        if getattr(search, name) is not None:
            wanted.append(Filter(name, Op.EQ, getattr(search, name)))
    if search.start_time is not None:
        wanted.append(Filter("created_at", Op.GTE, search.start_time))
    if search.end_time is not None:
        wanted.append(Filter("created_at", Op.LT, search.end_time))
    records = [r for r in records if all(_passes(r, flt) for flt in wanted)]
    sorts = [(s.field, s.direction == "desc") for s in search.sort or ()] or [
        ("created_at", search.order == "desc")
    ]
    records.sort(key=lambda r: r.id, reverse=sorts[0][1])
    for name, descending in reversed(sorts):
        present = [r for r in records if getattr(r, name) is not None]
        missing = [r for r in records if getattr(r, name) is None]
        present.sort(key=lambda r, n=name: getattr(r, n), reverse=descending)  # type: ignore[misc]
        records = present + missing
    page = records[search.offset : search.offset + search.limit]
    return Page(items=page, total=len(records), limit=search.limit, offset=search.offset)
