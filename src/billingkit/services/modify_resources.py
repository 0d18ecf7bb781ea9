"""What a subscription modification changed besides the subscription it answers with: the
reference's ``ChangedResources`` (``POST /subscriptions/{id}/modify/execute`` and ``/preview``).

* ``subscriptions``: other subscriptions created or updated (hierarchy changes), with the action;
* ``invoices``: invoices issued (a quantity change's net charge, a trial's first paid period, a
  hierarchy change's invoices);
* ``wallet_transactions``: wallet credits made (a quantity change's net credit);
* ``line_items``: line items ``created`` (a replacement), ``updated`` (changed in place) or
  ``ended`` (a replaced line).

A preview (``preview=True``) answers the same resources as they would be: ``status`` ``preview``
instead of ``issued``, and invoices without a number (nothing was numbered).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from billingkit.domain.invoices import Invoice
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.domain.wallets import WalletTransaction

__all__ = ["ChangedResources"]


@dataclass(frozen=True, slots=True)
class ChangedResources:
    """See the module doc. ``subscriptions``: (subscription, ``created`` | ``updated``);
    ``line_items``: (line item, ``created`` | ``updated`` | ``ended``)."""

    subscriptions: tuple[tuple[Subscription, str], ...] = ()
    invoices: tuple[Invoice, ...] = ()
    wallet_transactions: tuple[WalletTransaction, ...] = ()
    line_items: tuple[tuple[SubscriptionLineItem, str], ...] = ()
    preview: bool = field(default=False)

    def as_preview(self) -> ChangedResources:
        """The same resources, shown as a preview: invoices unnumbered."""
        unnumbered = tuple(invoice.model_copy(update={"invoice_number": None}) for invoice in self.invoices)
        return replace(self, invoices=unnumbered, preview=True)

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``ChangedResources`` (``line_items`` only when some changed)."""
        status = "preview" if self.preview else "issued"
        data: dict[str, Any] = {
            "subscriptions": [
                {
                    "id": sub.id,
                    "action": action,
                    "status": sub.subscription_status.value,
                    "current_period_end": sub.to_dict(line_items=False)["current_period_end"],
                }
                for sub, action in self.subscriptions
            ],
            "invoices": [
                {"id": invoice.id, "action": "created", "status": status, "invoice": invoice.to_dict()}
                for invoice in self.invoices
            ]
            + [
                {
                    "id": movement.id,
                    "action": "wallet_credit",
                    "status": status,
                    "wallet_transaction": movement.to_dict(),
                }
                for movement in self.wallet_transactions
            ],
        }
        if self.line_items:
            data["line_items"] = [
                {
                    "id": line.id,
                    "change_action": action,
                    "price_id": line.price_id,
                    "quantity": str(line.quantity),
                    "start_date": _instant(line, "start_date"),
                    "end_date": _instant(line, "end_date"),
                }
                for line, action in self.line_items
            ]
        return data


def _instant(line: SubscriptionLineItem, name: str) -> str | None:
    value = line.model_dump(mode="json", include={name})[name]
    return value if isinstance(value, str) else None
