"""Answer models of the environment clone (``POST /environments/{id}/clone``) and the customer
portal session (``GET /customers/portal/{external_id}``)."""

from __future__ import annotations

from billingkit.http.schemas.access import EnvironmentResponse
from billingkit.http.schemas.base import Timestamp, WireModel

__all__ = ["CloneEnvironmentResponse", "PortalSessionResponse"]


class CloneEnvironmentResponse(WireModel):
    """The reference's ``models.TemporalWorkflowResult`` (``message``; ``workflow_id`` names the
    target environment: the clone is done when this answers, so there is no ``run_id``), with
    the target ``environment`` and the records ``copied`` and ``skipped`` per kind."""

    message: str
    workflow_id: str
    environment_id: str
    environment: EnvironmentResponse
    copied: dict[str, int]
    skipped: dict[str, int]


class PortalSessionResponse(WireModel):
    """A portal session: ``token`` (the ``X-Session-Token`` of ``/v1/customer/portal/*``), the
    portal's ``url`` and when the token expires."""

    token: str
    url: str
    expires_at: Timestamp
