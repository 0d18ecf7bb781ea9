"""Response shapes shared by routes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["success", "whole_list"]


def whole_list(items: Sequence[Any]) -> dict[str, Any]:
    """A complete, unpaged list in the paged shape ``{items, pagination}``."""
    return {
        "items": [item.to_dict() for item in items],
        "pagination": {"limit": len(items), "offset": 0, "total": len(items)},
    }


def success(message: str) -> dict[str, str]:
    """The reference API's ``SuccessResponse`` body of deletes."""
    return {"message": message}
