"""``/v1/webhooks``: endpoints, deliveries, retry and replay (neither the spec nor the reference
has these paths; docs/webhooks.md)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from billingkit.domain.webhooks import DeliveryStatus
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.webhook_endpoints import (
    ListWebhookDeliveriesResponse,
    ListWebhookEndpointsResponse,
    ReplayResponse,
    WebhookDeliveryResponse,
    WebhookEndpointResponse,
    WebhookEndpointSecretResponse,
)
from billingkit.services.webhook_deliveries import DeliverySearch, ReplayRequest
from billingkit.services.webhook_endpoints import EndpointCreate, EndpointSearch, EndpointUpdate

router = APIRouter(prefix="/webhooks", tags=["webhooks"], route_class=WireRoute)


@router.post("/endpoints", status_code=201)
def create_endpoint(caller: EnvCaller, body: EndpointCreate) -> WebhookEndpointSecretResponse:
    return WebhookEndpointSecretResponse.model_validate(caller.webhooks.create(body).to_dict())


@router.get("/endpoints")
def list_endpoints(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    enabled: bool | None = None,
) -> ListWebhookEndpointsResponse:
    search = EndpointSearch(limit=limit, offset=offset, order=order, enabled=enabled)
    return ListWebhookEndpointsResponse.model_validate(caller.webhooks.list(search).to_dict())


@router.get("/endpoints/{endpoint_id}")
def get_endpoint(caller: EnvCaller, endpoint_id: str) -> WebhookEndpointResponse:
    return WebhookEndpointResponse.model_validate(caller.webhooks.get(endpoint_id).to_dict())


@router.put("/endpoints/{endpoint_id}")
def update_endpoint(caller: EnvCaller, endpoint_id: str, body: EndpointUpdate) -> WebhookEndpointResponse:
    return WebhookEndpointResponse.model_validate(caller.webhooks.update(endpoint_id, body).to_dict())


@router.delete("/endpoints/{endpoint_id}", status_code=204)
def delete_endpoint(caller: EnvCaller, endpoint_id: str) -> Response:
    caller.webhooks.delete(endpoint_id)
    return Response(status_code=204)


@router.post("/endpoints/{endpoint_id}/rotate-secret")
def rotate_secret(caller: EnvCaller, endpoint_id: str) -> WebhookEndpointSecretResponse:
    return WebhookEndpointSecretResponse.model_validate(caller.webhooks.rotate_secret(endpoint_id).to_dict())


@router.get("/deliveries")
def list_deliveries(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    endpoint_id: str | None = None,
    event_id: str | None = None,
    event_type: str | None = None,
    entity_id: str | None = None,
    delivery_status: DeliveryStatus | None = None,
) -> ListWebhookDeliveriesResponse:
    search = DeliverySearch(
        limit=limit,
        offset=offset,
        order=order,
        endpoint_id=endpoint_id,
        event_id=event_id,
        event_type=event_type,
        entity_id=entity_id,
        delivery_status=None if delivery_status is None else [delivery_status],
    )
    return ListWebhookDeliveriesResponse.model_validate(caller.webhooks.deliveries(search).to_dict())


@router.get("/deliveries/{delivery_id}")
def get_delivery(caller: EnvCaller, delivery_id: str) -> WebhookDeliveryResponse:
    return WebhookDeliveryResponse.model_validate(caller.webhooks.delivery(delivery_id).to_dict())


@router.post("/deliveries/{delivery_id}/retry")
def retry_delivery(caller: EnvCaller, delivery_id: str) -> WebhookDeliveryResponse:
    return WebhookDeliveryResponse.model_validate(caller.webhooks.retry(delivery_id).to_dict())


@router.post("/replay")
def replay(caller: EnvCaller, body: ReplayRequest) -> ReplayResponse:
    return ReplayResponse.model_validate(caller.webhooks.replay(body).to_dict())
