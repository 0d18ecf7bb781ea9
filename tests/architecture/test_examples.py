"""The examples keep running: the README's first command runs examples/quickstart.py, which must
print real invoices, and examples/pricing_experiments.ipynb is executed with nbclient and its
outputs checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_prints_the_expected_invoices() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "2 customers in test" in out
    assert "production cannot see test data: not_found" in out
    # The catalogue is built in the store first; the invoices below are computed from it.
    assert "catalogue: plan 'API Pro'" in out
    assert "API calls          USAGE TIERED   3 tiers" in out
    assert "E-mail recipients  USAGE PACKAGE  $2.00" in out
    assert "entitlement: API access, 10,000 calls a month included" in out
    # The opening invoice bills the first period's fee in advance, numbered in January.
    assert "INV-202601-00001  SUBSCRIPTION_CREATE  2026-01-31 .. 2026-02-28" in out
    # The first period end, with the arithmetic:
    #   API calls: 20,044 used, 10,000 included -> 10,044 billed on SLAB tiers:
    #     1000*0.02 + 9000*0.015 + 44*0.01 + 5 flat = 20 + 135 + 0.44 + 5 = 160.44
    #   e-mail, PACKAGE: ceil(148077 / 1000) = 149 packages * 2.00 = 298.00
    #   next period's fee 49.00 in advance; total 49 + 160.44 + 298 = 507.44, due 15 days later
    assert "INV-202602-00001  SUBSCRIPTION_CYCLE   2026-01-31 .. 2026-02-28" in out
    assert "Platform fee       02-28..03-31 qty        1      49.00" in out
    assert "API calls          01-31..02-28 qty    20044     160.44  (10000 included)" in out
    assert "E-mail recipients  01-31..02-28 qty   148077     298.00" in out
    assert "amount due                                        507.44   due 2026-03-15" in out
    # Anchored on 31 January: periods end 28 Feb, 31 Mar, 30 Apr (clamped, then restored).
    assert "INV-202603-00001  SUBSCRIPTION_CYCLE   2026-02-28 .. 2026-03-31" in out
    assert "INV-202604-00001  SUBSCRIPTION_CYCLE   2026-03-31 .. 2026-04-30" in out
    # 12,122 billed: 20 + 135 + 2122*0.01 + 5 = 181.22; ceil(171056/1000) = 172 * 2 = 344.00
    assert "amount due                                        574.22   due 2026-04-15" in out
    assert "subscription now at 2026-04-30 .. 2026-05-31, version 4" in out


def _outputs(notebook: Any) -> tuple[list[str], int]:
    """The text every code cell showed (streams and plain-text results), and how many images."""
    texts: list[str] = []
    images = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("name") == "stderr":
                texts.append("STDERR " + output["text"])
            elif "text" in output:
                texts.append(output["text"])
            elif "data" in output:
                texts.append(output["data"].get("text/plain", ""))
                images += "image/png" in output["data"]
    return texts, images


def test_the_pricing_notebook_runs_and_shows_its_results() -> None:
    """examples/pricing_experiments.ipynb, executed as a user would run it (a fresh kernel)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = ROOT / "examples" / "pricing_experiments.ipynb"
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells), "commit the notebook without outputs"
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # a cell that raises fails here, naming it
    texts, images = _outputs(notebook)
    shown = "\n".join(texts)
    assert "STDERR" not in shown  # no warnings
    # The simulation is fixed by its seed: 40 customers, an opening invoice each and six closing
    # invoices a month later each.
    assert "<SimulationResult 40 customers x 6 months, 280 invoices, usd 42,619.53, seed 42>" in shown
    assert "revenue over 6 months: 42,619.53 USD on 280 invoices" in shown
    assert "2026-07      usd  8367.67        40         40" in shown  # revenue by month, last row
    # The billed plan as the candidate reproduces billing exactly.
    assert "revenue change usd +0.00, 0 better off, 0 worse off" in shown
    assert "revenue change: -2,287.74 USD on 32,598.04 billed" in shown
    assert "24 customers better off, 3 worse off, 0 unchanged" in shown
    assert images == 4  # revenue, invoice distribution, usage vs charge, billed vs candidate
