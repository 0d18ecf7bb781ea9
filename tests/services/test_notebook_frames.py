"""DataFrames of invoices, invoice lines and usage: columns, dtypes and exact values.

The world is tests/billed_world.py (an opening invoice of 1,322.15 and a period-end invoice of
1,483.93 for customer c1).
"""

from __future__ import annotations

import sys
from decimal import Decimal

import pandas as pd
import pytest

from billingkit import MemoryStorage
from billingkit.display.frames import INVOICE_COLUMNS, LINE_COLUMNS, USAGE_COLUMNS
from billingkit.domain.queries import Page
from billingkit.errors import ConfigurationError, ValidationError
from billingkit.services.billing_runs import RunReport
from tests.billed_world import MAY_1_TO_4, Billed, billed_world

D = Decimal


@pytest.fixture(scope="module")
def w() -> Billed:
    return billed_world(MemoryStorage())


def page_of(w: Billed) -> Page:  # type: ignore[type-arg]
    return w.s.invoices.list(subscription_id=w.sub.id, order="asc")


def test_a_page_of_invoices_is_one_row_per_invoice_with_the_customers_external_id(w: Billed) -> None:
    frame = page_of(w).to_pandas(customers=w.s)
    assert list(frame.columns) == list(INVOICE_COLUMNS)
    opening, cycle = w.opening(), w.cycle()
    assert list(frame["invoice_id"]) == [opening.id, cycle.id]
    assert list(frame["external_customer_id"]) == ["c1", "c1"]
    # money stays exact: Decimal objects, not floats
    assert frame["total"].dtype == object
    assert list(frame["total"]) == [D("1322.15"), D("1483.93")]
    assert all(type(v) is Decimal for v in frame["total_tax"])
    assert list(frame["total_discount"]) == [D("123.45"), D("0")]
    assert str(frame["period_start"].dt.tz) == "UTC"
    assert pd.api.types.is_datetime64_any_dtype(frame["period_end"])
    assert frame["period_end"].iloc[1] == pd.Timestamp("2026-06-01T00:00:00Z")
    assert frame["line_count"].dtype == "int64"
    assert list(frame["line_count"]) == [1, 2]
    assert list(frame["billing_reason"]) == ["SUBSCRIPTION_CREATE", "SUBSCRIPTION_CYCLE"]
    # a per-customer summary needs no join
    assert frame.groupby("external_customer_id")["total"].sum()["c1"] == D("2806.08")


def test_invoice_lines_are_one_row_per_line(w: Billed) -> None:
    frame = page_of(w).to_pandas(lines=True, customers=[w.customer])
    assert list(frame.columns) == list(LINE_COLUMNS)
    assert list(frame["display_name"]) == ["Base", "Base", "Calls"]
    calls = frame[frame["display_name"] == "Calls"].iloc[0]
    assert (calls["quantity"], calls["amount"]) == (D("150"), D("12.50"))
    assert calls["invoice_number"] == w.cycle().invoice_number
    assert calls["external_customer_id"] == "c1"
    assert calls["price_type"] == "USAGE"
    assert calls["period_start"] == pd.Timestamp("2026-05-01T00:00:00Z")
    assert list(frame["line_item_discount"] + frame["invoice_level_discount"]) == [
        D("123.45"),
        D("0"),
        D("0"),
    ]


def test_money_as_float(w: Billed) -> None:
    frame = page_of(w).to_pandas(money="float", customers={w.customer.id: w.customer})
    assert frame["total"].dtype == "float64"
    assert list(frame["total"]) == [1322.15, 1483.93]
    lines = page_of(w).to_pandas(lines=True, money="float")
    assert lines["quantity"].dtype == "float64" and lines["amount"].dtype == "float64"
    assert lines["amount"].sum() == pytest.approx(2481.5)
    with pytest.raises(ValidationError, match="money must be 'decimal' or 'float'") as caught:
        page_of(w).to_pandas(money="double")
    assert caught.value.details["field"] == "money"


def test_without_customers_the_external_id_is_empty(w: Billed) -> None:
    frame = page_of(w).to_pandas()
    assert list(frame["external_customer_id"]) == [None, None]
    assert list(frame["customer_id"]) == [w.customer.id, w.customer.id]


def test_a_run_reports_invoices_and_other_pages(w: Billed) -> None:
    report = RunReport(subscription_count=1, invoices=[w.cycle()], invoice_count=1)
    frame = report.to_pandas(customers=w.s)
    assert list(frame["invoice_id"]) == [w.cycle().id]
    assert list(frame["external_customer_id"]) == ["c1"]
    customers = w.s.customers.list().to_pandas()
    assert list(customers["external_id"]) == ["c1"]
    assert list(customers["address_country"]) == ["DE"]
    with pytest.raises(ValidationError, match="lines=True needs a page of invoices"):
        w.s.customers.list().to_pandas(lines=True)


def test_a_usage_report_is_one_row_per_window(w: Billed) -> None:
    report = w.stored_gb()
    frame = report.to_pandas()
    assert list(frame.columns) == list(USAGE_COLUMNS)
    days = frame[frame["event_count"] > 0]
    assert list(days["value"]) == [D("3.75"), D("4")]
    assert list(days["window_start"]) == [
        pd.Timestamp("2026-05-02T00:00:00Z"),
        pd.Timestamp("2026-05-03T00:00:00Z"),
    ]
    assert sum(frame["value"]) == report.value == D("7.75")
    assert frame["event_count"].dtype == "int64"
    assert set(frame["aggregation"]) == {"SUM"}
    assert report.to_pandas(money="float")["value"].dtype == "float64"
    # a report without buckets is one row with its total and no window
    total = w.s.usage.report(event_name="storage", aggregation_type="COUNT", **MAY_1_TO_4).to_pandas()
    assert len(total) == 1
    assert (total["value"].iloc[0], total["event_count"].iloc[0]) == (D(3), 3)
    assert pd.isna(total["window_start"].iloc[0])


def test_without_pandas_the_error_names_the_extra(w: Billed, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails as if not installed
    with pytest.raises(ConfigurationError, match=r"pip install 'billingkit\[notebook\]'"):
        page_of(w).to_pandas()
    # everything else works without it
    assert "Invoices 1-2 of 2" in str(page_of(w))
