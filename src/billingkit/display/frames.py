"""pandas DataFrames of billing results: invoices, invoice lines, usage reports.

Needs the optional ``notebook`` extra (pandas), imported when a frame is first made; without it
a :class:`~billingkit.errors.ConfigurationError` names ``pip install 'billingkit[notebook]'``.

Rules:

* Money columns (and quantities, usage values) hold exact ``Decimal`` values (``object`` dtype)
  by default; ``money="float"`` turns them into ``float64`` for plotting and statistics.
* Instants are ``datetime64[ns, UTC]`` (``NaT`` when unset); enums are their string values.
* Customer external ids are joined in from ``customers``: a ``Scoped`` (which reads the page's
  customers in one read), or ``Customer`` records (a list, or a mapping by id). Without them
  ``external_customer_id`` is empty (``None``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from billingkit.display.extras import NOTEBOOK_INSTALL, notebook_module
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.queries import Page
from billingkit.domain.usage_results import UsageResult
from billingkit.errors import ValidationError

if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "INVOICE_COLUMNS",
    "LINE_COLUMNS",
    "NOTEBOOK_EXTRA",
    "USAGE_COLUMNS",
    "invoice_lines_frame",
    "invoices_frame",
    "page_frame",
    "usage_frame",
]

#: How to install what frames need.
NOTEBOOK_EXTRA = NOTEBOOK_INSTALL

INVOICE_MONEY = (
    "subtotal",
    "total_discount",
    "total_tax",
    "total_prepaid_credits_applied",
    "total",
    "amount_due",
    "amount_paid",
    "amount_remaining",
)
INVOICE_COLUMNS = (
    "invoice_id",
    "invoice_number",
    "customer_id",
    "external_customer_id",
    "subscription_id",
    "invoice_type",
    "invoice_status",
    "payment_status",
    "billing_reason",
    "currency",
    "period_start",
    "period_end",
    "due_date",
    "finalized_at",
    *INVOICE_MONEY,
    "line_count",
)
LINE_MONEY = ("quantity", "amount", "line_item_discount", "invoice_level_discount", "prepaid_credits_applied")
LINE_COLUMNS = (
    "invoice_id",
    "invoice_number",
    "invoice_status",
    "customer_id",
    "external_customer_id",
    "subscription_id",
    "currency",
    "line_id",
    "display_name",
    "plan_display_name",
    "price_id",
    "price_type",
    "meter_id",
    "period_start",
    "period_end",
    *LINE_MONEY,
)
USAGE_COLUMNS = (
    "event_name",
    "aggregation",
    "meter_id",
    "window_start",
    "window_end",
    "group",
    "value",
    "event_count",
)
_INSTANTS = ("period_start", "period_end", "due_date", "finalized_at", "window_start", "window_end")


class CustomerReader(Protocol):
    """What reads customers by id (``scoped.customers``)."""

    def get_many(self, customer_ids: Collection[str]) -> Mapping[str, Customer]: ...


class CustomerScope(Protocol):
    """Something with a :class:`CustomerReader` as ``customers`` (a ``Scoped``)."""

    @property
    def customers(self) -> CustomerReader: ...


Customers = CustomerScope | Mapping[str, Customer] | Iterable[Customer] | None


def pandas() -> ModuleType:
    """The pandas module; ``ConfigurationError`` naming the ``notebook`` extra when missing."""
    return notebook_module("pandas", "DataFrames")


def _check_money(money: str) -> None:
    if money not in ("decimal", "float"):
        raise ValidationError(f"money must be 'decimal' or 'float', not {money!r}", field="money")


def customer_map(customers: Customers, ids: Collection[str]) -> Mapping[str, Customer]:
    """``customers`` as a mapping by id, read through the scope when one is given."""
    if customers is None:
        return {}
    if isinstance(customers, Mapping):
        return customers
    reader = getattr(customers, "customers", None)
    if reader is not None and callable(getattr(reader, "get_many", None)):
        read: Mapping[str, Customer] = reader.get_many(sorted(ids))
        return read
    return {customer.id: customer for customer in customers}  # type: ignore[union-attr]


def _frame(rows: list[dict[str, Any]], columns: Sequence[str], decimals: Sequence[str], money: str) -> Any:
    pd = pandas()
    frame = pd.DataFrame({name: [row[name] for row in rows] for name in columns}, columns=list(columns))
    for name in columns:
        if name in _INSTANTS:
            frame[name] = pd.to_datetime(frame[name], utc=True)
        elif name in decimals:
            frame[name] = frame[name].astype("float64" if money == "float" else object)
        elif name in ("line_count", "event_count"):
            frame[name] = frame[name].astype("int64")
    return frame


def _external(customers: Mapping[str, Customer], customer_id: str) -> str | None:
    customer = customers.get(customer_id)
    return customer.external_id if customer is not None else None


def invoices_frame(
    invoices: Sequence[Invoice], *, customers: Customers = None, money: str = "decimal"
) -> Any:
    """One row per invoice (:data:`INVOICE_COLUMNS`)."""
    _check_money(money)
    known = customer_map(customers, {invoice.customer_id for invoice in invoices})
    rows = [
        {
            "invoice_id": inv.id,
            "invoice_number": inv.invoice_number,
            "customer_id": inv.customer_id,
            "external_customer_id": _external(known, inv.customer_id),
            "subscription_id": inv.subscription_id,
            "invoice_type": inv.invoice_type.value,
            "invoice_status": inv.invoice_status.value,
            "payment_status": inv.payment_status.value,
            "billing_reason": inv.billing_reason.value if inv.billing_reason is not None else None,
            "currency": inv.currency,
            "period_start": inv.period_start,
            "period_end": inv.period_end,
            "due_date": inv.due_date,
            "finalized_at": inv.finalized_at,
            **{name: getattr(inv, name) for name in INVOICE_MONEY},
            "line_count": len(inv.line_items),
        }
        for inv in invoices
    ]
    return _frame(rows, INVOICE_COLUMNS, INVOICE_MONEY, money)


def invoice_lines_frame(
    invoices: Sequence[Invoice], *, customers: Customers = None, money: str = "decimal"
) -> Any:
    """One row per invoice line (:data:`LINE_COLUMNS`), with its invoice's number, status,
    customer and currency."""
    _check_money(money)
    known = customer_map(customers, {invoice.customer_id for invoice in invoices})
    rows = [
        {
            "invoice_id": inv.id,
            "invoice_number": inv.invoice_number,
            "invoice_status": inv.invoice_status.value,
            "customer_id": inv.customer_id,
            "external_customer_id": _external(known, inv.customer_id),
            "subscription_id": line.subscription_id or inv.subscription_id,
            "currency": inv.currency,
            "line_id": line.id,
            "display_name": line.display_name,
            "plan_display_name": line.plan_display_name,
            "price_id": line.price_id,
            "price_type": line.price_type.value if line.price_type is not None else None,
            "meter_id": line.meter_id,
            "period_start": line.period_start,
            "period_end": line.period_end,
            **{name: getattr(line, name) for name in LINE_MONEY},
        }
        for inv in invoices
        for line in inv.line_items
    ]
    return _frame(rows, LINE_COLUMNS, LINE_MONEY, money)


def usage_frame(
    result: UsageResult,
    *,
    event_name: str,
    aggregation: str,
    meter_id: str | None = None,
    money: str = "decimal",
) -> Any:
    """A usage result (:data:`USAGE_COLUMNS`): one row per time bucket (per group and bucket when
    the meter groups), else one per group, else one row with the total (no window)."""
    _check_money(money)
    base = {"event_name": event_name, "aggregation": aggregation, "meter_id": meter_id}
    rows: list[dict[str, Any]] = []

    def add(
        start: datetime | None, end: datetime | None, group: str | None, value: Decimal, count: int
    ) -> None:
        rows.append(
            {
                **base,
                "window_start": start,
                "window_end": end,
                "group": group,
                "value": value,
                "event_count": count,
            }
        )

    for bucket in result.buckets:
        if bucket.groups:
            for group in bucket.groups:
                add(bucket.start, bucket.end, group.key, group.value, group.event_count)
        else:
            add(bucket.start, bucket.end, None, bucket.value, bucket.event_count)
    if not result.buckets:
        for group in result.groups:
            add(None, None, group.key, group.value, group.event_count)
    if not rows:
        add(None, None, None, result.value, result.event_count)
    return _frame(rows, USAGE_COLUMNS, ("value",), money)


def _fields(item: object) -> dict[str, Any]:
    if isinstance(item, BaseModel):
        return item.model_dump()
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return dataclasses.asdict(item)
    raise TypeError(f"no DataFrame rows for {type(item).__name__} items")


def page_frame(
    page: Page[Any], *, customers: Customers = None, lines: bool = False, money: str = "decimal"
) -> Any:
    """:meth:`billingkit.domain.queries.Page.to_pandas`: invoices (or their lines) by the
    columns above; any other page one row per item with its fields."""
    items = list(page.items)
    if (items and all(isinstance(item, Invoice) for item in items)) or (not items and lines):
        build = invoice_lines_frame if lines else invoices_frame
        return build(items, customers=customers, money=money)
    if lines:
        raise ValidationError("lines=True needs a page of invoices", field="lines")
    _check_money(money)
    pd = pandas()
    return pd.DataFrame([_fields(item) for item in items])
