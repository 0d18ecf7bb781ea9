"""The money of one line change made by hand: an add-on attached or removed, a line item added,
changed or ended mid-period. Settled by :mod:`billingkit.services.change_settlements`, the one
money path of every mid-period change (plan changes and quantity changes use it too); what is
specific to these calls is here:

* **Keys** (:func:`addon_charge_key` and the others) name what each change settles, so that
  the settlement's invoice (``idempotency_key`` ``subscription_change|<key>``) or wallet movement
  is made once: an add-on's charge once per association, a removal's credit once per association
  and period, a line's charge once per line, the end of a line (its deletion, or its replacement
  by a changed line: the credit of the old and the charge of the new netted) once per line and
  period. A second end of the same line in the same period moves nothing (its unused time was
  given back already).
* **One update invoice per window**: a subscription has one ``SUBSCRIPTION_UPDATE`` invoice per
  ``[effective, period end)`` (the invoices' unique key); a second change that would invoice from
  the same instant is refused up front with 409 ``already_exists`` naming the invoice and the
  request's date field, before anything is written.

Example: a seat of 31.00 a month raised from 2 to 5 on 21 May (11 of May's 31 days left): credit
2 x 31.00 x 11/31 = 22.00, charge 5 x 31.00 x 11/31 = 55.00, one invoice of 33.00 net.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from billingkit.domain.invoices import BillingReason, Invoice, InvoiceStatus
from billingkit.domain.periods import Period
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.domain.wallets import WalletTransaction
from billingkit.errors import AlreadyExists
from billingkit.ports import UnitOfWork
from billingkit.services.change_settlements import (
    ChangeQuote,
    quote_change,
    settle_change,
    settlement_key,
)
from billingkit.services.context import Context

__all__ = [
    "LineSettlement",
    "addon_charge_key",
    "addon_removal_key",
    "line_charge_key",
    "line_end_key",
    "settle_lines",
]


def addon_charge_key(association_id: str) -> str:
    """The charge of add-on association ``association_id``'s lines when it is attached."""
    return f"addon_charge|{association_id}"


def addon_removal_key(association_id: str, period: Period) -> str:
    """The unused-time credit of association ``association_id`` removed in ``period``."""
    return f"proration_credit_addon|{association_id}|{period.start.isoformat()}|{period.end.isoformat()}"


def line_charge_key(line_id: str) -> str:
    """The charge of line item ``line_id`` added mid-period."""
    return f"line_item_proration|{line_id}"


def line_end_key(line_id: str, period: Period) -> str:
    """The end of line item ``line_id`` in ``period`` (deleted, or replaced by a changed line)."""
    return f"line_item_end|{line_id}|{period.start.isoformat()}|{period.end.isoformat()}"


@dataclass(frozen=True, slots=True)
class LineSettlement:
    """What :func:`settle_lines` moved: ``subscription`` (its billing sequence moved when an
    ``invoice`` was issued), the ``invoice`` (net charge) or the wallet ``transaction`` (net
    credit), and ``credits``: the unused time credited per ended line (line item id -> amount,
    on the invoice or in the wallet)."""

    subscription: Subscription
    invoice: Invoice | None = None
    transaction: WalletTransaction | None = None
    credits: dict[str, Decimal] = field(default_factory=dict)

    @property
    def credited(self) -> Decimal | None:
        """What went into the customer's wallet (None when nothing did)."""
        return None if self.transaction is None else self.transaction.credit_amount


def _settled_before(uow: UnitOfWork, key: str) -> bool:
    full = settlement_key(key)
    return (
        uow.invoices.find_one(idempotency_key=full, include_archived=True) is not None
        or uow.wallet_transactions.find_one(idempotency_key=full, include_archived=True) is not None
    )


def _check_window(uow: UnitOfWork, quote: ChangeQuote, field: str) -> None:
    sub = quote.subscription
    taken = uow.invoices.find_one(
        subscription_id=sub.id,
        period_start=quote.effective,
        period_end=quote.period.end,
        billing_reason=BillingReason.SUBSCRIPTION_UPDATE.value,
    )
    if taken is not None:
        raise AlreadyExists(
            f"subscription {sub.id} already has update invoice {taken.id} for "
            f"[{quote.effective.isoformat()}, {quote.period.end.isoformat()}): one invoice per "
            "subscription, window and billing reason; make this change at another instant",
            details={"field": field, "invoice_id": taken.id},
        )


def settle_lines(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    *,
    key: str,
    effective: datetime,
    ended: Sequence[SubscriptionLineItem] = (),
    started: Sequence[SubscriptionLineItem] = (),
    in_full: Collection[str] = (),
    field: str,
) -> LineSettlement:
    """Settle ending ``ended`` (as they were) and starting ``started`` at ``effective`` in ``sub``
    (with the started lines already in it) under ``key`` (see the module doc): one invoice for a
    net charge, one wallet credit for a net credit, or nothing; ``sub`` comes back with its
    billing sequence moved when an invoice was issued (the caller saves it). A key settled
    before moves nothing and returns ``sub`` unchanged. ``AlreadyExists`` (details ``field``, the
    request's date field, and ``invoice_id``) when another change invoiced from ``effective``;
    a ``DRAFT`` invoice stored under ``key`` (a checkout's, paid) is issued as the settlement;
    ``InvalidOperation`` for a grouped child with money to move."""
    locked = uow.invoices.find_one(idempotency_key=settlement_key(key))
    locked = locked if locked is not None and locked.invoice_status is InvoiceStatus.DRAFT else None
    if locked is None and _settled_before(uow, key):
        return LineSettlement(sub)
    quote = quote_change(uow, ctx, sub, ended=ended, started=started, effective=effective, in_full=in_full)
    if quote.settlement.invoiced and locked is None:
        _check_window(uow, quote, field)
    settled = settle_change(uow, ctx, quote, key=key)
    return LineSettlement(
        settled.subscription,
        settled.invoice,
        settled.transaction,
        {line.line_item_id: line.amount for line in quote.credits},
    )
