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
    # Invoice 2, with the arithmetic:
    #   API calls, SLAB: 1000*0.02 + 9000*0.015 + 55864*0.01 + 5 flat = 718.64
    #   e-mail, PACKAGE: ceil(149232 / 1000) = 150 packages * 2.00 = 300.00
    #   subtotal 49 + 718.64 + 300 = 1067.64; 10% coupon 106.76; VAT 20% of 960.88 = 192.18
    assert "API calls          01-31..02-28 qty    65864     718.64" in out
    assert "E-mail recipients  01-31..02-28 qty   149232     300.00" in out
    for expected in ("1067.64", "-106.76", "192.18", "1153.06"):
        assert expected in out
    # Anchored on 31 January: periods end 28 Feb, 31 Mar, 30 Apr (clamped, then restored).
    assert "Platform fee       03-31..04-30" in out
    assert "1422.05" in out  # invoice 3: the two-period coupon no longer applies
