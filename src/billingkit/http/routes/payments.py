"""``/v1/payments``: record, read, list, update, archive and process payments of invoices."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.invoices import PaymentStatus
from billingkit.domain.payments import PaymentDestinationType, PaymentMethodType
from billingkit.domain.resources import Status
from billingkit.domain.validation import parse_input
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand, Limit, Offset, Order, SortField, csv_list, sort_by
from billingkit.http.rendering import WireRoute, success
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.payments import ListPaymentsResponse, PaymentResponse
from billingkit.services.payments import PaymentCreate, PaymentSearch, PaymentUpdate

router = APIRouter(prefix="/payments", tags=["payments"], route_class=WireRoute)

Text = Annotated[str | None, Query(min_length=1, max_length=255)]


@router.post("", status_code=201)
def create_payment(caller: EnvCaller, body: PaymentCreate) -> PaymentResponse:
    """Record a payment of a FINALIZED invoice and collect it (unless ``process_payment`` is
    false); the same request again answers the first payment."""
    return PaymentResponse.model_validate(caller.payments.create(body).to_dict())


@router.get("")
def list_payments(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: Status | None = Status.PUBLISHED,
    expand: Expand = None,
    start_time: Text = None,
    end_time: Text = None,
    payment_ids: Annotated[list[str] | None, Query()] = None,
    destination_type: PaymentDestinationType | None = None,
    destination_id: Text = None,
    payment_status: PaymentStatus | None = None,
    payment_method_type: PaymentMethodType | None = None,
    currency: Text = None,
    payment_gateway: Text = None,
    gateway_payment_id: Text = None,
    gateway_tracking_id: Text = None,
) -> ListPaymentsResponse:
    search = parse_input(
        PaymentSearch,
        {
            "limit": limit,
            "offset": offset,
            "order": order,
            "sort": sort_by(sort, order),
            "status": status,
            "expand": expand,
            "start_time": start_time,
            "end_time": end_time,
            "payment_ids": csv_list(payment_ids),
            "destination_type": destination_type,
            "destination_id": destination_id,
            "payment_status": [payment_status] if payment_status else None,
            "payment_method_type": payment_method_type,
            "currency": currency,
            "payment_gateway": payment_gateway,
            "gateway_payment_id": gateway_payment_id,
            "gateway_tracking_id": gateway_tracking_id,
        },
    )
    return ListPaymentsResponse.model_validate(caller.payments.list(search).to_dict())


@router.get("/{payment_id}")
def get_payment(caller: EnvCaller, payment_id: str) -> PaymentResponse:
    return PaymentResponse.model_validate(caller.payments.get(payment_id).to_dict())


@router.put("/{payment_id}")
def update_payment(caller: EnvCaller, payment_id: str, body: PaymentUpdate) -> PaymentResponse:
    return PaymentResponse.model_validate(caller.payments.update(payment_id, body).to_dict())


@router.delete("/{payment_id}")
def delete_payment(caller: EnvCaller, payment_id: str) -> SuccessResponse:
    """Archive a payment that moved no money (the reference answers a message)."""
    caller.payments.delete(payment_id)
    return success("payment deleted successfully")


@router.post("/{payment_id}/process")
def process_payment(caller: EnvCaller, payment_id: str) -> PaymentResponse:
    """Collect an INITIATED payment, retry a FAILED one, or learn how a PENDING one ended."""
    return PaymentResponse.model_validate(caller.payments.process(payment_id).to_dict())
