"""A subscription's usage charges so far: ``POST /subscriptions/usage`` (getSubscriptionUsage).

The answer is cut from the invoice preview (:func:`billingkit.services.invoices.preview_invoice`),
so it runs the billing run's own pricing path and agrees with the invoice the period will
produce, to the cent: one charge per USAGE line of that invoice (its quantity, the usage measured,
and its amount, priced after the entitlement's included usage; overage lines apart), and
``amount`` their sum. FIXED charges, discounts, taxes and
credits are not usage and are left out.

Rules:

* The window is the subscription's current period (the preview's), or ``start_time`` ..
  ``end_time`` when both are given (as the preview's ``period_start`` / ``period_end``).
* ``lifetime_usage`` is refused: usage of several periods priced as one would not be what any
  invoice charges (tiers and allowances apply per period).
* Commitment: ``commitment_amount`` and ``overage_factor`` are the subscription's;
  ``overage_amount`` sums the overage lines (``metadata.is_overage``), ``commitment_utilized``
  the other usage charges up to the commitment.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.catalog import Price
from billingkit.domain.catalog.prices import PriceType, display_amount
from billingkit.domain.invoices import InvoiceLineItem
from billingkit.domain.money import ZERO
from billingkit.domain.resources import iso
from billingkit.domain.validation import InputModel, NonEmptyStr, UtcDatetime
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.invoices import InvoicePreview, preview_invoice

__all__ = [
    "SubscriptionUsage",
    "SubscriptionUsageCharge",
    "SubscriptionUsageRequest",
    "get_subscription_usage",
]


class SubscriptionUsageRequest(InputModel):
    """The reference's GetUsageBySubscriptionRequest: ``subscription_id``; optionally
    ``start_time`` and ``end_time`` (both) for another window than the current period."""

    subscription_id: NonEmptyStr
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None
    lifetime_usage: bool = False


@dataclass(frozen=True, slots=True)
class SubscriptionUsageCharge:
    """One usage line of the period's invoice (the reference's SubscriptionUsageByMetersResponse):
    ``quantity`` the usage measured, ``amount`` its charge (after included usage) in the
    subscription's currency."""

    line: InvoiceLineItem
    currency: str
    price: Price | None
    overage_factor: Decimal | None

    @property
    def is_overage(self) -> bool:
        return self.line.metadata.get("is_overage") == "true"

    def to_dict(self) -> dict[str, Any]:
        line = self.line
        return {
            "subscription_line_item_id": line.subscription_line_item_id,
            "meter_id": line.meter_id,
            "meter_display_name": line.meter_display_name,
            "display_name": line.display_name,
            "quantity": str(line.quantity),
            "amount": str(line.amount),
            "currency": self.currency,
            "display_amount": display_amount(line.amount, self.currency),
            "is_overage": self.is_overage,
            "overage_factor": (
                str(self.overage_factor) if self.is_overage and self.overage_factor is not None else None
            ),
            "price": self.price.to_dict() if self.price is not None else None,
        }


@dataclass(frozen=True, slots=True)
class SubscriptionUsage:
    """The reference's GetUsageBySubscriptionResponse: the usage charges of ``[start_time,
    end_time)`` and their total ``amount`` (exact decimals)."""

    subscription_id: str
    currency: str
    start_time: datetime
    end_time: datetime
    charges: tuple[SubscriptionUsageCharge, ...]
    commitment_amount: Decimal | None
    overage_factor: Decimal | None

    @property
    def amount(self) -> Decimal:
        return sum((charge.line.amount for charge in self.charges), ZERO)

    @property
    def overage_amount(self) -> Decimal:
        return sum((c.line.amount for c in self.charges if c.is_overage), ZERO)

    @property
    def commitment_utilized(self) -> Decimal:
        if not self.commitment_amount:
            return ZERO
        within = sum((c.line.amount for c in self.charges if not c.is_overage), ZERO)
        return min(within, self.commitment_amount)

    def to_dict(self) -> dict[str, Any]:
        return {
            "subscription_id": self.subscription_id,
            "start_time": iso(self.start_time),
            "end_time": iso(self.end_time),
            "amount": str(self.amount),
            "currency": self.currency,
            "display_amount": display_amount(self.amount, self.currency),
            "charges": [charge.to_dict() for charge in self.charges],
            "commitment_amount": None if self.commitment_amount is None else str(self.commitment_amount),
            "commitment_utilized": str(self.commitment_utilized),
            "overage_factor": None if self.overage_factor is None else str(self.overage_factor),
            "overage_amount": str(self.overage_amount),
            "has_overage": any(charge.is_overage for charge in self.charges),
        }


def get_subscription_usage(
    uow: UnitOfWork, ctx: Context, *, request: SubscriptionUsageRequest
) -> SubscriptionUsage:
    """The usage charges the subscription's current period (or ``start_time`` .. ``end_time``)
    has run up so far, priced as its invoice will price them (see the module rules). Writes nothing.

    Raises ``NotFound`` (unknown subscription), ``ValidationError`` (``lifetime_usage``, a
    half-given or reversed window, an ended subscription) and ``InvalidOperation`` (a child
    subscription billed on its parent's invoice).
    """
    if request.lifetime_usage:
        raise ValidationError(
            "lifetime_usage is not supported: usage is priced per billing period; ask for a "
            "window with start_time and end_time",
            field="lifetime_usage",
        )
    preview = InvoicePreview(
        subscription_id=request.subscription_id,
        period_start=request.start_time,
        period_end=request.end_time,
    )
    invoice = preview_invoice(uow, ctx, request=preview)
    lines = [line for line in invoice.line_items if line.price_type is PriceType.USAGE]
    prices = {price.id: price for price in uow.prices.find_many({ln.price_id for ln in lines if ln.price_id})}
    sub = uow.subscriptions.get(request.subscription_id)
    charges = tuple(
        SubscriptionUsageCharge(line, invoice.currency, prices.get(line.price_id or ""), sub.overage_factor)
        for line in lines
    )
    assert invoice.period_start is not None and invoice.period_end is not None
    return SubscriptionUsage(
        subscription_id=sub.id,
        currency=invoice.currency,
        start_time=invoice.period_start,
        end_time=invoice.period_end,
        charges=charges,
        commitment_amount=sub.commitment_amount,
        overage_factor=sub.overage_factor,
    )
