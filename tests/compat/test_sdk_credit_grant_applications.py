"""Credit grants granted through the official SDK: a subscription created with its own
``credit_grants``, its v2 read with ``expand=credit_grants``, and the upcoming grants of the
subscription and of the customer. The clock stands at 2026-05-01 09:30 UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _plan(sdk: Flexprice) -> str:
    plan = sdk.plans.create_plan(name="Pro")
    sdk.prices.create_price(
        billing_period="MONTHLY",
        currency="usd",
        entity_type="PLAN",
        entity_id=plan.id,
        price_unit_type="FIAT",
        type_="FIXED",
        billing_model="FLAT_FEE",
        invoice_cadence="ADVANCE",
        amount="49.00",
    )
    return plan.id


def test_subscription_grants_and_upcoming_applications(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    sub = known(
        sdk.subscriptions.create_subscription(
            customer_id=customer.id,
            plan_id=_plan(sdk),
            currency="usd",
            billing_period="MONTHLY",
            credit_grants=[
                models.CreateCreditGrantRequest(
                    name="Monthly credits",
                    scope="SUBSCRIPTION",
                    credits="100",
                    cadence="RECURRING",
                    period="MONTHLY",
                    period_count=1,
                    expiration_type="BILLING_CYCLE",
                    priority=1,
                )
            ],
        )
    )
    v2 = known(sdk.subscriptions.get_subscription_v2(id=sub.id, expand="credit_grants"))
    (grant,) = v2.credit_grants
    assert (grant.scope, grant.subscription_id, grant.credits, grant.cadence, grant.period) == (
        "SUBSCRIPTION",
        sub.id,
        "100",
        "RECURRING",
        "MONTHLY",
    )

    upcoming = known(sdk.subscriptions.get_subscription_upcoming_grants(id=sub.id))
    assert isinstance(upcoming, models.ListCreditGrantApplicationsResponse)
    (next_one,) = upcoming.items
    assert (next_one.credit_grant_id, next_one.subscription_id, next_one.credits) == (grant.id, sub.id, "100")
    assert (next_one.application_status, next_one.application_reason) == ("pending", "recurring_credit_grant")
    june = datetime(2026, 6, 1, 9, 30, tzinfo=UTC)
    assert (next_one.period_start, next_one.period_end) == (june, datetime(2026, 7, 1, 9, 30, tzinfo=UTC))
    assert next_one.scheduled_for == "2026-06-01T09:30:00Z"
    assert upcoming.pagination is not None and upcoming.pagination.total == 1

    mine = known(sdk.customers.get_customer_upcoming_grants(id=customer.id))
    assert [item.id for item in mine.items] == [next_one.id]

    # The first period's credits were granted at create: the library lists that one applied.
    applied = env.credit_grants.applications(subscription_ids=[sub.id], application_status="applied").items
    assert [(a.period_start, a.application_reason.value) for a in applied] == [
        (clock.now(), "first_time_recurring_credit_grant")
    ]


def test_unknown_owners_are_not_found(sdk: Flexprice) -> None:
    with pytest.raises(errors.FlexpriceError) as err:
        sdk.subscriptions.get_subscription_upcoming_grants(id="subs_missing")
    assert status_and_code(err.value) == (404, "not_found")
    with pytest.raises(errors.FlexpriceError) as err:
        sdk.customers.get_customer_upcoming_grants(id="cust_missing")
    assert status_and_code(err.value) == (404, "not_found")
