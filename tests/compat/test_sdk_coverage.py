"""Every SDK operation whose route the adapter serves has a round trip in tests/compat.

The SDK's generated modules name each operation's method and path; the adapter's OpenAPI names its
routes. Their intersection is what customers can call through the SDK against billingkit, so each
of those operations must be called by some test here (a new route the SDK covers fails this test
until it gets one).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import flexprice

from billingkit import Billing
from billingkit.http import create_app

_DEF = re.compile(r"    def (\w+)\(")
_METHOD = re.compile(r'\s+method="(\w+)",')
_PATH = re.compile(r'\s+path="([^"]+)",')


def _template(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def sdk_operations() -> dict[tuple[str, str], str]:
    """(method, path template) -> the SDK's ``module.function`` for every sync operation."""
    found = {}
    for module in sorted(Path(flexprice.__file__).parent.glob("*.py")):
        lines = module.read_text().splitlines()
        name = ""
        for line, following in itertools.pairwise(lines):
            if definition := _DEF.match(line):
                name = definition[1]
            elif (
                (method := _METHOD.match(line))
                and (path := _PATH.match(following))
                and not name.endswith("_async")
            ):
                found[(method[1], _template(path[1]))] = f"{module.stem}.{name}"
    return found


def served_routes() -> set[tuple[str, str]]:
    paths = create_app(Billing()).openapi()["paths"]
    return {
        (method.upper(), _template(path.removeprefix("/v1")))
        for path, item in paths.items()
        for method in item
    }


def test_every_served_sdk_operation_has_a_round_trip() -> None:
    operations = sdk_operations()
    assert len(operations) > 250  # the parser still understands the generated code
    routes = served_routes()
    served = {key: name for key, name in operations.items() if key in routes}
    assert len(served) >= 86, sorted(served.values())
    tests = "".join(
        p.read_text() for p in Path(__file__).parent.glob("test_sdk_*.py") if p.name != Path(__file__).name
    )
    untested = sorted(name for name in served.values() if f".{name.split('.')[1]}(" not in tests)
    assert untested == []
