"""``GET /v1/invoices/{id}/pdf`` on every store: a subscription's real opening invoice as a PDF.

Plan Pro (see ``test_subscriptions_http.make_world``) bills 49.00 usd a month in advance, so the
opening invoice of a subscription started at the clock's 2026-05-01 09:30 UTC has one line of
49.00 for 2026-05-01 .. 2026-06-01, total and amount due 49.00. The customer lives in Germany
(``address_country`` DE, so ``de_DE``): 49.00 usd reads ``49,00 $``, dates ``01.05.2026``.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pypdf import PdfReader

from tests.http.conftest import assert_error
from tests.http.test_subscriptions_http import created, invoices_of, make_world, subscribe


def pdf_text(data: bytes) -> str:
    reader = PdfReader(io.BytesIO(data))
    return " ".join(" ".join(page.extract_text() for page in reader.pages).split())


@pytest.fixture
def opening(client: TestClient, test_key: dict[str, str]) -> dict[str, Any]:
    world = make_world(client, test_key)
    customer = created(
        client.post(
            "/v1/customers",
            json={
                "external_id": "schmidt",
                "name": "Jürgen Schmidt KG",
                "email": "billing@schmidt.example",
                "address_line1": "Hauptstraße 5",
                "address_postal_code": "80331",
                "address_city": "München",
                "address_country": "DE",
            },
            headers=test_key,
        )
    )
    sub = subscribe(client, test_key, {**world, "customer_id": customer["id"]})
    (invoice,) = invoices_of(client, test_key, sub["id"])["items"]
    return invoice  # type: ignore[no-any-return]


def test_the_pdf_of_a_subscriptions_opening_invoice(
    client: TestClient, test_key: dict[str, str], opening: dict[str, Any]
) -> None:
    response = client.get(f"/v1/invoices/{opening['id']}/pdf", headers=test_key)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == f'inline; filename="{opening["id"]}.pdf"'
    text = pdf_text(response.content)
    assert opening["invoice_number"] == "INV-202605-00001"
    for expected in (
        "Acme INVOICE",  # the seller: the tenant's name
        "Bill to Jürgen Schmidt KG billing@schmidt.example Hauptstraße 5 80331 München DE",
        "Invoice number INV-202605-00001",
        "Status FINALIZED",
        "Billing period 01.05.2026 - 01.06.2026",
        "Platform fee Pro 01.05.2026 - 01.06.2026 1 49,00 $",
        "Subtotal 49,00 $",
        "Total discount 0,00 $",
        "Total tax 0,00 $",
        "Total 49,00 $",
        "Amount due 49,00 $",
        "Amount paid 0,00 $",
        "Amount remaining 49,00 $",
    ):
        assert expected in text, expected
    # Nothing is stored: force_generate draws the same document again.
    again = client.get(f"/v1/invoices/{opening['id']}/pdf?force_generate=true", headers=test_key)
    assert again.status_code == 200 and again.content == response.content


def test_invoice_pdf_url_points_at_the_route(
    client: TestClient, test_key: dict[str, str], opening: dict[str, Any]
) -> None:
    path = f"/v1/invoices/{opening['id']}/pdf"
    assert opening["invoice_pdf_url"] == path
    assert client.get(f"/v1/invoices/{opening['id']}", headers=test_key).json()["invoice_pdf_url"] == path
    where = client.get(f"{path}?url=true", headers=test_key)
    assert where.status_code == 200, where.text
    assert where.json() == {"presigned_url": f"http://testserver{path}"}


def test_errors(
    client: TestClient,
    test_key: dict[str, str],
    prod_key: dict[str, str],
    reader_key: dict[str, str],
    opening: dict[str, Any],
) -> None:
    path = f"/v1/invoices/{opening['id']}/pdf"
    assert client.get(path, headers=reader_key).status_code == 200  # reading invoices is enough
    assert_error(client.get(path), 401, "unauthorized")
    assert_error(client.get(path, headers=prod_key), 404, "not_found")  # another environment's
    assert_error(client.get("/v1/invoices/inv_nope/pdf", headers=test_key), 404, "not_found")
    assert_error(client.get("/v1/invoices/inv_nope/pdf?url=true", headers=test_key), 404, "not_found")
    body = assert_error(client.get(f"{path}?url=maybe", headers=test_key), 400, "validation_error")
    assert "url" in body["message"]
