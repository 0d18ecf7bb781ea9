"""The Python examples in the README, the API guide, the notebook guide and the checkout guide run as
written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    ROOT / "docs" / "api.md",
    ROOT / "docs" / "notebooks.md",
    ROOT / "docs" / "checkout.md",
]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, int, str]]:
    found = []
    for path in DOCS:
        for i, match in enumerate(BLOCK.finditer(path.read_text())):
            found.append((path.name, i, match.group(1)))
    return found


@pytest.mark.parametrize(("doc", "index", "code"), _blocks(), ids=lambda v: str(v)[:20])
def test_python_blocks_run(doc: str, index: int, code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, f"{doc}[{index}]", "exec"), {"__name__": f"docs_{index}"})


def test_there_are_examples() -> None:
    assert len(_blocks()) >= 3
