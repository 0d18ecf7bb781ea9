"""Notebook and terminal display: every display renders, and says what it should.

The world (tests/billed_world.py): a customer named ``<script>alert(1)</script>`` in Germany, a plan
with a flat Base fee and tiered API calls, a once coupon and 19 % VAT, billed for May.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from billingkit import MemoryStorage
from billingkit.display import InvoiceView, describe, to_html, to_text
from billingkit.display.layout import Display, Table, html, text
from billingkit.domain.queries import Page
from billingkit.services.billing_runs import RunReport
from tests.billed_world import SCRIPT_NAME, Billed, billed_world


@pytest.fixture(scope="module")
def w() -> Billed:
    return billed_world(MemoryStorage())


def cells(fragment: str) -> list[str]:
    """The text of every table cell of an HTML fragment, in order."""
    return re.findall(r"<t[hd](?:\s[^>]*)?>(.*?)</t[hd]>", fragment)


def test_html_escapes_every_string() -> None:
    shown = Display(
        '<b>"T"</b>',
        facts=(("<i>", "a & b"),),
        tables=(Table(("<h>",), (("<script>x</script>\nnext",),)),),
        totals=(("t", "<1>"),),
        note="<p>",
    )
    out = html(shown)
    assert "<b>" not in out and "<i>" not in out and "<script>" not in out and "<h>" not in out
    for escaped in (
        "&lt;b&gt;&quot;T&quot;&lt;/b&gt;",
        "a &amp; b",
        "&lt;script&gt;x&lt;/script&gt;<br>next",
    ):
        assert escaped in out
    assert "&lt;1&gt;" in out and "<p>&lt;p&gt;</p>" in out
    # the text rendering keeps the strings as they are, a line break as " / "
    assert "<script>x</script> / next" in text(shown)


def test_invoice_html_in_the_customers_locale_escapes_the_customer_name(w: Billed) -> None:
    view = w.s.invoices.display(w.opening().id)
    assert isinstance(view, InvoiceView)
    out = view._repr_html_()
    assert SCRIPT_NAME not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt; (c1)" in out
    found = cells(out)
    # facts: German dates (de_DE from address_country DE), the period, the locale
    for label, value in (
        ("Status", "FINALIZED"),
        ("Billing period", "01.05.2026 - 01.06.2026"),
        ("Currency", "EUR"),
        ("Locale", "de_DE"),
    ):
        assert found[found.index(label) + 1] == value
    # the line: description (plan name under it), period, quantity, amount, discount
    base = found.index("Base<br>Pro")
    assert found[base : base + 5] == [
        "Base<br>Pro",
        "01.05.2026 - 01.06.2026",
        "1",
        "1.234,50\xa0€",
        "-123,45\xa0€",
    ]
    # the coupon and the tax, then the totals
    assert found[found.index("Discount: Welcome (10\xa0%)") + 1] == "-123,45\xa0€"
    assert found[found.index("VAT (19\xa0% of 1.111,05\xa0€)") + 1] == "211,10\xa0€"
    for label, value in (
        ("Subtotal", "1.234,50\xa0€"),
        ("Total discount", "-123,45\xa0€"),
        ("Total tax", "211,10\xa0€"),
        ("Total", "1.322,15\xa0€"),
    ):
        assert found[found.index(label) + 1] == value


def test_invoice_text_lists_lines_with_quantities_and_totals(w: Billed) -> None:
    cycle = w.cycle()
    out = str(w.s.invoices.display(cycle.id))
    assert out.splitlines()[0] == f"Invoice {cycle.invoice_number}"
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    # June's Base in advance, May's 150 calls (100 x 0.10 + 50 x 0.05 = 12.50) in arrears
    assert re.search(r"Base / Pro\s+01\.06\.2026 - 01\.07\.2026\s+1\s+1\.234,50\xa0€$", rows["Base"])
    assert re.search(r"Calls / Pro\s+01\.05\.2026 - 01\.06\.2026\s+150\s+12,50\xa0€$", rows["Calls"])
    assert re.search(r"Total tax\s+236,93\xa0€$", out, re.M)
    assert re.search(r"^  Total\s+1\.483,93\xa0€$", out, re.M)


def test_an_invoice_alone_displays_in_en_us_and_a_locale_overrides_the_customers(w: Billed) -> None:
    cycle = w.cycle()
    alone = cells(cycle._repr_html_())
    assert alone[alone.index("Total") + 1] == "€1,483.93"
    assert alone[alone.index("Customer") + 1] == cycle.customer_id
    chosen = cells(to_html(cycle.display(customer=w.customer, locale="fr_FR")))
    assert chosen[chosen.index("Total") + 1] == "1\u202f483,93\xa0€"
    assert chosen[chosen.index("Locale") + 1] == "fr_FR"
    # repr stays one line
    assert repr(cycle) == f"<Invoice {cycle.invoice_number} eur 1483.93 FINALIZED 2 lines>"
    assert repr(w.s.invoices.display(cycle.id)) == repr(cycle)
    line = cycle.line_items[1]
    assert repr(line) == f"<InvoiceLineItem {line.id} 'Calls' qty 150 12.50>"
    assert re.search(r"^  Quantity\s+150$", str(line), re.M) and re.search(
        r"^  Amount\s+12\.50$", str(line), re.M
    )


def test_plan_shows_its_prices_and_tiers_as_a_table(w: Billed) -> None:
    found = cells(w.plan._repr_html_())
    assert found[found.index("Name") + 1] == "Pro"
    base = found.index("Base")
    assert found[base : base + 4] == ["Base", "FIXED FLAT_FEE", "€1,234.50 per unit", "MONTHLY ADVANCE"]
    calls = found.index("Calls")
    assert found[calls : calls + 5] == [
        "Calls",
        "USAGE TIERED",
        "2 tiers (SLAB)",
        "MONTHLY ARREAR",
        w.meter_id,
    ]
    tiers = found.index("Flat amount") + 1
    # tier, from, up to (inclusive), unit amount, flat amount
    assert found[tiers : tiers + 10] == ["1", "0", "100", "€0.10", "", "2", "101", "and above", "€0.05", ""]
    assert "Tiers of Calls (SLAB)" in to_text(w.plan)


def test_price_display_and_its_tiers(w: Billed) -> None:
    calls = next(p for p in w.plan.prices if p.display_name == "Calls")
    out = str(calls)
    assert out.splitlines()[0] == "Price Calls"
    assert re.search(r"Charges\s+2 tiers \(SLAB\)$", out, re.M)
    assert re.search(r"^\s+2\s+101\s+and above\s+€0\.05$", out, re.M)
    base = next(p for p in w.plan.prices if p.display_name == "Base")
    assert re.search(r"Charges\s+€1,234\.50 per unit$", str(base), re.M)
    assert "Tiers" not in str(base)


def test_subscription_shows_its_terms_and_line_items(w: Billed) -> None:
    sub = w.s.subscriptions.get(w.sub.id)
    out = str(sub)
    assert out.splitlines()[0] == f"Subscription {sub.id}"
    assert re.search(r"Status\s+active$", out, re.M)
    assert re.search(r"Current period\s+2026-06-01 00:00 UTC - 2026-07-01 00:00 UTC$", out, re.M)
    found = cells(sub._repr_html_())
    calls = found.index("Calls")
    assert found[calls : calls + 6] == [
        "Calls",
        "USAGE",
        sub.line_items[1].price_id,
        w.meter_id,
        "0",
        "ARREAR",
    ]
    assert repr(sub).startswith(f"<Subscription {sub.id} active eur MONTHLY")


def test_customer_display_is_escaped_and_names_the_invoice_locale(w: Billed) -> None:
    out = w.customer._repr_html_()
    assert SCRIPT_NAME not in out and "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    found = cells(out)
    assert found[found.index("External id") + 1] == "c1"
    assert found[found.index("Invoice locale") + 1] == "de_DE"
    assert str(w.customer).splitlines()[0] == f"Customer {SCRIPT_NAME}"


def test_a_page_shows_one_row_per_item(w: Billed) -> None:
    page = w.s.invoices.list(subscription_id=w.sub.id, limit=1)
    assert repr(page) == "<Page 1 of 2 Invoice (offset 0)>"
    out = str(page)
    assert out.splitlines()[0] == "Invoices 1-1 of 2"
    (item,) = page.items
    assert re.search(rf"^  {item.id}\s+{item.invoice_number}\s+{item.customer_id}\s", out, re.M)
    assert out.endswith("more on the next page (offset 1)")
    customers = w.s.customers.list()
    found = cells(customers._repr_html_())
    assert found[:4] == ["Customer", "External id", "Name", "Email"]
    assert found[4:7] == [w.customer.id, "c1", "&lt;script&gt;alert(1)&lt;/script&gt;"]
    empty: Page[object] = Page(items=[], total=0, limit=50, offset=0)
    assert repr(empty) == "<Page 0 of 0 item (offset 0)>"


def test_a_run_report_shows_counts_invoices_and_failures(w: Billed) -> None:
    cycle = w.cycle()
    report = RunReport(
        subscription_count=2,
        invoices=[cycle],
        notification_count=3,
        failures=[("subs_x", "validation_error", "price <p> is missing")],
        invoice_count=1,
    )
    out = str(report)
    for label, value in (("Subscriptions billed", "2"), ("Invoices issued", "1"), ("Failures", "1")):
        assert re.search(rf"^  {label}\s+{value}$", out, re.M)
    assert re.search(rf"^  {cycle.id}\s+{cycle.invoice_number}\s.*FINALIZED\s+€1,483\.93$", out, re.M)
    found = cells(report._repr_html_())
    failure = found.index("subs_x")
    assert found[failure : failure + 3] == ["subs_x", "validation_error", "price &lt;p&gt; is missing"]
    assert repr(report) == "<RunReport 2 subscriptions, 1 invoices, 3 notifications, 1 failures>"


def test_a_usage_report_shows_its_windows(w: Billed) -> None:
    report = w.stored_gb()
    assert report.value == Decimal("7.75")
    out = str(report)
    assert out.splitlines()[0] == "Usage of storage"
    assert re.search(r"^  Aggregation\s+SUM$", out, re.M)
    assert re.search(r"^  Value\s+7\.75$", out, re.M)
    assert re.search(r"^  2026-05-02 00:00 UTC\s+2026-05-03 00:00 UTC\s+3\.75\s+2$", out, re.M)
    assert re.search(r"^  2026-05-03 00:00 UTC\s+2026-05-04 00:00 UTC\s+4\s+1$", out, re.M)


def test_show_prints_the_text_rendering(w: Billed, capsys: pytest.CaptureFixture[str]) -> None:
    w.plan.show()
    assert capsys.readouterr().out == to_text(w.plan) + "\n"
    assert w.plan.to_text() == str(w.plan)


def test_an_object_without_a_display_is_refused() -> None:
    with pytest.raises(TypeError, match="no display for int"):
        describe(3)
