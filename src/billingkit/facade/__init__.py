"""The composition root and the scoped view the public API is reached through."""

from billingkit.facade.billing import Billing
from billingkit.facade.observers import BillingObserver
from billingkit.facade.scoped import Scoped

__all__ = ["Billing", "BillingObserver", "Scoped"]
