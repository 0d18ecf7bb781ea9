"""The customer portal through the library: a session token opens one customer's own records,
read-only; it expires, it cannot be forged or tampered with, and it is neither a dashboard session
token nor accepted as one. Memory store: the portal reads through the existing read services,
whose storage is proven elsewhere."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest

from billingkit import (
    Actor,
    Billing,
    NotFound,
    PermissionDenied,
    Scoped,
    Settings,
    TestClock,
    Unauthorized,
    ValidationError,
)
from billingkit.domain.access import Role
from billingkit.domain.credentials import issue_token
from billingkit.domain.portal_tokens import verify_portal_token
from billingkit.facade.portal import CustomerPortal
from billingkit.services.access import BootstrapResult
from billingkit.storage.memory import MemoryStorage

FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "20.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}


@pytest.fixture
def storage():  # type: ignore[no-untyped-def]
    store = MemoryStorage()
    yield store
    store.close()


@pytest.fixture
def env(billing: Billing, setup: BootstrapResult) -> Scoped:
    """Ada and Bob on plan Pro (each with an opening invoice); Ada has a wallet."""
    env = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    sso = env.features.create(name="SSO", type="boolean", lookup_key="sso")
    plan = env.plans.create(name="Pro", prices=[FEE], entitlements=[{"feature_id": sso.id}])
    for external_id in ("ada", "bob"):
        customer = env.customers.create(external_id=external_id, name=external_id.title())
        env.subscriptions.create(
            customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
        )
    env.wallets.create(customer_id=env.customers.get_by_external_id("ada").id, currency="usd")
    return env


def _portal(env: Scoped, external_id: str) -> CustomerPortal:
    return env.billing.open_portal(env.customer_portal.create_session(external_id).token)


def test_a_portal_shows_its_customer_and_nobody_else(env: Scoped) -> None:
    ada, bob = _portal(env, "ada"), _portal(env, "bob")
    ada_id = env.customers.get_by_external_id("ada").id
    bob_id = env.customers.get_by_external_id("bob").id
    assert ada.customer().id == ada_id and bob.customer().id == bob_id
    assert [s.customer_id for s in ada.subscriptions().items] == [ada_id]
    (ada_invoice,) = ada.invoices().items
    (bob_invoice,) = bob.invoices().items
    assert ada_invoice.customer_id == ada_id and ada_invoice.total == bob_invoice.total
    assert ada.invoice(ada_invoice.id) == env.invoices.get(ada_invoice.id)
    with pytest.raises(NotFound):
        ada.invoice(bob_invoice.id)
    with pytest.raises(NotFound):
        ada.invoice_pdf(bob_invoice.id)
    assert ada.invoice_pdf(ada_invoice.id).startswith(b"%PDF")
    assert [w.customer_id for w in ada.wallets()] == [ada_id]
    assert bob.wallets() == []
    assert [f.feature.lookup_key for f in ada.entitlements().features] == ["sso"]
    # The view offers reads only.
    public = {name for name in dir(ada) if not name.startswith("_")}
    assert public == {
        "claims",
        "customer",
        "customer_id",
        "entitlements",
        "invoice",
        "invoice_pdf",
        "invoices",
        "subscriptions",
        "wallets",
    }


def test_a_session_names_its_customer_and_expires_after_an_hour(env: Scoped, clock: TestClock) -> None:
    session = env.customer_portal.create_session("ada")
    assert session.url == "/v1/customer/portal"
    assert session.expires_at == clock.now().replace(microsecond=0) + timedelta(hours=1)
    claims = verify_portal_token(b"test-secret", session.token, now=clock.now())
    assert (claims.customer_id, claims.external_customer_id) == (session.customer_id, "ada")
    assert (claims.tenant_id, claims.environment_id) == (env.tenant_id, env.environment_id)
    clock.advance(timedelta(minutes=59, seconds=58))
    assert env.billing.open_portal(session.token).customer().external_id == "ada"
    clock.advance(timedelta(seconds=2))
    with pytest.raises(Unauthorized):
        env.billing.open_portal(session.token)


def test_the_lifetime_and_url_come_from_the_settings(env: Scoped, clock: TestClock) -> None:
    billing = env.billing
    billing.settings = billing.settings.replace(
        portal_session_lifetime=timedelta(minutes=5), public_url="https://billing.example.com/"
    )
    session = env.customer_portal.create_session("ada")
    assert session.url == "https://billing.example.com/v1/customer/portal"
    assert session.expires_at == clock.now().replace(microsecond=0) + timedelta(minutes=5)
    with pytest.raises(ValidationError) as bad:
        Settings(portal_session_lifetime=timedelta(0))
    assert bad.value.field == "portal_session_lifetime"


def _tampered(token: str) -> str:
    header, claims, signature = token.split(".")
    data = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    data["customer_id"] = "cust_someone_else"
    forged = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def test_forged_tampered_and_foreign_tokens_are_refused(env: Scoped, setup: BootstrapResult) -> None:
    billing = env.billing
    token = env.customer_portal.create_session("ada").token
    other = Billing(billing.storage, billing.clock, token_secret=b"another-secret")
    dashboard = issue_token(
        b"test-secret",
        tenant_id=env.tenant_id,
        user_id=setup.owner.id,
        environment_id=env.environment_id,
        now=billing.clock.now(),
    )
    for refused in (_tampered(token), token[:-2], "not-a-token", dashboard, setup.environments[0][1].api_key):
        with pytest.raises(Unauthorized):
            billing.open_portal(refused)
    with pytest.raises(Unauthorized):
        other.open_portal(token)  # signed under another secret
    # A portal token is no dashboard session token either.
    assert billing.authenticate_token(dashboard).actor.id == setup.owner.id
    with pytest.raises(Unauthorized):
        billing.authenticate_token(token)
    with pytest.raises(Unauthorized):
        billing.authenticate(token)


def test_deleting_the_customer_ends_its_sessions(env: Scoped) -> None:
    token = env.customer_portal.create_session("bob").token
    env.customers.delete(env.customers.get_by_external_id("bob").id)
    with pytest.raises(Unauthorized):
        env.billing.open_portal(token)


def test_who_may_open_a_session(env: Scoped) -> None:
    with pytest.raises(NotFound):
        env.customer_portal.create_session("nobody")
    reader = env.billing.scope(
        env.tenant_id, env.environment_id, actor=Actor(id="r", roles=(Role.ALL_READER,))
    )
    with pytest.raises(PermissionDenied):
        reader.customer_portal.create_session("ada")
    writer = env.billing.scope(
        env.tenant_id, env.environment_id, actor=Actor(id="w", roles=(Role.ALL_WRITER,))
    )
    assert writer.customer_portal.create_session("ada").external_customer_id == "ada"
