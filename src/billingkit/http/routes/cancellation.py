"""``POST /v1/subscriptions/{id}/cancel`` and the subscription schedules.

The reference's OpenAPI writes the schedule paths with a ``/v1`` of their own
(``/v1/subscription-schedules``, ``/v1/subscriptions/schedules/{schedule_id}/cancel``, ...) under
a server URL that already ends in ``/v1``. They are served where the reference serves them, at
the host root (which is under billingkit's ``/v1`` base: ``/v1/subscription-schedules``), and
also doubled (``/v1/v1/...``, out of the OpenAPI document) for clients generated from that
document. The official SDK's own spellings (``/subscriptions/schedules`` and
``/subscriptions/schedules/{schedule_id}`` for the list and the read) are served too.

Registered before the subscriptions router: ``/subscriptions/schedules`` must not be taken for a
subscription id.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.subscription_schedules import ScheduleStatus, ScheduleType
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, csv_list
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.cancellation import (
    CancelScheduleResponse,
    CancelSubscriptionResponse,
    GetPendingSchedulesResponse,
    SubscriptionScheduleResponse,
)
from billingkit.services.subscription_cancel import CancelSubscriptionRequest
from billingkit.services.subscription_schedules import CancelScheduleRequest, ScheduleSearch

__all__ = ["doubled", "router"]

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)
#: The reference's ``/v1/...`` schedule paths once more under the base (``/v1/v1/...``).
doubled = APIRouter(tags=["subscriptions"], route_class=WireRoute, include_in_schema=False)


@router.post("/subscriptions/{subscription_id}/cancel")
def cancel_subscription(
    caller: EnvCaller, subscription_id: str, body: CancelSubscriptionRequest
) -> CancelSubscriptionResponse:
    """``cancellation_type``: ``immediate`` (at once, or at a past ``cancel_at``),
    ``end_of_period``, ``scheduled_date`` (``cancel_at`` required). ``proration_behavior:
    create_prorations`` credits unused ADVANCE time (immediate only);
    ``cancel_immediately_invoice_policy`` (or the reference's ``cancel_immediately_inovice_policy``)
    ``generate_invoice`` bills the used part of the period (immediate only)."""
    result = caller.subscriptions.cancel(subscription_id, body)
    return CancelSubscriptionResponse.model_validate(result.to_dict())


def list_all_schedules(
    caller: EnvCaller,
    pending_only: bool = False,
    subscription_id: str | None = None,
    subscription_ids: Annotated[list[str] | None, Query()] = None,
    schedule_type: Annotated[list[ScheduleType] | None, Query()] = None,
    schedule_status: Annotated[list[ScheduleStatus] | None, Query()] = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> GetPendingSchedulesResponse:
    """Schedules of any subscription, newest first; ``pending_only`` keeps the pending ones."""
    search = ScheduleSearch(
        pending_only=pending_only,
        subscription_id=subscription_id,
        subscription_ids=csv_list(subscription_ids),
        schedule_type=schedule_type,
        schedule_status=schedule_status,
        limit=limit,
        offset=offset,
    )
    return GetPendingSchedulesResponse.model_validate(caller.subscriptions.list_schedules(search).to_dict())


def get_schedule(caller: EnvCaller, schedule_id: str) -> SubscriptionScheduleResponse:
    return SubscriptionScheduleResponse.model_validate(
        caller.subscriptions.get_schedule(schedule_id).to_dict()
    )


def cancel_schedule(
    caller: EnvCaller, schedule_id: str, body: CancelScheduleRequest | None = None
) -> CancelScheduleResponse:
    """Withdraw a pending schedule; a cancellation's subscription gets back its ``cancel_at``,
    ``end_date`` and current period. Body fields, when given, must name the same schedule."""
    view = caller.subscriptions.cancel_schedule(schedule_id, body or CancelScheduleRequest())
    return CancelScheduleResponse.model_validate(
        {"message": "schedule cancelled successfully", "status": view.schedule.schedule_status.value}
    )


def subscription_schedules(caller: EnvCaller, subscription_id: str) -> GetPendingSchedulesResponse:
    """Every schedule of the subscription, newest first."""
    return GetPendingSchedulesResponse.model_validate(
        caller.subscriptions.schedules(subscription_id).to_dict()
    )


# The reference's paths (host root = billingkit's /v1 base), then the SDK's spellings.
_ROUTES = (
    ("GET", "/subscription-schedules", list_all_schedules),
    ("GET", "/subscription-schedules/{schedule_id}", get_schedule),
    ("POST", "/subscriptions/schedules/{schedule_id}/cancel", cancel_schedule),
    ("GET", "/subscriptions/{subscription_id}/schedules", subscription_schedules),
)
for method, path, endpoint in _ROUTES:
    router.add_api_route(path, endpoint, methods=[method], name=endpoint.__name__)
    doubled.add_api_route(f"/v1{path}", endpoint, methods=[method], name=f"{endpoint.__name__}_doubled")
router.add_api_route(
    "/subscriptions/schedules", list_all_schedules, methods=["GET"], name="list_subscription_schedules_sdk"
)
router.add_api_route(
    "/subscriptions/schedules/{schedule_id}", get_schedule, methods=["GET"], name="get_schedule_sdk"
)
