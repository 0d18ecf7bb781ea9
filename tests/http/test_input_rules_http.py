"""Input-pairing rules live on the request models: the model itself, the library call and the
HTTP route refuse the same input with the same ``ValidationError`` (message and field), before
anything is looked up or written. A price inside a plan or a bulk create is named by its index."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.errors import ValidationError
from billingkit.services.access import BootstrapResult
from billingkit.services.plans import PlanCreate
from billingkit.services.prices import PriceBulkCreate, PriceCreate
from billingkit.services.subscriptions import SubscriptionCreate
from tests.http.conftest import assert_error

# The referenced plan and customer do not exist: the rules answer before anything is read.
SUBSCRIPTION = {
    "plan_id": "plan_missing",
    "customer_id": "cust_missing",
    "currency": "USD",
    "billing_period": "MONTHLY",
}
PRICE = {
    "entity_type": "PLAN",
    "entity_id": "plan_missing",
    "currency": "USD",
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
    "amount": "10",
}
JUNE = datetime(2026, 6, 1, tzinfo=UTC).isoformat()
MAY = datetime(2026, 5, 1, tzinfo=UTC).isoformat()

SUBSCRIPTION_RULES = [
    (
        {"collection_method": "send_invoice", "payment_behavior": "error_if_incomplete"},
        "payment_behavior",
        "payment_behavior error_if_incomplete does not go with collection_method send_invoice",
    ),
    ({"commitment_amount": "100"}, "overage_factor", "commitment_amount and overage_factor go together"),
    ({"overage_factor": "1.5"}, "commitment_amount", "commitment_amount and overage_factor go together"),
    (
        {"commitment_amount": "0", "overage_factor": "1.5"},
        "commitment_amount",
        "commitment_amount must be greater than 0",
    ),
    (
        {"commitment_amount": "100", "overage_factor": "0.5"},
        "overage_factor",
        "overage_factor must be at least 1",
    ),
    (
        {"commitment_duration": "MONTHLY", "billing_period": "WEEKLY"},
        "commitment_duration",
        "commitment_duration must be a whole number of billing periods (1 x WEEKLY)",
    ),
    ({"start_date": JUNE, "end_date": MAY}, "end_date", "end_date must be after start_date"),
    ({"start_date": JUNE, "end_date": JUNE}, "end_date", "end_date must be after start_date"),
    (
        {"billing_cycle": "calendar", "billing_anchor": MAY},
        "billing_anchor",
        "billing_anchor is only allowed with the anniversary cycle",
    ),
    (
        {"subscription_status": "trialing", "trial_period_days": 0},
        "subscription_status",
        "a trialing subscription needs trial_period_days",
    ),
    (
        {"subscription_status": "cancelled"},
        "subscription_status",
        "subscription_status may only ask for draft, active or trialing",
    ),
    ({"billing_period": "ONETIME"}, "billing_period", "a subscription needs a recurring billing_period"),
]

PRICE_RULES = [
    ({"amount": None}, "amount", "amount is required for FLAT_FEE prices"),
    (
        {"price_unit_type": "CUSTOM", "amount": None},
        "price_unit_config",
        "price_unit_config is required for CUSTOM prices",
    ),
    (
        {"price_unit_type": "CUSTOM", "price_unit_config": {"price_unit": "credits", "amount": "1"}},
        "amount",
        "a CUSTOM price's amount is derived from price_unit_config.amount",
    ),
    (
        {"price_unit_type": "CUSTOM", "amount": None, "price_unit_config": {"price_unit": "credits"}},
        "price_unit_config.amount",
        "price_unit_config.amount is required",
    ),
    (
        {"price_unit_config": {"price_unit": "credits", "amount": "1"}},
        "price_unit_config",
        "price_unit_config is only allowed on CUSTOM prices",
    ),
    ({"type": "USAGE", "invoice_cadence": "ARREAR"}, "meter_id", "meter_id is required for USAGE prices"),
    (
        {"type": "USAGE", "meter_id": "meter_1"},
        "invoice_cadence",
        "USAGE prices are billed in ARREAR (usage is only known after the period)",
    ),
    ({"meter_id": "meter_1"}, "meter_id", "meter_id is only allowed on USAGE prices"),
    (
        {"billing_cadence": "ONETIME"},
        "billing_cadence",
        "billing_cadence ONETIME goes with billing_period ONETIME, RECURRING with a recurring one",
    ),
    ({"billing_model": "TIERED", "amount": None}, "tier_mode", "tier_mode is required for TIERED prices"),
    (
        {"billing_model": "TIERED", "tier_mode": "VOLUME", "tiers": []},
        "tiers",
        "TIERED prices need at least one tier",
    ),
    ({"tier_mode": "VOLUME"}, "tier_mode", "tier_mode is only allowed on TIERED prices"),
    (
        {"billing_model": "PACKAGE"},
        "transform_quantity.divide_by",
        "transform_quantity.divide_by is required for PACKAGE prices",
    ),
    ({"start_date": JUNE, "end_date": MAY}, "end_date", "end_date must be after start_date"),
]


def _refused(call: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        call()
    return caught.value


def _http_refusal(response: Any) -> tuple[str, str]:
    body = assert_error(response, 400, "validation_error")
    return body["message"], body["details"]["field"]


@pytest.fixture
def env(billing: Billing, setup: BootstrapResult) -> Any:
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
@pytest.mark.parametrize(("fields", "field", "message"), SUBSCRIPTION_RULES)
def test_subscription_rules_refuse_the_same_way_everywhere(
    client: TestClient, test_key: dict[str, str], env: Any, fields: dict[str, Any], field: str, message: str
) -> None:
    body = {**SUBSCRIPTION, **fields}
    model = _refused(lambda: SubscriptionCreate.model_validate(body))
    library = _refused(lambda: env.subscriptions.create(**body))
    for error in (model, library):
        assert (error.message, error.field, error.details["field"]) == (message, field, field)
    response = client.post("/v1/subscriptions", json=body, headers=test_key)
    assert _http_refusal(response) == (message, field)


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
@pytest.mark.parametrize(("fields", "field", "message"), PRICE_RULES)
def test_price_rules_refuse_the_same_way_everywhere_and_name_the_item(
    client: TestClient, test_key: dict[str, str], env: Any, fields: dict[str, Any], field: str, message: str
) -> None:
    body = {**PRICE, **fields}
    model = _refused(lambda: PriceCreate.model_validate(body))
    library = _refused(lambda: env.prices.create(**body))
    for error in (model, library):
        assert (error.message, error.field) == (message, field)
    assert _http_refusal(client.post("/v1/prices", json=body, headers=test_key)) == (message, field)

    # Inside a bulk create or a plan, the same error names the item; the message is unchanged.
    bulk = {"items": [PRICE, body]}
    assert (_refused(lambda: PriceBulkCreate.model_validate(bulk)).field) == f"items[1].{field}"
    response = client.post("/v1/prices/bulk", json=bulk, headers=test_key)
    assert _http_refusal(response) == (message, f"items[1].{field}")
    owned = {key: value for key, value in body.items() if key not in ("entity_type", "entity_id")}
    plan = {"name": "Pro", "prices": [owned]}
    assert _refused(lambda: PlanCreate.model_validate(plan)).field == f"prices[0].{field}"
    response = client.post("/v1/plans", json=plan, headers=test_key)
    assert _http_refusal(response) == (message, f"prices[0].{field}")
    assert client.get("/v1/plans", headers=test_key).json()["items"] == []


def test_a_pydantic_error_in_an_earlier_item_still_names_the_rule_breaking_item() -> None:
    # items[0] has a bad currency (pydantic's own error), items[1] breaks a pairing rule: the
    # pairing rule stops validation, so it is the one reported, under its own index.
    bulk = {"items": [{**PRICE, "currency": "dollars"}, {**PRICE, "amount": None}]}
    error = _refused(lambda: PriceBulkCreate.model_validate(bulk))
    assert (error.field, error.message) == ("items[1].amount", "amount is required for FLAT_FEE prices")
