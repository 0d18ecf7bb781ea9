"""Coupons through the library, on every store."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import AlreadyExists, Billing, NotFound, PermissionDenied, Scoped, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.catalog.coupons import MAX_REDEMPTIONS
from billingkit.domain.resources import Status
from billingkit.services.access import BootstrapResult

FIXED: dict[str, Any] = {
    "name": "Ten off",
    "type": "fixed",
    "cadence": "once",
    "amount_off": "10.00",
    "currency": "USD",
    "coupon_code": "TEN",
}
PERCENT: dict[str, Any] = {
    "name": "Twenty percent",
    "type": "percentage",
    "cadence": "repeated",
    "percentage_off": "20",
    "duration_in_periods": 3,
    "coupon_code": "TWENTY",
}


def test_create_reads_back_every_field(test_env: Scoped, clock: Any) -> None:
    after = datetime(2026, 5, 1, tzinfo=UTC)
    before = datetime(2026, 12, 31, tzinfo=UTC)
    with pytest.raises(ValidationError) as caught:  # read-only: counted by redemptions, never sent
        test_env.coupons.create(**FIXED, total_redemptions=99)
    assert caught.value.field == "total_redemptions"
    c = test_env.coupons.create(
        **FIXED,
        max_redemptions=MAX_REDEMPTIONS,
        redeem_after=after,
        redeem_before=before,
        rules={"min_amount": "10"},
        metadata={"k": "v"},
    )
    assert c.id.startswith("coupon_")
    assert (c.name, c.type.value, c.cadence.value, c.coupon_code, c.amount_off, c.currency) == (
        "Ten off",
        "fixed",
        "once",
        "TEN",
        Decimal("10.00"),
        "usd",
    )
    assert (c.percentage_off, c.duration_in_periods, c.max_redemptions, c.total_redemptions) == (
        None,
        None,
        1_000_000,
        0,
    )
    assert (c.redeem_after, c.redeem_before, c.rules, c.metadata) == (
        after,
        before,
        {"min_amount": "10"},
        {"k": "v"},
    )
    assert (c.created_at, c.status) == (clock.now(), Status.PUBLISHED)
    assert c.to_dict()["amount_off"] == "10.00"
    assert test_env.coupons.get(c.id) == c
    assert test_env.coupons.get_by_code("TEN") == c
    assert c.to_core().amount_off == Decimal("10.00")

    p = test_env.coupons.create(**PERCENT, amount_off="5", currency="eur")
    assert (p.percentage_off, p.duration_in_periods, p.amount_off, p.currency) == (Decimal(20), 3, None, None)
    forever = test_env.coupons.create(
        name="No code", type="percentage", cadence="forever", percentage_off="100"
    )
    assert forever.coupon_code is None and forever.max_redemptions is None
    # several coupons may have no code
    test_env.coupons.create(name="No code 2", type="percentage", cadence="forever", percentage_off="0.5")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"amount_off": None}, "amount_off"),
        ({"amount_off": "0"}, "amount_off"),
        ({"amount_off": "-5"}, "amount_off"),
        ({"amount_off": 10.5}, "amount_off"),
        ({"currency": None}, "currency"),
        ({"currency": "dollars"}, "currency"),
        ({"type": "percentage", "amount_off": None}, "percentage_off"),
        ({"type": "percentage", "percentage_off": "0"}, "percentage_off"),
        ({"type": "percentage", "percentage_off": "100.01"}, "percentage_off"),
        ({"type": "bogo"}, "type"),
        ({"cadence": "weekly"}, "cadence"),
        ({"cadence": "repeated"}, "duration_in_periods"),
        ({"cadence": "repeated", "duration_in_periods": 0}, "duration_in_periods"),
        ({"duration_in_periods": 2}, "duration_in_periods"),
        ({"cadence": "forever", "duration_in_periods": 2}, "duration_in_periods"),
        (
            {
                "redeem_after": datetime(2026, 6, 1, tzinfo=UTC),
                "redeem_before": datetime(2026, 6, 1, tzinfo=UTC),
            },
            "redeem_after",
        ),
        ({"redeem_before": datetime(2026, 6, 1)}, "redeem_before"),
        ({"max_redemptions": 0}, "max_redemptions"),
        ({"max_redemptions": MAX_REDEMPTIONS + 1}, "max_redemptions"),
        ({"max_redemptions": 2**40}, "max_redemptions"),
        ({"name": ""}, "name"),
        ({"name": None}, "name"),
        ({"coupon_code": ""}, "coupon_code"),
        ({"metadata": {"k": "v" * 501}}, "metadata"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, fields: dict[str, Any], field: str
) -> None:
    body = {k: v for k, v in {**FIXED, **fields}.items() if v is not None}
    with pytest.raises(ValidationError) as caught:
        test_env.coupons.create(**body)
    assert caught.value.field == field
    assert test_env.coupons.list(status=None).total == 0


def test_code_unique_among_live_coupons_and_reusable_after_delete(test_env: Scoped, prod_env: Scoped) -> None:
    first = test_env.coupons.create(**FIXED)
    with pytest.raises(AlreadyExists):
        test_env.coupons.create(**{**PERCENT, "coupon_code": "TEN"})
    prod_env.coupons.create(**FIXED)  # another environment
    deleted = test_env.coupons.delete(first.id)
    assert deleted.status is Status.ARCHIVED
    with pytest.raises(NotFound):
        test_env.coupons.get(first.id)
    with pytest.raises(NotFound):
        test_env.coupons.get_by_code("TEN")
    again = test_env.coupons.create(**{**FIXED, "amount_off": "7"})
    assert test_env.coupons.get_by_code("TEN") == again and again.amount_off == 7


def test_update_changes_name_and_metadata_only(test_env: Scoped, clock: Any) -> None:
    c = test_env.coupons.create(**FIXED, metadata={"a": "1"})
    assert test_env.coupons.update(c.id) == c
    clock.advance(minutes=1)
    for fixed_field, value in (("amount_off", "99"), ("coupon_code", "X")):
        with pytest.raises(ValidationError) as refused:
            test_env.coupons.update(c.id, name="Renamed", **{fixed_field: value})
        assert refused.value.field == fixed_field
        assert refused.value.details["accepted_fields"] == ["metadata", "name"]
    assert test_env.coupons.get(c.id) == c
    changed = test_env.coupons.update(c.id, name="Renamed", metadata={"b": "2"})
    assert (changed.name, changed.metadata, changed.amount_off, changed.coupon_code) == (
        "Renamed",
        {"b": "2"},
        Decimal("10.00"),
        "TEN",
    )
    assert changed.updated_at == clock.now() and changed.created_at == c.created_at
    for fields in ({"name": None}, {"name": ""}, {"metadata": None}):
        with pytest.raises(ValidationError) as caught:
            test_env.coupons.update(c.id, **fields)
        assert caught.value.field in fields
    assert test_env.coupons.get(c.id) == changed


def test_list_and_search(test_env: Scoped) -> None:
    a = test_env.coupons.create(**FIXED)
    b = test_env.coupons.create(**PERCENT)

    def ids(**fields: Any) -> list[str]:
        return [c.id for c in test_env.coupons.search(order="asc", **fields).items]

    assert ids() == [a.id, b.id]
    assert ids(coupon_ids=[b.id]) == [b.id]
    assert ids(coupon_codes=["TEN", "NONE"]) == [a.id]
    test_env.coupons.delete(a.id)
    assert [c.id for c in test_env.coupons.list().items] == [b.id]
    assert test_env.coupons.list(status=None).total == 2


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped) -> None:
    c = test_env.coupons.create(**FIXED)
    for call in (prod_env.coupons.get, prod_env.coupons.delete):
        with pytest.raises(NotFound):
            call(c.id)
    with pytest.raises(NotFound):
        prod_env.coupons.get_by_code("TEN")
    with pytest.raises(NotFound):
        prod_env.coupons.update(c.id, name="x")
    assert prod_env.coupons.list().total == 0


def test_reader_reads_but_cannot_write(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    c = test_env.coupons.create(**FIXED)
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.coupons.get(c.id) == c
    assert reader.coupons.get_by_code("TEN") == c
    with pytest.raises(PermissionDenied):
        reader.coupons.create(**PERCENT)
    with pytest.raises(PermissionDenied):
        reader.coupons.update(c.id, name="x")
    with pytest.raises(PermissionDenied):
        reader.coupons.delete(c.id)
