"""The library surface is typed: mypy checks callers' field names, and every declared operation
refuses an unknown field at run time, naming it and the accepted ones."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
import textwrap
from functools import cached_property
from pathlib import Path

import pytest

from billingkit import Billing, Scoped, ValidationError
from billingkit.domain.validation import InputModel
from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp
from billingkit.services import tax_rates

ROOT = Path(__file__).parents[2]
# Kept between runs, one per checkout (mypy checks every cached module against its source): about
# 0.3 s warm, 2-5 s cold. The checked module keeps one path too: mypy replays a fresh module's
# cached messages under the path it had when they were made.
WORK = (
    Path(tempfile.gettempdir())
    / f"billingkit-typed-surface-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]}"
)

# Each line tagged "# error: <text>" must get a mypy error containing <text>; every other line none.
SNIPPET = """
from billingkit.facade.catalog import TaxRates
from billingkit.services.tax_rates import TaxRateCreate, TaxRateUpdate


def calls(rates: TaxRates) -> None:
    made = rates.create(name="VAT", code="VAT20", percentage_value="20")
    reveal_type(made)  # note: billingkit.domain.catalog.tax_rates.TaxRate
    rates.create(TaxRateCreate(name="VAT", code="VAT20"))
    rates.update(made.id, name="Sales tax")
    rates.update(made.id, TaxRateUpdate(name="Sales tax"))
    rates.get(made.id).code
    rates.list(limit=10).items
    rates.create(name="VAT", cod="V")  # error: Unexpected keyword argument "cod" [...]; did you mean "code"?
    rates.update(made.id, nme="Tax")  # error: Unexpected keyword argument "nme" [...]; did you mean "name"?
    rates.create(name="VAT")  # error: No overload variant of "__call__" of "Call" matches argument type "str"
    rates.create(TaxRateUpdate(name="VAT"))  # error: matches argument type "TaxRateUpdate"
    rates.get(made.id).cod  # error: "TaxRate" has no attribute "cod"
"""


def test_mypy_checks_the_field_names_of_library_calls() -> None:
    """The keyword form carries the request model's own fields (the pydantic plugin reads them
    and ``extra="forbid"``), so a misspelled field is caught before the code runs."""
    pytest.importorskip("mypy")
    WORK.mkdir(exist_ok=True)
    module = WORK / "typed_surface_calls.py"
    module.write_text(textwrap.dedent(SNIPPET))
    # In a process of its own: mypy raises the recursion limit and the collector's thresholds.
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    command += ["--cache-dir", str(WORK / "mypy-cache"), "--no-error-summary", "--hide-error-context"]
    checked = subprocess.run([*command, str(module)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert not checked.stderr, checked.stderr
    found: dict[int, list[str]] = {}
    out = checked.stdout
    for line in out.splitlines():
        match = re.match(rf"{re.escape(str(module))}:(\d+): (error|note): (.*)", line)
        assert match, line
        if match[2] == "error" or "Revealed type" in match[3]:
            found.setdefault(int(match[1]), []).append(match[3])
    wanted = {
        number: text.split("# ", 1)[1]
        for number, text in enumerate(module.read_text().splitlines(), start=1)
        if "# error: " in text or "# note: " in text
    }
    assert sorted(found) == sorted(wanted), out
    for number, expectation in wanted.items():
        parts = expectation.split(": ", 1)[1].split(" [...]")
        assert any(all(part in message for part in parts) for message in found[number]), found[number]


def _areas() -> list[type[Area]]:
    return [
        attr.func
        for attr in vars(Scoped).values()
        if isinstance(attr, cached_property) and isinstance(attr.func, type) and issubclass(attr.func, Area)
    ]


def test_every_area_is_reached_from_scoped_and_declares_over_request_models() -> None:
    areas = _areas()
    assert len(areas) == 33
    declared = [
        (area, name, op)
        for area in areas
        for name, op in vars(area).items()
        if isinstance(op, RequestOp | IdRequestOp | IdOp)
    ]
    assert len(declared) >= 80
    for area, name, op in declared:
        if not isinstance(op, IdOp):
            assert issubclass(op.model, InputModel), f"{area.__name__}.{name}"


def test_every_declared_operation_refuses_an_unknown_field_naming_the_accepted_ones() -> None:
    billing = Billing()
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    checked = 0
    for area_type in _areas():
        area = area_type(scoped)
        for name, op in vars(area_type).items():
            if not isinstance(op, RequestOp | IdRequestOp):
                continue
            call = getattr(area, name)
            ids = ("some_id",) if isinstance(op, IdRequestOp) else ()
            with pytest.raises(ValidationError) as caught:
                call(*ids, zz_unknown=1)
            assert caught.value.field == "zz_unknown", f"{area_type.__name__}.{name}"
            assert caught.value.details["accepted_fields"] == list(op.model.accepted_fields)
            assert caught.value.message.startswith("unknown field 'zz_unknown'; accepted: ")
            checked += 1
    assert checked >= 50


def test_a_declaration_that_does_not_fit_its_service_fails_at_import() -> None:
    with pytest.raises(TypeError, match="needs a service taking"):
        IdRequestOp(tax_rates.create_tax_rate, tax_rates.TaxRateCreate)
    with pytest.raises(TypeError, match="needs a service taking"):
        IdOp(tax_rates.update_tax_rate)
    with pytest.raises(TypeError, match="pydantic model class"):
        RequestOp(tax_rates.create_tax_rate, dict)


def test_operations_read_the_service_keywords_once() -> None:
    from billingkit.facade.catalog import TaxRates

    assert TaxRates.update.keywords == ("tax_rate_id", "data")
    assert TaxRates.list.keywords == ("search",)
    assert TaxRates.get.keyword == "tax_rate_id"
    assert "create_tax_rate" in repr(TaxRates.create)
