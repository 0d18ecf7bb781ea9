"""Which tax rates tax an invoice (``docs/billing-rules.md``, "Taxes").

* A subscription invoice is taxed by the subscription's own ``auto_apply`` associations; when none
  applies, by its invoice's customer's (the invoicing customer under delegated invoicing); when
  none applies, by the tenant's (the whole environment). An
  association applies while live, ``auto_apply``, in force at the computation instant
  (``start_date <= t < end_date``), in the invoice's currency (or none), with a live ``ACTIVE``
  rate; a level's rates go by ``priority``, then creation, each rate once
  (:func:`billingkit.domain.catalog.applicable_tax_rates`).
* ``tax_rate_overrides`` on subscription create become that subscription's associations, written
  in the creating unit of work (:func:`override_associations`).
* A direct invoice is taxed by the rates it names (``tax_rates``, ``tax_rate_overrides``); naming
  none, by its customer's, then the tenant's associations (:func:`resolve_invoice_tax_rates`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from billingkit.domain.catalog import (
    DEFAULT_TAX_PRIORITY,
    TaxAssociation,
    TaxRate,
    TaxRateEntityType,
    TaxRateStatus,
    applicable_tax_rates,
)
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.validation import CurrencyCode, InputModel, Key, Metadata
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.invoice_adjustments import AppliedTaxRate
from billingkit.services.records import build, list_where_in, new_fields
from billingkit.services.tax_associations import Priority, active_tax_rate

__all__ = [
    "MAX_TAX_RATE_OVERRIDES",
    "TaxRateOverride",
    "customer_override_associations",
    "load_subscription_tax_rates",
    "override_associations",
    "resolve_invoice_tax_rates",
]

#: Most ``tax_rate_overrides`` one subscription or customer create may carry.
MAX_TAX_RATE_OVERRIDES = 20


class TaxRateOverride(InputModel):
    """The reference's ``TaxRateOverride``: tax rate ``tax_rate_code`` for this subscription,
    invoice or customer only, for invoices in ``currency`` (which must be the subscription's or
    invoice's; a customer's overrides may name several currencies)."""

    tax_rate_code: Key
    currency: CurrencyCode
    auto_apply: bool = True
    priority: Priority = DEFAULT_TAX_PRIORITY
    metadata: Metadata = {}


def _override_rate(uow: UnitOfWork, override: TaxRateOverride, index: int, currency: str | None) -> TaxRate:
    """The rate an override names, checked: live, ACTIVE, and in ``currency`` when one is given
    (a subscription's or an invoice's); errors name ``tax_rate_overrides[index].<field>``."""
    prefix = f"tax_rate_overrides[{index}]"
    rate = active_tax_rate(uow, override.tax_rate_code, field=f"{prefix}.tax_rate_code")
    if currency is not None and override.currency != currency:
        raise ValidationError(
            f"currency {override.currency} differs from the invoice currency {currency}",
            field=f"{prefix}.currency",
        )
    return rate


def override_associations(
    uow: UnitOfWork, ctx: Context, sub: Subscription, overrides: Sequence[TaxRateOverride]
) -> list[TaxAssociation]:
    """The subscription-level associations ``overrides`` ask for, in force from the subscription's
    start (or now, if it starts later). Checked before anything is returned, so a bad override
    writes nothing; the caller adds them in the creating unit of work."""
    return _associations_for(
        uow,
        ctx,
        overrides,
        entity_type=TaxRateEntityType.SUBSCRIPTION,
        entity_id=sub.id,
        currency=sub.currency,
        start=min(sub.start_date, ctx.now),
    )


def customer_override_associations(
    uow: UnitOfWork, ctx: Context, customer_id: str, overrides: Sequence[TaxRateOverride]
) -> list[TaxAssociation]:
    """The customer-level associations ``overrides`` ask for (the customer create's
    ``tax_rate_overrides``), in force from now, each for invoices in its own ``currency`` (a
    customer has none of its own). Checked before anything is returned."""
    return _associations_for(
        uow,
        ctx,
        overrides,
        entity_type=TaxRateEntityType.CUSTOMER,
        entity_id=customer_id,
        currency=None,
        start=ctx.now,
    )


def _associations_for(
    uow: UnitOfWork,
    ctx: Context,
    overrides: Sequence[TaxRateOverride],
    *,
    entity_type: TaxRateEntityType,
    entity_id: str,
    currency: str | None,
    start: datetime,
) -> list[TaxAssociation]:
    rates = [_override_rate(uow, override, i, currency) for i, override in enumerate(overrides)]
    return [
        build(
            TaxAssociation,
            {
                **new_fields(ctx, "taxassoc"),
                "tax_rate_id": rate.id,
                "entity_type": entity_type,
                "entity_id": entity_id,
                "priority": override.priority,
                "auto_apply": override.auto_apply,
                "currency": override.currency,
                "start_date": start,
                "metadata": override.metadata,
            },
        )
        for override, rate in zip(overrides, rates, strict=True)
    ]


def _associations_of(uow: UnitOfWork, entity_ids: Iterable[str]) -> list[TaxAssociation]:
    """The live associations of these entities (a constant number of statements per 500 ids)."""
    return list_where_in(uow.tax_associations, "entity_id", entity_ids)


def _rates_of(uow: UnitOfWork, associations: Sequence[TaxAssociation]) -> dict[str, TaxRate]:
    ids = {a.tax_rate_id for a in associations}
    return {rate.id: rate for rate in uow.tax_rates.find_many(ids)} if ids else {}


def load_subscription_tax_rates(
    uow: UnitOfWork, subscriptions: Sequence[Subscription], *, at: datetime
) -> dict[str, tuple[AppliedTaxRate, ...]]:
    """For each subscription that is taxed at ``at``, its rates in order (subscription id -> rates;
    untaxed ones are left out). A constant number of statements for the whole batch: one list of
    associations per 500 entities and one read of their rates."""
    if not subscriptions:
        return {}
    associations = _associations_of(
        uow,
        [sub.id for sub in subscriptions]
        + [sub.billed_customer_id for sub in subscriptions]
        + [sub.tenant_id for sub in subscriptions],
    )
    if not associations:
        return {}
    rates = _rates_of(uow, associations)
    by_entity: dict[str, list[TaxAssociation]] = {}
    for association in associations:
        by_entity.setdefault(association.entity_id, []).append(association)
    taxed: dict[str, tuple[AppliedTaxRate, ...]] = {}
    for sub in subscriptions:
        chosen = applicable_tax_rates(
            [
                *by_entity.get(sub.id, ()),
                *by_entity.get(sub.billed_customer_id, ()),
                *by_entity.get(sub.tenant_id, ()),
            ],
            rates,
            levels=(
                (TaxRateEntityType.SUBSCRIPTION, sub.id),
                (TaxRateEntityType.CUSTOMER, sub.billed_customer_id),
                (TaxRateEntityType.TENANT, sub.tenant_id),
            ),
            at=at,
            currency=sub.currency,
        )
        if chosen:
            taxed[sub.id] = tuple(AppliedTaxRate(rate, association.id) for association, rate in chosen)
    return taxed


def _named_rate(uow: UnitOfWork, ref: str, index: int) -> TaxRate:
    """The live ACTIVE rate with id or code ``ref``; errors name ``tax_rates[index]``."""
    rate = uow.tax_rates.find(ref)
    if rate is None or rate.status is not Status.PUBLISHED:
        rate = uow.tax_rates.find_one(code=ref)
    field = f"tax_rates[{index}]"
    if rate is None or rate.status is not Status.PUBLISHED:
        raise ValidationError(f"no tax rate with id or code {ref!r}", field=field)
    if rate.tax_rate_status is not TaxRateStatus.ACTIVE:
        raise ValidationError(f"tax rate {ref!r} is {rate.tax_rate_status.value}, not ACTIVE", field=field)
    return rate


def resolve_invoice_tax_rates(
    uow: UnitOfWork,
    *,
    customer_id: str,
    currency: str,
    at: datetime,
    tax_rates: Sequence[str] = (),
    tax_rate_overrides: Sequence[TaxRateOverride] = (),
) -> tuple[AppliedTaxRate, ...]:
    """The rates a direct invoice of ``customer_id`` in ``currency`` (lower-case) computed at
    ``at`` is taxed with, in order, each once.

    Rates the invoice names win: ``tax_rates`` (ids or codes) in the order given, then the
    ``auto_apply`` ``tax_rate_overrides`` by ``priority`` (each carries no association). Naming
    none, the customer's applicable associations, else the tenant's. Raises ``ValidationError``
    naming ``tax_rates[i]`` or ``tax_rate_overrides[i].<field>`` (unknown or inactive rate, another
    currency), or ``customer_id`` for a customer that is not live.
    """
    if tax_rates or tax_rate_overrides:
        named = [_named_rate(uow, ref, i) for i, ref in enumerate(tax_rates)]
        checked = [(o, _override_rate(uow, o, i, currency)) for i, o in enumerate(tax_rate_overrides)]
        checked.sort(key=lambda pair: pair[0].priority)
        named += [rate for override, rate in checked if override.auto_apply]
        seen: set[str] = set()
        applied = []
        for rate in named:
            if rate.id not in seen:
                seen.add(rate.id)
                applied.append(AppliedTaxRate(rate))
        return tuple(applied)
    customer = uow.customers.find(customer_id)
    if customer is None or customer.status is not Status.PUBLISHED:
        raise ValidationError(f"customer {customer_id} not found", field="customer_id")
    associations = _associations_of(uow, (customer.id, customer.tenant_id))
    chosen = applicable_tax_rates(
        associations,
        _rates_of(uow, associations),
        levels=((TaxRateEntityType.CUSTOMER, customer.id), (TaxRateEntityType.TENANT, customer.tenant_id)),
        at=at,
        currency=currency,
    )
    return tuple(AppliedTaxRate(rate, association.id) for association, rate in chosen)
