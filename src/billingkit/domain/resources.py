"""Common fields of every stored resource, and the record lifecycle status."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from billingkit.domain.validation import UtcDatetime

__all__ = ["EnvironmentResource", "Record", "Status", "TenantResource", "iso"]


def iso(value: datetime | None) -> str | None:
    """The wire form of an instant: ISO 8601 in UTC with a ``Z`` suffix."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Status(StrEnum):
    """Record lifecycle status. Deleting a resource archives it (the row is kept for history)."""

    PUBLISHED = "published"
    DELETED = "deleted"
    ARCHIVED = "archived"


class Record(BaseModel):
    """Fields every stored resource has. Models are immutable: change one with ``model_copy``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    status: Status = Status.PUBLISHED
    created_at: UtcDatetime
    updated_at: UtcDatetime
    created_by: str
    updated_by: str


class TenantResource(Record):
    """A resource owned by a tenant, shared by its environments (environments, accounts)."""

    tenant_id: str


class EnvironmentResource(TenantResource):
    """A resource owned by one environment of one tenant (almost everything)."""

    environment_id: str

    def common_fields(self) -> dict[str, object]:
        """The fields the reference repeats on each child row of this resource (an invoice's or a
        credit note's lines): scope, status and authorship, instants in wire form."""
        return {
            "tenant_id": self.tenant_id,
            "environment_id": self.environment_id,
            "status": self.status.value,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "created_by": self.created_by,
            "updated_by": self.updated_by,
        }
