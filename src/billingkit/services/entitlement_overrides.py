"""A subscription's own entitlements: ``override_entitlements`` on create.

An override is an :class:`~billingkit.domain.catalog.Entitlement` owned by the subscription
(``entity_type`` ``SUBSCRIPTION``, ``entity_id`` the subscription) copying the plan's (or an
attached add-on's) entitlement it overrides (``parent_entitlement_id``), with the sent fields
(``usage_limit``, ``is_enabled``, ``static_value``, ``config_value``) replaced. Billing applies an
overridden metered limit instead of the plan's (:func:`billingkit.services.invoicing.load_snapshot`
reads the overrides with the plans' entitlements, one read per batch); reads show the override in
its parent's place among the sources (:mod:`billingkit.services.subscription_entitlements`).

Example: the plan gives 1,000 API calls a month, the override 5,000: 6,200 calls bill 1,200.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from billingkit.domain.addon_associations import AddonStatus
from billingkit.domain.catalog import Entitlement, EntitlementEntityType
from billingkit.domain.catalog.entitlements import check_entitlement
from billingkit.domain.input_rules import prefixed
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.line_item_requests import OverrideEntitlement
from billingkit.services.notifications import notify
from billingkit.services.records import COMMON_FIELDS, build, list_where_in, new_fields

__all__ = ["OVERRIDDEN_FIELDS", "override_entitlements"]

#: What an override may change of the entitlement it overrides (the reference's three, and the
#: config value of config features).
OVERRIDDEN_FIELDS = ("usage_limit", "is_enabled", "static_value", "config_value")


def _owners(uow: UnitOfWork, sub: Subscription) -> set[tuple[EntitlementEntityType, str]]:
    """The owners whose entitlements ``sub`` may override: its plan and its live add-ons."""
    associations = list_where_in(
        uow.addon_associations,
        "entity_id",
        [sub.id],
        Filter("addon_status", Op.IN, [AddonStatus.ACTIVE.value, AddonStatus.PENDING.value]),
    )
    return {(EntitlementEntityType.PLAN, sub.plan_id)} | {
        (EntitlementEntityType.ADDON, association.addon_id) for association in associations
    }


def override_entitlements(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    overrides: Sequence[OverrideEntitlement],
    *,
    field: str = "override_entitlements",
) -> list[Entitlement]:
    """Store ``sub``'s overrides of its plan's (or attached add-ons') entitlements and record
    ``entitlement.created`` for each. Raises ``ValidationError`` naming ``field[i].<name>``: an
    entitlement that is not the plan's or an attached add-on's, one overridden twice (or two of
    one feature), or a value the feature's type does not take (``usage_limit`` on a boolean
    feature...)."""
    parents = {e.id: e for e in uow.entitlements.find_many(o.entitlement_id for o in overrides)}
    owners = _owners(uow, sub)
    made: list[Entitlement] = []
    features: set[str] = set()
    for index, override in enumerate(overrides):
        prefix = f"{field}[{index}]."
        parent = parents.get(override.entitlement_id)
        if (
            parent is None
            or parent.status is not Status.PUBLISHED
            or (parent.entity_type, parent.entity_id) not in owners
        ):
            raise ValidationError(
                f"entitlement {override.entitlement_id} is not an entitlement of the subscription's plan "
                "or of an add-on attached to it",
                field=prefix + "entitlement_id",
            )
        if parent.feature_id in features:
            raise ValidationError(
                f"feature {parent.feature_id} is overridden twice", field=prefix + "entitlement_id"
            )
        features.add(parent.feature_id)
        fields: dict[str, Any] = parent.model_dump(include=set(Entitlement.model_fields) - COMMON_FIELDS)
        fields.update(
            new_fields(ctx, "ent"),
            entity_type=EntitlementEntityType.SUBSCRIPTION,
            entity_id=sub.id,
            plan_id=None,
            parent_entitlement_id=parent.id,
            **{
                name: getattr(override, name)
                for name in OVERRIDDEN_FIELDS
                if name in override.model_fields_set
            },
        )
        try:
            made.append(build(Entitlement, fields, check_entitlement))
        except ValidationError as exc:
            raise prefixed(exc, prefix) from None
    if made:
        uow.entitlements.add_many(made)
        for entitlement in made:
            notify(uow, ctx, "entitlement.created", entitlement)
    return made
