"""Coupons on subscriptions through the official SDK: attached on create, listed and read as
associations, added and removed with the subscription modify call."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from flexprice import Flexprice, models
from flexprice.models.errors import FlexpriceError

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _subscription(sdk: Flexprice, env: Scoped) -> tuple[str, str]:
    """A 100.00 monthly plan bought with a 10 % forever coupon; returns (subscription id, price id)."""
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
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
                "display_name": "Base",
            }
        ],
    )
    price_id = env.plans.get(plan.id).prices[0].id
    sdk.coupons.create_coupon(
        name="Ten", coupon_code="TEN", type_="percentage", cadence="forever", percentage_off="10"
    )
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        subscription_coupons=[{"coupon_code": "TEN", "price_id": price_id}],
    )
    return sub.id, price_id


def test_associations_listed_and_read(sdk: Flexprice, env: Scoped) -> None:
    sub_id, price_id = _subscription(sdk, env)
    page = known(sdk.coupon_associations.list_coupon_associations(subscription_ids=[sub_id], expand="coupon"))
    assert isinstance(page, models.ListCouponAssociationsResponse)
    assert page.items is not None and page.pagination is not None and page.pagination.total == 1
    (listed,) = page.items
    assert listed.coupon is not None and listed.coupon.coupon_code == "TEN"
    assert listed.subscription_id == sub_id and listed.end_date is None
    one = known(sdk.coupon_associations.get_coupon_association(id=listed.id or ""))
    assert one.coupon_id == listed.coupon_id and one.coupon is not None
    assert one.subscription_line_item is not None and one.subscription_line_item.price_id == price_id
    # 100.00 - 10 % (10.00) on the line = 90.00
    (invoice,) = env.invoices.list(subscription_id=sub_id).items
    assert str(invoice.total) == "90.00"
    assert sdk.coupon_associations.list_coupon_associations(coupon_ids=["coupon_none"]).items == []


def test_modify_adds_and_removes_a_coupon(sdk: Flexprice, env: Scoped) -> None:
    sub_id, _ = _subscription(sdk, env)
    five_coupon = sdk.coupons.create_coupon(
        name="Five", coupon_code="FIVE", type_="fixed", cadence="once", amount_off="5", currency="usd"
    )
    added = known(
        sdk.subscriptions.execute_subscription_modify(
            id=sub_id,
            type_="coupon",
            coupon_params={
                "action": "add",
                "coupon_code": "FIVE",
                "start_date": datetime(2026, 6, 1, tzinfo=UTC),
            },
        )
    )
    assert isinstance(added, models.SubscriptionModifyResponse)
    assert added.subscription is not None and added.subscription.id == sub_id
    page = sdk.coupon_associations.list_coupon_associations(subscription_ids=[sub_id])
    assert page.items is not None and len(page.items) == 2
    five = page.items[0]  # newest first
    assert five.coupon_id == five_coupon.id and five.start_date == datetime(2026, 6, 1, tzinfo=UTC)
    sdk.subscriptions.execute_subscription_modify(
        id=sub_id, type_="coupon", coupon_params={"action": "remove", "coupon_association_id": five.id}
    )
    left = sdk.coupon_associations.list_coupon_associations(subscription_ids=[sub_id]).items
    assert left is not None and [a.id for a in left] == [a.id for a in page.items if a.id != five.id]
    with pytest.raises(FlexpriceError) as caught:
        sdk.subscriptions.execute_subscription_modify(id=sub_id, type_="trial_end")
    assert status_and_code(caught.value) == (400, "validation_error")
