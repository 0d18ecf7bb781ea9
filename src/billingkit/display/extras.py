"""The optional libraries of the ``notebook`` extra, imported only by the functions that need them.

The core imports and works without them; a function that needs one raises ``ConfigurationError``
naming the library and ``pip install 'billingkit[notebook]'`` when it is missing.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from billingkit.errors import ConfigurationError

__all__ = ["NOTEBOOK_INSTALL", "notebook_module"]

NOTEBOOK_INSTALL = "pip install 'billingkit[notebook]'"


def notebook_module(name: str, purpose: str) -> ModuleType:
    """Import ``name`` (e.g. ``"pandas"``) for ``purpose`` (e.g. ``"DataFrames"``), or raise
    ``ConfigurationError`` naming it and the ``notebook`` extra when it is not installed."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != name.split(".")[0]:
            raise
        raise ConfigurationError(
            f"{purpose} need the {name.split('.')[0]} library, which is not installed: {NOTEBOOK_INSTALL}"
        ) from exc
