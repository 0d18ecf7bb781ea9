"""Credit grants: prepaid credits a plan or add-on hands out, once or every period.

Rules (``check_credit_grant``): the owner field matches ``scope`` (``plan_id`` for ``PLAN``,
``addon_id`` for ``ADDON``) and names a live plan or add-on; ``credits`` > 0; ``RECURRING`` grants
have a ``period`` (``ONETIME`` ones none); ``DURATION`` expiry has a duration and unit; rates > 0;
``priority`` >= 0; ``start_date`` < ``end_date``. ``SUBSCRIPTION`` grants arrive with
subscriptions (:func:`subscription_credit_grants`: the request's ``credit_grants``, else copies of
the plan's). Only ``name``, ``metadata`` and ``end_date`` change after creation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import (
    CreditGrant,
    CreditGrantCadence,
    CreditGrantExpiryType,
    CreditGrantExpiryUnit,
    CreditGrantPeriod,
    CreditGrantScope,
    check_credit_grant,
)
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import Record, Status
from billingkit.domain.validation import (
    INT32_MAX,
    DecimalText,
    InputModel,
    Metadata,
    Name,
    NonEmptyStr,
    UtcDatetime,
)
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import PartialUpdate, archive, build, get_live, new_fields, update_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "CreditGrantCreate",
    "CreditGrantInput",
    "CreditGrantSearch",
    "CreditGrantUpdate",
    "SubscriptionCreditGrantInput",
    "add_owned_credit_grant",
    "copy_credit_grant",
    "create_credit_grant",
    "credit_grants_of",
    "delete_credit_grant",
    "get_credit_grant",
    "list_credit_grants",
    "subscription_credit_grants",
    "update_credit_grant",
]

ENTITY = "credit_grant"
LABEL = "credit grant"
OWNER_FIELDS = {
    CreditGrantScope.PLAN: "plan_id",
    CreditGrantScope.ADDON: "addon_id",
    CreditGrantScope.SUBSCRIPTION: "subscription_id",
}

Id = Annotated[NonEmptyStr, Field(max_length=64)]
Int = Annotated[int, Field(ge=-INT32_MAX, le=INT32_MAX)]


class CreditGrantInput(InputModel):
    """The fields of one credit grant, without its owner."""

    name: Name
    credits: DecimalText
    cadence: CreditGrantCadence
    period: CreditGrantPeriod | None = None
    period_count: Int | None = None
    expiration_type: CreditGrantExpiryType = CreditGrantExpiryType.NEVER
    expiration_duration: Int | None = None
    expiration_duration_unit: CreditGrantExpiryUnit | None = None
    priority: Int | None = None
    conversion_rate: DecimalText | None = None
    topup_conversion_rate: DecimalText | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    metadata: Metadata = {}


class CreditGrantCreate(CreditGrantInput):
    """A credit grant with its owner: ``scope`` and the matching ``plan_id`` / ``addon_id``."""

    scope: CreditGrantScope
    plan_id: Id | None = None
    addon_id: Id | None = None
    subscription_id: Id | None = None


class SubscriptionCreditGrantInput(CreditGrantInput):
    """A credit grant given with a new subscription (its ``credit_grants``): owned by that
    subscription, so ``scope`` may only say ``SUBSCRIPTION`` and the owner ids stay empty (the
    official SDK's request model carries them). ``proration_behavior`` is accepted and dropped:
    grants are not prorated in this version."""

    ignored: ClassVar[frozenset[str]] = frozenset({"proration_behavior"})

    scope: CreditGrantScope | None = None
    plan_id: Id | None = None
    addon_id: Id | None = None
    subscription_id: Id | None = None


class CreditGrantUpdate(PartialUpdate):
    required = frozenset({"name", "metadata"})

    name: Name | None = None
    metadata: Metadata | None = None
    end_date: UtcDatetime | None = None


class CreditGrantSearch(SearchRequest):
    kind: ClassVar[str] = "credit_grants"

    credit_grant_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    plan_ids: Annotated[list[str] | None, Searches("plan_id", Op.IN)] = None
    addon_ids: Annotated[list[str] | None, Searches("addon_id", Op.IN)] = None
    subscription_ids: Annotated[list[str] | None, Searches("subscription_id", Op.IN)] = None
    scope: Annotated[CreditGrantScope | None, Searches("scope", Op.EQ)] = None


# -- shared with plans and add-ons ---------------------------------------------------------------


def _prefixed(exc: ValidationError, prefix: str) -> ValidationError:
    field = f"{prefix}{exc.field}" if exc.field else (prefix.rstrip(".") or None)
    return ValidationError(exc.message, field=field, details={**exc.details, "field": field})


def _owned_fields(scope: CreditGrantScope, owner_id: str) -> dict[str, Any]:
    owners: dict[str, Any] = dict.fromkeys(OWNER_FIELDS.values())
    owners[OWNER_FIELDS[scope]] = owner_id
    return {"scope": scope, **owners}


def add_owned_credit_grant(
    uow: UnitOfWork,
    ctx: Context,
    data: CreditGrantInput,
    *,
    scope: CreditGrantScope,
    owner_id: str,
    field_prefix: str = "",
) -> CreditGrant:
    """Add a credit grant of ``data`` to the owner (the caller checks the owner exists and the
    caller's permissions). ``ValidationError`` fields carry ``field_prefix``."""
    fields = data.model_dump(include=set(CreditGrantInput.model_fields))
    fields.update(new_fields(ctx, "cg"), **_owned_fields(scope, owner_id))
    try:
        grant = build(CreditGrant, fields, check_credit_grant)
    except ValidationError as exc:
        if not field_prefix:
            raise
        raise _prefixed(exc, field_prefix) from None
    return uow.credit_grants.add(grant)


def credit_grants_of(uow: UnitOfWork, scope: CreditGrantScope, owner_id: str) -> list[CreditGrant]:
    """The owner's live credit grants, oldest first."""
    filters = (Filter("scope", Op.EQ, scope.value), Filter(OWNER_FIELDS[scope], Op.EQ, owner_id))
    sort = (Sort("created_at", descending=False), Sort("id", descending=False))
    out: list[CreditGrant] = []
    while True:
        page = uow.credit_grants.list(ListQuery(filters=filters, sort=sort, limit=MAX_LIMIT, offset=len(out)))
        out.extend(page.items)
        if not page.items or len(out) >= page.total:
            return out


def copy_credit_grant(
    uow: UnitOfWork, ctx: Context, grant: CreditGrant, *, scope: CreditGrantScope, owner_id: str
) -> CreditGrant:
    """The same grant under a new id for another owner."""
    fields = grant.model_dump(exclude=set(Record.model_fields) | {"tenant_id", "environment_id"})
    fields.update(new_fields(ctx, "cg"), **_owned_fields(scope, owner_id))
    return uow.credit_grants.add(build(CreditGrant, fields, check_credit_grant))


def subscription_credit_grants(
    uow: UnitOfWork,
    ctx: Context,
    *,
    subscription_id: str,
    plan_id: str,
    requested: Sequence[SubscriptionCreditGrantInput] | None,
) -> list[CreditGrant]:
    """Store a new subscription's own grants (scope ``SUBSCRIPTION``): the ``requested`` ones
    when the request gives any, else a copy of each live grant of plan ``plan_id`` (reference
    notes §1.2), so later edits of the plan's grants do not change what the subscriber was sold.
    A requested grant with another scope or an owner id is a ``ValidationError`` on
    ``credit_grants[i].<field>``."""
    if not requested:
        return [
            copy_credit_grant(uow, ctx, grant, scope=CreditGrantScope.SUBSCRIPTION, owner_id=subscription_id)
            for grant in credit_grants_of(uow, CreditGrantScope.PLAN, plan_id)
        ]
    grants = []
    for i, data in enumerate(requested):
        prefix = f"credit_grants[{i}]."
        if data.scope not in (None, CreditGrantScope.SUBSCRIPTION):
            raise ValidationError(
                "credit grants given with a subscription have scope SUBSCRIPTION", field=f"{prefix}scope"
            )
        for field in OWNER_FIELDS.values():
            if getattr(data, field) is not None:
                raise ValidationError(
                    f"{field} cannot be set on a credit grant given with a subscription (it owns the grant)",
                    field=f"{prefix}{field}",
                )
        grants.append(
            add_owned_credit_grant(
                uow,
                ctx,
                data,
                scope=CreditGrantScope.SUBSCRIPTION,
                owner_id=subscription_id,
                field_prefix=prefix,
            )
        )
    return grants


# -- the credit grants API -----------------------------------------------------------------------


def create_credit_grant(uow: UnitOfWork, ctx: Context, *, data: CreditGrantCreate) -> CreditGrant:
    """Create a credit grant on a live plan (``scope`` PLAN, ``plan_id``) or add-on (``ADDON``,
    ``addon_id``); an owner field of another scope is refused."""
    ctx.require(ENTITY, Action.WRITE)
    if data.scope is CreditGrantScope.SUBSCRIPTION:
        raise ValidationError("credit grants of subscriptions cannot be created yet", field="scope")
    owner_field = OWNER_FIELDS[data.scope]
    for field in OWNER_FIELDS.values():
        if field != owner_field and getattr(data, field) is not None:
            raise ValidationError(f"{field} does not match scope {data.scope.value}", field=field)
    owner_id: str | None = getattr(data, owner_field)
    if owner_id is None:
        raise ValidationError(f"{owner_field} is required for scope {data.scope.value}", field=owner_field)
    repo: Any = uow.plans if data.scope is CreditGrantScope.PLAN else uow.addons
    owner = repo.find(owner_id)
    if owner is None or owner.status is not Status.PUBLISHED:
        label = "plan" if data.scope is CreditGrantScope.PLAN else "add-on"
        raise ValidationError(f"{label} {owner_id} not found", field=owner_field)
    return add_owned_credit_grant(uow, ctx, data, scope=data.scope, owner_id=owner_id)


def get_credit_grant(uow: UnitOfWork, ctx: Context, *, credit_grant_id: str) -> CreditGrant:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.credit_grants, LABEL, credit_grant_id)


def update_credit_grant(
    uow: UnitOfWork, ctx: Context, *, credit_grant_id: str, data: CreditGrantUpdate
) -> CreditGrant:
    """Change ``name``, ``metadata`` or ``end_date`` (still after ``start_date``)."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.credit_grants, LABEL, credit_grant_id)
    changes = data.changes()
    if not changes:
        return current
    return uow.credit_grants.update(update_fields(current, changes, ctx, check_credit_grant))


def delete_credit_grant(uow: UnitOfWork, ctx: Context, *, credit_grant_id: str) -> CreditGrant:
    """Archive the grant; it reads as not found afterwards."""
    ctx.require(ENTITY, Action.WRITE)
    return archive(uow.credit_grants, get_live(uow.credit_grants, LABEL, credit_grant_id), ctx)


def list_credit_grants(uow: UnitOfWork, ctx: Context, *, search: CreditGrantSearch) -> Page[CreditGrant]:
    ctx.require(ENTITY, Action.READ)
    return uow.credit_grants.list(search.to_query())
