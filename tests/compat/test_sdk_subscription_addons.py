"""Add-ons on a subscription through the official SDK: add (with an override and a prorated
charge), list the associations, remove."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _subscription(sdk: Flexprice, env: Scoped) -> tuple[str, str, str]:
    """A customer on plan Pro (49.00 a month in advance) and add-on Extra (31.00 a month in
    advance); returns the subscription, add-on and add-on price ids."""
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    plan = env.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "49.00",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    addon = sdk.addons.create_addon(name="Extra", lookup_key="extra")
    price = sdk.prices.create_price(
        entity_type="ADDON",
        entity_id=addon.id,
        type_="FIXED",
        billing_model="FLAT_FEE",
        invoice_cadence="ADVANCE",
        amount="31.00",
        currency="usd",
        billing_period="MONTHLY",
        price_unit_type="FIAT",
        display_name="Extra fee",
    )
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    assert sub.id is not None and addon.id is not None and price.id is not None
    return sub.id, addon.id, price.id


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the reference deprecated these paths
def test_add_list_and_remove_an_addon(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    sub_id, addon_id, price_id = _subscription(sdk, env)
    clock.advance(timedelta(days=10))  # 21 of the period's 31 days left
    added = known(
        sdk.subscriptions.add_subscription_addon(
            subscription_id=sub_id,
            addon_id=addon_id,
            cadence="recurring",
            proration_behavior="create_prorations",
            override_line_items=[{"price_id": price_id, "amount": "62.00"}],
            metadata={"ticket": "42"},
        )
    )
    assert isinstance(added, models.AddAddonToSubscriptionResponse)
    assert (added.addon_id, added.entity_id, added.entity_type, added.addon_status) == (
        addon_id,
        sub_id,
        "subscription",
        "active",
    )
    assert added.start_date == clock.now() and added.metadata == {"ticket": "42"}
    assert added.invoice is not None
    assert (added.invoice.billing_reason, added.invoice.total) == (
        "SUBSCRIPTION_UPDATE",
        "42.00",
    )  # 62 x 21/31

    listed = known(sdk.subscriptions.get_subscription_addon_associations(id=sub_id))
    assert isinstance(listed, models.ListAddonAssociationsResponse) and listed.items is not None
    assert [(a.id, a.addon_id, a.addon_status) for a in listed.items] == [(added.id, addon_id, "active")]

    assert added.id is not None
    removed = known(
        sdk.subscriptions.remove_subscription_addon(
            addon_association_id=added.id, proration_behavior="create_prorations", reason="done"
        )
    )
    assert isinstance(removed, models.SuccessResponse)
    assert removed.message == "addon removed from subscription successfully"
    (association,) = known(sdk.subscriptions.get_subscription_addon_associations(id=sub_id)).items or []
    assert (association.addon_status, association.cancellation_reason) == ("cancelled", "done")

    with pytest.raises(errors.FlexpriceError) as twice:
        sdk.subscriptions.remove_subscription_addon(addon_association_id=added.id)
    assert status_and_code(twice.value) == (400, "invalid_operation")
