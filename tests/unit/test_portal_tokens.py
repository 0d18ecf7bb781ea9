"""Portal session tokens (pure): what a token must carry to open a portal, and that the portal's
signing key is not the dashboard's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from billingkit.domain import portal_tokens
from billingkit.domain.credentials import issue_token, sign_claims, verify_token
from billingkit.domain.portal_tokens import issue_portal_token, verify_portal_token
from billingkit.errors import Unauthorized

SECRET = b"s3cret"
NOW = datetime(2026, 5, 1, 9, 30, 15, 500000, tzinfo=UTC)
CLAIMS: dict[str, Any] = {
    "aud": "customer_portal",
    "tenant_id": "tenant_1",
    "environment_id": "env_1",
    "customer_id": "cust_1",
    "external_customer_id": "ada",
    "iat": int(NOW.timestamp()),
    "exp": int(NOW.timestamp()) + 60,
}


def _signed(**changes: Any) -> str:
    claims = {k: v for k, v in {**CLAIMS, **changes}.items() if v is not None}
    return sign_claims(portal_tokens._portal_key(SECRET), claims)


def test_a_token_round_trips_in_whole_seconds() -> None:
    token, claims = issue_portal_token(
        SECRET,
        tenant_id="tenant_1",
        environment_id="env_1",
        customer_id="cust_1",
        external_customer_id="ada",
        now=NOW,
        lifetime=timedelta(hours=1),
    )
    assert claims.expires_at == datetime(2026, 5, 1, 10, 30, 15, tzinfo=UTC)  # 09:30:15 + 1 h
    assert verify_portal_token(SECRET, token, now=NOW) == claims
    assert verify_portal_token(SECRET, token, now=claims.expires_at - timedelta(seconds=1)) == claims
    with pytest.raises(Unauthorized, match="expired"):
        verify_portal_token(SECRET, token, now=claims.expires_at)


@pytest.mark.parametrize(
    "changes",
    [
        {"aud": "dashboard"},
        {"aud": None},
        {"customer_id": None},
        {"customer_id": ""},
        {"environment_id": 7},
        {"exp": "soon"},
        {"exp": 10**30},
    ],
    ids=str,
)
def test_a_well_signed_token_without_the_portal_claims_is_refused(changes: dict[str, Any]) -> None:
    assert verify_portal_token(SECRET, _signed(), now=NOW).customer_id == "cust_1"
    with pytest.raises(Unauthorized):
        verify_portal_token(SECRET, _signed(**changes), now=NOW)


def test_portal_and_dashboard_tokens_do_not_verify_as_each_other() -> None:
    dashboard = issue_token(SECRET, tenant_id="tenant_1", user_id="user_1", environment_id="env_1", now=NOW)
    assert verify_token(SECRET, dashboard, now=NOW).user_id == "user_1"
    with pytest.raises(Unauthorized):
        verify_portal_token(SECRET, dashboard, now=NOW)
    # Even with every claim a dashboard token needs, a portal-signed token is no session token.
    with pytest.raises(Unauthorized):
        verify_token(SECRET, _signed(user_id="user_1"), now=NOW)
    with pytest.raises(Unauthorized):
        verify_portal_token(SECRET, sign_claims(SECRET, CLAIMS), now=NOW)
