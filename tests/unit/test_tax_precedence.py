"""The pure rule that picks an invoice's tax rates from tax associations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from billingkit.domain.catalog import (
    TaxAssociation,
    TaxRate,
    TaxRateEntityType,
    TaxRateStatus,
    applicable_tax_rates,
)
from billingkit.domain.resources import Status

T = datetime(2026, 3, 1, tzinfo=UTC)
SUB, CUST, TENANT = TaxRateEntityType.SUBSCRIPTION, TaxRateEntityType.CUSTOMER, TaxRateEntityType.TENANT
LEVELS = ((SUB, "subs_1"), (CUST, "cust_1"), (TENANT, "tenant_1"))
COMMON = {"tenant_id": "tenant_1", "environment_id": "env_1", "created_by": "u", "updated_by": "u"}


def rate(code: str, **fields: Any) -> TaxRate:
    return TaxRate(
        id=f"taxrate_{code}",
        name=code,
        code=code,
        tax_rate_type="percentage",
        percentage_value="10",
        created_at=T,
        updated_at=T,
        **{**COMMON, **fields},
    )


def assoc(aid: str, code: str, level: tuple[TaxRateEntityType, str], **fields: Any) -> TaxAssociation:
    created = fields.pop("created_at", T)
    return TaxAssociation(
        id=aid,
        tax_rate_id=f"taxrate_{code}",
        entity_type=level[0],
        entity_id=level[1],
        created_at=created,
        updated_at=created,
        **{**COMMON, "start_date": T - timedelta(days=1), **fields},
    )


def pick(associations: list[TaxAssociation], rates: list[TaxRate], currency: str = "usd") -> list[str]:
    by_id = {r.id: r for r in rates}
    chosen = applicable_tax_rates(associations, by_id, levels=LEVELS, at=T, currency=currency)
    return [association.id for association, _ in chosen]


def test_the_most_specific_level_with_an_applicable_association_wins() -> None:
    rates = [rate("A"), rate("B"), rate("C")]
    tenant = assoc("t", "A", LEVELS[2])
    customer = assoc("c", "B", LEVELS[1])
    own = assoc("s", "C", LEVELS[0])
    assert pick([tenant, customer, own], rates) == ["s"]
    assert pick([tenant, customer], rates) == ["c"]
    assert pick([tenant], rates) == ["t"]
    # a subscription association that does not apply does not hide the customer's
    switched_off = assoc("s", "C", LEVELS[0], auto_apply=False)
    assert pick([tenant, customer, switched_off], rates) == ["c"]


def test_priority_then_creation_then_id_and_each_rate_once() -> None:
    rates = [rate("A"), rate("B")]
    later = assoc("x2", "A", LEVELS[1], priority=1, created_at=T - timedelta(hours=1))
    earlier = assoc("x9", "B", LEVELS[1], priority=1, created_at=T - timedelta(hours=2))
    same_time_low_id = assoc("x1", "B", LEVELS[1], priority=1, created_at=T - timedelta(hours=2))
    first = assoc("x5", "A", LEVELS[1], priority=0)
    # x5 (priority 0, rate A); x1 and x9 (rate B, same instant: by id, x9 repeats B); x2 repeats A
    assert pick([later, earlier, same_time_low_id, first], rates) == ["x5", "x1"]


def test_window_currency_status_and_rate_state() -> None:
    rates = [
        rate("A"),
        rate("OFF", tax_rate_status=TaxRateStatus.INACTIVE),
        rate("GONE", status=Status.ARCHIVED),
    ]
    cases = {
        "future": assoc("future", "A", LEVELS[1], start_date=T + timedelta(seconds=1)),
        "ended": assoc("ended", "A", LEVELS[1], end_date=T),
        "eur": assoc("eur", "A", LEVELS[1], currency="eur"),
        "archived": assoc("archived", "A", LEVELS[1], status=Status.ARCHIVED),
        "inactive": assoc("inactive", "OFF", LEVELS[1]),
        "rate gone": assoc("gone", "GONE", LEVELS[1]),
        "missing rate": assoc("missing", "NONE", LEVELS[1]),
    }
    for name, association in cases.items():
        assert pick([association], rates) == [], name
    assert pick([assoc("open", "A", LEVELS[1], start_date=T, currency="usd")], rates) == ["open"]
