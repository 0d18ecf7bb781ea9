"""What every answer model shares: the strict base, the wire's scalars, paging, the delete answer."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, WithJsonSchema

from billingkit import Status

__all__ = [
    "DecimalString",
    "EnvironmentRecordResponse",
    "PaginationResponse",
    "RecordResponse",
    "SuccessResponse",
    "TenantRecordResponse",
    "Timestamp",
    "WireModel",
]


class WireModel(BaseModel):
    """A JSON answer. Unknown keys are refused, so the model and ``to_dict()`` cannot drift apart.

    Fields are declared in the order ``to_dict()`` writes them: the answer is serialised in field
    order, and it must stay byte-for-byte what the route sent before it had a model. A key only some
    answers carry (an expansion, a one-time password) has a default and is left out of the answer
    when the model was not given it (routes serialise with ``exclude_unset``; see
    :class:`billingkit.http.rendering.WireRoute`).
    """

    model_config = ConfigDict(extra="forbid")


#: Money, quantities and rates: a decimal number written as a JSON string (``"12.50"``), exact.
DecimalString = Annotated[str, WithJsonSchema({"type": "string", "format": "decimal", "examples": ["12.50"]})]
#: An instant: ISO 8601 in UTC with a ``Z`` suffix.
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]


class PaginationResponse(WireModel):
    """Where a page sits: its ``limit`` and ``offset``, and the ``total`` number of matches."""

    limit: int
    offset: int
    total: int


class SuccessResponse(WireModel):
    """The answer of deletes that answer 200: ``{"message": "... deleted successfully"}``."""

    message: str


class RecordResponse(WireModel):
    """Fields of every stored resource (``status`` is the record's lifecycle: deletes archive)."""

    id: str
    status: Status
    created_at: Timestamp
    updated_at: Timestamp
    created_by: str
    updated_by: str


class TenantRecordResponse(RecordResponse):
    tenant_id: str


class EnvironmentRecordResponse(TenantRecordResponse):
    environment_id: str
