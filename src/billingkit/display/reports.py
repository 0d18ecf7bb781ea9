"""What billing run reports and usage reports show (their services hand over the parts)."""

from __future__ import annotations

from collections.abc import Sequence

from billingkit.display.layout import Display, Table
from billingkit.display.views import instant, rows_table
from billingkit.domain.invoices import Invoice
from billingkit.domain.usage_results import UsageResult

__all__ = ["run_report_display", "usage_report_display"]


def run_report_display(
    *,
    subscription_count: int,
    invoice_count: int,
    notification_count: int,
    invoices: Sequence[Invoice],
    failures: Sequence[tuple[str, str, str]],
) -> Display:
    """A billing run: its counts, the invoices it kept, and each subscription it could not bill."""
    tables = []
    if invoices:
        tables.append(rows_table(invoices, caption="Invoices"))
    if failures:
        tables.append(Table(("Subscription", "Code", "Message"), tuple(failures), caption="Failures"))
    facts = (
        ("Subscriptions billed", str(subscription_count)),
        ("Invoices issued", str(invoice_count)),
        ("Notifications recorded", str(notification_count)),
        ("Failures", str(len(failures))),
    )
    return Display("Billing run", facts=facts, tables=tuple(tables))


def usage_report_display(
    *, event_name: str, aggregation: str, meter_id: str | None, result: UsageResult
) -> Display:
    """A usage report: the total, then its time buckets and its groups."""
    facts = tuple(
        (label, value)
        for label, value in (
            ("Event", event_name),
            ("Aggregation", aggregation),
            ("Meter", meter_id or ""),
            ("Value", f"{result.value:,}"),
            ("Events", str(result.event_count)),
        )
        if value
    )
    tables = []
    if result.buckets:
        rows = tuple(
            (instant(b.start), instant(b.end), f"{b.value:,}", str(b.event_count)) for b in result.buckets
        )
        tables.append(
            Table(
                ("From", "To", "Value", "Events"),
                rows,
                caption="Windows",
                numeric=frozenset({"Value", "Events"}),
            )
        )
    if result.groups:
        group_rows = tuple((str(g.key), f"{g.value:,}", str(g.event_count)) for g in result.groups)
        tables.append(
            Table(
                ("Group", "Value", "Events"),
                group_rows,
                caption="Groups",
                numeric=frozenset({"Value", "Events"}),
            )
        )
    return Display(f"Usage of {event_name}", facts=facts, tables=tuple(tables))
