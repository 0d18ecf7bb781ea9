"""The README's first command runs examples/quickstart.py; it must work and print real invoices."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
