#!/usr/bin/env bash
# One entry point for people and CI: sets up .venv (idempotently) and runs a task.
#   bash scripts/dev.sh run    # install, then run the main example on the embedded default
#   bash scripts/dev.sh test   # install, then run the whole test suite
#   bash scripts/dev.sh bench  # install, then run the benchmarks
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
venv="$root/.venv"
stamp="$venv/.billingkit-installed"
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
    echo "$want" > "$stamp"
fi
task="${1:-run}"
shift || true
case "$task" in
    run)   exec "$venv/bin/python" examples/quickstart.py "$@" ;;
    # Two processes (one per core here): the suite is mostly waiting on SQLite and PostgreSQL.
    test)  exec "$venv/bin/python" -m pytest -n "${BILLINGKIT_TEST_WORKERS:-2}" "$@" ;;
    bench) exec "$venv/bin/python" -m bench "$@" ;;
    *) echo "usage: bash scripts/dev.sh run|test|bench" >&2; exit 2 ;;
esac
