"""Documents made from stored records: the invoice PDF.

:func:`render_invoice_pdf` needs the optional ``pdf`` extra (fpdf2), imported on first use, so
``import billingkit`` stays light and works without it. :func:`invoice_text` (what the document
says, formatted for the customer's locale) needs only babel.
"""

from __future__ import annotations

from collections.abc import Sequence

from babel import Locale

from billingkit.documents.invoice_text import (
    DEFAULT_LOCALE,
    InvoiceText,
    LineRow,
    invoice_locale,
    invoice_text,
)
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.errors import ConfigurationError

__all__ = [
    "DEFAULT_LOCALE",
    "PDF_EXTRA_MODULES",
    "InvoiceText",
    "LineRow",
    "invoice_locale",
    "invoice_text",
    "render_invoice_pdf",
]

#: The modules the ``pdf`` extra brings (fpdf2 and what it imports).
PDF_EXTRA_MODULES = frozenset({"fpdf", "PIL", "fontTools", "defusedxml"})


def render_invoice_pdf(
    invoice: Invoice,
    *,
    customer: Customer | None = None,
    seller: Sequence[str] = (),
    locale: Locale | str | None = None,
) -> bytes:
    """The PDF of ``invoice`` (bytes of an ``application/pdf`` document).

    ``customer`` is the recipient block and picks the locale money and dates are written in (its
    ``metadata["locale"]``, else its ``address_country``, else ``en_US``) and its time zone;
    ``seller`` is the issuer's lines, its name first; ``locale`` overrides the customer's.
    Raises ``ConfigurationError`` naming ``pip install 'billingkit[pdf]'`` without the extra (as a
    PostgreSQL URL without its driver does), and ``ValidationError`` for an unknown ``locale``.
    """
    text = invoice_text(invoice, customer=customer, seller=seller, locale=locale)
    try:
        from billingkit.documents.invoice_pdf import render_pdf
    except ModuleNotFoundError as exc:
        if exc.name in PDF_EXTRA_MODULES:
            raise ConfigurationError(
                f"invoice PDFs need the fpdf2 library ({exc.name} is not installed): "
                "pip install 'billingkit[pdf]'"
            ) from exc
        raise
    return render_pdf(text, title=f"Invoice {text.title}", created=invoice.finalized_at or invoice.created_at)
