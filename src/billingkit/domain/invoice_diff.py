"""What changed between a stored invoice and the same invoice computed again from its inputs.

:func:`diff_invoices` pairs the lines of two invoices and reports, line by line, what was added,
removed or changed (quantity, amount, discount), then the totals that differ. Pure: the recompute
(:mod:`billingkit.services.invoice_recompute`) computes the second invoice with the billing run's
own code.

Rules:

* Lines pair by what they bill: the subscription line item, the price, the period and the line's
  role (a commitment's overage and true-up lines have the line item of the charge they follow).
  Lines with the same key pair in order. The display name is not part of the key: renaming a
  price changes no money.
* A paired line is ``changed`` when its quantity, amount or discount (line plus invoice-level)
  differs; an unpaired stored line is ``removed``, an unpaired recomputed one ``added``.
* Totals compared: ``subtotal``, ``total_discount``, ``total_tax``, ``total``.
* An invoice that still matches its inputs gives an empty diff: ``len(diff) == 0``.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum

from billingkit.domain.display import Displayed
from billingkit.domain.invoices import Invoice, InvoiceLineItem

__all__ = ["TOTAL_FIELDS", "InvoiceDiff", "LineChange", "LineChangeKind", "TotalChange", "diff_invoices"]

#: The invoice totals a diff compares, in display order.
TOTAL_FIELDS = ("subtotal", "total_discount", "total_tax", "total")


class LineChangeKind(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True, slots=True)
class LineChange:
    """One line that differs. ``stored_*`` are ``None`` for an added line, ``recomputed_*`` for a
    removed one. ``discount`` is the line's own discount plus its share of invoice-level ones."""

    kind: LineChangeKind
    display_name: str
    price_id: str | None
    subscription_line_item_id: str | None
    period_start: datetime
    period_end: datetime
    stored_quantity: Decimal | None
    recomputed_quantity: Decimal | None
    stored_amount: Decimal | None
    recomputed_amount: Decimal | None
    stored_discount: Decimal | None
    recomputed_discount: Decimal | None

    @property
    def amount_difference(self) -> Decimal:
        """Recomputed minus stored amount (a missing side counts as zero)."""
        return (self.recomputed_amount or Decimal(0)) - (self.stored_amount or Decimal(0))


@dataclass(frozen=True, slots=True)
class TotalChange:
    """One invoice total that differs: ``field`` is its name (``subtotal``, ``total``...)."""

    field: str
    stored: Decimal
    recomputed: Decimal

    @property
    def difference(self) -> Decimal:
        return self.recomputed - self.stored


@dataclass(frozen=True, slots=True, repr=False)
class InvoiceDiff(Displayed):
    """A stored invoice against the same invoice recomputed from its inputs.

    ``lines`` and ``totals`` hold only what differs, so ``len(diff) == 0`` (and ``not diff``) for an
    invoice that still matches. ``stored`` and ``recomputed`` are both invoices in full (the
    recomputed one is not stored and has ids of its own). ``locale`` is how its display writes
    money (the customer's, as for the invoice's PDF).
    """

    invoice_id: str
    currency: str
    lines: tuple[LineChange, ...]
    totals: tuple[TotalChange, ...]
    stored: Invoice
    recomputed: Invoice
    locale: str = "en_US"

    def __len__(self) -> int:
        return len(self.lines) + len(self.totals)

    def __iter__(self) -> Iterator[LineChange]:
        return iter(self.lines)


def _role(line: InvoiceLineItem) -> str:
    if line.metadata.get("is_overage") == "true":
        return "overage"
    if line.metadata.get("is_commitment_trueup") == "true":
        return "true_up"
    return ""


_Key = tuple[str, str, datetime, datetime, str]


def _key(line: InvoiceLineItem) -> _Key:
    return (
        line.subscription_line_item_id or "",
        line.price_id or "",
        line.period_start,
        line.period_end,
        _role(line),
    )


def _discount(line: InvoiceLineItem) -> Decimal:
    return line.line_item_discount + line.invoice_level_discount


def _change(
    kind: LineChangeKind, stored: InvoiceLineItem | None, recomputed: InvoiceLineItem | None
) -> LineChange:
    shown = recomputed if recomputed is not None else stored
    assert shown is not None
    return LineChange(
        kind=kind,
        display_name=shown.display_name,
        price_id=shown.price_id,
        subscription_line_item_id=shown.subscription_line_item_id,
        period_start=shown.period_start,
        period_end=shown.period_end,
        stored_quantity=stored.quantity if stored is not None else None,
        recomputed_quantity=recomputed.quantity if recomputed is not None else None,
        stored_amount=stored.amount if stored is not None else None,
        recomputed_amount=recomputed.amount if recomputed is not None else None,
        stored_discount=_discount(stored) if stored is not None else None,
        recomputed_discount=_discount(recomputed) if recomputed is not None else None,
    )


def _differs(stored: InvoiceLineItem, recomputed: InvoiceLineItem) -> bool:
    return (stored.quantity, stored.amount, _discount(stored)) != (
        recomputed.quantity,
        recomputed.amount,
        _discount(recomputed),
    )


def diff_invoices(stored: Invoice, recomputed: Invoice, *, locale: str = "en_US") -> InvoiceDiff:
    """The differences of ``recomputed`` from ``stored`` (see the module rules), in the stored
    invoice's line order, added lines last. Example: 120 calls billed, 150 stored now at 0.10 ->
    one ``changed`` line 120 -> 150, 12.00 -> 15.00, and ``subtotal``/``total`` 12.00 -> 15.00."""
    pending: dict[_Key, deque[InvoiceLineItem]] = defaultdict(deque)
    for line in recomputed.line_items:
        pending[_key(line)].append(line)
    changes: list[LineChange] = []
    for line in stored.line_items:
        queue = pending.get(_key(line))
        if not queue:
            changes.append(_change(LineChangeKind.REMOVED, line, None))
            continue
        match = queue.popleft()
        if _differs(line, match):
            changes.append(_change(LineChangeKind.CHANGED, line, match))
    for queue in pending.values():
        changes.extend(_change(LineChangeKind.ADDED, None, line) for line in queue)
    totals = tuple(
        TotalChange(name, getattr(stored, name), getattr(recomputed, name))
        for name in TOTAL_FIELDS
        if getattr(stored, name) != getattr(recomputed, name)
    )
    return InvoiceDiff(
        invoice_id=stored.id,
        currency=stored.currency,
        lines=tuple(changes),
        totals=totals,
        stored=stored,
        recomputed=recomputed,
        locale=locale,
    )
