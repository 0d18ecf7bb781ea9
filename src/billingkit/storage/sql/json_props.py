"""Event property access in SQL that follows the domain's text and number rules exactly.

The rules (``billingkit.domain.usage.property_text`` / ``property_number``) are reproduced per
dialect:

- PostgreSQL (``properties`` is JSONB): ``->>`` already prints numbers in plain notation with
  their scale (``2.50``, ``1e16`` → ``10000000000000000``), strings unquoted, booleans as
  ``true``/``false``; objects and lists are masked to NULL. Numbers are ``(p->>k)::numeric``
  (exact); strings count when they match ``NUMERIC_STRING_PATTERN``.
- SQLite (``properties`` is JSON text): ``json_extract`` turns numbers into doubles, so the
  literal text is read with ``->`` instead and finished by two small Python functions registered
  on every connection: ``bk_plain`` (a JSON number literal in plain notation) and the exact
  decimal aggregates of :mod:`billingkit.storage.sql.usage`.

Property names are bound as parameters (PostgreSQL) or quoted JSON paths (SQLite); the domain
refuses names containing double quotes or control characters, so every name is addressable.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from billingkit.domain.usage import NUMERIC_STRING_PATTERN, property_number, property_text

__all__ = ["Fragment", "json_number", "json_path", "json_text", "sqlite_number"]


class Fragment:
    """A piece of SQL text and the bound parameters it uses (names made unique by a counter)."""

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}

    def bind(self, value: Any) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f":{name}"


def json_path(key: str) -> str:
    """The SQLite JSON path of a top-level property."""
    return f'$."{key}"'


def json_text(dialect: str, column: str, key: str, sql: Fragment) -> str:
    """SQL for ``property_text(properties[key])`` (NULL when the property has no text)."""
    if dialect == "postgresql":
        name = sql.bind(key)
        return (
            f"(CASE jsonb_typeof({column} -> {name}) WHEN 'object' THEN NULL WHEN 'array' THEN NULL "
            f"ELSE {column} ->> {name} END)"
        )
    path = sql.bind(json_path(key))
    return (
        f"(CASE json_type({column}, {path}) WHEN 'text' THEN json_extract({column}, {path}) "
        f"WHEN 'integer' THEN {column} -> {path} WHEN 'real' THEN bk_plain({column} -> {path}) "
        f"WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END)"
    )


def json_number(dialect: str, column: str, key: str, sql: Fragment) -> str:
    """SQL for the value a usage aggregate reads: on PostgreSQL ``property_number`` as NUMERIC;
    on SQLite the property's JSON literal, which :func:`sqlite_number` reads in Python."""
    if dialect == "postgresql":
        name = sql.bind(key)
        pattern = sql.bind(NUMERIC_STRING_PATTERN)
        return (
            f"(CASE jsonb_typeof({column} -> {name}) WHEN 'number' THEN ({column} ->> {name})::numeric "
            f"WHEN 'string' THEN (CASE WHEN ({column} ->> {name}) ~ {pattern} "
            f"THEN ({column} ->> {name})::numeric END) END)"
        )
    return f"({column} -> {sql.bind(json_path(key))})"


def sqlite_number(literal: str | None) -> Decimal | None:
    """``property_number`` of a property given as its JSON literal (what SQLite's ``->`` returns)."""
    if literal is None:
        return None
    first = literal[:1]
    if first == '"':
        return property_number(json.loads(literal))
    if first in ("t", "f", "n", "{", "["):
        return None
    try:
        return Decimal(literal)
    except InvalidOperation:  # pragma: no cover - SQLite hands out valid JSON only
        return None


def sqlite_plain(literal: str | None) -> str | None:
    """``property_text`` of a JSON number literal (``bk_plain`` in SQLite)."""
    return None if literal is None else property_text(Decimal(literal))
