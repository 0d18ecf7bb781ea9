"""The library refuses what no store can hold, as the HTTP adapter does, on every store."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billingkit import NotFound, Scoped, ValidationError
from billingkit.domain.queries import Filter, ListQuery, Op, Sort
from billingkit.domain.validation import MAX_OFFSET, MAX_TEXT, check_storable


def _field(exc: pytest.ExceptionInfo[ValidationError]) -> str | None:
    return exc.value.details.get("field")


def test_offsets_are_capped_in_list_queries_and_searches(test_env: Scoped) -> None:
    for offset in (2**63, MAX_OFFSET + 1, -1):
        with pytest.raises(ValidationError) as exc:
            ListQuery(offset=offset)
        assert _field(exc) == "offset"
        with pytest.raises(ValidationError) as exc:
            test_env.customers.search(offset=offset)
        assert _field(exc) == "offset"
        with pytest.raises(ValidationError) as exc:
            test_env.events.query(offset=offset)
        assert _field(exc) == "offset"
    assert test_env.customers.list(ListQuery(offset=MAX_OFFSET)).items == []
    assert test_env.customers.search(offset=MAX_OFFSET).items == []


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"external_id": "a\x00", "name": "n"}, "external_id"),
        ({"external_id": "a", "name": "\udc00"}, "name"),
        ({"external_id": "a", "name": "n", "metadata": {"k\x00": "v"}}, "metadata.k\\u0000"),
        ({"external_id": "a", "name": "n", "metadata": {"k": "v" * 501}}, "metadata"),
        ({"external_id": "a" * 256, "name": "n"}, "external_id"),
    ],
)
def test_create_refuses_unstorable_text_and_writes_nothing(
    test_env: Scoped, fields: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as exc:
        test_env.customers.create(**fields)
    assert _field(exc) == field
    assert test_env.customers.list(status=None).total == 0


def test_ids_no_store_can_hold_name_nothing(test_env: Scoped) -> None:
    test_env.customers.create(external_id="c1", name="n")
    for missing in ("c\x00", "\ud800"):
        with pytest.raises(NotFound):
            test_env.customers.get(missing)
        with pytest.raises(NotFound):
            test_env.customers.get_by_external_id(missing)


def test_list_query_refuses_filters_no_store_can_compare() -> None:
    cases = [
        ({"filters": (Filter("name", Op.EQ, "a\x00"),)}, "filters[0].value"),
        ({"filters": (Filter("metadata.k\x00", Op.EQ, "a"),)}, "filters[0].field"),
        (
            {"filters": (Filter("id", Op.EQ, "a"), Filter("name", Op.IN, ["ok", "\ud800"]))},
            "filters[1].value[1]",
        ),
        ({"filters": (Filter("name", Op.CONTAINS, "x" * (MAX_TEXT + 1)),)}, "filters[0].value"),
        ({"sort": (Sort("name\x00"),)}, "sort[0].field"),
    ]
    for fields, field in cases:
        with pytest.raises(ValidationError) as exc:
            ListQuery(**fields)  # type: ignore[arg-type]
        assert _field(exc) == field


def test_long_contains_terms_give_the_same_answer_on_every_store(test_env: Scoped) -> None:
    test_env.customers.create(external_id="c1", name="100% _real_ name")
    for term, found in (
        ("%" * MAX_TEXT, 0),
        ("_" * MAX_TEXT, 0),
        ("% _real_", 1),
        ("\U0001f600" * MAX_TEXT, 0),
    ):
        query = ListQuery(filters=(Filter("name", Op.CONTAINS, term),))
        assert test_env.customers.list(query).total == found, term[:10]


def test_check_storable_names_the_path() -> None:
    with pytest.raises(ValidationError) as exc:
        check_storable({"a": [{"b": float("nan")}]}, "body")
    assert _field(exc) == "body.a[0].b"
    with pytest.raises(ValidationError) as exc:
        check_storable({"a": "x" * (MAX_TEXT + 1)})
    assert _field(exc) == "a"
    deep: object = "x"
    for _ in range(40):
        deep = [deep]
    with pytest.raises(ValidationError):
        check_storable(deep, "deep")
    check_storable({"a": ["fine", 1, 2.5, None, True]}, "ok")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-inf", float("nan"), float("inf")])
def test_non_finite_numbers_are_refused(test_env: Scoped, value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        test_env.tax_rates.create(name="VAT", code="VAT", percentage_value=value)
    assert _field(exc) == "percentage_value"
    assert test_env.tax_rates.list().total == 0


@pytest.mark.parametrize("value", [float("nan"), float("-inf"), Decimal("NaN"), Decimal("Infinity")])
def test_non_finite_numbers_are_refused_inside_free_form_values(test_env: Scoped, value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        test_env.coupons.create(name="C", type="fixed", amount_off="1", currency="usd", rules={"x": [value]})
    assert _field(exc) == "rules.x[0]"
    assert test_env.coupons.list().total == 0


def test_tax_rate_holds_the_value_of_its_type_only(test_env: Scoped) -> None:
    with pytest.raises(ValidationError) as exc:
        test_env.tax_rates.create(name="VAT", code="VAT", percentage_value="10", fixed_value="-1")
    assert _field(exc) == "fixed_value"
    with pytest.raises(ValidationError) as exc:
        test_env.tax_rates.create(
            name="Fee", code="FEE", tax_rate_type="fixed", fixed_value="1", percentage_value="1"
        )
    assert _field(exc) == "percentage_value"
    assert test_env.tax_rates.list().total == 0
