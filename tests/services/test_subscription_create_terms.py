"""The rest of the create request, through the library, on every store: ``auto_invoice_threshold``
(its rules at create, its checks by the billing run), ``gateway_payment_method_id`` (the method
the provider is asked to charge) and ``checkout`` (a provider the environment lacks is refused;
the flow itself is tested in tests/services/test_checkout_sessions.py).

The ``clock`` fixture starts at 2026-05-01 09:30 UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, Settings, TestClock, ValidationError
from billingkit.domain.access import Actor
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.invoices import BillingReason, InvoiceStatus
from billingkit.domain.queries import ListQuery
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.providers import SandboxPaymentProvider
from billingkit.services import auto_invoice_thresholds as thresholds
from billingkit.services.auto_invoice_thresholds import set_threshold
from billingkit.services.subscription_inheritance import SubscriptionInheritanceConfig
from billingkit.services.subscriptions import SubscriptionCreate

D = Decimal
NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
FIVE_MINUTES = timedelta(minutes=5)


def calls(meter_id: str, amount: str = "0.10") -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "display_name": "Calls",
    }


FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "20",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}


class World:
    def __init__(self, billing: Billing, clock: TestClock, s: Scoped) -> None:
        self.billing, self.clock, self.s = billing, clock, s
        self.meter_id = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"}).id
        self.metered = s.plans.create(name="Metered", prices=[calls(self.meter_id)]).id
        self.mixed = s.plans.create(name="Mixed", prices=[FEE, calls(self.meter_id)]).id
        self.customer_id = s.customers.create(external_id="c1", name="Ada").id

    def create(self, plan_id: str | None = None, **fields: Any) -> Subscription:
        return self.s.subscriptions.create(
            customer_id=self.customer_id,
            plan_id=plan_id or self.metered,
            currency="usd",
            billing_period="MONTHLY",
            **fields,
        )

    def calls(self, count: int, start: datetime, prefix: str) -> None:
        self.clock.set(max(self.clock.now(), start))
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": "c1",
                    "timestamp": (start + timedelta(seconds=i)).isoformat(),
                    "event_id": f"{prefix}{i}",
                }
                for i in range(count)
            ]
        )

    def written(self) -> tuple[int, int, int]:
        def count(uow, ctx):  # type: ignore[no-untyped-def]
            query = ListQuery(limit=1)
            return (
                uow.subscriptions.list(query).total,
                uow.invoices.list(query).total,
                uow.notifications.list(query).total,
            )

        return self.s.run(count)  # type: ignore[no-any-return]


@pytest.fixture
def sandbox() -> SandboxPaymentProvider:
    return SandboxPaymentProvider()


@pytest.fixture
def world(storage: Any, sandbox: SandboxPaymentProvider) -> Callable[..., World]:
    def make(settings: Settings | None = None) -> World:
        clock = TestClock(NOW)
        billing = Billing(storage, clock, settings=settings, payment_provider=sandbox)
        setup = billing.bootstrap()
        return World(billing, clock, billing.scope(setup.tenant.id, setup.environments[0][0].id))

    return make


@pytest.fixture
def w(world: Callable[..., World]) -> World:
    return world()


# -- auto_invoice_threshold at create -------------------------------------------------------------


def test_a_threshold_is_stored_as_given_and_its_first_check_is_scheduled(w: World) -> None:
    sub = w.create(auto_invoice_threshold="50.00")
    stored = w.s.subscriptions.get(sub.id)
    assert stored.auto_invoice_threshold == D("50.00")
    assert stored.to_dict()["auto_invoice_threshold"] == "50.00"
    assert stored.next_run_at == NOW + FIVE_MINUTES  # before the period end (1 Jun)
    plain = w.create()
    assert plain.auto_invoice_threshold is None and plain.to_dict()["auto_invoice_threshold"] is None
    assert plain.next_run_at == plain.current_period_end - timedelta(days=3)  # the renewal notice


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"auto_invoice_threshold": "0"}, "auto_invoice_threshold", "greater than 0"),
        ({"auto_invoice_threshold": "-5"}, "auto_invoice_threshold", "greater than 0"),
        ({"auto_invoice_threshold": "lots"}, "auto_invoice_threshold", ""),
        ({"auto_invoice_threshold": 50.5}, "auto_invoice_threshold", ""),
        ({"auto_invoice_threshold": "50", "plan": "mixed"}, "auto_invoice_threshold", "usage-based"),
        (
            {"auto_invoice_threshold": "50", "commitment_amount": "100", "overage_factor": "1.5"},
            "auto_invoice_threshold",
            "commitment",
        ),
        (
            {"auto_invoice_threshold": "50", "proration_behavior": "create_prorations"},
            "proration_behavior",
            "create_prorations",
        ),
    ],
)
def test_a_threshold_the_subscription_cannot_honour_is_refused_and_nothing_is_written(
    w: World, fields: dict[str, Any], field: str, says: str
) -> None:
    fields = dict(fields)  # the parameter is shared by every run
    plan = w.mixed if fields.pop("plan", None) == "mixed" else w.metered
    before = w.written()
    with pytest.raises(ValidationError) as caught:
        w.create(plan, **fields)
    assert (caught.value.field, caught.value.details["field"]) == (field, field)
    assert says in caught.value.message
    assert w.written() == before


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_a_line_item_commitment_is_refused_with_a_threshold(w: World) -> None:
    price_id = w.s.plans.get(w.metered).prices[0].id
    with pytest.raises(ValidationError) as caught:
        w.create(
            auto_invoice_threshold="50",
            line_item_commitments={price_id: {"commitment_amount": "10", "commitment_type": "amount"}},
        )
    assert caught.value.field == "auto_invoice_threshold"


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_a_threshold_with_an_inheritance_configuration_is_refused(w: World) -> None:
    # Through set_threshold itself: the hierarchy step refuses a child or parent on this field
    # before it gets there.
    sub = w.create()
    request = SubscriptionCreate.model_construct(
        auto_invoice_threshold=D(50),
        inheritance=SubscriptionInheritanceConfig(parent_subscription_id=sub.id),
    )
    ctx = w.billing.context(w.s.tenant_id, w.s.environment_id, Actor.system())
    with pytest.raises(ValidationError) as caught:
        set_threshold(ctx, sub, request)
    assert caught.value.field == "auto_invoice_threshold" and "standalone" in caught.value.message


def test_a_draft_is_checked_once_activated_and_a_trial_once_it_ends(w: World) -> None:
    draft = w.create(auto_invoice_threshold="5", subscription_status="draft")
    assert draft.next_run_at is None
    w.clock.set(NOW + timedelta(days=2))
    activated = w.s.subscriptions.activate(draft.id)
    assert activated.next_run_at == NOW + timedelta(days=2) + FIVE_MINUTES

    trial = w.create(auto_invoice_threshold="5", trial_period_days=7)
    assert trial.subscription_status is SubscriptionStatus.TRIALING
    assert trial.next_run_at == trial.trial_end  # nothing is billed during a trial
    w.calls(80, NOW + timedelta(days=3), "trial")  # 8.00, during the trial: never billed
    assert trial.trial_end is not None
    w.clock.set(trial.trial_end)
    w.billing.run_due()
    after = w.s.subscriptions.get(trial.id)
    assert after.subscription_status is SubscriptionStatus.ACTIVE
    assert after.next_run_at == trial.trial_end + FIVE_MINUTES
    w.calls(60, trial.trial_end + timedelta(minutes=1), "paid")  # 6.00 >= 5
    report = w.billing.run_due(now=trial.trial_end + FIVE_MINUTES)
    (invoice,) = [inv for inv in report.invoices if inv.subscription_id == trial.id]
    assert invoice.billing_reason is BillingReason.AUTO_INVOICE_THRESHOLD
    assert (invoice.period_start, invoice.amount_due) == (trial.trial_end, D("6.00"))


def test_prepaid_credits_pay_a_threshold_invoice(w: World) -> None:
    wallet = w.s.wallets.create(customer_id=w.customer_id, currency="usd", initial_credits_to_load="20")
    sub = w.create(auto_invoice_threshold="50")
    w.calls(600, NOW + timedelta(days=1), "a")  # 60.00
    (invoice,) = w.billing.run_due(now=NOW + timedelta(days=2)).invoices
    assert invoice.invoice_status is InvoiceStatus.FINALIZED
    # 60.00 of usage reached 50.00; 20 credits at 1.00 pay 20.00 of it: 40.00 remains.
    assert (invoice.subtotal, invoice.total_prepaid_credits_applied, invoice.amount_due) == (
        D("60.00"),
        D("20.00"),
        D("40.00"),
    )
    assert w.s.wallets.get(wallet.id).credit_balance == D(0)
    assert w.s.subscriptions.get(sub.id).current_period_start == NOW + timedelta(days=2)


def test_only_usage_lines_go_on_a_threshold_invoice(w: World) -> None:
    sub = w.create(auto_invoice_threshold="5")

    def add_fee(uow, ctx):  # type: ignore[no-untyped-def]
        # As a later change (an add-on, a synced plan price) may: a fixed line beside the usage.
        current = uow.subscriptions.get(sub.id)
        line = current.line_items[0].model_copy(
            update={"id": "subs_line_fee", "price_type": PriceType.FIXED, "meter_id": None, "quantity": D(1)}
        )
        return uow.subscriptions.update(
            current.model_copy(update={"line_items": (*current.line_items, line)}),
            expected_version=current.version,
        )

    w.s.run(add_fee)
    w.calls(70, NOW + timedelta(hours=1), "a")
    (invoice,) = w.billing.run_due(now=NOW + timedelta(hours=2)).invoices
    assert [(line.display_name, line.amount) for line in invoice.line_items] == [("Calls", D("7.00"))]


def test_usage_below_the_threshold_is_not_invoiced_and_moves_nothing_but_the_next_check(w: World) -> None:
    sub = w.create(auto_invoice_threshold="50")
    w.calls(499, NOW + timedelta(hours=1), "a")  # 49.90 < 50.00
    report = w.billing.run_due(now=NOW + timedelta(hours=2))
    assert (report.invoices, report.subscription_count) == ([], 1)
    after = w.s.subscriptions.get(sub.id)
    assert (after.current_period_start, after.billing_sequence) == (NOW, 0)
    assert after.next_run_at == NOW + timedelta(hours=2) + FIVE_MINUTES
    assert after.updated_at == sub.updated_at  # only when the run looks next changed
    assert w.s.notifications.list(event_type="invoice.update.finalized").items == []


# -- checkout ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_checkout_through_a_provider_the_environment_lacks_is_refused_and_writes_nothing(w: World) -> None:
    before = w.written()
    with pytest.raises(ValidationError) as caught:
        w.create(checkout={"payment_provider": "razorpay", "success_url": "https://example.test/ok"})
    assert caught.value.field == "payment_provider"
    assert "not configured" in caught.value.message
    assert w.written() == before
    assert w.create(checkout={}).subscription_status is SubscriptionStatus.ACTIVE  # empty: nothing asked
    assert w.create(checkout=None).subscription_status is SubscriptionStatus.ACTIVE


# -- gateway_payment_method_id ------------------------------------------------------------------------


def test_the_provider_is_asked_to_charge_the_subscriptions_payment_method(
    w: World, sandbox: SandboxPaymentProvider
) -> None:
    sub = w.create(w.mixed, gateway_payment_method_id="pm_card_visa")
    assert w.s.subscriptions.get(sub.id).gateway_payment_method_id == "pm_card_visa"
    (opening,) = w.s.invoices.list(subscription_id=sub.id).items
    paid = w.s.invoices.attempt_payment(opening.id)
    assert paid.amount_remaining == D(0)
    (asked,) = sandbox.requests
    assert (asked.payment_method_id, asked.amount, asked.currency) == ("pm_card_visa", D("20.00"), "usd")

    # A CARD payment of its next invoice that names no method is charged to the same one.
    w.clock.set(sub.current_period_end)
    (renewal,) = w.billing.run_due().invoices
    payment = w.s.payments.create(
        amount="20.00",
        currency="usd",
        destination_id=renewal.id,
        destination_type="INVOICE",
        payment_method_type="CARD",
    )
    assert (payment.payment_method_id, payment.payment_status.value) == ("pm_card_visa", "SUCCEEDED")
    assert sandbox.requests[-1].payment_method_id == "pm_card_visa"
    # The same request again is the same payment (the method is part of what it is).
    again = w.s.payments.create(
        amount="20.00",
        currency="usd",
        destination_id=renewal.id,
        destination_type="INVOICE",
        payment_method_type="CARD",
    )
    assert again.id == payment.id and len(sandbox.requests) == 2


def test_a_payment_naming_its_own_method_or_another_type_keeps_it(
    w: World, sandbox: SandboxPaymentProvider
) -> None:
    sub = w.create(w.mixed, gateway_payment_method_id="pm_card_visa")
    (opening,) = w.s.invoices.list(subscription_id=sub.id).items
    own = w.s.payments.create(
        amount="5.00",
        currency="usd",
        destination_id=opening.id,
        destination_type="INVOICE",
        payment_method_type="CARD",
        payment_method_id="pm_other",
    )
    assert own.payment_method_id == "pm_other" and sandbox.requests[-1].payment_method_id == "pm_other"
    link = w.s.payments.create(
        amount="5.00",
        currency="usd",
        destination_id=opening.id,
        destination_type="INVOICE",
        payment_method_type="PAYMENT_LINK",
    )
    assert link.payment_method_id is None and link.payment_status.value == "PENDING"
    assert sandbox.requests[-1].payment_method_id is None


@pytest.mark.parametrize("storage", ["memory", "sqlite"], indirect=True)
def test_a_check_that_cannot_be_priced_fails_alone_and_stays_due(
    world: Callable[..., World], monkeypatch: pytest.MonkeyPatch
) -> None:
    w = world()
    first = w.create(auto_invoice_threshold="5")
    w.s.customers.create(external_id="c2", name="Bob")
    second = w.s.subscriptions.create(
        external_customer_id="c2",
        plan_id=w.metered,
        currency="usd",
        billing_period="MONTHLY",
        auto_invoice_threshold="5",
    )
    w.calls(60, NOW + timedelta(hours=1), "a")  # Ada: 6.00
    real = thresholds.compute_invoice

    def broken(charge, *args, **kwargs):  # type: ignore[no-untyped-def]
        if charge.subscription.id == second.id:
            raise ValidationError("price gone", field="price_id")
        return real(charge, *args, **kwargs)

    monkeypatch.setattr(thresholds, "compute_invoice", broken)
    report = w.billing.run_due(now=NOW + timedelta(hours=2))
    assert [(sub_id, code) for sub_id, code, _ in report.failures] == [(second.id, "validation_error")]
    assert [inv.subscription_id for inv in report.invoices] == [first.id]
    assert w.s.subscriptions.get(second.id).next_run_at == NOW + FIVE_MINUTES  # still due
