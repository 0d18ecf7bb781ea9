"""The sandbox checkout page: what a person sees at ``payment_action.url`` of a sandbox session,
with Pay and Decline buttons (plain HTML forms, so it works in any browser without scripts)."""

from __future__ import annotations

import html

from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.invoices import Invoice

__all__ = ["render_sandbox_page"]

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}"
    "table{border-collapse:collapse;width:100%}td{padding:.3rem 0}td+td{text-align:right}"
    "form{display:inline}button{font-size:1rem;padding:.5rem 1.5rem;margin:1rem .5rem 0 0;cursor:pointer}"
    ".note{color:#666;font-size:.85rem}"
)


def render_sandbox_page(session: CheckoutSession, invoice: Invoice | None, action_query: str) -> str:
    """The page of ``session`` (and the ``invoice`` it pays, when known). ``action_query`` is the
    query string the buttons post with (the session's scope)."""
    e = html.escape
    rows = [
        ("Session", session.id),
        ("Action", session.action.value),
        ("Status", session.checkout_status.value),
    ]
    if invoice is not None:
        rows.append(("Amount", f"{invoice.amount_due} {invoice.currency.upper()}"))
        rows += [
            (line.display_name or "line", f"{line.amount} {invoice.currency.upper()}")
            for line in invoice.line_items
        ]
    rows.append(("Expires at", session.expires_at.isoformat()))
    if session.failure_reason:
        rows.append(("Reason", session.failure_reason))
    table = "".join(f"<tr><td>{e(label)}</td><td>{e(value)}</td></tr>" for label, value in rows)
    base = f"/v1/checkout/sandbox/{e(session.id)}"
    buttons = ""
    if session.is_open:
        buttons = (
            f'<form method="post" action="{base}/pay?{e(action_query)}">'
            '<button type="submit">Pay</button></form>'
            f'<form method="post" action="{base}/decline?{e(action_query)}">'
            '<button type="submit">Decline</button></form>'
        )
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>billingkit sandbox checkout</title>'
        f"<style>{_STYLE}</style></head><body><h1>Sandbox checkout</h1><table>{table}</table>{buttons}"
        '<p class="note">The sandbox takes no money: Pay completes the session as a provider\'s '
        "confirmation would, Decline fails it.</p></body></html>"
    )
