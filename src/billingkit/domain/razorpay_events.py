"""What Razorpay's webhook events mean for a checkout session (Razorpay's documented event
names): pure data, so the services that read a delivery and the tests agree on one table."""

from __future__ import annotations

__all__ = ["PAID_EVENTS", "UNPAID_EVENTS"]

#: Events that confirm the money: a payment link paid in full, a (mandate's) payment captured.
PAID_EVENTS = frozenset({"payment_link.paid", "payment.captured"})
#: Events that end a payment link unpaid, and the word the failure reason uses.
UNPAID_EVENTS = {"payment_link.cancelled": "cancelled", "payment_link.expired": "expired"}
