"""docs/testing.md's examples run as written: each block is a file of a user's suite, run by
pytest with the plugin (the fixtures example, the property test, the state machine as it is and
extended); the conftest block is loaded by a suite of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[str]:
    return BLOCK.findall((ROOT / "docs" / "testing.md").read_text())


def test_the_guides_examples_pass_as_a_users_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))
    blocks = _blocks()
    conftests = [b for b in blocks if b.startswith("# conftest.py")]
    tests = [b for b in blocks if b not in conftests]
    assert len(conftests) == 1 and len(tests) == 4
    for index, code in enumerate(tests):
        pytester.makepyfile(**{f"test_doc_{index}": code})
    leap = pytester.mkpydir("leap")
    (leap / "conftest.py").write_text(conftests[0])
    (leap / "test_leap.py").write_text(
        "from datetime import UTC, datetime\n\nimport pytest\n\nfrom billingkit import PermissionDenied\n\n\n"
        "def test_leap(test_clock, billing_scope):\n"
        "    assert test_clock.now() == datetime(2024, 2, 29, 12, tzinfo=UTC)\n"
        "    with pytest.raises(PermissionDenied):\n"
        "        billing_scope.customers.create(external_id='c', name='C')\n"
    )
    result = pytester.runpytest_subprocess("-p", "billingkit.testing.pytest_plugin", "-p", "no:randomly")
    result.assert_outcomes(passed=5)
