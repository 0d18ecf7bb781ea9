"""In-process adapters of the outside-party ports: the defaults ``Billing`` builds when the host
passes none, and the test doubles DESIGN §10.12 names (they fill the same slots as real adapters).

- :class:`SandboxPaymentProvider` (``ports.PaymentProvider``): deterministic, records every request.
- :class:`MemoryWebhookTransport` (``ports.WebhookTransport``): keeps deliveries in memory.
- :class:`~billingkit.providers.http_webhooks.HttpWebhookTransport` (``ports.WebhookTransport``):
  sends them over HTTP with httpx (the ``webhooks`` extra; imported from its module).
- :class:`RazorpayPaymentProvider` (``ports.PaymentProvider``): a real provider, Razorpay's REST
  API over HTTP (tested against ``billingkit.testing.razorpay_fake``).
"""

from billingkit.providers.razorpay import RazorpayPaymentProvider
from billingkit.providers.sandbox import SandboxPaymentProvider
from billingkit.providers.webhooks import MemoryWebhookTransport

__all__ = ["MemoryWebhookTransport", "RazorpayPaymentProvider", "SandboxPaymentProvider"]
