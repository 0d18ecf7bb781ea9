"""``POST /v1/environments/{environment_id}/clone``: copy an environment's catalogue.

Like the other ``/environments`` routes it needs no environment header: the source is in the path.
The clone is carried out before the answer, which is the reference's ``202`` (its SDK accepts no
other success status) with the reference's workflow fields and the target environment.
"""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import Caller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.portal import CloneEnvironmentResponse
from billingkit.services.environment_clone import EnvironmentClone

router = APIRouter(tags=["environments"], route_class=WireRoute)


@router.post("/environments/{environment_id}/clone", status_code=202)
def clone_environment(
    caller: Caller, environment_id: str, body: EnvironmentClone
) -> CloneEnvironmentResponse:
    return CloneEnvironmentResponse.model_validate(caller.environments.clone(environment_id, body).to_dict())
