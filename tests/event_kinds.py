"""One story that makes every notification kind billingkit records, each by the operation that
causes it, through the library on a test clock with deterministic ids.

:func:`tell` returns, per kind, the payload of the one notification the causing operation
recorded about its resource. ``tests/services/test_event_kinds.py`` checks each payload;
``tests/architecture/test_webhook_docs.py`` keeps the examples of docs/webhooks.md equal to what
it produces, and ``python -m tests.event_kinds`` rewrites that section.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from billingkit import Billing, Scoped, Settings, TestClock
from billingkit.domain.event_sources import EMITTED_BY as OPERATIONS
from billingkit.domain.event_types import EVENT_TYPES
from billingkit.domain.ids import IdFactory
from billingkit.domain.resources import iso
from billingkit.providers import SandboxPaymentProvider
from billingkit.storage.memory import MemoryStorage

START = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
DOC = Path(__file__).resolve().parents[1] / "docs" / "webhooks.md"


@dataclass
class Story:
    """A fresh memory store on a test clock, with ids that depend only on the clock."""

    clock: TestClock = field(default_factory=lambda: TestClock(START))
    examples: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.billing = Billing(
            MemoryStorage(),
            self.clock,
            settings=Settings(renewal_notice=timedelta(days=3)),
            payment_provider=SandboxPaymentProvider(),
        )
        self.billing.ids = IdFactory(self.clock.now, entropy=lambda size: bytes(size))
        setup = self.billing.bootstrap(tenant_name="Acme", owner_email="owner@acme.test")
        self.s: Scoped = self.billing.scope(setup.tenant.id, setup.environments[0][0].id)

    def once(self, kind: str, entity_id: Callable[[Any], str] | str, action: Callable[[], Any]) -> Any:
        """Run ``action`` and check that it recorded exactly one ``kind`` notification about the
        resource ``entity_id`` names (an id, or a function of the action's answer); keeps its
        payload as the kind's example and answers what the action answered."""
        return self.each({kind: entity_id}, action)

    def each(self, expected: dict[str, Callable[[Any], str] | str], action: Callable[[], Any]) -> Any:
        """:meth:`once` for several kinds one action records together (an alert evaluation that
        changes several alerts), each about the entity it names."""
        before = {kind: {e.id for e in self._events(kind)} for kind in expected}
        answer = action()
        for kind, entity_id in expected.items():
            entity = entity_id if isinstance(entity_id, str) else entity_id(answer)
            made = [e for e in self._events(kind) if e.id not in before[kind] and e.entity_id == entity]
            assert len(made) == 1, (kind, entity, [e.id for e in made])
            assert kind not in self.examples, kind
            self.examples[kind] = made[0].payload
        return answer

    def _events(self, kind: str) -> list[Any]:
        return list(self.s.notifications.list(event_type=kind, limit=1000).items)


def _fee(amount: str, name: str) -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "display_name": name,
    }


def _direct(s: Scoped, customer_id: str, status: str = "FINALIZED", **fields: Any) -> Any:
    return s.invoices.create(
        customer_id=customer_id,
        currency="usd",
        line_items=[
            {"amount": "100.00", "quantity": "1", "display_name": "Onboarding", "price_id": "p_setup"}
        ],
        subtotal="100.00",
        total="100.00",
        amount_due="100.00",
        invoice_status=status,
        **fields,
    )


def _warn_below(warning: str, critical: str) -> dict[str, Any]:
    """Alert thresholds on a balance: ``warning`` then ``critical`` as it falls."""
    return {
        "alert_enabled": True,
        "warning": {"threshold": warning, "condition": "below"},
        "critical": {"threshold": critical, "condition": "below"},
    }


def _alerts(story: Story, customer_id: str) -> None:
    """The alert kinds (docs/alerts.md): a usage plan (1.00 usd a token, 100 calls a month
    granted), spend and grant alert settings on a subscription of ``customer_id`` (acme-1), and a
    wallet of another customer with balance alerts, on the same plan. Thresholds move at ingestion
    asked to evaluate alerts and at the worker's runs (``billing.run_due``)."""
    s, clock, once, each = story.s, story.clock, story.once, story.each
    tokens = s.meters.create(
        name="Tokens", event_name="llm.tokens", aggregation={"type": "SUM", "field": "tokens"}
    )
    calls = s.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    ai = s.groups.create(name="AI", lookup_key="ai", entity_type="feature").group
    metered = s.features.create(
        name="Tokens", type="metered", meter_id=tokens.id, lookup_key="tokens", group_id=ai.id
    )
    api = s.features.create(name="API calls", type="metered", meter_id=calls.id, lookup_key="api-calls")
    usage_price = {
        **_fee("1.00", "Tokens"),
        "type": "USAGE",
        "invoice_cadence": "ARREAR",
        "meter_id": tokens.id,
    }
    usage_plan = s.plans.create(
        name="Usage",
        lookup_key="usage",
        prices=[usage_price],
        entitlements=[{"feature_id": api.id, "usage_limit": 100, "usage_reset_period": "MONTHLY"}],
    )
    (grant,) = s.plans.entitlements(usage_plan.id)
    monthly = {"plan_id": usage_plan.id, "currency": "usd", "billing_period": "MONTHLY"}
    sub = s.subscriptions.create(customer_id=customer_id, **monthly)
    spend = {"critical": {"threshold": "50.00", "condition": "above"}}
    settings = [
        s.alerts.create(entity_type="subscription", entity_id=sub.id, config=spend),
        s.alerts.create(
            entity_type="subscription_line_item",
            entity_id=sub.line_items[0].id,
            parent_entity_id=sub.id,
            config=spend,
        ),
        s.alerts.create(entity_type="group", entity_id=ai.id, parent_entity_id=sub.id, config=spend),
    ]
    s.alerts.create(
        entity_type="entitlement_grant",
        entity_id=grant.id,
        parent_entity_id=sub.id,
        config={"warning": {"threshold": "80", "condition": "above"}},
    )
    clock.set(START + timedelta(days=14))

    def use(external_id: str, event_name: str, count: int, amount: int = 1) -> Any:
        return s.events.ingest_bulk(
            [
                {
                    "event_id": f"evt_{event_name}_{external_id}_{clock.now():%H%M}_{n}",
                    "event_name": event_name,
                    "external_customer_id": external_id,
                    "timestamp": clock.now(),
                    "properties": {"tokens": amount},
                }
                for n in range(count)
            ],
            evaluate_alerts_immediately=True,
        )

    spend_kinds = ("spend", "line_item_spend", "group_spend")
    # 60 tokens: 60.00 usd spent, over the 50.00 of all three settings.
    each(
        {f"subscription.{k}.threshold_reached": sub.id for k in spend_kinds},
        lambda: use("acme-1", "llm.tokens", 1, 60),
    )
    # The thresholds raised to 100.00: the worker's next run finds the spend back under them.
    for setting in settings:
        s.alerts.update(setting.id, config={"critical": {"threshold": "100.00"}})
    clock.set(START + timedelta(days=14, minutes=1))
    each({f"subscription.{k}.threshold_recovered": sub.id for k in spend_kinds}, story.billing.run_due)
    # The 100th call this month exhausts the 100 granted.
    clock.set(START + timedelta(days=14, minutes=2))
    once("entitlement.grant.exhausted", grant.id, lambda: use("acme-1", "api.call", 100))

    # Balance alerts: a new customer's empty wallet, then 100 credits, then usage eating them.
    beta = s.customers.create(external_id="beta-1", name="Beta")
    s.subscriptions.create(customer_id=beta.id, **monthly)
    wallet = s.wallets.create(
        customer_id=beta.id, currency="usd", name="Beta credits", alert_settings=_warn_below("20", "5")
    )
    balance_kinds = ("credit_balance", "ongoing_balance")
    clock.set(START + timedelta(days=14, minutes=3))
    each({f"wallet.{k}.dropped": wallet.id for k in balance_kinds}, story.billing.run_due)
    s.wallets.top_up(wallet.id, credits_to_add="100", transaction_reason="FREE_CREDIT_GRANT")
    clock.set(START + timedelta(days=14, minutes=4))
    each({f"wallet.{k}.recovered": wallet.id for k in balance_kinds}, story.billing.run_due)
    s.features.update(metered.id, alert_settings=_warn_below("20", "5"))
    clock.set(START + timedelta(days=14, minutes=5))
    # 85 tokens: a real-time balance of 15.00, under the feature's (and the wallet's) warning.
    once("feature.wallet_balance.alert", metered.id, lambda: use("beta-1", "llm.tokens", 1, 85))
    clock.set(START + timedelta(days=14, minutes=6))
    # 12 more: 3.00, from warning to in alarm.
    once("wallet.ongoing_balance.updated", wallet.id, lambda: use("beta-1", "llm.tokens", 1, 12))


def _checkout(story: Story, plan_id: str) -> None:
    """The checkout kinds (docs/checkout.md): three sandbox sessions (the story's environment is a
    development one) subscribing acme-1 to ``plan_id``: one paid on the sandbox page, one declined
    there, one left open past its ``expires_at`` (30 minutes) until the worker's run."""
    s, clock, once = story.s, story.clock, story.once
    clock.set(START + timedelta(days=15))
    configuration = {
        "create_subscription_params": {"plan_id": plan_id, "currency": "usd", "billing_period": "MONTHLY"}
    }

    def open_session(key: str) -> Any:
        return s.checkout.create(
            customer_external_id="acme-1",
            action="create_subscription",
            configuration=configuration,
            idempotency_key=key,
            success_url="https://acme.test/welcome",
        )

    paid = once("checkout.session.initiated", lambda made: made.id, lambda: open_session("order-1"))
    clock.set(START + timedelta(days=15, minutes=2))
    once("checkout.session.completed", paid.id, lambda: s.checkout.pay_sandbox(paid.id))
    declined = open_session("order-2")
    once("checkout.session.failed", declined.id, lambda: s.checkout.decline_sandbox(declined.id))
    forgotten = open_session("order-3")
    clock.set(forgotten.expires_at + timedelta(minutes=1))
    once("checkout.session.expired", forgotten.id, story.billing.run_due)


def tell() -> dict[str, dict[str, Any]]:
    """Run the story; the payload of each kind's notification, by kind."""
    story = Story()
    s, clock, once = story.s, story.clock, story.once
    by_id: Callable[[Any], str] = lambda made: made.id  # noqa: E731

    # Customers
    customer = once(
        "customer.created",
        by_id,
        lambda: s.customers.create(
            external_id="acme-1",
            name="Acme",
            email="billing@acme.test",
            address_city="Berlin",
            address_country="DE",
            metadata={"segment": "startup"},
        ),
    )
    once("customer.updated", customer.id, lambda: s.customers.update(customer.id, name="Acme GmbH"))
    leaving = s.customers.create(external_id="gone-1", name="Gone")
    once("customer.deleted", leaving.id, lambda: s.customers.delete(leaving.id))

    # Features and entitlements
    feature = once(
        "feature.created", by_id, lambda: s.features.create(name="SSO", type="boolean", lookup_key="sso")
    )
    once("feature.updated", feature.id, lambda: s.features.update(feature.id, description="Single sign-on"))
    pro = s.plans.create(name="Pro", lookup_key="pro", prices=[_fee("30", "Pro")])
    max_plan = s.plans.create(name="Max", lookup_key="max", prices=[_fee("90", "Max")])
    grant = once(
        "entitlement.created",
        by_id,
        lambda: s.entitlements.create(
            plan_id=pro.id, feature_id=feature.id, feature_type="boolean", is_enabled=True
        ),
    )
    once("entitlement.updated", grant.id, lambda: s.entitlements.update(grant.id, is_enabled=False))
    once("entitlement.deleted", grant.id, lambda: s.entitlements.delete(grant.id))
    once("feature.deleted", feature.id, lambda: s.features.delete(feature.id))

    # Subscriptions
    monthly = {"customer_id": customer.id, "plan_id": pro.id, "currency": "usd", "billing_period": "MONTHLY"}
    sub = once(
        "subscription.created", by_id, lambda: s.subscriptions.create(**monthly, lookup_key="acme-pro")
    )
    draft = once(
        "subscription.draft.created",
        by_id,
        lambda: s.subscriptions.create(**monthly, subscription_status="draft"),
    )
    once(
        "subscription.activated",
        draft.id,
        lambda: s.subscriptions.activate(draft.id, start_date=START),
    )
    once(
        "subscription.cancelled",
        draft.id,
        lambda: s.subscriptions.cancel(draft.id, cancellation_type="immediate"),
    )
    phase = once(
        "subscription.phase.created",
        by_id,
        lambda: s.subscriptions.add_phase(sub.id, start_date=iso(datetime(2026, 7, 1, 9, 30, tzinfo=UTC))),
    )
    once(
        "subscription.phase.updated",
        phase.id,
        lambda: s.subscriptions.update_phase(phase.id, end_date=iso(datetime(2026, 9, 1, 9, 30, tzinfo=UTC))),
    )
    once("subscription.phase.deleted", phase.id, lambda: s.subscriptions.delete_phase(phase.id))
    clock.set(START + timedelta(days=5))
    once(
        "subscription.plan_changed",
        sub.id,
        lambda: s.subscriptions.change_plan(
            sub.id, target_plan_id=max_plan.id, proration_behavior="none", idempotency_key="to-max"
        ),
    )
    once("subscription.paused", sub.id, lambda: s.subscriptions.pause(sub.id, pause_days=5))
    clock.set(START + timedelta(days=7))
    once("subscription.resumed", sub.id, lambda: s.subscriptions.resume(sub.id))
    once(
        "subscription.updated",
        sub.id,
        lambda: s.subscriptions.update_line_item(
            next(line.id for line in s.subscriptions.get(sub.id).line_items if line.end_date is None),
            quantity="2",
        ),
    )
    # Three days before the period (stretched by the 2 days paused) ends on 3 June.
    renewal_notice = s.subscriptions.get(sub.id).current_period_end - timedelta(days=3)
    clock.set(renewal_notice)
    once("subscription.renewal.due", sub.id, story.billing.run_due)

    # Invoices
    clock.set(START + timedelta(days=10))
    draft_invoice = _direct(s, customer.id, status="DRAFT")
    once(
        "invoice.update",
        draft_invoice.id,
        lambda: s.invoices.update(draft_invoice.id, metadata={"po": "PO-7"}),
    )
    once("invoice.update.finalized", draft_invoice.id, lambda: s.invoices.finalize(draft_invoice.id))
    once(
        "invoice.update.payment",
        draft_invoice.id,
        lambda: s.invoices.update_payment(draft_invoice.id, payment_status="SUCCEEDED"),
    )
    mistaken = _direct(s, customer.id)
    once("invoice.update.voided", mistaken.id, lambda: s.invoices.void(mistaken.id))
    (opening,) = [
        i for i in s.invoices.list(subscription_id=sub.id).items if i.billing_reason == "SUBSCRIPTION_CREATE"
    ]
    once("invoice.communication.triggered", opening.id, lambda: s.invoices.trigger_communication(opening.id))
    late = _direct(s, customer.id, due_date=START + timedelta(days=12))
    clock.set(START + timedelta(days=13))
    once("invoice.payment.overdue", late.id, story.billing.run_due)

    # Payments
    unpaid = _direct(s, customer.id)
    offline = {
        "currency": "usd",
        "destination_id": unpaid.id,
        "destination_type": "INVOICE",
        "payment_method_type": "OFFLINE",
    }
    once("payment.created", by_id, lambda: s.payments.create(amount="10.00", **offline))
    once("payment.success", by_id, lambda: s.payments.create(amount="20.00", **offline))
    card = {**offline, "payment_method_type": "CARD"}
    declined = once(
        "payment.failed",
        by_id,
        lambda: s.payments.create(
            amount="30.00", payment_method_id=SandboxPaymentProvider.DECLINED_METHOD, **card
        ),
    )
    once(
        "payment.updated",
        declined.id,
        lambda: s.payments.update(declined.id, metadata={"note": "card expired"}),
    )
    once(
        "payment.pending",
        by_id,
        lambda: s.payments.create(amount="30.00", **{**offline, "payment_method_type": "PAYMENT_LINK"}),
    )

    # Credit notes
    settled = _direct(s, customer.id)  # unpaid: the note lowers what it asks (an adjustment)
    note = once(
        "credit_note.created",
        by_id,
        lambda: s.credit_notes.create(
            invoice_id=settled.id,
            reason="BILLING_ERROR",
            line_items=[{"invoice_line_item_id": settled.line_items[0].id, "amount": "15.00"}],
            process_credit_note=False,
        ),
    )
    once("credit_note.updated", note.id, lambda: s.credit_notes.finalize(note.id))

    # Wallets
    wallet = once(
        "wallet.created",
        by_id,
        lambda: s.wallets.create(customer_id=customer.id, currency="usd", name="Prepaid credits"),
    )
    once("wallet.updated", wallet.id, lambda: s.wallets.update(wallet.id, name="Credits"))
    once(
        "wallet.transaction.created",
        lambda made: made.wallet_transaction.id,
        lambda: s.wallets.top_up(wallet.id, credits_to_add="25", transaction_reason="FREE_CREDIT_GRANT"),
    )
    purchase = s.wallets.top_up(
        wallet.id, credits_to_add="10", transaction_reason="PURCHASED_CREDIT_INVOICED"
    )
    once(
        "wallet.transaction.updated",
        purchase.wallet_transaction.id,
        lambda: s.invoices.update_payment(str(purchase.invoice_id), payment_status="SUCCEEDED"),
    )
    once("wallet.terminated", wallet.id, lambda: s.wallets.terminate(wallet.id))

    # Ingestion
    once(
        "event.rejected",
        "evt_unmetered_1",
        lambda: s.events.ingest(
            event_id="evt_unmetered_1",
            event_name="unknown_call",
            external_customer_id="acme-1",
            timestamp=START + timedelta(days=13),
            properties={"path": "/v1/ping"},
        ),
    )

    _alerts(story, customer.id)
    _checkout(story, pro.id)
    return story.examples


# -- docs/webhooks.md ----------------------------------------------------------------------------

HEADING = "## Event kinds"


def render(examples: dict[str, dict[str, Any]]) -> str:
    """The ``## Event kinds`` section of docs/webhooks.md for ``examples``."""
    out = [
        HEADING,
        "",
        "Every kind billingkit can send, in the spec's order. A payload is",
        '`{"event_type": <kind>, <resource key>: {...}}` plus the other top-level fields named; money is',
        "a decimal string, instants ISO 8601 UTC. The examples below are generated by",
        "`python -m tests.event_kinds` from a story run through the library on a test clock",
        "(`tests/event_kinds.py`), and a test fails when this section and what the code produces differ.",
        "",
    ]
    group = None
    for declared in EVENT_TYPES.values():
        if declared.group != group:
            group = declared.group
            out += [f"### {group}", ""]
        out += [f"#### `{declared.name}`", ""]
        key = f"`{declared.resource}`" if declared.resource else "none (flat)"
        extra = ", ".join(f"`{f}`" for f in declared.fields)
        out.append(f"Resource key: {key}" + (f"; other fields: {extra}." if extra else "."))
        out += [f"Emitted by: {OPERATIONS[declared.name]}.", "", "```json"]
        out += json.dumps(examples[declared.name], indent=2, sort_keys=False).splitlines()
        out += ["```", ""]
    return "\n".join(out).rstrip() + "\n"


def section(text: str) -> str:
    """The ``## Event kinds`` section of ``text`` (up to the next ``## `` heading)."""
    start = text.index(HEADING)
    rest = text[start + len(HEADING) :]
    end = rest.find("\n## ")
    return text[start:] if end < 0 else text[start : start + len(HEADING) + end + 1]


def write(path: Path = DOC) -> None:
    """Replace the section in ``path``, or add it at the end (the whole file when there is none)."""
    fresh = render(tell())
    text = path.read_text() if path.exists() else ""
    if HEADING in text:
        path.write_text(text.replace(section(text), fresh))
    else:
        path.write_text((text.rstrip() + "\n\n" if text.strip() else "") + fresh)


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else DOC)
