"""Benchmark runner: ``python -m bench [name ...] [-- args for the benchmark]``."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def _available() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules([str(here)])
        if m.name.startswith("bench_")
    )


def main(argv: list[str]) -> int:
    names, extra = argv, []
    if "--" in argv:
        cut = argv.index("--")
        names, extra = argv[:cut], argv[cut + 1 :]
    available = _available()
    unknown = [n for n in names if n not in available]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {available}", file=sys.stderr)
        return 2
    for name in names or available:
        print(f"== bench {name}")
        importlib.import_module(f"bench.bench_{name}").main(extra)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
