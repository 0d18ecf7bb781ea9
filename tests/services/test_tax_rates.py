"""Tax rates through the library, on every store."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billingkit import AlreadyExists, Billing, NotFound, PermissionDenied, Scoped, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.services.access import BootstrapResult


def test_create_read_update_delete(test_env: Scoped) -> None:
    vat = test_env.tax_rates.create(name="VAT", code="VAT20", percentage_value="20", metadata={"k": "v"})
    assert (vat.tax_rate_type.value, vat.percentage_value, vat.fixed_value) == (
        "percentage",
        Decimal(20),
        None,
    )
    assert (vat.scope.value, vat.tax_rate_status.value, vat.id[:8]) == ("INTERNAL", "ACTIVE", "taxrate_")
    assert vat.to_core().percentage_value == Decimal(20)
    assert test_env.tax_rates.get(vat.id) == vat
    fee = test_env.tax_rates.create(name="Fee", code="FEE", tax_rate_type="fixed", fixed_value="0.30")
    assert fee.fixed_value == Decimal("0.30") and fee.to_dict()["fixed_value"] == "0.30"

    changed = test_env.tax_rates.update(vat.id, tax_rate_status="INACTIVE", description=None, name="VAT 20")
    assert (changed.name, changed.tax_rate_status.value, changed.percentage_value) == (
        "VAT 20",
        "INACTIVE",
        20,
    )
    listed = test_env.tax_rates.list(tax_rate_codes=["VAT20", "FEE"], order="asc")
    assert [r.code for r in listed.items] == ["VAT20", "FEE"] and listed.total == 2
    assert [r.code for r in test_env.tax_rates.list(tax_rate_status="ACTIVE").items] == ["FEE"]

    test_env.tax_rates.delete(vat.id)
    with pytest.raises(NotFound):
        test_env.tax_rates.get(vat.id)
    # a deleted rate's code can be used again
    assert test_env.tax_rates.create(name="VAT", code="VAT20", percentage_value="19").percentage_value == 19


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"percentage_value": "100.01"}, "percentage_value"),
        ({"percentage_value": "-1"}, "percentage_value"),
        ({}, "percentage_value"),
        ({"tax_rate_type": "fixed"}, "fixed_value"),
        ({"tax_rate_type": "fixed", "fixed_value": "-0.01"}, "fixed_value"),
        ({"tax_rate_type": "compound", "percentage_value": "1"}, "tax_rate_type"),
        ({"percentage_value": 20.5}, "percentage_value"),
        ({"percentage_value": "1", "code": ""}, "code"),
        ({"percentage_value": "1", "scope": "GLOBAL"}, "scope"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, fields: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.tax_rates.create(**{"name": "T", "code": "T1", **fields})
    assert caught.value.field == field
    assert test_env.tax_rates.list(status=None).total == 0


def test_code_unique_among_live_rates_of_an_environment(test_env: Scoped, prod_env: Scoped) -> None:
    test_env.tax_rates.create(name="A", code="GST", percentage_value="18")
    with pytest.raises(AlreadyExists):
        test_env.tax_rates.create(name="B", code="GST", percentage_value="5")
    prod_env.tax_rates.create(name="A", code="GST", percentage_value="18")  # another environment
    other = test_env.tax_rates.create(name="C", code="CESS", percentage_value="1")
    with pytest.raises(AlreadyExists):
        test_env.tax_rates.update(other.id, code="GST")


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped) -> None:
    rate = test_env.tax_rates.create(name="A", code="GST", percentage_value="18")
    for call in (prod_env.tax_rates.get, prod_env.tax_rates.delete):
        with pytest.raises(NotFound):
            call(rate.id)
    assert prod_env.tax_rates.list().total == 0


def test_reader_reads_but_cannot_write(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    rate = test_env.tax_rates.create(name="A", code="GST", percentage_value="18")
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.tax_rates.get(rate.id) == rate
    with pytest.raises(PermissionDenied):
        reader.tax_rates.create(name="B", code="B", percentage_value="1")
    with pytest.raises(PermissionDenied):
        reader.tax_rates.update(rate.id, name="x")
