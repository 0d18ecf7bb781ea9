"""Rules that compare a request's fields with each other, as validators on the request models.

A request model's ``model_validator`` raises :class:`billingkit.errors.ValidationError` itself
(pydantic passes a ``BillingError`` through unchanged), so the library call, the HTTP route and the
model refuse the same input with the same message and field. Pydantic does not know where such an
error happened inside a list, so a model that holds a list of such requests (a plan's ``prices``,
a bulk create's ``items``) names the item with :func:`validate_naming_items`: ``meter_id`` becomes
``prices[2].meter_id``, the message unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pydantic

from billingkit.errors import ValidationError

__all__ = ["prefixed", "validate_naming_items"]

M = TypeVar("M")


def prefixed(exc: ValidationError, prefix: str) -> ValidationError:
    """``exc`` with its field named from a containing request: ``prices[2].`` + ``meter_id``."""
    if not prefix:
        return exc
    field = prefix + exc.field if exc.field else prefix.rstrip(".")
    return ValidationError(exc.message, field=field, details={**exc.details, "field": field})


def validate_naming_items(
    data: Any, handler: Callable[[Any], M], *, field: str, item_model: type[pydantic.BaseModel]
) -> M:
    """``handler(data)`` (a wrap validator's handler); when an item of the list ``data[field]``
    breaks one of ``item_model``'s own rules, the error names the item (``items[3].amount``).

    The failing item is found by validating the items one by one, only once validation has
    failed, so valid input pays nothing for it."""
    try:
        return handler(data)
    except ValidationError:
        items = data.get(field) if isinstance(data, Mapping) else None
        for index, item in enumerate(items if isinstance(items, list) else ()):
            try:
                item_model.model_validate(item)
            except ValidationError as item_error:
                raise prefixed(item_error, f"{field}[{index}].") from None
            except pydantic.ValidationError:
                continue  # pydantic names its own errors; the rule broke in a later item
        raise
