"""``/v1/costs``: cost sheets, the active sheet and cost analytics."""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.analytics import CostAnalyticsResponse
from billingkit.http.schemas.costs import (
    CostsheetEnvelope,
    CostsheetFilter,
    CostsheetResponse,
    DeleteCostsheetResponse,
    ListCostsheetResponse,
)
from billingkit.services.cost_analytics import CostAnalyticsRequest
from billingkit.services.costsheets import CostsheetCreate, CostsheetUpdate

router = APIRouter(prefix="/costs", tags=["costs"], route_class=WireRoute)


@router.post("", status_code=201)
def create_costsheet(caller: EnvCaller, body: CostsheetCreate) -> CostsheetEnvelope:
    return CostsheetEnvelope.model_validate({"costsheet": caller.costs.create(body).to_dict()})


@router.post("/search")
def search_costsheets(caller: EnvCaller, body: CostsheetFilter) -> ListCostsheetResponse:
    return ListCostsheetResponse.model_validate(caller.costs.list(body.to_search()).to_dict())


@router.post("/analytics")
def get_cost_analytics(caller: EnvCaller, body: CostAnalyticsRequest) -> CostAnalyticsResponse:
    return CostAnalyticsResponse.model_validate(caller.costs.analytics(body).to_dict())


@router.get("/active")
def get_active_costsheet(caller: EnvCaller) -> CostsheetResponse:
    return CostsheetResponse.model_validate(caller.costs.active().to_dict())


@router.get("/{costsheet_id}")
def get_costsheet(caller: EnvCaller, costsheet_id: str, expand: Expand = None) -> CostsheetEnvelope:
    """The sheet with its prices (listed whatever ``expand`` says: ``prices`` is the only one)."""
    return CostsheetEnvelope.model_validate({"costsheet": caller.costs.get(costsheet_id).to_dict()})


@router.put("/{costsheet_id}")
def update_costsheet(caller: EnvCaller, costsheet_id: str, body: CostsheetUpdate) -> CostsheetEnvelope:
    return CostsheetEnvelope.model_validate({"costsheet": caller.costs.update(costsheet_id, body).to_dict()})


@router.delete("/{costsheet_id}")
def delete_costsheet(caller: EnvCaller, costsheet_id: str) -> DeleteCostsheetResponse:
    sheet = caller.costs.delete(costsheet_id)
    return DeleteCostsheetResponse(id=sheet.id, message="costsheet deleted successfully")
