"""Answers of the subscription phase routes (``/v1/subscriptions/{id}/phases``,
``/v1/subscriptions/phases/{phase_id}``) and the ``phases`` of the v2 subscription read."""

from __future__ import annotations

from billingkit.http.schemas.base import EnvironmentRecordResponse, PaginationResponse, Timestamp, WireModel

__all__ = ["ListSubscriptionPhasesResponse", "SubscriptionPhaseResponse"]


class SubscriptionPhaseResponse(EnvironmentRecordResponse):
    """The reference's ``SubscriptionPhaseResponse``: a window ``[start_date, end_date)`` of the
    subscription (``end_date`` null: open-ended) in which its phase line items bill."""

    subscription_id: str
    start_date: Timestamp
    end_date: Timestamp | None
    metadata: dict[str, str]


class ListSubscriptionPhasesResponse(WireModel):
    """Every live phase of a subscription, in order of start, as one whole list."""

    items: list[SubscriptionPhaseResponse]
    pagination: PaginationResponse
