"""``/v1/taxes/associations``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.catalog import TaxRateEntityType
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.taxes import ListTaxAssociationsResponse, TaxAssociationResponse
from billingkit.services.tax_associations import (
    TaxAssociationCreate,
    TaxAssociationSearch,
    TaxAssociationUpdate,
)

router = APIRouter(prefix="/taxes/associations", tags=["tax associations"], route_class=WireRoute)

Text = Annotated[str | None, Query(min_length=1, max_length=255)]


@router.post("")  # the reference answers 200, not 201
def create_tax_association(caller: EnvCaller, body: TaxAssociationCreate) -> TaxAssociationResponse:
    return TaxAssociationResponse.model_validate(caller.tax_associations.create(body).to_dict())


@router.get("")
def list_tax_associations(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    entity_type: TaxRateEntityType | None = None,
    entity_id: Text = None,
    external_customer_id: Text = None,
    tax_rate_id: Text = None,
) -> ListTaxAssociationsResponse:
    search = TaxAssociationSearch(
        limit=limit,
        offset=offset,
        entity_type=entity_type,
        entity_id=entity_id,
        external_customer_id=external_customer_id,
        tax_rate_id=tax_rate_id,
    )
    return ListTaxAssociationsResponse.model_validate(caller.tax_associations.list(search).to_dict())


@router.get("/{tax_association_id}")
def get_tax_association(caller: EnvCaller, tax_association_id: str) -> TaxAssociationResponse:
    return TaxAssociationResponse.model_validate(caller.tax_associations.get(tax_association_id).to_dict())


@router.put("/{tax_association_id}")
def update_tax_association(
    caller: EnvCaller, tax_association_id: str, body: TaxAssociationUpdate
) -> TaxAssociationResponse:
    updated = caller.tax_associations.update(tax_association_id, body)
    return TaxAssociationResponse.model_validate(updated.to_dict())


@router.delete("/{tax_association_id}")
def delete_tax_association(caller: EnvCaller, tax_association_id: str) -> TaxAssociationResponse:
    """Archive the association and answer it (``status`` archived)."""
    return TaxAssociationResponse.model_validate(caller.tax_associations.delete(tax_association_id).to_dict())
