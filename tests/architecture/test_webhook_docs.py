"""docs/webhooks.md's "Event kinds" section is what the code produces: every kind of the
catalogue, in order, each with the example the story (``tests/event_kinds.py``) records through the
library, and routes named there that the adapter serves. Regenerate with
``python -m tests.event_kinds``."""

from __future__ import annotations

import re

from billingkit import Billing
from billingkit.domain.event_types import EVENT_TYPES
from billingkit.http import create_app
from tests.event_kinds import DOC, OPERATIONS, render, section, tell


def test_the_event_kinds_section_is_what_the_code_produces() -> None:
    documented = section(DOC.read_text())
    assert documented == render(tell()), "docs/webhooks.md is stale: run `python -m tests.event_kinds`"


def test_every_kind_is_documented_once_in_the_catalogue_order() -> None:
    documented = re.findall(r"^#### `([a-z_.]+)`$", section(DOC.read_text()), re.M)
    assert documented == list(EVENT_TYPES)
    # Each kind says who emits it.
    assert set(OPERATIONS) == set(EVENT_TYPES)


def test_the_routes_named_as_emitters_exist() -> None:
    def shape(path: str) -> str:
        return re.sub(r"\{[^}]+\}", "{}", path)

    served = {
        (method.upper(), shape(path.removeprefix("/v1")))
        for path, item in create_app(Billing()).openapi()["paths"].items()
        for method in item
    }
    named = [
        (method, shape(path))
        for text in OPERATIONS.values()
        for method, path in re.findall(r"`(GET|POST|PUT|DELETE) (/[^`]+)`", text)
    ]
    assert len(named) > 30
    assert [route for route in named if route not in served] == []
