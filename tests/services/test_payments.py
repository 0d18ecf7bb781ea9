"""Payments through the library, on every store: each method (OFFLINE, CREDITS, a card through the
sandbox provider), idempotency, what is refused (and that nothing is written then), updates,
archiving, processing later, and collection attempts. Amounts are exact, with the arithmetic
written next to them."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.invoices import PaymentStatus
from billingkit.domain.wallets import Wallet, WalletConfig, WalletPriceType, WalletType
from billingkit.errors import IdempotencyConflict, InvalidOperation, NotFound, ValidationError
from billingkit.providers.sandbox import SandboxPaymentProvider
from tests.wallet_reads import add_wallet, ledger

D = Decimal
START = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def sandbox() -> SandboxPaymentProvider:
    return SandboxPaymentProvider()


@pytest.fixture
def env(storage: Any, sandbox: SandboxPaymentProvider) -> Scoped:
    billing = Billing(storage, TestClock(START), payment_provider=sandbox)
    setup = billing.bootstrap()
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


@pytest.fixture
def customer_id(env: Scoped) -> str:
    return env.customers.create(external_id="c1", name="Ada").id


def invoice(env: Scoped, customer_id: str, amount: str = "100.00", **fields: Any) -> Any:
    body: dict[str, Any] = {
        "customer_id": customer_id,
        "currency": "usd",
        "line_items": [{"amount": amount, "quantity": "1", "display_name": "Service", "price_type": "USAGE"}],
        "subtotal": amount,
        "total": amount,
        "amount_due": amount,
    }
    return env.invoices.create(**{**body, **fields})


def pay(env: Scoped, invoice_id: str, amount: str, method: str = "OFFLINE", **fields: Any) -> Any:
    return env.payments.create(
        amount=amount,
        currency="usd",
        destination_id=invoice_id,
        destination_type="INVOICE",
        payment_method_type=method,
        **fields,
    )


def wallet(env: Scoped, customer_id: str, *credits: str, **fields: Any) -> Wallet:
    made = Wallet(
        **{
            "id": f"wallet_{len(ledger(env)[0]) + 1}",
            "tenant_id": env.tenant_id,
            "environment_id": str(env.environment_id),
            "created_at": START,
            "updated_at": START,
            "created_by": "test",
            "updated_by": "test",
            "customer_id": customer_id,
            "currency": "usd",
            **fields,
        }
    )
    return add_wallet(env, made, *(D(c) for c in credits))


def events(env: Scoped, event_type: str) -> list[str]:
    return [e.entity_id for e in env.notifications.list(event_type=event_type, limit=100).items]


def money(inv: Any) -> tuple[Any, ...]:
    return (inv.payment_status, inv.amount_paid, inv.amount_remaining, inv.overpaid_amount)


# -- OFFLINE ----------------------------------------------------------------------------------


def test_an_offline_payment_is_paid_at_once_and_notified(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id)
    payment = pay(env, inv.id, "60", metadata={"method": "bank_transfer", "reference": "TX-9"})
    assert (payment.payment_status, payment.amount, payment.succeeded_at) == (
        PaymentStatus.SUCCEEDED,
        D("60.00"),  # kept at the currency's precision
        START,
    )
    assert (payment.invoice_number, payment.customer_id, payment.payment_gateway) == (
        inv.invoice_number,
        customer_id,
        None,
    )
    assert [(a.attempt_number, a.payment_status) for a in payment.attempts] == [(1, PaymentStatus.SUCCEEDED)]
    assert env.payments.get(payment.id) == payment
    # 100.00 due - 60.00 paid = 40.00 remaining: a partial payment leaves the invoice PENDING.
    assert money(env.invoices.get(inv.id)) == (PaymentStatus.PENDING, D("60.00"), D("40.00"), D("0"))
    assert events(env, "payment.created") == [payment.id]
    assert events(env, "payment.success") == [payment.id]
    assert events(env, "invoice.update.payment") == [inv.id]
    (created,) = env.notifications.list(event_type="payment.created").items
    assert created.payload["payment"]["payment_status"] == "INITIATED"
    (success,) = env.notifications.list(event_type="payment.success").items
    assert success.payload["payment"]["payment_status"] == "SUCCEEDED"


def test_the_same_request_twice_is_one_payment_and_moves_the_invoice_once(
    env: Scoped, customer_id: str
) -> None:
    inv = invoice(env, customer_id)
    first = pay(env, inv.id, "60.00")
    again = pay(env, inv.id, "60")  # the same amount written another way
    assert again == first
    assert env.payments.list().total == 1
    assert env.invoices.get(inv.id).amount_paid == D("60.00")
    assert len(events(env, "payment.created")) == 1
    assert len(events(env, "invoice.update.payment")) == 1
    # Another amount, method or intent is another payment.
    other = pay(env, inv.id, "60.00", process_payment=False)
    assert other.id != first.id and other.payment_status is PaymentStatus.INITIATED


def test_a_named_key_with_another_request_conflicts_and_writes_nothing(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id)
    first = pay(env, inv.id, "10.00", idempotency_key="cheque-42")
    assert first.idempotency_key == "cheque-42"
    assert pay(env, inv.id, "10.00", idempotency_key="cheque-42").id == first.id
    with pytest.raises(IdempotencyConflict) as caught:
        pay(env, inv.id, "20.00", idempotency_key="cheque-42")
    assert caught.value.details == {"field": "idempotency_key", "payment_id": first.id}
    assert env.payments.list().total == 1
    assert env.invoices.get(inv.id).amount_paid == D("10.00")
    # Two equal payments by the same method need keys of their own.
    second = pay(env, inv.id, "10.00", idempotency_key="cheque-43")
    assert second.id != first.id
    assert env.invoices.get(inv.id).amount_paid == D("20.00")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"destination_type": "CUSTOMER"}, "destination_type"),
        ({"currency": "eur"}, "currency"),
        ({"amount": "0"}, "amount"),
        ({"amount": "10.001"}, "amount"),
        ({"destination_id": "inv_missing"}, "destination_id"),
        ({"payment_gateway": "sandbox"}, "payment_gateway"),
        ({"payment_method_type": "CARD", "payment_gateway": "stripe"}, "payment_gateway"),
        ({"payment_method_type": "CREDITS"}, "payment_method_id"),
        ({"payment_method_type": "CREDITS", "payment_method_id": "wallet_none"}, "payment_method_id"),
    ],
)
def test_a_bad_request_names_its_field_and_writes_nothing(
    env: Scoped, customer_id: str, fields: dict[str, Any], field: str
) -> None:
    inv = invoice(env, customer_id)
    body = {
        "amount": "10.00",
        "currency": "usd",
        "destination_id": inv.id,
        "destination_type": "INVOICE",
        "payment_method_type": "OFFLINE",
        **fields,
    }
    with pytest.raises(ValidationError) as caught:
        env.payments.create(**body)
    assert caught.value.field == field
    assert env.payments.list(status=None).total == 0
    assert env.invoices.get(inv.id) == inv
    assert events(env, "payment.created") == []


def test_only_a_finalized_invoice_is_paid(env: Scoped, customer_id: str) -> None:
    draft = invoice(env, customer_id, invoice_status="DRAFT")
    with pytest.raises(InvalidOperation, match="DRAFT: only a FINALIZED invoice takes payments"):
        pay(env, draft.id, "10.00")
    voided = invoice(env, customer_id)
    env.invoices.void(voided.id)
    with pytest.raises(InvalidOperation, match="VOIDED"):
        pay(env, voided.id, "10.00")
    assert env.payments.list(status=None).total == 0


# -- CREDITS ----------------------------------------------------------------------------------


def test_a_credits_payment_debits_the_wallet_lot_by_lot(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id)
    purse = wallet(env, customer_id, "30", "50")
    payment = pay(env, inv.id, "45.00", "CREDITS", payment_method_id=purse.id)
    assert payment.payment_status is PaymentStatus.SUCCEEDED
    assert money(env.invoices.get(inv.id)) == (PaymentStatus.PENDING, D("45.00"), D("55.00"), D("0"))
    (after,), rows = ledger(env)
    # 80 credits - 45 = 35 left; the larger lot (50) is consumed first (same priority and expiry).
    assert after.credit_balance == D("35")
    debits = [r for r in rows if r.type.value == "debit"]
    assert [
        (r.credit_amount, r.transaction_reason.value, r.reference_type.value, r.reference_id) for r in debits
    ] == [(D("45"), "INVOICE_PAYMENT", "PAYMENT", payment.id)]
    # Again: the same payment, no second debit.
    assert pay(env, inv.id, "45.00", "CREDITS", payment_method_id=purse.id).id == payment.id
    assert ledger(env)[0][0].credit_balance == D("35")


def test_a_wallet_with_too_little_refuses_and_nothing_is_written(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id)
    purse = wallet(env, customer_id, "30")
    with pytest.raises(InvalidOperation, match=r"cannot pay 40\.00 usd"):
        pay(env, inv.id, "40.00", "CREDITS", payment_method_id=purse.id)
    assert env.payments.list(status=None).total == 0
    assert env.invoices.get(inv.id) == inv
    (same,), rows = ledger(env)
    assert (same.credit_balance, len(rows)) == (D("30"), 1)


def test_a_post_paid_wallet_is_a_payment_method_and_other_wallets_are_refused(
    env: Scoped, customer_id: str
) -> None:
    inv = invoice(env, customer_id)
    post = wallet(env, customer_id, "100", wallet_type=WalletType.POST_PAID)
    pay(env, inv.id, "100.00", "CREDITS", payment_method_id=post.id)
    assert money(env.invoices.get(inv.id)) == (PaymentStatus.SUCCEEDED, D("100.00"), D("0"), D("0"))
    other = env.customers.create(external_id="c2", name="Bob")
    theirs = wallet(env, other.id, "100")
    euros = wallet(env, customer_id, "100", currency="eur")
    second = invoice(env, customer_id)
    for purse in (theirs, euros):
        with pytest.raises(ValidationError) as caught:
            pay(env, second.id, "10.00", "CREDITS", payment_method_id=purse.id)
        assert caught.value.field == "payment_method_id"


# -- cards through the provider ----------------------------------------------------------------


def test_a_card_is_charged_through_the_provider(
    env: Scoped, customer_id: str, sandbox: SandboxPaymentProvider
) -> None:
    inv = invoice(env, customer_id)
    payment = pay(env, inv.id, "100.00", "CARD", payment_method_id="pm_card_visa")
    assert (payment.payment_status, payment.payment_gateway, payment.gateway_payment_id) == (
        PaymentStatus.SUCCEEDED,
        "sandbox",
        "sbx_pay_000001",
    )
    assert payment.attempts[0].gateway_attempt_id == "sbx_pay_000001"
    (request,) = sandbox.requests
    assert (request.amount, request.currency, request.customer_id, request.payment_method_id) == (
        D("100.00"),
        "usd",
        customer_id,
        "pm_card_visa",
    )
    paid = env.invoices.get(inv.id)
    assert money(paid) == (PaymentStatus.SUCCEEDED, D("100.00"), D("0"), D("0"))
    assert paid.paid_at == START


def test_a_declined_card_fails_the_payment_and_a_retry_is_a_new_attempt(
    env: Scoped, customer_id: str, sandbox: SandboxPaymentProvider
) -> None:
    inv = invoice(env, customer_id)
    payment = pay(env, inv.id, "100.00", "CARD", payment_method_id=SandboxPaymentProvider.DECLINED_METHOD)
    assert (payment.payment_status, payment.error_message, payment.failed_at) == (
        PaymentStatus.FAILED,
        "card_declined",
        START,
    )
    # Nothing was paid on the invoice: it is FAILED, its money unchanged.
    assert money(env.invoices.get(inv.id)) == (PaymentStatus.FAILED, D("0"), D("100.00"), D("0"))
    assert events(env, "payment.failed") == [payment.id]
    retried = env.payments.process(payment.id)
    assert [(a.attempt_number, a.payment_status) for a in retried.attempts] == [
        (1, PaymentStatus.FAILED),
        (2, PaymentStatus.FAILED),
    ]
    assert (
        len(sandbox.requests) == 2
        and sandbox.requests[0].idempotency_key != sandbox.requests[1].idempotency_key
    )
    # The method is changed only before collection.
    with pytest.raises(InvalidOperation, match="INITIATED"):
        env.payments.update(payment.id, payment_method_id="pm_card_visa")


def test_a_pending_provider_payment_is_applied_once_when_processed(
    env: Scoped, customer_id: str, sandbox: SandboxPaymentProvider
) -> None:
    inv = invoice(env, customer_id)
    payment = pay(env, inv.id, "100.00", "PAYMENT_LINK")
    assert (payment.payment_status, payment.payment_url) == (
        PaymentStatus.PENDING,
        SandboxPaymentProvider.CHECKOUT_BASE + "sbx_pay_000001",
    )
    assert events(env, "payment.pending") == [payment.id]
    assert env.invoices.get(inv.id) == inv
    assert env.payments.process(payment.id) == payment  # still pending at the provider: nothing changes
    with pytest.raises(InvalidOperation, match="pending at sandbox"):
        env.payments.delete(payment.id)
    sandbox.settle("sbx_pay_000001")
    done = env.payments.process(payment.id)
    assert (done.payment_status, [a.payment_status for a in done.attempts]) == (
        PaymentStatus.SUCCEEDED,
        [PaymentStatus.SUCCEEDED],
    )
    assert money(env.invoices.get(inv.id)) == (PaymentStatus.SUCCEEDED, D("100.00"), D("0"), D("0"))
    with pytest.raises(InvalidOperation, match="already succeeded"):
        env.payments.process(payment.id)
    assert env.invoices.get(inv.id).amount_paid == D("100.00")
    assert len(events(env, "invoice.update.payment")) == 1


# -- later collection, updates, archiving, lists -----------------------------------------------


def test_a_payment_recorded_without_processing_is_collected_later(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id)
    payment = pay(env, inv.id, "100.00", process_payment=False)
    assert (payment.payment_status, payment.attempts) == (PaymentStatus.INITIATED, ())
    assert env.invoices.get(inv.id) == inv
    done = env.payments.process(payment.id)
    assert done.payment_status is PaymentStatus.SUCCEEDED
    assert env.invoices.get(inv.id).payment_status is PaymentStatus.SUCCEEDED


def test_an_update_changes_metadata_or_an_offline_status_with_its_invoice_effects(
    env: Scoped, customer_id: str
) -> None:
    inv = invoice(env, customer_id)
    payment = pay(env, inv.id, "100.00", process_payment=False)
    tagged = env.payments.update(payment.id, metadata={"cheque": "42"})
    assert (tagged.metadata, tagged.version) == ({"cheque": "42"}, payment.version + 1)
    assert events(env, "payment.updated") == [payment.id]
    later = datetime(2026, 5, 3, tzinfo=UTC)
    confirmed = env.payments.update(payment.id, payment_status="SUCCEEDED", succeeded_at=later)
    assert (confirmed.payment_status, confirmed.succeeded_at) == (PaymentStatus.SUCCEEDED, later)
    assert money(env.invoices.get(inv.id)) == (PaymentStatus.SUCCEEDED, D("100.00"), D("0"), D("0"))
    with pytest.raises(InvalidOperation, match="no longer changes"):
        env.payments.update(payment.id, payment_status="FAILED")
    with pytest.raises(ValidationError) as caught:
        env.payments.update(payment.id, refunded_at=later)
    assert caught.value.field == "refunded_at"
    with pytest.raises(InvalidOperation, match="succeeded"):
        env.payments.delete(payment.id)


def test_a_card_payment_status_is_not_set_by_hand(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id)
    payment = pay(env, inv.id, "100.00", "CARD", process_payment=False)
    with pytest.raises(InvalidOperation, match="comes from its wallet or its payment provider"):
        env.payments.update(payment.id, payment_status="SUCCEEDED")
    assert env.invoices.get(inv.id) == inv


def test_delete_archives_a_payment_that_moved_no_money(env: Scoped, customer_id: str) -> None:
    inv = invoice(env, customer_id)
    payment = pay(env, inv.id, "100.00", process_payment=False)
    archived = env.payments.delete(payment.id)
    assert archived.status.value == "archived"
    with pytest.raises(NotFound):
        env.payments.get(payment.id)
    # Its key stays taken: the same request answers the archived payment, and records nothing new.
    assert pay(env, inv.id, "100.00", process_payment=False).id == payment.id
    assert env.payments.list().total == 0


def test_lists_filter_by_invoice_status_and_method(env: Scoped, customer_id: str) -> None:
    first, second = invoice(env, customer_id), invoice(env, customer_id)
    offline = pay(env, first.id, "10.00")
    card = pay(env, second.id, "10.00", "CARD", payment_method_id="pm_1")
    pending = pay(env, second.id, "5.00", process_payment=False)

    def ids(**fields: Any) -> set[str]:
        return {p.id for p in env.payments.list(**fields).items}

    assert ids(destination_id=first.id) == {offline.id}
    assert ids(payment_method_type="CARD") == {card.id}
    assert ids(payment_status="INITIATED") == {pending.id}
    assert ids(payment_status=["SUCCEEDED", "INITIATED"]) == {offline.id, card.id, pending.id}
    assert ids(gateway_payment_id=card.gateway_payment_id) == {card.id}
    assert ids(payment_ids=[offline.id, card.id]) == {offline.id, card.id}
    page = env.payments.list(limit=2, offset=1)
    assert (page.total, len(page.items)) == (3, 2)


# -- collection attempts -----------------------------------------------------------------------


def test_an_attempt_charges_the_subscription_card(env: Scoped, customer_id: str) -> None:
    plan = env.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "100",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    sub = env.subscriptions.create(
        customer_id=customer_id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        gateway_payment_method_id="pm_card_visa",
    )
    (opening,) = env.invoices.list(subscription_id=sub.id).items
    assert (opening.invoice_status.value, opening.amount_remaining) == ("FINALIZED", D("100.00"))
    paid = env.invoices.attempt_payment(opening.id)
    assert money(paid) == (PaymentStatus.SUCCEEDED, D("100.00"), D("0"), D("0"))
    (payment,) = env.payments.list().items
    assert (payment.payment_method_type.value, payment.payment_method_id, payment.amount) == (
        "CARD",
        "pm_card_visa",
        D("100.00"),
    )
    with pytest.raises(InvalidOperation, match="nothing left to pay"):
        env.invoices.attempt_payment(opening.id)


def test_an_attempt_draws_post_paid_wallets_within_their_price_types(env: Scoped, customer_id: str) -> None:
    inv = invoice(
        env,
        customer_id,
        "120.00",
        line_items=[
            {"amount": "70.00", "quantity": "1", "display_name": "Usage", "price_type": "USAGE"},
            {"amount": "50.00", "quantity": "1", "display_name": "Seat", "price_type": "FIXED"},
        ],
    )
    usage_only = wallet(
        env,
        customer_id,
        "500",
        wallet_type=WalletType.POST_PAID,
        config=WalletConfig(allowed_price_types=(WalletPriceType.USAGE,)),
    )
    small = wallet(env, customer_id, "20", wallet_type=WalletType.POST_PAID)
    wallet(env, customer_id, "500")  # PRE_PAID: not a payment method for attempts
    after = env.invoices.attempt_payment(inv.id)
    # USAGE-only wallet: its 70.00 line; the ALL wallet: the 20.00 its credits are worth.
    assert money(after) == (PaymentStatus.PENDING, D("90.00"), D("30.00"), D("0"))
    assert sorted((p.payment_method_id, p.amount) for p in env.payments.list().items) == sorted(
        [(usage_only.id, D("70.00")), (small.id, D("20.00"))]
    )
    # The small wallet is empty now, the USAGE one covers nothing more: no method pays the rest.
    with pytest.raises(InvalidOperation, match="no payment method"):
        env.invoices.attempt_payment(inv.id)
    assert env.payments.list().total == 2


def test_paying_an_invoice_that_sold_credits_in_full_lands_them_once(env: Scoped, customer_id: str) -> None:
    from billingkit.domain.wallets import TransactionReason, TransactionStatus
    from billingkit.services import wallet_ledger

    purse = wallet(env, customer_id)

    def purchase(uow: Any, ctx: Any) -> str:
        row = wallet_ledger.credit(
            uow,
            ctx,
            uow.wallets.get(purse.id),
            credits=D("50"),
            reason=TransactionReason.PURCHASED_CREDIT_INVOICED,
            key="purchase|1",
            status=TransactionStatus.PENDING,
        ).transactions[0]
        return row.id

    row_id = env.run(purchase)
    inv = invoice(env, customer_id, "50.00", metadata={"wallet_transaction_id": row_id})
    pay(env, inv.id, "20.00")
    (still,), rows = ledger(env)
    assert (still.credit_balance, rows[0].transaction_status) == (D("0"), TransactionStatus.PENDING)
    pay(env, inv.id, "30.00")  # 20.00 + 30.00 = 50.00: paid in full, the 50 credits land
    pay(env, inv.id, "1.00")  # overpaid: they do not land twice
    (landed,), (row,) = ledger(env)
    assert (landed.credit_balance, row.transaction_status) == (D("50"), TransactionStatus.COMPLETED)
