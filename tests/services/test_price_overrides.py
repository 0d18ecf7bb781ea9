"""Per-subscription price overrides make subscription-owned prices and leave the catalogue alone."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billingkit import Billing
from billingkit.domain.catalog import PriceEntityType
from billingkit.errors import ValidationError
from billingkit.services.price_overrides import OverrideLineItem, override_lines
from tests.stories import weekly_subscription


def test_an_amount_override_makes_a_subscription_price_and_a_quantity_override_moves_the_line(
    billing: Billing,
) -> None:
    setup, sub = weekly_subscription(billing)
    (line,) = sub.line_items
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    override = OverrideLineItem.model_validate({"price_id": line.price_id, "amount": "5.50", "quantity": "3"})

    def apply(uow, ctx):  # type: ignore[no-untyped-def]
        (changed,) = override_lines(uow, ctx, sub.line_items, [override])
        return changed, uow.prices.find(changed.price_id), uow.prices.find(line.price_id)

    changed, price, original = scoped.run(apply)
    assert changed.quantity == Decimal(3) and changed.id == line.id
    assert price is not None and original is not None
    assert (price.entity_type, price.entity_id, price.parent_price_id) == (
        PriceEntityType.SUBSCRIPTION,
        sub.id,
        line.price_id,
    )
    assert (price.amount, original.amount) == (Decimal("5.50"), Decimal(7))


def test_an_override_of_a_price_the_subscription_does_not_bill_names_its_field(billing: Billing) -> None:
    setup, sub = weekly_subscription(billing)
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    override = OverrideLineItem.model_validate({"price_id": "price_other", "amount": "1"})
    with pytest.raises(ValidationError) as caught:
        scoped.run(lambda uow, ctx: override_lines(uow, ctx, sub.line_items, [override]))
    assert caught.value.field == "override_line_items[0].price_id"


def test_an_override_that_changes_nothing_keeps_the_catalogue_price(billing: Billing) -> None:
    setup, sub = weekly_subscription(billing)
    (line,) = sub.line_items
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    override = OverrideLineItem.model_validate({"price_id": line.price_id, "amount": "7"})
    (same,) = scoped.run(lambda uow, ctx: override_lines(uow, ctx, sub.line_items, [override]))
    assert same == line
