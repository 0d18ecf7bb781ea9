"""``billingkit.simulate``: months of billing in one call, deterministic for a seed, with totals
that are the invoices' totals, frames, plots and a progress bar (the ``notebook`` extra)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

import billingkit
from billingkit import ValidationError
from billingkit.errors import ConfigurationError
from billingkit.simulation import Poisson, SimulationResult, Steady, sample_customers

pd = pytest.importorskip("pandas")

MONTHLY = {"currency": "usd", "billing_period": "MONTHLY"}
METERS = {
    "calls": {
        "name": "API calls",
        "event_name": "api.request",
        "aggregation": {"type": "SUM", "field": "calls"},
    },
    "logins": {"name": "Logins", "event_name": "login", "aggregation": {"type": "COUNT"}},
}


def _plans(per_call: str = "0.01") -> dict[str, Any]:
    fee = {**MONTHLY, "type": "FIXED", "billing_model": "FLAT_FEE", "invoice_cadence": "ADVANCE"}
    usage = {**MONTHLY, "type": "USAGE", "invoice_cadence": "ARREAR", "billing_model": "FLAT_FEE"}
    return {
        "basic": {
            "name": "Basic",
            "prices": [
                {**fee, "amount": "10.00", "display_name": "Fee"},
                {**usage, "meter_id": "calls", "amount": per_call, "display_name": "Calls"},
            ],
        },
        "pro": {
            "name": "Pro",
            "prices": [
                {**fee, "amount": "49.00", "display_name": "Fee"},
                {
                    **usage,
                    "meter_id": "calls",
                    "billing_model": "TIERED",
                    "tier_mode": "SLAB",
                    "tiers": [
                        {"up_to": 10000, "unit_amount": "0.005"},
                        {"up_to": None, "unit_amount": "0.002"},
                    ],
                    "display_name": "Calls",
                },
                {**usage, "meter_id": "logins", "amount": "0.10", "display_name": "Logins"},
            ],
        },
    }


def _poisson_run(seed: int = 4, months: int = 4) -> SimulationResult:
    return billingkit.simulate(
        meters=METERS,
        plans=_plans(),
        customers=sample_customers(12, plans={"basic": 2, "pro": 1}, seed=seed),
        usage=[
            Poisson("api.request", per_day=300, growth=0.10, property="calls", spread=0.8),
            Poisson("login", per_day=2, plan="pro"),
        ],
        months=months,
        seed=seed,
    )


def test_a_seed_gives_the_same_invoices_ids_included() -> None:
    first, again, other = _poisson_run(4), _poisson_run(4), _poisson_run(5)
    pd.testing.assert_frame_equal(first.invoices_frame(), again.invoices_frame())
    pd.testing.assert_frame_equal(first.lines_frame(), again.lines_frame())
    assert first.totals() != other.totals()
    # 12 customers: one opening invoice each, then one closing invoice a month.
    assert len(first.invoices) == 12 + 12 * 4
    assert {inv.invoice_status.value for inv in first.invoices} == {"FINALIZED"}


def test_totals_are_the_invoices_totals_in_every_frame() -> None:
    result = _poisson_run()
    total = sum((inv.total for inv in result.invoices), Decimal(0))
    assert result.totals() == {"usd": total}
    for frame in (result.revenue_by_month(), result.revenue_by_plan(), result.revenue_by_customer()):
        assert sum(frame["revenue"], Decimal(0)) == total
        assert all(isinstance(v, Decimal) for v in frame["revenue"])
    lines = result.lines_frame()
    assert sum(lines["amount"], Decimal(0)) == sum((inv.subtotal for inv in result.invoices), Decimal(0))
    by_month = result.revenue_by_month()
    assert list(by_month["month"]) == ["2026-01", "2026-02", "2026-03", "2026-04", "2026-05"]
    assert list(by_month["invoices"]) == [12, 12, 12, 12, 12]
    # Pro customers are billed logins (COUNT, one event per login); Basic customers are not.
    logins = lines[lines["meter"] == "Logins"]
    assert set(logins["plan"]) == {"pro"}
    assert all(q > 0 for q in logins["quantity"])
    floats = result.revenue_by_plan(money="float")
    assert floats["revenue"].dtype == float
    assert float(sum(floats["revenue"])) == pytest.approx(float(total))


def test_steady_usage_bills_what_the_arithmetic_says() -> None:
    result = billingkit.simulate(
        meters=METERS,
        plans=_plans(),
        customers=[{"external_id": "ada", "name": "Ada", "plan": "basic"}],
        usage=Steady("api.request", per_day=100, growth=0.10, property="calls"),
        months=2,
        start=datetime(2026, 1, 1, tzinfo=UTC),
    )
    frame = result.invoices_frame()
    # Opening: the January fee, 10.00. January's close: 31 days x 100 calls x 0.01 = 31.00 plus
    # February's fee 10.00 = 41.00. February's close: 28 x 110 (10 % more) x 0.01 = 30.80 + 10.
    assert list(frame["total"]) == [Decimal("10.00"), Decimal("41.00"), Decimal("40.80")]
    assert list(frame["month"]) == ["2026-01", "2026-02", "2026-03"]
    calls = result.lines_frame().query("display_name == 'Calls'")
    assert list(calls["quantity"]) == [Decimal(3100), Decimal(3080)]


def test_a_dataframe_or_a_list_of_events_is_usage_too() -> None:
    events = [
        {
            "event_name": "api.request",
            "external_customer_id": "ada",
            "timestamp": f"2026-01-{day:02d}T10:00:00+00:00",
            "calls": 50 * day,
        }
        for day in range(1, 29)
    ]
    as_frame = pd.DataFrame(events)
    as_frame["timestamp"] = pd.to_datetime(as_frame["timestamp"])
    as_list = [
        {**{k: v for k, v in e.items() if k != "calls"}, "properties": {"calls": e["calls"]}} for e in events
    ]
    runs = [
        billingkit.simulate(
            meters=METERS,
            plans=_plans(),
            customers=[{"external_id": "ada", "name": "Ada", "plan": "basic"}],
            usage=usage,
            months=1,
        )
        for usage in (as_frame, as_list)
    ]
    # 50 * (1 + ... + 28) = 50 * 406 = 20,300 calls x 0.01 = 203.00, + February's fee 10.00
    for run in runs:
        assert [inv.total for inv in run.invoices] == [Decimal("10.00"), Decimal("213.00")]


def test_the_simulated_history_can_be_backtested() -> None:
    result = _poisson_run(months=2)
    basic = next(p for p in result.plans.values() if p.name == "Basic")
    same = result.scope.backtest(basic, subscribed_plan_id=basic.id)
    assert same.rows and {row.difference for row in same.rows} == {Decimal("0.00")}
    calls = next(m.id for m in result.meters.values() if m.name == "API calls")
    fee, usage = (dict(price) for price in _plans()["basic"]["prices"])
    dearer = result.scope.backtest(
        [{**fee, "amount": "12"}, {**usage, "meter_id": calls}], subscribed_plan_id=basic.id
    )
    assert {row.difference for row in dearer.rows} == {Decimal("2.00")}  # the fee only
    frame = dearer.to_pandas()
    assert list(frame.columns)[-3:] == ["billed", "candidate", "difference"]
    assert sum(frame["difference"], Decimal(0)) == dearer.summary().revenue_change["usd"]


def test_plots_draw_the_result() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    result = _poisson_run(months=3)
    revenue = result.plot_revenue()
    assert revenue.get_title() == "Revenue by month"
    # A bar per month (4) and plan (2), stacked; their heights add up to the revenue.
    heights = sum(patch.get_height() for patch in revenue.patches)
    assert len(revenue.patches) == 8
    assert heights == pytest.approx(float(sum(result.totals().values())))
    histogram = result.plot_invoice_distribution(bins=10)
    assert sum(patch.get_height() for patch in histogram.patches) == len(result.invoices)
    scatter = result.plot_usage_vs_charge()
    usage_lines = result.lines_frame().query("price_type == 'USAGE'")
    assert sum(len(c.get_offsets()) for c in scatter.collections) == len(usage_lines)


def test_long_runs_show_a_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    billingkit.simulate(
        meters=METERS,
        plans=_plans(),
        customers=[{"external_id": "ada", "name": "Ada", "plan": "basic"}],
        usage=Steady("api.request", per_day=1, property="calls"),
        months=3,
        progress=True,
    )
    assert "simulating" in capsys.readouterr().err


def test_missing_extras_name_the_notebook_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    result = billingkit.simulate(
        meters=METERS,
        plans=_plans(),
        customers=[{"external_id": "ada", "name": "Ada", "plan": "basic"}],
        months=1,
    )
    assert [inv.total for inv in result.invoices] == [Decimal("10.00"), Decimal("10.00")]  # no usage
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'billingkit\[notebook\]'"):
        result.invoices_frame()
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ConfigurationError, match="usage generators need the numpy library"):
        list(
            Poisson("x", per_day=1).events({"a": "p"}, month=0, start=result.start, end=result.start, seed=0)
        )


def test_bad_input_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as unknown:
        billingkit.simulate(plans=_plans(), meters=METERS, customers=[{"external_id": "a", "plan": "gold"}])
    assert unknown.value.field == "customers[0].plan"
    with pytest.raises(ValidationError) as months:
        billingkit.simulate(plans=_plans(), meters=METERS, customers=[], months=0)
    assert months.value.field == "months"
    with pytest.raises(ValidationError) as rate:
        Poisson("api.request", per_day=-1)
    assert rate.value.field == "per_day"


def test_importing_billingkit_loads_none_of_the_notebook_libraries() -> None:
    code = (
        "import sys, billingkit, billingkit.simulation\n"
        "loaded = sorted(m for m in ('pandas', 'numpy', 'matplotlib', 'tqdm') if m in sys.modules)\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
