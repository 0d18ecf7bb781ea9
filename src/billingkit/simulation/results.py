"""What :func:`billingkit.simulate` returns: the stored invoices, as records and as DataFrames.

The frames and plots need the ``notebook`` extra; the records do not. Money stays ``Decimal``
(``money="float"`` converts for plotting); an invoice's ``month`` is the UTC calendar month it
was issued in (a period's closing invoice, issued on the 1st, counts in the next month), and
revenue is the ``total`` (after discounts and taxes) of finalized invoices.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from billingkit.domain.catalog import Meter, Plan
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice, InvoiceStatus
from billingkit.domain.money import ZERO
from billingkit.domain.subscriptions import Subscription
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import list_where_in

if TYPE_CHECKING:
    import pandas
    from matplotlib.axes import Axes

    from billingkit.facade import Billing, Scoped

__all__ = ["SimulationResult"]


@dataclass(frozen=True)
class SimulationResult:
    """The outcome of a simulation: its invoices (every status, oldest first) with the customers,
    subscriptions, plans and meters they refer to, by id. ``billing`` and ``scope`` are the
    embedded system it ran on, kept so you can look further (``result.scope.backtest(...)``
    re-prices the simulated usage under another plan)."""

    billing: Billing
    scope: Scoped
    invoices: tuple[Invoice, ...]
    customers: Mapping[str, Customer]
    subscriptions: Mapping[str, Subscription]
    plans: Mapping[str, Plan]
    meters: Mapping[str, Meter]
    plan_keys: Mapping[str, str]
    meter_keys: Mapping[str, str]
    months: int
    start: datetime
    seed: int

    @classmethod
    def collect(
        cls,
        billing: Billing,
        scope: Scoped,
        plan_ids: Mapping[str, str],
        meter_ids: Mapping[str, str],
        *,
        months: int,
        start: datetime,
        seed: int,
    ) -> SimulationResult:
        """Read what a finished simulation stored (a few statements, any size)."""

        def read(uow: UnitOfWork, ctx: Context) -> tuple[Any, ...]:
            plans = {p.id: p for p in uow.plans.find_many(plan_ids.values())}
            subs = list_where_in(uow.subscriptions, "plan_id", plans)
            customers = uow.customers.find_many({s.customer_id for s in subs})
            invoices = list_where_in(uow.invoices, "customer_id", [c.id for c in customers], status=None)
            used = {ln.meter_id for s in subs for ln in s.line_items if ln.meter_id}
            meters = uow.meters.find_many(used | set(meter_ids.values()))
            return plans, subs, customers, invoices, meters

        plans, subs, customers, invoices, meters = scope.read(read)
        invoices.sort(key=lambda inv: (inv.created_at, inv.id))
        return cls(
            billing=billing,
            scope=scope,
            invoices=tuple(invoices),
            customers={c.id: c for c in customers},
            subscriptions={s.id: s for s in subs},
            plans=plans,
            meters={m.id: m for m in meters},
            plan_keys={plan_id: key for key, plan_id in plan_ids.items()},
            meter_keys={meter_id: key for key, meter_id in meter_ids.items()},
            months=months,
            start=start,
            seed=seed,
        )

    def plan(self, key: str) -> Plan:
        """The stored plan made for ``plans[key]``; ``KeyError`` for an unknown key."""
        return self.plans[_id_of(self.plan_keys, key, "plan")]

    def meter(self, key: str) -> Meter:
        """The stored meter made for ``meters[key]``; ``KeyError`` for an unknown key."""
        return self.meters[_id_of(self.meter_keys, key, "meter")]

    @property
    def finalized(self) -> tuple[Invoice, ...]:
        """The finalized invoices (the ones that count as revenue)."""
        return tuple(inv for inv in self.invoices if inv.invoice_status is InvoiceStatus.FINALIZED)

    def totals(self) -> dict[str, Decimal]:
        """Revenue per currency: the sum of the finalized invoices' ``total``."""
        found: dict[str, Decimal] = defaultdict(lambda: ZERO)
        for invoice in self.finalized:
            found[invoice.currency] += invoice.total
        return dict(found)

    # -- DataFrames (the notebook extra) ----------------------------------------------------------

    def to_pandas(self, *, money: str = "decimal") -> pandas.DataFrame:
        """One row per invoice (:meth:`invoices_frame`)."""
        return self.invoices_frame(money=money)

    def invoices_frame(self, *, money: str = "decimal") -> pandas.DataFrame:
        """One row per invoice: number, status, customer (id, external id, name), plan (id, key,
        name), period, ``month``, money columns (``subtotal`` ... ``amount_due``) and line count."""
        from billingkit.simulation.frames import invoices_frame

        return invoices_frame(self, money=money)

    def lines_frame(self, *, money: str = "decimal") -> pandas.DataFrame:
        """One row per invoice line: its invoice, customer and plan, ``display_name``,
        ``price_type``, ``meter``, ``quantity``, ``billed_quantity`` (after allowances),
        ``amount``, period and ``month``."""
        from billingkit.simulation.frames import lines_frame

        return lines_frame(self, money=money)

    def revenue_by_month(self, *, money: str = "decimal") -> pandas.DataFrame:
        """Revenue (finalized ``total``), invoice count and customers billed per month and
        currency."""
        from billingkit.simulation.frames import revenue_by

        return revenue_by(self, "month", money=money)

    def revenue_by_plan(self, *, money: str = "decimal") -> pandas.DataFrame:
        """Revenue per plan key and currency."""
        from billingkit.simulation.frames import revenue_by

        return revenue_by(self, "plan", money=money)

    def revenue_by_customer(self, *, money: str = "decimal") -> pandas.DataFrame:
        """Revenue per customer (external id) and currency, highest first."""
        from billingkit.simulation.frames import revenue_by

        return revenue_by(self, "external_customer_id", money=money)

    # -- plots (the notebook extra, with matplotlib) ----------------------------------------------

    def plot_revenue(self, ax: Axes | None = None) -> Axes:
        """Revenue over time: a bar per month, stacked by plan."""
        from billingkit.simulation.plots import plot_revenue

        return plot_revenue(self, ax)

    def plot_invoice_distribution(self, ax: Axes | None = None, *, bins: int = 30) -> Axes:
        """A histogram of the finalized invoices' totals."""
        from billingkit.simulation.plots import plot_invoice_distribution

        return plot_invoice_distribution(self, ax, bins=bins)

    def plot_usage_vs_charge(self, ax: Axes | None = None) -> Axes:
        """Each usage line as a point: its quantity against its amount, coloured by meter (the
        price curve, allowances and tiers included)."""
        from billingkit.simulation.plots import plot_usage_vs_charge

        return plot_usage_vs_charge(self, ax)

    def __repr__(self) -> str:
        totals = ", ".join(f"{c} {v:,}" for c, v in sorted(self.totals().items())) or "no revenue"
        return (
            f"<SimulationResult {len(self.customers)} customers x {self.months} months, "
            f"{len(self.invoices)} invoices, {totals}, seed {self.seed}>"
        )


def _id_of(keys: Mapping[str, str], key: str, what: str) -> str:
    found = next((stored for stored, given in keys.items() if given == key), None)
    if found is None:
        raise KeyError(f"no {what} {key!r} in this simulation (it has {', '.join(sorted(keys.values()))})")
    return found
