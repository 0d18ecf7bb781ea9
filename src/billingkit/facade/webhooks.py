"""``scoped.webhooks``: the environment's webhook endpoints and their deliveries (docs/webhooks.md).

>>> created = scoped.webhooks.create(url="https://example.com/hooks")   # doctest: +SKIP
>>> created.secret          # whsec_...: shown here and by rotate_secret only   # doctest: +SKIP
>>> scoped.webhooks.deliveries(endpoint_id=created.endpoint.id)   # doctest: +SKIP
"""

from __future__ import annotations

from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp
from billingkit.services import webhook_deliveries, webhook_endpoints

__all__ = ["Webhooks"]


class Webhooks(Area):
    """Endpoints: ``create`` (answers the endpoint and its secret), ``get``, ``list``, ``update``,
    ``delete``, ``rotate_secret``. Deliveries: ``deliveries`` (filtered, newest first),
    ``delivery``, ``retry`` (one more attempt now), ``replay`` (send stored events again).
    Sending itself is the dispatcher's: ``billing.deliver_webhooks()`` or the worker."""

    create = RequestOp(webhook_endpoints.create_endpoint, webhook_endpoints.EndpointCreate)
    get = IdOp(webhook_endpoints.get_endpoint, read_only=True)
    list = RequestOp(webhook_endpoints.search_endpoints, webhook_endpoints.EndpointSearch, read_only=True)
    update = IdRequestOp(webhook_endpoints.update_endpoint, webhook_endpoints.EndpointUpdate)
    delete = IdOp(webhook_endpoints.delete_endpoint)
    rotate_secret = IdOp(webhook_endpoints.rotate_secret)
    deliveries = RequestOp(
        webhook_deliveries.search_deliveries, webhook_deliveries.DeliverySearch, read_only=True
    )
    delivery = IdOp(webhook_deliveries.get_delivery, read_only=True)
    retry = IdOp(webhook_deliveries.retry_delivery)
    replay = RequestOp(webhook_deliveries.replay, webhook_deliveries.ReplayRequest)
