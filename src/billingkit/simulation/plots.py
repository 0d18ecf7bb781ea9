"""Plots of a simulation (matplotlib, from the ``notebook`` extra). Each draws on ``ax`` (a new
figure's axes when None) and returns it; money is plotted as float, which is only a picture."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from billingkit.display.extras import notebook_module
from billingkit.domain.catalog import PriceType

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from billingkit.simulation.results import SimulationResult

__all__ = ["plot_invoice_distribution", "plot_revenue", "plot_usage_vs_charge"]


def _axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    plt = notebook_module("matplotlib.pyplot", "plots")
    _, axes = plt.subplots(figsize=(8, 4))
    result: Axes = axes
    return result


def _currency_label(result: SimulationResult) -> str:
    return "/".join(sorted({inv.currency.upper() for inv in result.invoices})) or "amount"


def plot_revenue(result: SimulationResult, ax: Axes | None = None) -> Axes:
    """Revenue per month as bars stacked by plan."""
    ax = _axes(ax)
    frame = result.invoices_frame(money="float")
    frame = frame[frame["invoice_status"] == "FINALIZED"]
    table: Any = frame.pivot_table(
        index="month", columns="plan", values="total", aggfunc="sum", fill_value=0.0
    )
    bottom = [0.0] * len(table.index)
    for plan in table.columns:
        values = [float(v) for v in table[plan]]
        ax.bar(list(table.index), values, bottom=bottom, label=str(plan))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_title("Revenue by month")
    ax.set_xlabel("month")
    ax.set_ylabel(f"revenue ({_currency_label(result)})")
    ax.tick_params(axis="x", labelrotation=45)
    if len(table.columns) > 1:
        ax.legend(title="plan")
    return ax


def plot_invoice_distribution(result: SimulationResult, ax: Axes | None = None, *, bins: int = 30) -> Axes:
    """A histogram of the finalized invoices' totals."""
    ax = _axes(ax)
    totals = [float(inv.total) for inv in result.finalized]
    ax.hist(totals, bins=bins)
    ax.set_title(f"Invoice totals ({len(totals):,} invoices)")
    ax.set_xlabel(f"invoice total ({_currency_label(result)})")
    ax.set_ylabel("invoices")
    return ax


def plot_usage_vs_charge(result: SimulationResult, ax: Axes | None = None) -> Axes:
    """Each usage line's quantity against its amount, one colour per meter."""
    ax = _axes(ax)
    lines = result.lines_frame(money="float")
    lines = lines[lines["price_type"] == PriceType.USAGE.value]
    for meter, group in lines.groupby("meter", sort=True):
        ax.scatter(group["quantity"], group["amount"], s=8, alpha=0.6, label=str(meter))
    ax.set_title("Usage vs charge per invoice line")
    ax.set_xlabel("usage (quantity)")
    ax.set_ylabel(f"charge ({_currency_label(result)})")
    if lines["meter"].nunique() > 1:
        ax.legend(title="meter")
    return ax
