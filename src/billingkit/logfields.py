"""Structured log lines: one ``key=value`` line per event, through the ``logging`` module.

``log_fields(log, logging.INFO, "billing_run", invoices=3)`` logs ``event=billing_run invoices=3``
and also sets each field as an attribute of the ``LogRecord`` (``record.invoices == 3``), so a JSON
formatter can emit the same fields without parsing the message.
"""

from __future__ import annotations

import json
import logging
from typing import Any

__all__ = ["format_fields", "log_fields"]

_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:{}<>+@")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3f}"
    text = str(value)
    if text and all(c in _BARE for c in text):
        return text
    return json.dumps(text)


def format_fields(event: str, fields: dict[str, Any]) -> str:
    """``event=<event> k1=v1 k2="v 2"``: strings with spaces, quotes or ``=`` are JSON-quoted."""
    return " ".join(f"{key}={_value(value)}" for key, value in {"event": event, **fields}.items())


def log_fields(
    logger: logging.Logger,
    level: int,
    event: str,
    /,
    *,
    exc_info: BaseException | bool | None = None,
    **fields: Any,
) -> None:
    if logger.isEnabledFor(level):
        logger.log(
            level,
            "%s",
            format_fields(event, fields),
            exc_info=exc_info,
            extra={"event": event, **fields},
        )
