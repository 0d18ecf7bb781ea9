"""Subscription phases through the official SDK: ``phases`` on create (with a price override and
an extra line), read back with ``expand=phases`` on the v2 read. The SDK has no operation for the
phase routes added after creation (the reference has no such paths)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code
from tests.compat.test_sdk_subscriptions import _catalogue


def test_a_subscription_with_phases(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    customer_id, plan_id, meter_id = _catalogue(sdk, env)
    base = next(p for p in env.plans.get(plan_id).prices if p.display_name == "Base")
    now = clock.now()
    boundary = now + timedelta(days=92)
    sub = known(
        sdk.subscriptions.create_subscription(
            customer_id=customer_id,
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            phases=[
                models.SubscriptionPhaseCreateRequest(
                    start_date=now,
                    end_date=boundary,
                    override_line_items=[models.OverrideLineItemRequest(price_id=base.id, amount="19.00")],
                    line_items=[
                        models.CreateSubscriptionLineItemRequest(
                            price=models.SubscriptionPriceCreateRequest(
                                type="USAGE",
                                billing_model="FLAT_FEE",
                                amount="0.50",
                                billing_period="MONTHLY",
                                invoice_cadence="ARREAR",
                                price_unit_type="FIAT",
                                meter_id=meter_id,
                                display_name="Launch calls",
                            )
                        )
                    ],
                    metadata={"stage": "launch"},
                ),
                models.SubscriptionPhaseCreateRequest(start_date=boundary),
            ],
        )
    )
    assert isinstance(sub, models.SubscriptionResponse)
    (calls,) = [li for li in sub.line_items if li.display_name == "Launch calls"]
    assert (calls.start_date, calls.end_date, calls.price_type) == (now, boundary, "USAGE")
    v2 = known(sdk.subscriptions.get_subscription_v2(id=sub.id, expand="phases"))
    assert v2.phases is not None
    assert [(p.start_date, p.end_date, p.metadata) for p in v2.phases] == [
        (now, boundary, {"stage": "launch"}),
        (boundary, None, {}),
    ]
    assert all(
        isinstance(p, models.SubscriptionPhaseResponse) and p.subscription_id == sub.id for p in v2.phases
    )
    assert calls.subscription_phase_id == v2.phases[0].id
    (opening,) = sdk.invoices.query_invoice(subscription_id=sub.id).items
    assert opening.total == "19.00"  # the first month at the launch price

    with pytest.raises(errors.FlexpriceError) as overlapping:
        sdk.subscriptions.create_subscription(
            customer_id=customer_id,
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            phases=[
                models.SubscriptionPhaseCreateRequest(start_date=now),
                models.SubscriptionPhaseCreateRequest(start_date=boundary),
            ],
        )
    assert status_and_code(overlapping.value) == (400, "validation_error")
    assert overlapping.value.data.message == "overlaps phases[0], which has no end_date"
