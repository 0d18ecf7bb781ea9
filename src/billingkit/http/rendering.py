"""How routes answer: typed models (:mod:`billingkit.http.schemas`) serialised with exactly the keys
they were given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fastapi.routing import APIRoute
from pydantic import BaseModel

from billingkit.http.schemas.base import SuccessResponse

__all__ = ["WireRoute", "success", "whole_list"]

Model = TypeVar("Model", bound=BaseModel)


class WireRoute(APIRoute):
    """A route whose answer leaves out the keys its model was not given (``exclude_unset``).

    Answer models are built from ``to_dict()``, which writes some keys only on some answers (an
    expansion, a generated password, ``line_items`` on demand). Such a key has a default in the
    model; without ``exclude_unset`` it would appear as ``null`` where the key used to be absent.
    Every router of the adapter uses this route class.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["response_model_exclude_unset"] = True
        super().__init__(path, endpoint, **kwargs)


def whole_list(model: type[Model], items: Sequence[Any]) -> Model:
    """A complete, unpaged list in the paged shape ``{items, pagination}``."""
    return model.model_validate(
        {
            "items": [item.to_dict() for item in items],
            "pagination": {"limit": len(items), "offset": 0, "total": len(items)},
        }
    )


def success(message: str) -> SuccessResponse:
    """The reference API's ``SuccessResponse`` body of deletes."""
    return SuccessResponse(message=message)
