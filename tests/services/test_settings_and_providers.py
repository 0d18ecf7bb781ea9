"""``Settings`` and the outside-party slots of ``Billing``: what a host passes reaches services
through their context; the defaults are in process and belong to one ``Billing``."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from billingkit import Billing, MemoryWebhookTransport, SandboxPaymentProvider, Settings, TestClock
from billingkit.domain.gateways import (
    DeliveryResult,
    PaymentRequest,
    ProviderPayment,
    ProviderPaymentStatus,
    WebhookRequest,
)
from billingkit.errors import ValidationError
from billingkit.ports import PaymentProvider, Storage, UnitOfWork, WebhookTransport
from billingkit.services.access import BootstrapResult
from billingkit.services.context import Context


class HostPaymentProvider:
    """A host's own payment provider double: answers every payment as succeeded."""

    name = "host-double"

    def __init__(self) -> None:
        self.asked: list[PaymentRequest] = []

    def create_payment(self, request: PaymentRequest) -> ProviderPayment:
        self.asked.append(request)
        return ProviderPayment(
            provider=self.name,
            provider_payment_id=f"host_{len(self.asked)}",
            idempotency_key=request.idempotency_key,
            status=ProviderPaymentStatus.SUCCEEDED,
            amount=request.amount,
            currency=request.currency,
        )

    def get_payment(self, provider_payment_id: str) -> ProviderPayment:
        raise AssertionError("not asked in these tests")


class HostTransport:
    """A host's own webhook transport double: every receiver answers 204."""

    def __init__(self) -> None:
        self.sent: list[WebhookRequest] = []

    def deliver(self, request: WebhookRequest) -> DeliveryResult:
        self.sent.append(request)
        return DeliveryResult(204)


def charge_and_notify(
    uow: UnitOfWork, ctx: Context, *, amount: str
) -> tuple[ProviderPayment, DeliveryResult]:
    """A service of the shape payments and webhooks will have: it reaches the outside parties
    only through its context."""
    payment = ctx.providers.payment_provider.create_payment(
        PaymentRequest(
            idempotency_key=f"{ctx.tenant_id}:inv_1",
            amount=Decimal(amount),
            currency="usd",
            customer_id="cust_1",
        )
    )
    delivery = ctx.providers.webhook_transport.deliver(
        WebhookRequest(url="https://host.test/hooks", body=b"{}", headers={"webhook-id": "msg_1"})
    )
    return payment, delivery


def test_host_doubles_reach_a_service_through_its_context(storage: Storage, clock: TestClock) -> None:
    provider, transport = HostPaymentProvider(), HostTransport()
    settings = Settings(token_secret="host secret", renewal_notice=None, run_batch_size=50)
    billing = Billing(
        storage, clock, settings=settings, payment_provider=provider, webhook_transport=transport
    )
    setup: BootstrapResult = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)

    payment, delivery = scoped.run(charge_and_notify, amount="12.50")

    assert (payment.provider, payment.status, payment.amount) == (
        "host-double",
        "succeeded",
        Decimal("12.50"),
    )
    assert [request.idempotency_key for request in provider.asked] == [f"{setup.tenant.id}:inv_1"]
    assert (delivery.delivered, [request.url for request in transport.sent]) == (
        True,
        ["https://host.test/hooks"],
    )
    seen: list[Context] = []
    scoped.run(lambda uow, ctx: seen.append(ctx))
    assert seen[0].settings is billing.settings == settings
    assert seen[0].providers.payment_provider is provider
    assert seen[0].providers.webhook_transport is transport


def test_without_slots_filled_each_billing_gets_its_own_in_process_parties() -> None:
    first, second = Billing(), Billing()
    assert isinstance(first.providers.payment_provider, SandboxPaymentProvider)
    assert isinstance(first.providers.webhook_transport, MemoryWebhookTransport)
    assert first.providers.payment_provider is not second.providers.payment_provider
    assert first.providers.webhook_transport is not second.providers.webhook_transport
    # The defaults fill the same slots a host's adapters do.
    provider: PaymentProvider = first.providers.payment_provider
    transport: WebhookTransport = first.providers.webhook_transport
    assert (provider.name, type(transport).__name__) == ("sandbox", "MemoryWebhookTransport")


def test_settings_defaults_are_todays_billing_defaults() -> None:
    settings = Billing().settings
    assert settings == Settings()
    assert (settings.token_secret, settings.max_bulk_events, settings.renewal_notice) == (
        None,
        1000,
        timedelta(days=3),
    )
    assert (settings.run_batch_size, settings.worker_interval) == (500, 60.0)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_bulk_events", 0),
        ("max_bulk_events", 2.5),
        ("run_batch_size", 0),
        ("run_batch_size", True),
        ("worker_interval", 0),
        ("worker_interval", -1.0),
        ("worker_interval", "60"),
        ("renewal_notice", timedelta(days=-1)),
        ("renewal_notice", 3),
        ("token_secret", 42),
    ],
)
def test_an_invalid_setting_is_refused_naming_its_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert caught.value.field == field
    with pytest.raises(ValidationError) as caught:
        Settings().replace(**{field: value})
    assert caught.value.field == field


def test_settings_hide_the_secret_and_refuse_unknown_names() -> None:
    settings = Settings(token_secret="s3cret")
    assert settings.token_secret == b"s3cret"  # text is kept as UTF-8 bytes
    assert "s3cret" not in repr(settings) and "token_secret=<hidden>" in repr(settings)
    with pytest.raises(ValidationError) as caught:
        settings.replace(batch_size=10)
    assert caught.value.field == "batch_size"
    assert "run_batch_size" in caught.value.message and "worker_interval" in caught.value.message
    assert settings.replace(run_batch_size=10) == Settings(token_secret=b"s3cret", run_batch_size=10)


def test_the_old_keyword_arguments_still_configure_billing_over_its_settings() -> None:
    base = Settings(renewal_notice=timedelta(days=1), max_bulk_events=10)
    billing = Billing(settings=base, token_secret="abc", renewal_notice=None)
    assert billing.settings == Settings(token_secret=b"abc", renewal_notice=None, max_bulk_events=10)
    assert Billing(max_bulk_events=7).settings.max_bulk_events == 7
    # Assigning the old attributes replaces the settings; calls made afterwards see the new ones.
    billing.max_bulk_events = 3
    billing.renewal_notice = timedelta(hours=6)
    assert (billing.settings.max_bulk_events, billing.settings.renewal_notice) == (3, timedelta(hours=6))
    assert base.max_bulk_events == 10  # the host's own value is never changed


def test_the_settings_token_secret_signs_sessions_across_billing_objects(
    storage: Storage, clock: TestClock
) -> None:
    settings = Settings(token_secret=b"shared")
    first = Billing(storage, clock, settings=settings)
    setup = first.bootstrap(owner_password="correct horse battery staple")
    token, _ = first.login(setup.owner.email or "", "correct horse battery staple")
    twin = Billing(storage, clock, settings=settings)
    assert twin.authenticate_token(token).tenant_id == setup.tenant.id
