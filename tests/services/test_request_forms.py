"""Library calls: both call forms (a request model, or its fields as keyword arguments), unknown
fields refused at any depth, and the reference fields this version refuses or ignores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from billingkit import ListQuery, Scoped, ValidationError
from billingkit.services.customers import CustomerCreate, CustomerSearch, CustomerUpdate
from billingkit.services.prices import PriceInput
from billingkit.services.search import FilterValue
from billingkit.services.tax_rates import TaxRateCreate, TaxRateUpdate

FEE = {
    "currency": "usd",
    "billing_period": "MONTHLY",
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "49",
    "invoice_cadence": "ADVANCE",
}


def _refusal(call: object, field: str) -> ValidationError:
    assert callable(call)
    with pytest.raises(ValidationError) as caught:
        call()
    assert caught.value.field == field, caught.value.message
    assert caught.value.details["field"] == field
    return caught.value


def test_a_flat_request_refuses_an_unknown_field_naming_it_and_the_accepted_ones(test_env: Scoped) -> None:
    error = _refusal(lambda: test_env.tax_rates.create(name="VAT", cod="VAT20", percentage_value="20"), "cod")
    assert error.http_status == 400
    assert error.message == (
        "unknown field 'cod'; accepted: code, description, fixed_value, metadata, name, "
        "percentage_value, scope, tax_rate_type"
    )
    assert error.details["accepted_fields"] == list(TaxRateCreate.accepted_fields)
    rate = test_env.tax_rates.create(name="VAT", code="VAT20", percentage_value="20")
    _refusal(lambda: test_env.tax_rates.update(rate.id, nme="Sales tax"), "nme")
    assert test_env.tax_rates.get(rate.id) == rate
    assert test_env.tax_rates.list().total == 1


def test_a_nested_request_names_the_unknown_field_by_its_path(test_env: Scoped) -> None:
    error = _refusal(
        lambda: test_env.plans.create(name="Pro", prices=[FEE, {**FEE, "amont": "5"}]), "prices[1].amont"
    )
    assert error.message.startswith("unknown field 'prices[1].amont'; accepted: amount, billing_cadence")
    assert error.details["accepted_fields"] == list(PriceInput.accepted_fields)
    assert test_env.plans.list().total == 0
    _refusal(
        lambda: test_env.meters.create(
            name="Calls", event_name="call", aggregation={"type": "COUNT", "feild": "x"}
        ),
        "aggregation.feild",
    )
    search = {"field": "name", "operator": "eq", "data_type": "string", "value": {"strng": "Ada"}}
    error = _refusal(lambda: test_env.customers.search(filters=[search]), "filters[0].value.strng")
    assert error.details["accepted_fields"] == list(FilterValue.accepted_fields)


def test_both_call_forms_and_the_other_old_forms_still_work(test_env: Scoped) -> None:
    ada = test_env.customers.create(CustomerCreate(external_id="ada", name="Ada"))
    bob = test_env.customers.create(external_id="bob", name="Bob")
    assert (
        test_env.customers.update(ada.id, CustomerUpdate(email="ada@example.com")).email == "ada@example.com"
    )
    assert test_env.customers.update(bob.id, email="bob@example.com").email == "bob@example.com"
    assert test_env.customers.update(bob.id).email == "bob@example.com"  # nothing to change
    assert test_env.customers.search(CustomerSearch(external_ids=["ada"])).items == [
        test_env.customers.get(ada.id)
    ]
    assert test_env.customers.search(external_ids=["bob"]).total == 1
    assert test_env.customers.list(ListQuery(limit=1)).total == 2
    assert test_env.customers.list(CustomerSearch(limit=1)).total == 2
    assert test_env.customers.list(limit=1).total == test_env.customers.list().total == 2
    assert test_env.customers.list(None).total == 2
    assert test_env.customers.get_by_external_id("bob") == test_env.customers.get(bob.id)
    rate = test_env.tax_rates.create(TaxRateCreate(name="VAT", code="VAT20", percentage_value="20"))
    assert test_env.tax_rates.update(rate.id, TaxRateUpdate(name="Sales tax")).name == "Sales tax"


def test_a_call_mixing_forms_or_passing_the_wrong_model_is_a_type_error(test_env: Scoped) -> None:
    with pytest.raises(TypeError, match="pass a TaxRateCreate or its fields as keyword arguments, not both"):
        test_env.tax_rates.create(TaxRateCreate(name="VAT", code="V"), name="Other")
    with pytest.raises(TypeError, match=r"expected a TaxRateCreate .*got \(TaxRateUpdate\)"):
        test_env.tax_rates.create(TaxRateUpdate(name="VAT"))  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="not both"):
        test_env.customers.list(ListQuery(), limit=1)
    assert test_env.tax_rates.list().total == 0


def test_reference_fields_this_version_cannot_honour_are_refused_unless_empty(test_env: Scoped) -> None:
    error = _refusal(
        lambda: test_env.customers.create(external_id="ada", name="Ada", onboarding_workflow_name="welcome"),
        "onboarding_workflow_name",
    )
    assert error.message == "onboarding_workflow_name is not supported by this version of billingkit"
    ada = test_env.customers.create(
        external_id="ada",
        name="Ada",
        onboarding_workflow_name=None,
        integration_entity_mapping=None,
        skip_onboarding_workflow=True,
    )
    assert ada.external_id == "ada"
    _refusal(
        lambda: test_env.subscriptions.list(effective_date_for_update="2026-05-01T00:00:00Z"),
        "effective_date_for_update",
    )
    assert (
        test_env.subscriptions.list(with_coupon_associations=True, effective_date_for_update=None).total == 0
    )
    _refusal(
        lambda: test_env.plans.create(name="Pro", prices=[{**FEE, "filter_values": {"region": ["eu"]}}]),
        "prices[0].filter_values",
    )


def test_an_event_with_an_unknown_field_is_refused_and_nothing_is_stored(test_env: Scoped) -> None:
    at = datetime(2026, 4, 1, tzinfo=UTC)
    good = {"event_name": "call", "external_customer_id": "ada", "timestamp": at}
    error = _refusal(lambda: test_env.events.ingest(**good, propertis={"tokens": 5}), "events[0].propertis")
    assert error.message.startswith("unknown field 'events[0].propertis'; accepted: customer_id, event_id")
    assert error.details["accepted_fields"] == [
        "customer_id",
        "event_id",
        "event_name",
        "external_customer_id",
        "properties",
        "source",
        "timestamp",
    ]
    _refusal(lambda: test_env.events.ingest_bulk([good, {**good, "evnt_id": "e2"}]), "events[1].evnt_id")
    assert test_env.events.query(start_time=at, end_time=datetime(2026, 5, 1, tzinfo=UTC)).events == ()
    assert test_env.events.ingest(**good, properties={"tokens": 5}).accepted_ids
