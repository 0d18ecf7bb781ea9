"""Cloning an environment's catalogue (``POST /v1/environments/{id}/clone``).

What is copied: every live (``published``) record of :data:`CLONED_KINDS`, the catalogue a
subscription is priced from: meters, price units, groups, features, plans, add-ons, the prices,
entitlements and credit grants of plans and add-ons, coupons, tax rates and the tenant-wide tax
associations. Customers, subscriptions and what hangs off them (their prices, entitlements,
credit grants, coupon and tax associations), invoices, wallets, payments, credit notes, events,
API keys, webhook endpoints, alerts and notifications are not.

Every copy gets a new id; every reference between copied records points at the copy (a price at
the copied plan, meter, group and price unit; an entitlement at the copied owner and feature). A
record whose required reference names something that is not copied (a price of an archived
meter) is left out and counted in ``skipped``; an optional one (a price's ``parent_price_id``,
a group) is cleared. Lookup keys, codes, names and dates are kept; a coupon's redemption count
starts at zero. All in the caller's one unit of work: the whole clone or nothing.

It is a tenant-level flow that reads one environment and writes another, so, like the other
cross-scope flows (bootstrap, authentication), it reaches both through ``uow.for_scope``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pydantic import model_validator

from billingkit.domain.access import Action, Environment, EnvironmentType
from billingkit.domain.catalog import (
    CreditGrant,
    Entitlement,
    Price,
    TaxAssociation,
)
from billingkit.domain.catalog.credit_grants import CreditGrantScope
from billingkit.domain.catalog.entitlements import EntitlementEntityType
from billingkit.domain.catalog.prices import PriceEntityType
from billingkit.domain.catalog.tax_associations import TaxRateEntityType
from billingkit.domain.queries import ListQuery
from billingkit.domain.resources import EnvironmentResource, Status
from billingkit.domain.validation import Identifier, InputModel, Name
from billingkit.errors import InvalidOperation, NotFound, PermissionDenied, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.access import EnvironmentCreate, create_environment
from billingkit.services.context import Context
from billingkit.services.records import COMMON_FIELDS
from billingkit.services.scope_pages import pages

__all__ = ["CLONED_KINDS", "ClonedEnvironment", "EnvironmentClone", "clone_environment"]

#: The kinds a clone copies, in the order they are written (what a record refers to comes first).
CLONED_KINDS = (
    "meters",
    "price_units",
    "groups",
    "features",
    "plans",
    "addons",
    "prices",
    "entitlements",
    "credit_grants",
    "coupons",
    "tax_rates",
    "tax_associations",
)
#: What makes a target environment "not empty": a live record of any of these.
_OCCUPYING_KINDS = (*CLONED_KINDS, "customers")


class EnvironmentClone(InputModel):
    """``CloneEnvironmentRequest``: ``target_environment_id`` (an existing, empty environment of
    the tenant; ``name`` and ``type`` are then ignored, as in the reference), else ``name`` and
    ``type`` of the new environment the catalogue is copied into."""

    name: Name | None = None
    type: EnvironmentType | None = None
    target_environment_id: Identifier | None = None

    @model_validator(mode="after")
    def _target_or_new(self) -> EnvironmentClone:
        if self.target_environment_id is None:
            if self.name is None:
                raise ValueError("name is required when target_environment_id is not given")
            if self.type is None:
                raise ValueError("type is required when target_environment_id is not given")
        return self


@dataclass(frozen=True, slots=True)
class ClonedEnvironment:
    """What a clone did: the ``source`` and target ``environment`` (``created`` when the clone
    made it), the number of records copied per kind (``copied``, every kind of
    :data:`CLONED_KINDS` named), those left out for a reference to an uncopied record
    (``skipped``), and ``ids``: each source id to its copy's."""

    source: Environment
    environment: Environment
    created: bool
    copied: dict[str, int]
    skipped: dict[str, int]
    ids: dict[str, str]

    def to_dict(self) -> dict[str, object]:
        """The wire answer: the reference's ``models.TemporalWorkflowResult`` (``message``,
        ``workflow_id``: the target environment, cloned synchronously, so there is no run) with
        billingkit's ``environment_id``, ``environment``, ``copied`` and ``skipped`` beside it."""
        total = sum(self.copied.values())
        return {
            "message": f"cloned {total} catalogue records of {self.source.id} into {self.environment.id}",
            "workflow_id": self.environment.id,
            "environment_id": self.environment.id,
            "environment": self.environment.to_dict(),
            "copied": dict(self.copied),
            "skipped": dict(self.skipped),
        }


def clone_environment(
    uow: UnitOfWork, ctx: Context, *, environment_id: str, data: EnvironmentClone
) -> ClonedEnvironment:
    """Copy the catalogue of environment ``environment_id`` into a new environment (``name``,
    ``type``) or into the existing empty ``target_environment_id``, in this unit of work.

    Needs ``environment: write`` (as creating an environment does). A caller bound to an
    environment (an API key always is; a session that chose one) may clone only that
    environment. Raises ``NotFound`` (an unknown or archived source or target),
    ``PermissionDenied``, ``ValidationError`` (the target is the source) and
    ``InvalidOperation`` (the target already holds customers or catalogue records)."""
    ctx.require("environment", Action.WRITE)
    environments = uow.for_scope(ctx.tenant_id, None).environments
    source = environments.find(environment_id)
    if source is None or source.status is not Status.PUBLISHED:
        raise NotFound(f"environment {environment_id} not found")
    if ctx.environment_id is not None and ctx.environment_id != source.id:
        raise PermissionDenied(
            "invalid or inaccessible environment: a caller bound to an environment clones only that one"
        )
    if data.target_environment_id is not None:
        target = environments.find(data.target_environment_id)
        if target is None or target.status is not Status.PUBLISHED:
            raise NotFound(f"environment {data.target_environment_id} not found")
        if target.id == source.id:
            raise ValidationError(
                "target_environment_id must name another environment than the source",
                field="target_environment_id",
            )
        _require_empty(uow.for_scope(ctx.tenant_id, target.id), target.id)
        created = False
    else:
        assert data.name is not None and data.type is not None  # the request's validator
        target = create_environment(
            uow.for_scope(ctx.tenant_id, None), ctx, data=EnvironmentCreate(name=data.name, type=data.type)
        )
        created = True
    copier = _Copier(
        source=uow.for_scope(ctx.tenant_id, source.id),
        target=uow.for_scope(ctx.tenant_id, target.id),
        ctx=dataclasses.replace(ctx, environment_id=target.id),
    )
    copier.run()
    return ClonedEnvironment(
        source=source,
        environment=target,
        created=created,
        copied=copier.copied,
        skipped={kind: n for kind, n in copier.skipped.items() if n},
        ids=copier.ids,
    )


def _require_empty(target: UnitOfWork, target_id: str) -> None:
    occupied = [kind for kind in _OCCUPYING_KINDS if getattr(target, kind).list(ListQuery(limit=1)).total]
    if occupied:
        raise InvalidOperation(
            f"environment {target_id} is not empty (it has {', '.join(occupied)}): "
            "a clone goes into a new environment or one without customers or catalogue records",
            details={"kinds": occupied},
        )


#: Per kind, the fields that name another record and whether the record is useless without it
#: (``True``: left out when the reference is not copied; ``False``: the reference is cleared).
_REFERENCES: dict[str, dict[str, bool]] = {
    "features": {"meter_id": True, "group_id": False},
    "prices": {
        "entity_id": True,
        "meter_id": True,
        "price_unit_id": True,
        "group_id": False,
        "parent_price_id": False,
    },
    "entitlements": {"entity_id": True, "plan_id": True, "feature_id": True, "parent_entitlement_id": False},
    "credit_grants": {"plan_id": True, "addon_id": True},
    "tax_associations": {"tax_rate_id": True},
}


def _owned_by_catalogue(item: Any) -> bool:
    """Only what the catalogue owns: prices, entitlements and credit grants of plans and add-ons
    (not a subscription's), tax associations of the tenant (not a customer's or an invoice's)."""
    if isinstance(item, Price):
        return item.entity_type in (PriceEntityType.PLAN, PriceEntityType.ADDON)
    if isinstance(item, Entitlement):
        return item.entity_type in (EntitlementEntityType.PLAN, EntitlementEntityType.ADDON)
    if isinstance(item, CreditGrant):
        return item.scope in (CreditGrantScope.PLAN, CreditGrantScope.ADDON)
    if isinstance(item, TaxAssociation):
        return item.entity_type is TaxRateEntityType.TENANT
    return True


def _prefix(record_id: str) -> str:
    """``price_unit_01H...`` -> ``price_unit``: a copy's id has its source's prefix."""
    return record_id.rpartition("_")[0]


@dataclass
class _Copier:
    source: UnitOfWork
    target: UnitOfWork
    ctx: Context
    ids: dict[str, str] = dataclasses.field(default_factory=dict)
    copied: dict[str, int] = dataclasses.field(default_factory=dict)
    skipped: dict[str, int] = dataclasses.field(default_factory=dict)

    def run(self) -> None:
        found = {
            kind: [item for item in pages(getattr(self.source, kind)) if _owned_by_catalogue(item)]
            for kind in CLONED_KINDS
        }
        kept = self._kept(found)
        # New ids for everything first, so a reference to a record copied later (a price's
        # parent version) is remapped whatever the order the records are read in.
        for kind in CLONED_KINDS:
            for item in found[kind]:
                if item.id in kept:
                    self.ids[item.id] = self.ctx.ids.new(_prefix(item.id))
        for kind in CLONED_KINDS:
            copies = [self._copy(kind, item) for item in found[kind] if item.id in kept]
            if copies:
                getattr(self.target, kind).add_many(copies)
            self.copied[kind] = len(copies)
            self.skipped[kind] = len(found[kind]) - len(copies)

    @staticmethod
    def _kept(found: dict[str, list[EnvironmentResource]]) -> set[str]:
        """The ids of the records whose required references are all kept: leaving a record out
        (a feature of an archived meter) leaves out what needs it (that feature's entitlements),
        so this repeats until nothing more drops."""
        kept = {item.id for items in found.values() for item in items}
        while True:
            dropped = {
                item.id
                for kind, items in found.items()
                for item in items
                if item.id in kept
                and any(
                    required and getattr(item, field) is not None and getattr(item, field) not in kept
                    for field, required in _REFERENCES.get(kind, {}).items()
                )
            }
            if not dropped:
                return kept
            kept -= dropped

    def _copy(self, kind: str, item: EnvironmentResource) -> EnvironmentResource:
        changes: dict[str, Any] = {"id": self.ids[item.id], **self.ctx.stamp(), "status": Status.PUBLISHED}
        for field in _REFERENCES.get(kind, {}):
            value = getattr(item, field)
            if value is not None:
                # Kept records' references are all kept (see _kept); an optional one may be cleared.
                changes[field] = self.ids.get(value)
        if kind == "coupons":
            changes["total_redemptions"] = 0
        fields = {**item.model_dump(exclude=set(COMMON_FIELDS)), **changes}
        return type(item).model_validate(fields)
