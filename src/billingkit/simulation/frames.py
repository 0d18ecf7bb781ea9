"""DataFrames of simulations and backtests (pandas, from the ``notebook`` extra).

Money columns hold ``Decimal`` values (an ``object`` column: exact, sums stay exact) unless
``money="float"`` is asked for (for plotting and statistics). Instants are UTC timestamps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from billingkit.display.extras import notebook_module
from billingkit.domain.invoices import InvoiceStatus
from billingkit.errors import ValidationError

if TYPE_CHECKING:
    import pandas

    from billingkit.services.backtest import Backtest
    from billingkit.simulation.results import SimulationResult

__all__ = ["backtest_frame", "invoices_frame", "lines_frame", "revenue_by"]

_INVOICE_MONEY = ("subtotal", "total_discount", "total_tax", "total", "amount_due")
_GROUPINGS = ("month", "plan", "external_customer_id")


def _pandas() -> Any:
    return notebook_module("pandas", "DataFrames")


def _frame(
    rows: Iterable[dict[str, Any]], columns: Sequence[str], money: Sequence[str], how: str
) -> pandas.DataFrame:
    if how not in ("decimal", "float"):
        raise ValidationError('money must be "decimal" or "float"', field="money")
    pd = _pandas()
    frame: pandas.DataFrame = pd.DataFrame(list(rows), columns=list(columns))
    for column in money:
        frame[column] = frame[column].astype(float if how == "float" else object)
    return frame


def _month(instant: Any) -> str:
    return f"{instant:%Y-%m}" if instant is not None else ""


def _invoice_rows(result: SimulationResult) -> list[dict[str, Any]]:
    subs = result.subscriptions
    rows = []
    for inv in result.invoices:
        customer = result.customers.get(inv.customer_id)
        sub = subs.get(inv.subscription_id or "")
        plan = result.plans.get(sub.plan_id) if sub is not None else None
        rows.append(
            {
                "invoice_id": inv.id,
                "invoice_number": inv.invoice_number,
                "invoice_status": inv.invoice_status.value,
                "billing_reason": inv.billing_reason.value if inv.billing_reason else None,
                "customer_id": inv.customer_id,
                "external_customer_id": customer.external_id if customer else None,
                "customer_name": customer.name if customer else None,
                "subscription_id": inv.subscription_id,
                "plan_id": plan.id if plan else None,
                "plan": result.plan_keys.get(plan.id) if plan else None,
                "plan_name": plan.name if plan else None,
                "currency": inv.currency,
                "period_start": inv.period_start,
                "period_end": inv.period_end,
                "month": _month(inv.created_at),
                **{name: getattr(inv, name) for name in _INVOICE_MONEY},
                "line_count": len(inv.line_items),
            }
        )
    return rows


def invoices_frame(result: SimulationResult, *, money: str = "decimal") -> pandas.DataFrame:
    """One row per invoice of ``result`` (see :meth:`SimulationResult.invoices_frame`)."""
    columns = [
        "invoice_id", "invoice_number", "invoice_status", "billing_reason", "customer_id",
        "external_customer_id", "customer_name", "subscription_id", "plan_id", "plan", "plan_name",
        "currency", "period_start", "period_end", "month", *_INVOICE_MONEY, "line_count",
    ]  # fmt: skip
    return _frame(_invoice_rows(result), columns, _INVOICE_MONEY, money)


def lines_frame(result: SimulationResult, *, money: str = "decimal") -> pandas.DataFrame:
    """One row per invoice line of ``result`` (see :meth:`SimulationResult.lines_frame`)."""
    rows = []
    for inv in result.invoices:
        customer = result.customers.get(inv.customer_id)
        sub = result.subscriptions.get(inv.subscription_id or "")
        plan_key = result.plan_keys.get(sub.plan_id) if sub is not None else None
        for line in inv.line_items:
            meter = result.meters.get(line.meter_id or "")
            rows.append(
                {
                    "invoice_id": inv.id,
                    "invoice_number": inv.invoice_number,
                    "invoice_status": inv.invoice_status.value,
                    "external_customer_id": customer.external_id if customer else None,
                    "plan": plan_key,
                    "currency": inv.currency,
                    "display_name": line.display_name,
                    "price_type": line.price_type.value if line.price_type else None,
                    "meter": meter.name if meter else None,
                    "quantity": line.quantity,
                    "billed_quantity": (
                        line.adjusted_entitlement_quantity
                        if line.adjusted_entitlement_quantity is not None
                        else line.quantity
                    ),
                    "amount": line.amount,
                    "period_start": line.period_start,
                    "period_end": line.period_end,
                    "month": _month(inv.created_at),
                }
            )
    columns = [
        "invoice_id", "invoice_number", "invoice_status", "external_customer_id", "plan", "currency",
        "display_name", "price_type", "meter", "quantity", "billed_quantity", "amount",
        "period_start", "period_end", "month",
    ]  # fmt: skip
    return _frame(rows, columns, ("quantity", "billed_quantity", "amount"), money)


def revenue_by(result: SimulationResult, by: str, *, money: str = "decimal") -> pandas.DataFrame:
    """Revenue (Σ finalized ``total``, exact), invoices and customers per ``by`` (``month``,
    ``plan`` or ``external_customer_id``) and currency; months in order, others by revenue."""
    if by not in _GROUPINGS:
        raise ValidationError(f"by must be one of {', '.join(_GROUPINGS)}", field="by")
    groups: dict[tuple[Any, str], dict[str, Any]] = {}
    for row in _invoice_rows(result):
        if row["invoice_status"] != InvoiceStatus.FINALIZED.value:
            continue
        key = (row[by], row["currency"])
        group = groups.setdefault(key, {"revenue": Decimal(0), "invoices": 0, "customers": set()})
        group["revenue"] += row["total"]
        group["invoices"] += 1
        group["customers"].add(row["external_customer_id"])
    rows = [
        {by: key, "currency": currency, "revenue": g["revenue"], "invoices": g["invoices"],
         "customers": len(g["customers"])}
        for (key, currency), g in groups.items()
    ]  # fmt: skip
    if by == "month":
        rows.sort(key=lambda r: (r["month"], r["currency"]))
    else:
        rows.sort(key=lambda r: (-r["revenue"], str(r[by])))
    return _frame(rows, [by, "currency", "revenue", "invoices", "customers"], ("revenue",), money)


def backtest_frame(backtest: Backtest, *, money: str = "decimal") -> pandas.DataFrame:
    """One row per customer-period of ``backtest``: customer, subscription, plan, currency,
    period, ``billed``, ``candidate`` and ``difference``."""
    columns = [
        "customer_id", "external_customer_id", "subscription_id", "plan_id", "currency",
        "period_start", "period_end", "billed", "candidate", "difference",
    ]  # fmt: skip
    rows = ({name: getattr(row, name) for name in columns} for row in backtest.rows)
    return _frame(rows, columns, ("billed", "candidate", "difference"), money)
