"""The invoice document: its wording (locale, money, dates) and the PDF, read back with pypdf.

The invoice: three lines summing to 1,234.50, a 10 % coupon (1,234.50 x 10 % = 123.45, spread
over the lines as 100.00 + 20.00 + 3.45), VAT 20 % on 1,234.50 - 123.45 = 1,111.05 (= 222.21),
total 1,234.50 - 123.45 + 222.21 = 1,333.26, nothing paid yet.
"""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D
from typing import Any

import pytest
from pypdf import PdfReader

from billingkit import Customer, Invoice, InvoiceCouponApplication, InvoiceLineItem, InvoiceTax, TaxRate
from billingkit.documents import invoice_locale, invoice_text, render_invoice_pdf
from billingkit.documents.invoice_pdf import printable
from billingkit.errors import ValidationError

MAR = datetime(2026, 3, 1, tzinfo=UTC)
APR = datetime(2026, 4, 1, tzinfo=UTC)
COMMON: dict[str, Any] = {
    "tenant_id": "tenant_1",
    "environment_id": "env_1",
    "created_at": MAR,
    "updated_at": MAR,
    "created_by": "test",
    "updated_by": "test",
}


def line(n: int, name: str, quantity: str, amount: str, invoice_discount: str = "0") -> InvoiceLineItem:
    return InvoiceLineItem(
        id=f"inv_line_{n}",
        display_name=name,
        plan_display_name="Pro",
        quantity=D(quantity),
        amount=D(amount),
        invoice_level_discount=D(invoice_discount),
        period_start=MAR,
        period_end=APR,
    )


def make_invoice(currency: str = "eur", **fields: Any) -> Invoice:
    values: dict[str, Any] = {
        **COMMON,
        "id": "inv_1",
        "customer_id": "cust_1",
        "currency": currency,
        "billing_reason": "SUBSCRIPTION_CYCLE",
        "invoice_number": "INV-202603-00007",
        "invoice_status": "FINALIZED",
        "subtotal": D("1234.50"),
        "total_discount": D("123.45"),
        "total_tax": D("222.21"),
        "total": D("1333.26"),
        "amount_due": D("1333.26"),
        "amount_remaining": D("1333.26"),
        "period_start": MAR,
        "period_end": APR,
        "issue_date": MAR,
        "finalized_at": MAR,
        "due_date": MAR + timedelta(days=31),
        "coupon_applications": (
            InvoiceCouponApplication(
                id="coupon_app_1",
                **COMMON,
                invoice_id="inv_1",
                coupon_id="coupon_1",
                coupon_snapshot={"name": "Spring ten"},
                discount_type="percentage",
                discount_percentage=D("10"),
                discounted_amount=D("123.45"),
                original_price=D("1234.50"),
                final_price=D("1111.05"),
                currency=currency,
                applied_at=MAR,
            ),
        ),
        "taxes": (
            InvoiceTax(
                id="taxapp_1",
                **COMMON,
                tax_rate_id="taxrate_1",
                entity_id="inv_1",
                tax_rate=TaxRate(
                    id="taxrate_1",
                    **COMMON,
                    name="VAT",
                    code="VAT20",
                    tax_rate_type="percentage",
                    percentage_value=D("20"),
                ),
                taxable_amount=D("1111.05"),
                tax_amount=D("222.21"),
                currency=currency,
                applied_at=MAR,
                idempotency_key="inv_1:taxrate_1",
            ),
        ),
        "line_items": (
            line(1, "Platform fee", "1", "1000.00", "100.00"),
            line(2, "API calls", "8000", "200.00", "20.00"),
            line(3, "Seats", "3", "34.50", "3.45"),
        ),
    }
    return Invoice(**{**values, **fields})


def make_customer(**fields: Any) -> Customer:
    values: dict[str, Any] = {
        **COMMON,
        "id": "cust_1",
        "external_id": "jm",
        "name": "Jürgen Müller",
        "email": "jm@example.de",
        "address_line1": "Hauptstraße 1",
        "address_postal_code": "10115",
        "address_city": "Berlin",
        "address_country": "DE",
    }
    return Customer(**{**values, **fields})


def pdf_text(data: bytes) -> tuple[int, str]:
    """(pages, the text of all pages with every run of white space as one space)."""
    reader = PdfReader(io.BytesIO(data))
    text = " ".join(page.extract_text() for page in reader.pages)
    return len(reader.pages), " ".join(text.split())


def test_the_pdf_says_who_what_and_how_much_in_the_customers_locale() -> None:
    data = render_invoice_pdf(make_invoice(), customer=make_customer(), seller=["Acme GmbH"])
    assert data.startswith(b"%PDF-")
    pages, text = pdf_text(data)
    assert pages == 1
    for expected in (
        "Acme GmbH",
        "INVOICE",
        "Bill to Jürgen Müller jm@example.de Hauptstraße 1 10115 Berlin DE",
        "Invoice number INV-202603-00007",
        "Status FINALIZED",
        "Payment status PENDING",
        "Issue date 01.03.2026",
        "Due date 01.04.2026",
        "Billing period 01.03.2026 - 01.04.2026",
        "Description Period Quantity Amount Discount",
        # de_DE: "." groups thousands, "," marks decimals, the euro sign follows the amount.
        "Platform fee Pro 01.03.2026 - 01.04.2026 1 1.000,00 € -100,00 €",
        "API calls Pro 01.03.2026 - 01.04.2026 8.000 200,00 € -20,00 €",
        "Seats Pro 01.03.2026 - 01.04.2026 3 34,50 € -3,45 €",
        "Discount: Spring ten (10 %) -123,45 €",
        "VAT (20 % of 1.111,05 €) 222,21 €",
        "Subtotal 1.234,50 €",
        "Total discount -123,45 €",
        "Total tax 222,21 €",
        "Prepaid credits applied 0,00 €",
        "Total 1.333,26 €",
        "Amount due 1.333,26 €",
        "Amount paid 0,00 €",
        "Amount remaining 1.333,26 €",
        "Invoice INV-202603-00007 - page 1 of 1",
    ):
        assert expected in text, expected


def test_en_us_and_usd_and_a_draft() -> None:
    customer = make_customer(name="Jane Doe", address_country="US", address_city="Austin")
    draft = make_invoice("usd", invoice_number=None, invoice_status="DRAFT", finalized_at=None)
    _, text = pdf_text(render_invoice_pdf(draft, customer=customer))
    for expected in (
        "Invoice number DRAFT",
        "Status DRAFT",
        "Issue date Mar 1, 2026",
        "Platform fee Pro Mar 1, 2026 - Apr 1, 2026 1 $1,000.00 -$100.00",
        "API calls Pro Mar 1, 2026 - Apr 1, 2026 8,000 $200.00 -$20.00",
        "Discount: Spring ten (10%) -$123.45",
        "VAT (20% of $1,111.05) $222.21",
        "Subtotal $1,234.50",
        "Total $1,333.26",
        "Amount due $1,333.26",
        "Invoice DRAFT - page 1 of 1",
    ):
        assert expected in text, expected


def test_the_locale_comes_from_metadata_then_country_then_en_us() -> None:
    assert str(invoice_locale(make_customer(metadata={"locale": "fr-CH"}))) == "fr_CH"
    assert str(invoice_locale(make_customer(address_country="de"))) == "de_DE"
    assert str(invoice_locale(make_customer(address_country="CH"))) == "de_CH"
    assert str(invoice_locale(make_customer(address_country="US"))) == "en_US"
    # Unknown or unusable: a locale babel does not know, a country name instead of a code.
    assert str(invoice_locale(make_customer(metadata={"locale": "xx_QQ"}, address_country=None))) == "en_US"
    assert str(invoice_locale(make_customer(address_country="Germany"))) == "en_US"
    assert str(invoice_locale(None)) == "en_US"
    text = invoice_text(make_invoice(), customer=make_customer(metadata={"locale": "en_GB"}))
    assert dict(text.totals)["Total"] == "€1,333.26"
    # de_CH groups with a right single quotation mark, after a no-break space.
    assert dict(invoice_text(make_invoice(), locale="de-CH").totals)["Total"] == "EUR\xa01\u2019333.26"
    with pytest.raises(ValidationError) as caught:
        invoice_text(make_invoice(), locale="no such locale")
    assert caught.value.field == "locale"


def test_dates_are_the_customers_calendar_days() -> None:
    # 2026-03-01 00:00 UTC is still 28 February in New York.
    customer = make_customer(timezone="America/New_York", address_country="US")
    facts = dict(invoice_text(make_invoice(), customer=customer).facts)
    assert facts["Issue date"] == "Feb 28, 2026"


def test_characters_outside_the_core_fonts_are_replaced_visibly() -> None:
    assert printable("Jürgen €5 “quoted”") == "Jürgen €5 “quoted”"  # all in Windows-1252
    assert printable("Łódź") == "?ódz"  # ź loses its accent; Ł has no plain form
    assert printable("北京 Ltd") == "?? Ltd"
    customer = make_customer(name="Łukasz Źrebiec 北京")
    _, text = pdf_text(render_invoice_pdf(make_invoice(), customer=customer))
    assert "Bill to ?ukasz Zrebiec ??" in text


def test_many_lines_run_over_pages_with_the_heading_repeated() -> None:
    many = tuple(line(n, f"Charge {n:03d}", "1", "10.00") for n in range(120))
    invoice = make_invoice("usd", line_items=many, coupon_applications=(), taxes=())
    pages, text = pdf_text(render_invoice_pdf(invoice, customer=make_customer(address_country="US")))
    assert pages > 2
    assert text.count("Description Period Quantity Amount Discount") == pages
    assert all(f"Charge {n:03d}" in text for n in range(120))
    assert f"page {pages} of {pages}" in text
    assert "Subtotal $1,234.50" in text  # the totals are the invoice's, on the last page


def test_the_same_invoice_gives_the_same_bytes() -> None:
    first = render_invoice_pdf(make_invoice(), customer=make_customer(), seller=["Acme GmbH"])
    assert render_invoice_pdf(make_invoice(), customer=make_customer(), seller=["Acme GmbH"]) == first


def test_invoice_to_pdf_is_the_same_document() -> None:
    invoice, customer = make_invoice(), make_customer()
    expected = render_invoice_pdf(invoice, customer=customer, seller=["Acme GmbH"])
    assert invoice.to_pdf(customer=customer, seller=["Acme GmbH"]) == expected
    _, text = pdf_text(invoice.to_pdf(customer=customer, locale="en_US"))
    assert "€1,000.00" in text and "Jürgen Müller" in text


def test_without_the_pdf_extra_the_error_names_it() -> None:
    code = (
        "import sys; sys.modules['fpdf'] = None\n"
        "from billingkit.testing.contracts.samples import sample\n"
        "from billingkit.documents import render_invoice_pdf\n"
        "from billingkit.errors import ConfigurationError\n"
        "try:\n"
        "    render_invoice_pdf(sample('invoices'))\n"
        "except ConfigurationError as exc:\n"
        "    print(exc.code, exc.message)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        "configuration_error invoice PDFs need the fpdf2 library (fpdf is not installed): "
        "pip install 'billingkit[pdf]'"
    )


def test_the_pdf_library_is_loaded_only_to_draw_a_pdf() -> None:
    code = (
        "import sys, billingkit, billingkit.documents\n"
        "from billingkit.http import create_app\n"
        "create_app(billingkit.Billing())\n"
        "print('fpdf' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
