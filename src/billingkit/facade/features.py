"""``scoped.features``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.catalog import Feature
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import features as svc

__all__ = ["Features"]


class Features:
    """Features of one environment. Pass a request model or its fields as keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.FeatureCreate | None = None, /, **fields: Any) -> Feature:
        """Fields: ``name``, ``type`` (``metered``, ``boolean``, ``static``, ``config``; required),
        ``description``, ``lookup_key`` (unique among live features), ``meter_id`` or an inline
        ``meter`` (the ``meters.create`` fields; metered features only), ``group_id`` (a feature
        group), ``metadata``, ``unit_singular``, ``unit_plural``, ``reporting_unit``
        ({``unit_singular``, ``unit_plural``, ``conversion_rate`` > 0}), ``alert_settings``
        ({``alert_enabled``, ``critical``/``warning``/``info``: {``threshold``, ``condition``}}).
        Example: ``create(name="Seats", type="boolean", lookup_key="seats")``."""
        data = request or parse_input(svc.FeatureCreate, fields)
        return self._s.run(svc.create_feature, data=data)

    def get(self, feature_id: str) -> Feature:
        """The live feature with this id, or ``NotFound``."""
        return self._s.run(svc.get_feature, feature_id=feature_id)

    def detail(self, feature_id: str, expand: str | None = None) -> svc.FeatureDetail:
        """The feature with its ``meter`` (always, for a metered feature) and, when ``expand``
        contains ``groups``, its ``group``."""
        return self._s.run(svc.get_feature_detail, feature_id=feature_id, expand=svc.parse_expand(expand))

    def update(self, feature_id: str, request: svc.FeatureUpdate | None = None, /, **fields: Any) -> Feature:
        """Change ``name``, ``description``, ``metadata``, ``unit_singular``, ``unit_plural``,
        ``reporting_unit``, ``alert_settings``, ``group_id`` (``""`` leaves the group) and add
        meter ``filters`` (add-only). ``None`` clears an optional field."""
        data = request or parse_input(svc.FeatureUpdate, fields)
        return self._s.run(svc.update_feature, feature_id=feature_id, data=data)

    def delete(self, feature_id: str) -> Feature:
        """Archive the feature; returns it with status ``archived``."""
        return self._s.run(svc.delete_feature, feature_id=feature_id)

    def clone(self, feature_id: str, request: svc.FeatureClone | None = None, /, **fields: Any) -> Feature:
        """A copy under a new ``name`` (must differ) and ``lookup_key`` (both required);
        ``description`` and ``metadata`` override the source's when given."""
        data = request or parse_input(svc.FeatureClone, fields)
        return self._s.run(svc.clone_feature, feature_id=feature_id, data=data)

    def list(self, request: svc.FeatureSearch | None = None, /, **fields: Any) -> Page[Feature]:
        """Filters: ``feature_ids``, ``lookup_key``, ``lookup_keys``, ``meter_ids``,
        ``name_contains``, plus the common ``limit``, ``offset``, ``sort``, ``status``, ``filters``."""
        data = request or parse_input(svc.FeatureSearch, fields)
        return self._s.run(svc.list_features, search=data)

    def search(self, request: svc.FeatureSearch | None = None, /, **fields: Any) -> Page[svc.FeatureDetail]:
        """Like :meth:`list`, with ``expand`` honoured: ``meters`` adds ``meter`` and ``groups``
        adds ``group`` to each item (the ``POST /features/search`` body)."""
        data = request or parse_input(svc.FeatureSearch, fields)
        return self._s.run(svc.list_feature_details, search=data)
