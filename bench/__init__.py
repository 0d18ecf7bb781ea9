"""Benchmarks. Run all with ``bash scripts/dev.sh bench`` or one with ``... bench <name>``.

Each ``bench/bench_<name>.py`` module exposes ``main(argv: list[str]) -> None`` and prints its figures.
Figures are recorded by hand in ``docs/performance.md`` with the command that produced them.
"""
