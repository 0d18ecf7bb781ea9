"""The invoice PDF, drawn with fpdf2 (the optional ``pdf`` extra) from :mod:`.invoice_text`.

Layout (A4 portrait): the seller and the title on top, the customer block beside the invoice
facts, then the lines table (its heading row repeats on every page, so many lines run over pages),
the adjustments (each coupon and each tax rate with its amount) and the totals; every page has a
footer with the invoice number and ``page N of M``.

Text uses the PDF core font Helvetica in the Windows-1252 encoding (Latin letters, ``€``, typographic
quotes). No dependency ships a Unicode TrueType font to embed, so a character outside that encoding
is first written without its accents (``ł`` stays ``?``, ``ź`` becomes ``z``) and otherwise as ``?``:
the document stays readable and the loss is visible rather than silent.

The output is deterministic: the same invoice gives the same bytes (the document's creation date is
the invoice's, not the clock's).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import datetime

from fpdf import FPDF
from fpdf.enums import TableBordersLayout, XPos, YPos
from fpdf.fonts import FontFace

from billingkit.documents.invoice_text import InvoiceText

__all__ = ["ENCODING", "printable", "render_pdf"]

#: The core fonts' encoding this renderer writes in.
ENCODING = "windows-1252"
_FONT = "Helvetica"
_LINE_COLUMNS = ("Description", "Period", "Quantity", "Amount", "Discount")
_LINE_WIDTHS = (62, 48, 22, 24, 24)  # millimetres; 180 = A4 width less 15 mm margins
_LINE_ALIGN = ("LEFT", "LEFT", "RIGHT", "RIGHT", "RIGHT")
_GREY = (235, 235, 235)


def printable(text: str) -> str:
    """``text`` with every character the core fonts cannot show replaced: by its letters without
    accents when it has them (NFKD), else by ``?``."""
    out: list[str] = []
    for char in text:
        try:
            char.encode(ENCODING)
            out.append(char)
            continue
        except UnicodeEncodeError:
            pass
        base = "".join(
            part
            for part in unicodedata.normalize("NFKD", char)
            if not unicodedata.combining(part) and _encodable(part)
        )
        out.append(base or "?")
    return "".join(out)


def _encodable(char: str) -> bool:
    try:
        char.encode(ENCODING)
    except UnicodeEncodeError:
        return False
    return True


class _InvoicePdf(FPDF):
    def __init__(self, footer_text: str) -> None:
        super().__init__(orientation="portrait", unit="mm", format="A4")
        self.core_fonts_encoding = ENCODING
        self.footer_text = footer_text
        self.set_margins(15, 15, 15)
        self.set_auto_page_break(auto=True, margin=18)

    def footer(self) -> None:
        self.set_y(-13)
        self.set_font(_FONT, size=8)
        self.set_text_color(110)
        self.cell(0, 5, f"{self.footer_text} - page {self.page_no()} of {{nb}}", align="C")
        self.set_text_color(0)


def _pairs(pdf: FPDF, pairs: Sequence[tuple[str, str]], *, x: float, width: float, bold_last: bool) -> None:
    """(label, value) rows, label left and value right, within ``width`` from ``x``."""
    for index, (label, value) in enumerate(pairs):
        bold = bold_last and index == len(pairs) - 1
        pdf.set_x(x)
        pdf.set_font(_FONT, style="B" if bold else "", size=9)
        pdf.cell(width * 0.62, 5.5, printable(label))
        pdf.cell(width * 0.38, 5.5, printable(value), align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def _header(pdf: FPDF, text: InvoiceText) -> None:
    pdf.set_font(_FONT, style="B", size=16)
    pdf.cell(110, 8, printable(text.seller[0] if text.seller else ""))
    pdf.cell(0, 8, "INVOICE", align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_font(_FONT, size=9)
    for line in text.seller[1:]:
        pdf.cell(0, 4.5, printable(line), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(6)
    top = pdf.get_y()
    pdf.set_font(_FONT, style="B", size=9)
    pdf.cell(85, 5, "Bill to", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_font(_FONT, size=9)
    for line in text.customer:
        pdf.multi_cell(85, 4.5, printable(line), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    customer_bottom = pdf.get_y()
    pdf.set_y(top)
    _pairs(pdf, text.facts, x=105, width=90, bold_last=False)
    pdf.set_y(max(customer_bottom, pdf.get_y()) + 6)


def _lines(pdf: FPDF, text: InvoiceText) -> None:
    pdf.set_font(_FONT, size=8.5)
    with pdf.table(
        col_widths=_LINE_WIDTHS,
        text_align=_LINE_ALIGN,
        borders_layout=TableBordersLayout.HORIZONTAL_LINES,
        headings_style=FontFace(emphasis="BOLD", fill_color=_GREY),
        line_height=4.5,
        padding=(1.2, 1, 1.2, 1),
        repeat_headings=1,
        width=sum(_LINE_WIDTHS),
    ) as table:
        table.row(list(_LINE_COLUMNS))
        for line in text.lines:
            table.row(
                [
                    printable(line.description),
                    printable(line.period),
                    printable(line.quantity),
                    printable(line.amount),
                    printable(line.discount),
                ]
            )
    if not text.lines:
        pdf.set_font(_FONT, style="I", size=9)
        pdf.cell(0, 6, "No lines.", new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def _summary(pdf: FPDF, text: InvoiceText) -> None:
    needed = 5.5 * (len(text.adjustments) + len(text.totals)) + 12
    if pdf.get_y() + needed > pdf.h - pdf.b_margin:
        pdf.add_page()
    pdf.ln(4)
    if text.adjustments:
        _pairs(pdf, text.adjustments, x=85, width=110, bold_last=False)
        pdf.ln(2)
    _pairs(pdf, text.totals[:5], x=85, width=110, bold_last=True)
    pdf.ln(2)
    _pairs(pdf, text.totals[5:], x=85, width=110, bold_last=False)


def render_pdf(text: InvoiceText, *, title: str, created: datetime) -> bytes:
    """The PDF of ``text``: ``title`` is the document title and footer label, ``created`` its
    creation date (given, so the same document gives the same bytes)."""
    pdf = _InvoicePdf(printable(title))
    pdf.set_title(printable(title))
    pdf.set_lang(text.locale.replace("_", "-"))
    if text.seller:
        pdf.set_author(printable(text.seller[0]))
    pdf.set_creator("billingkit")
    pdf.set_creation_date(created)
    pdf.add_page()
    _header(pdf, text)
    _lines(pdf, text)
    _summary(pdf, text)
    return bytes(pdf.output())
