"""Recalculating a DRAFT subscription invoice in place, on memory, SQLite and PostgreSQL.

The world is tests/billed_world.py with a finalization delay, so the period-end invoice of 1 June
(June's Base 1,234.50 plus May's 150 calls, 12.50; VAT 19 %) stays a DRAFT.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Settings
from billingkit.domain.invoices import InvoiceStatus
from billingkit.errors import InvalidOperation, VersionConflict
from tests.billed_world import Billed, billed_world

D = Decimal


@pytest.fixture
def w(storage: Any) -> Billed:
    return billed_world(storage, Settings(invoice_finalization_delay=timedelta(days=3)))


def test_a_draft_is_priced_again_from_late_usage_and_stored_in_place(w: Billed) -> None:
    draft = w.cycle()
    assert (draft.invoice_status, draft.total) == (InvoiceStatus.DRAFT, D("1483.93"))
    w.usage(40, datetime(2026, 5, 20, tzinfo=UTC), prefix="late")
    w.clock.advance(timedelta(hours=2))
    expected = w.s.invoices.recompute(draft.id).recomputed
    updates = len(w.s.notifications.list(event_type="invoice.update", entity_id=draft.id).items)

    saved = w.s.invoices.recalculate(draft.id)

    # 190 calls, SLAB: 100 x 0.10 + 90 x 0.05 = 14.50; subtotal 1,249.00; VAT 237.31; total 1,486.31
    assert (saved.id, saved.invoice_status, saved.version) == (
        draft.id,
        InvoiceStatus.DRAFT,
        draft.version + 1,
    )
    assert (saved.subtotal, saved.total_tax, saved.total, saved.amount_due, saved.amount_remaining) == (
        D("1249.00"),
        D("237.31"),
        D("1486.31"),
        D("1486.31"),
        D("1486.31"),
    )
    calls = next(line for line in saved.line_items if line.display_name == "Calls")
    assert (calls.quantity, calls.amount) == (D("190"), D("14.50"))
    assert saved.total == expected.total and saved.total_tax == expected.total_tax
    assert saved.last_computed_at == w.clock.now()
    assert saved.finalize_at == w.clock.now() + timedelta(days=3)  # held again from now
    assert saved.taxes and all(tax.entity_id == draft.id for tax in saved.taxes)
    # stored as answered, exactly (every store keeps the decimals)
    assert w.s.invoices.get(draft.id) == saved
    # nothing left to change: the diff of the stored draft is empty
    assert not w.s.invoices.recompute(draft.id)
    events = w.s.notifications.list(event_type="invoice.update", entity_id=draft.id).items
    assert len(events) == updates + 1
    assert events[-1].payload["invoice"]["total"] == "1486.31"


def test_finalize_numbers_the_recalculated_draft(w: Billed) -> None:
    draft = w.cycle()
    finalized = w.s.invoices.recalculate(draft.id, finalize=True)
    assert finalized.invoice_status is InvoiceStatus.FINALIZED
    assert finalized.invoice_number is not None
    assert finalized.total == draft.total == D("1483.93")
    assert finalized.version == draft.version + 2


def test_refusals_write_nothing(w: Billed) -> None:
    opening, draft = w.opening(), w.cycle()
    with pytest.raises(InvalidOperation, match="only a DRAFT"):
        w.s.invoices.recalculate(opening.id)
    with pytest.raises(VersionConflict):
        w.s.invoices.recalculate(draft.id, version=draft.version + 5)
    with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
        edited = uow.invoices.update(draft.model_copy(update={"is_manually_edited": True}))
        uow.commit()
    with pytest.raises(InvalidOperation, match="edited by hand"):
        w.s.invoices.recalculate(draft.id)
    assert w.s.invoices.get(draft.id) == edited
    assert w.s.invoices.get(opening.id) == opening
