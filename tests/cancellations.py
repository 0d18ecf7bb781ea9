"""A small world the cancellation tests start from: a 30-day month (1 Jun - 1 Jul 2026), a plan
with a 30.00 monthly fee billed in advance and API calls at 0.10 each in arrears, one customer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import Wallet, WalletTransaction
from billingkit.ports import Storage, UnitOfWork

START = datetime(2026, 6, 1, tzinfo=UTC)


def at(month: int, day: int, hour: int = 0) -> datetime:
    """An instant of 2026, UTC."""
    return datetime(2026, month, day, hour, tzinfo=UTC)


def june(day: int, hour: int = 0) -> datetime:
    return at(6, day, hour)


FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "30.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
    "display_name": "Base",
}


def calls(meter_id: str) -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": "0.10",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "display_name": "Calls",
    }


@dataclass
class World:
    clock: TestClock
    billing: Billing
    s: Scoped
    customer: Customer
    meter_id: str

    def uow(self) -> UnitOfWork:
        return self.billing.storage.unit_of_work(self.s.tenant_id, self.s.environment_id)

    def subscribe(self, prices: list[dict[str, Any]] | None = None, **fields: Any) -> Subscription:
        plan = self.s.plans.create(name="Pro", prices=prices or [FEE, calls(self.meter_id)])
        fields.setdefault("billing_period", "MONTHLY")
        return self.s.subscriptions.create(
            customer_id=self.customer.id, plan_id=plan.id, currency="usd", **fields
        )

    def usage(self, count: int, start: datetime, *, prefix: str = "e") -> None:
        """``count`` API calls, one a minute from ``start``."""
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": self.customer.external_id,
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{prefix}{i}",
                }
                for i in range(count)
            ]
        )

    def sub(self, sub: Subscription) -> Subscription:
        return self.s.subscriptions.get(sub.id)

    def invoices(self, sub: Subscription) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def wallets(self) -> list[Wallet]:
        return list(self.s.wallets.list_for_customer(self.customer.id))

    def credits(self) -> list[WalletTransaction]:
        return [row for wallet in self.wallets() for row in self.s.wallets.transactions(wallet.id).items]

    def events(self, event_type: str, sub: Subscription) -> list[NotificationEvent]:
        return list(self.s.notifications.list(event_type=event_type, entity_id=sub.id, limit=500).items)

    def store(self, sub: Subscription, **changes: Any) -> Subscription:
        """Write ``changes`` on the stored subscription straight through the store."""
        with self.uow() as uow:
            stored = uow.subscriptions.get(sub.id)
            saved = uow.subscriptions.update(stored.model_copy(update=changes))
            uow.commit()
        return saved

    def run(self, when: datetime) -> Any:
        self.clock.set(when)
        return self.billing.run_due()


def make_world(storage: Storage, start: datetime = START, **settings: Any) -> World:
    clock = TestClock(start)
    billing = Billing(storage, clock)
    if settings:
        billing.settings = billing.settings.replace(**settings)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    customer = s.customers.create(external_id="c1", name="Ada")
    return World(clock, billing, s, customer, meter.id)
