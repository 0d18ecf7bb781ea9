"""The event-type catalogue is the one list of notification types: the spec's, the services', the
API guide's."""

from __future__ import annotations

import ast
import re
from decimal import Decimal
from pathlib import Path

import pytest

import billingkit
from billingkit import Billing
from billingkit.domain.access import Actor, Role
from billingkit.domain.event_types import EVENT_TYPES
from billingkit.domain.wallets import AlertState
from billingkit.errors import InternalError
from billingkit.services import notifications
from billingkit.services.context import Context

SRC = Path(billingkit.__file__).parent
ROOT = SRC.parents[1]
SPEC = ROOT.parent / "shared" / "spec" / "interface.md"
DOTTED = re.compile(r"^[a-z_]+(\.[a-z_]+)+$")
PREFIXES = {name.split(".")[0] for name in EVENT_TYPES}
# The payload keys the reference's webhooks use (reference behaviour, section 9).
RESOURCE_KEYS = {
    "subscription",
    "invoice",
    "customer",
    "wallet",
    "transaction",
    "updated_transaction",
    "payment",
    "feature",
    "entitlement",
    "credit_note",
    "checkout_session",
    "phase",
    "event",
}


def recorded_by_services() -> set[str]:
    """Every string in ``services/`` that names an event type (``customer.created``...): the
    types the services record, whichever helper they go through."""
    found = set()
    for path in sorted((SRC / "services").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and DOTTED.match(text) and text.split(".")[0] in PREFIXES:
                found.add(text)
    return found


def test_every_type_the_services_record_is_in_the_catalogue() -> None:
    recorded = recorded_by_services()
    # The scan finds the types recorded through each path (notify, notification, event).
    assert {
        "customer.created",
        "invoice.update.finalized",
        "subscription.renewal.due",
        "event.rejected",
    } <= recorded
    assert sorted(recorded - set(EVENT_TYPES)) == []
    # Each of them can build its payload from billingkit's models.
    assert [name for name in sorted(recorded) if EVENT_TYPES[name].build is None] == []


def test_the_catalogue_holds_every_type_the_spec_names() -> None:
    if not SPEC.exists():
        pytest.skip(f"the spec is not at {SPEC}")
    events = SPEC.read_text().split("Event kinds:", 1)[1].split("Payload shapes:", 1)[0]
    named = re.findall(r"`([a-z_.]+)`", events)
    assert len(named) > 50
    assert list(EVENT_TYPES) == named


def test_resource_keys_are_the_references() -> None:
    keys = {e.resource for e in EVENT_TYPES.values()}
    assert keys - {None} <= RESOURCE_KEYS
    # A flat payload has fields to carry instead.
    assert all(e.fields for e in EVENT_TYPES.values() if e.resource is None)


def _documented() -> list[tuple[str, str, str, str]]:
    text = (ROOT / "docs" / "api.md").read_text()
    section = text.split("### Notification event types", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `([a-z_.]+)` \| (.*?) \| (.*?) \| (yes|no) \|$", section, re.M)
    return [(name, resource, fields, recorded) for name, resource, fields, recorded in rows]


def test_the_api_guide_lists_the_catalogue() -> None:
    recorded = recorded_by_services()
    expected = [
        (
            e.name,
            f"`{e.resource}`" if e.resource else "—",
            ", ".join(f"`{f}`" for f in e.fields) or "—",
            "yes" if e.name in recorded else "no",
        )
        for e in EVENT_TYPES.values()
    ]
    assert _documented() == expected


def _context() -> Context:
    return Billing().context("t", "e", Actor("u", (Role.SUPER_ADMIN,)))


def test_a_type_outside_the_catalogue_or_under_another_key_cannot_be_made() -> None:
    ctx = _context()
    with pytest.raises(InternalError, match="not in the catalogue"):
        notifications.event(
            ctx, event_type="customer.renamed", entity_type="customer", entity_id="c", resource={}
        )
    with pytest.raises(InternalError, match="carries a 'customer'"):
        notifications.event(
            ctx, event_type="customer.created", entity_type="invoice", entity_id="c", resource={}
        )
    # Every kind of the spec has its builder now (checkout sessions and alerts were the last).
    assert all(declared.build is not None for declared in EVENT_TYPES.values())
    made = notifications.event(
        ctx, event_type="customer.created", entity_type="customer", entity_id="c", resource={"id": "c"}
    )
    assert made.payload == {"event_type": "customer.created", "customer": {"id": "c"}}


def test_one_path_makes_payloads_with_top_level_fields_and_flat_ones() -> None:
    ctx = _context()
    grant = notifications.event(
        ctx,
        event_type="entitlement.grant.exhausted",
        entity_type="entitlement",
        entity_id="ent_1",
        resource={"id": "ent_1"},
        fields={"usage": "100"},
    )
    assert grant.payload == {
        "event_type": "entitlement.grant.exhausted",
        "entitlement": {"id": "ent_1"},
        "usage": "100",
    }
    with pytest.raises(InternalError, match=r"declares no top-level \['alert'\]"):
        notifications.event(
            ctx,
            event_type="customer.created",
            entity_type="customer",
            entity_id="c",
            resource={"id": "c"},
            fields={"alert": {}},
        )
    with pytest.raises(InternalError, match="carries a 'wallet': give it"):
        notifications.event(
            ctx,
            event_type="wallet.credit_balance.dropped",
            entity_type="wallet",
            entity_id="w",
            resource=None,
        )
    # A flat kind: the builder makes the top-level fields; the caller says what it is about.
    measured = (AlertState.WARNING, "cust_1", "feat_1", "wallet_1", Decimal("100"), Decimal("15.00"))
    with pytest.raises(InternalError, match="is flat: name what it is about"):
        notifications.notification(ctx, "feature.wallet_balance.alert", *measured)
    flat = notifications.notification(
        ctx, "feature.wallet_balance.alert", *measured, about=("feature", "feat_1")
    )
    assert (flat.entity_type, flat.entity_id) == ("feature", "feat_1")
    assert flat.payload == {
        "event_type": "feature.wallet_balance.alert",
        "alert_type": "feature_wallet_balance",
        "alert_status": "warning",
        "customer_id": "cust_1",
        "feature_id": "feat_1",
        "wallet_id": "wallet_1",
        "credit_balance": "100",
        "current_balance": "15.00",
    }
