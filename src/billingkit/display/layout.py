"""What a display says, and its two drawings: HTML for notebooks, plain text for terminals.

A :class:`Display` is strings only (a title, label/value facts, tables, totals), built by the
views of :mod:`billingkit.display.views`; :func:`html` and :func:`text` lay it out. :func:`html` is
the one HTML renderer, and it escapes every string it is given: a customer named ``<script>``
shows as that text, never as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Display", "Table", "html", "text"]


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of strings under ``headers``; the columns named in ``numeric`` align right."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    numeric: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Display:
    """Everything one object shows, in order: ``title``, ``facts`` (label, value), ``tables``,
    ``totals`` (label, value), then a ``note``."""

    title: str
    facts: tuple[tuple[str, str], ...] = ()
    tables: tuple[Table, ...] = ()
    totals: tuple[tuple[str, str], ...] = ()
    note: str = ""


# -- HTML ---------------------------------------------------------------------------------------

_STYLE = (
    "<style>"
    ".billingkit table{border-collapse:collapse;margin:0.3em 0}"
    ".billingkit th,.billingkit td{padding:0.15em 0.6em;text-align:left;vertical-align:top}"
    ".billingkit td.num,.billingkit th.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".billingkit caption{text-align:left;font-weight:bold;padding-top:0.4em}"
    ".billingkit .bk-totals td{font-weight:bold}"
    "</style>"
)


def _cell(value: str) -> str:
    return escape(value, quote=True).replace("\n", "<br>")


def _pairs(pairs: Sequence[tuple[str, str]], css: str) -> str:
    rows = "".join(
        f'<tr><th scope="row">{_cell(label)}</th><td class="num">{_cell(value)}</td></tr>'
        for label, value in pairs
    )
    return f'<table class="{css}">{rows}</table>'


def _table(table: Table) -> str:
    def klass(header: str) -> str:
        return ' class="num"' if header in table.numeric else ""

    caption = f"<caption>{_cell(table.caption)}</caption>" if table.caption else ""
    head = "".join(f"<th{klass(h)}>{_cell(h)}</th>" for h in table.headers)
    body = "".join(
        "<tr>"
        + "".join(f"<td{klass(h)}>{_cell(v)}</td>" for h, v in zip(table.headers, row, strict=True))
        + "</tr>"
        for row in table.rows
    )
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html(display: Display) -> str:
    """``display`` as an HTML fragment (a ``div.billingkit``), every string escaped."""
    parts = [_STYLE, f'<div class="billingkit"><strong>{_cell(display.title)}</strong>']
    if display.facts:
        parts.append(_pairs(display.facts, "bk-facts"))
    parts.extend(_table(table) for table in display.tables)
    if display.totals:
        parts.append(_pairs(display.totals, "bk-totals"))
    if display.note:
        parts.append(f"<p>{_cell(display.note)}</p>")
    parts.append("</div>")
    return "".join(parts)


# -- text ---------------------------------------------------------------------------------------


def _flat(value: str) -> str:
    return value.replace("\n", " / ")


def _text_pairs(pairs: Sequence[tuple[str, str]], *, right: bool) -> list[str]:
    width = max(len(label) for label, _ in pairs)
    values = [_flat(value) for _, value in pairs]
    value_width = max(len(value) for value in values)
    return [
        f"  {label.ljust(width)}  {value.rjust(value_width) if right else value}"
        for (label, _), value in zip(pairs, values, strict=True)
    ]


def _text_table(table: Table) -> list[str]:
    rows = [tuple(_flat(v) for v in row) for row in table.rows]
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(table.headers)]

    def line(cells: Sequence[str]) -> str:
        return (
            "  "
            + "  ".join(
                cell.rjust(w) if header in table.numeric else cell.ljust(w)
                for cell, w, header in zip(cells, widths, table.headers, strict=True)
            ).rstrip()
        )

    out = [f"  {table.caption}"] if table.caption else []
    out.append(line(table.headers))
    out.append("  " + "  ".join("-" * w for w in widths))
    out.extend(line(row) for row in rows)
    return out


def text(display: Display) -> str:
    """``display`` as plain text: the title, facts, aligned tables and right-aligned totals."""
    out = [display.title, "=" * len(display.title)]
    if display.facts:
        out.extend(_text_pairs(display.facts, right=False))
    for table in display.tables:
        out.append("")
        out.extend(_text_table(table))
    if display.totals:
        out.append("")
        out.extend(_text_pairs(display.totals, right=True))
    if display.note:
        out.extend(("", display.note))
    return "\n".join(out)
