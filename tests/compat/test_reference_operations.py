"""The count of reference operations served, and each one left out with why, stay true.

docs/reference-operations.md lists every reference operation with its state; docs/api.md's
"Reference operations served" section gives the count and the reasons. Both are regenerated here
from the listed operations and the adapter's routes and must equal the files, so a route added or
removed without regenerating (``python -m tests.reference_operations``) fails; with the reference
OpenAPI beside the repository, the listed operations must also be exactly the reference's.
"""

from __future__ import annotations

import re

import pytest

from tests.reference_operations import (
    API_DOC,
    LEFT_OUT,
    REFERENCE,
    SECTION,
    TABLE_DOC,
    Operation,
    adapter_routes,
    api_section,
    reference_operations,
    served,
    table_doc,
)

_ROW = re.compile(r"^\| (\w+) \| `([^`]+)` \| `([^`]+)` \| ([^|]+) \| (yes|left out) \|$", re.MULTILINE)


def listed() -> list[Operation]:
    return [
        Operation(method, path.removeprefix("/v1"), operation_id, tag.strip())
        for method, path, operation_id, tag, _ in _ROW.findall(TABLE_DOC.read_text())
    ]


def test_the_documents_say_what_the_adapter_serves() -> None:
    operations, routes = listed(), adapter_routes()
    assert len(operations) == 201
    assert TABLE_DOC.read_text() == table_doc(operations, routes)
    text = API_DOC.read_text()
    section = text[text.index(SECTION + "\n") :]
    section = section[: section.find("\n## ") + 1] if "\n## " in section else section
    assert section == api_section(operations, routes)


def test_every_operation_left_out_has_a_reason_and_no_reason_is_stale() -> None:
    operations, routes = listed(), adapter_routes()
    left = {(o.method, o.path) for o in operations if not served(o, routes)}
    assert left == set(LEFT_OUT)


def test_the_listed_operations_are_the_references() -> None:
    if not REFERENCE.exists():
        pytest.skip(f"the reference OpenAPI is not at {REFERENCE}")
    expected = [(o.method, o.served_path, o.operation_id, o.tag) for o in reference_operations()]
    assert [(o.method, o.served_path, o.operation_id, o.tag) for o in listed()] == expected
