"""Customers: create, read, update, soft delete, list and search.

Rules: ``external_id`` is unique among live customers of an environment (a deleted customer's
external id can be reused); a deleted customer is archived and then reads as not found.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from billingkit.domain.access import Action
from billingkit.domain.customers import Customer
from billingkit.domain.queries import ListQuery, Op, Page
from billingkit.domain.resources import Status
from billingkit.domain.validation import Email, InputModel, Metadata, NonEmptyStr, TimeZoneName
from billingkit.errors import NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.notifications import notify
from billingkit.services.search import Searches, SearchRequest
from billingkit.services.tax_resolution import (
    MAX_TAX_RATE_OVERRIDES,
    TaxRateOverride,
    customer_override_associations,
)

__all__ = [
    "CustomerCreate",
    "CustomerSearch",
    "CustomerUpdate",
    "create_customer",
    "delete_customer",
    "get_customer",
    "get_customer_by_external_id",
    "get_customers",
    "list_customers",
    "search_customers",
    "update_customer",
]

ENTITY = "customer"
Short = Annotated[str, Field(max_length=255)]


def _country(value: str | None) -> str | None:
    if value is None:
        return None
    if len(value) != 2 or not value.isalpha():
        raise ValueError("address_country must be an ISO 3166-1 alpha-2 code such as 'US'")
    return value.upper()


class CustomerCreate(InputModel):
    """A new customer. ``tax_rate_overrides`` become the customer's own tax associations (each
    for invoices in its ``currency``), which tax its subscriptions that have none of their own."""

    # Reference fields: provider mappings and onboarding workflows do not exist in this version
    # (refused when given); there is no workflow to skip.
    not_supported = frozenset({"integration_entity_mapping", "onboarding_workflow_name"})
    ignored = frozenset({"skip_onboarding_workflow"})

    external_id: Annotated[NonEmptyStr, Field(max_length=255)]
    name: Annotated[NonEmptyStr, Field(max_length=255)]
    email: Email | None = None
    contact: Short | None = None
    timezone: TimeZoneName = "UTC"
    address_line1: Short | None = None
    address_line2: Short | None = None
    address_city: Short | None = None
    address_state: Short | None = None
    address_postal_code: Annotated[str, Field(max_length=32)] | None = None
    address_country: str | None = None
    metadata: Metadata = {}
    tax_rate_overrides: Annotated[list[TaxRateOverride], Field(max_length=MAX_TAX_RATE_OVERRIDES)] | None = (
        None
    )

    _check_country = field_validator("address_country")(_country)


class CustomerUpdate(InputModel):
    """Partial update: only the fields present change; ``None`` clears an optional field."""

    not_supported = frozenset({"integration_entity_mapping"})
    external_id: Annotated[NonEmptyStr, Field(max_length=255)] | None = None
    name: Annotated[NonEmptyStr, Field(max_length=255)] | None = None
    email: Email | None = None
    contact: Short | None = None
    timezone: TimeZoneName | None = None
    address_line1: Short | None = None
    address_line2: Short | None = None
    address_city: Short | None = None
    address_state: Short | None = None
    address_postal_code: Annotated[str, Field(max_length=32)] | None = None
    address_country: str | None = None
    metadata: Metadata | None = None

    _check_country = field_validator("address_country")(_country)

    def changes(self) -> dict[str, Any]:
        required = {"external_id", "name", "timezone", "metadata"}
        out: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if value is None and name in required:
                raise ValidationError(f"{name} cannot be cleared", field=name)
            out[name] = value
        return out


class CustomerSearch(SearchRequest):
    kind: ClassVar[str] = "customers"

    customer_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    external_id: Annotated[str | None, Searches("external_id", Op.EQ)] = None
    external_ids: Annotated[list[str] | None, Searches("external_id", Op.IN)] = None
    email: Annotated[str | None, Searches("email", Op.EQ)] = None
    metadata: Annotated[dict[str, str] | None, Searches("metadata", Op.EQ)] = None


def _live(customer: Customer | None, what: str) -> Customer:
    if customer is None or customer.status is not Status.PUBLISHED:
        raise NotFound(f"customer {what} not found")
    return customer


def create_customer(uow: UnitOfWork, ctx: Context, *, data: CustomerCreate) -> Customer:
    """Create a customer; :class:`AlreadyExists` when a live customer has the external id."""
    ctx.require(ENTITY, Action.WRITE)
    customer = Customer(
        id=ctx.ids.new("cust"), **ctx.stamp(), **data.model_dump(exclude={"tax_rate_overrides"})
    )
    # Checked before anything is written: a bad override stores neither the customer nor a rate.
    taxes = customer_override_associations(uow, ctx, customer.id, data.tax_rate_overrides or ())
    uow.customers.add(customer)
    uow.tax_associations.add_many(taxes)
    notify(uow, ctx, "customer.created", customer)
    return customer


def get_customer(uow: UnitOfWork, ctx: Context, *, customer_id: str) -> Customer:
    ctx.require(ENTITY, Action.READ)
    return _live(uow.customers.find(customer_id), customer_id)


def get_customer_by_external_id(uow: UnitOfWork, ctx: Context, *, external_id: str) -> Customer:
    ctx.require(ENTITY, Action.READ)
    return _live(uow.customers.find_one(external_id=external_id), f"with external_id {external_id!r}")


def get_customers(uow: UnitOfWork, ctx: Context, *, customer_ids: Collection[str]) -> dict[str, Customer]:
    """The customers with these ids, by id, in any lifecycle status (an archived customer still
    names the invoices it was billed on); unknown ids are left out. One read."""
    ctx.require(ENTITY, Action.READ)
    return {customer.id: customer for customer in uow.customers.find_many(customer_ids)}


def update_customer(uow: UnitOfWork, ctx: Context, *, customer_id: str, data: CustomerUpdate) -> Customer:
    ctx.require(ENTITY, Action.WRITE)
    current = _live(uow.customers.find(customer_id), customer_id)
    changes = data.changes()
    if not changes:
        return current
    updated = current.model_copy(update={**changes, **ctx.touch()})
    uow.customers.update(updated)
    notify(uow, ctx, "customer.updated", updated)
    return updated


def delete_customer(uow: UnitOfWork, ctx: Context, *, customer_id: str) -> Customer:
    """Archive the customer (kept for history; reads as not found afterwards)."""
    ctx.require(ENTITY, Action.WRITE)
    current = _live(uow.customers.find(customer_id), customer_id)
    archived = current.model_copy(update={"status": Status.ARCHIVED, **ctx.touch()})
    uow.customers.update(archived)
    notify(uow, ctx, "customer.deleted", archived)
    return archived


def list_customers(uow: UnitOfWork, ctx: Context, *, query: ListQuery) -> Page[Customer]:
    ctx.require(ENTITY, Action.READ)
    return uow.customers.list(query)


def search_customers(uow: UnitOfWork, ctx: Context, *, search: CustomerSearch) -> Page[Customer]:
    ctx.require(ENTITY, Action.READ)
    return uow.customers.list(search.to_query())
