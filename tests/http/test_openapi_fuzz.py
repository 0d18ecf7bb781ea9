"""A bounded schemathesis pass over the adapter's own OpenAPI document.

Every operation of ``/v1/openapi.json`` gets a few generated requests (schema-valid ones, and a
few that break the schema), sent with a bootstrap ``super_admin`` key to an app on a SQLite file
store and on PostgreSQL (which refuses more: NUL characters, out-of-range integers). A response
fails the run when it is a 5xx, or when its status, content type or body is not what the
document says for that operation. Generation is derandomised and not shrunk, so CI sends the same
requests every time.

``FUZZ_EXAMPLES`` (environment, default 2) sets the number of examples per operation and mode,
for a longer local run: ``FUZZ_EXAMPLES=50 pytest tests/http/test_openapi_fuzz.py``;
``FUZZ_STORES`` picks the stores (default ``sqlite,postgres``; ``memory`` works too).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from billingkit import Billing, TestClock
from billingkit.http import create_app
from tests.conftest import make_storage

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "2"))
FUZZ_STORES = os.environ.get("FUZZ_STORES", "sqlite,postgres").split(",")
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)


def _run_operation(
    operation: Any, mode: schemathesis.GenerationMode, headers: dict[str, str], statuses: Counter[int]
) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        response = case.call_and_validate(headers=headers, checks=CHECKS)
        statuses[response.status_code] += 1

    run()


@pytest.mark.parametrize("kind", FUZZ_STORES)
def test_every_operation_answers_as_documented(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    storage = make_storage(kind, request, tmp_path)
    billing = Billing(storage, TestClock(datetime(2026, 5, 1, 9, 30, tzinfo=UTC)), token_secret=b"fuzz")
    setup = billing.bootstrap(tenant_name="Fuzz", owner_email="owner@fuzz.test")
    environment, key = setup.environments[0]
    # The environment header is sent as it should be: random values would make most requests 401.
    headers = {"x-api-key": key.api_key, "x-environment-id": environment.id}
    schema = schemathesis.openapi.from_asgi("/v1/openapi.json", create_app(billing))

    started = time.perf_counter()
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:
        for mode in MODES:
            try:
                _run_operation(operation, mode, headers, statuses)
            except (Exception, BaseExceptionGroup) as exc:  # report every failing operation
                failures.append(f"{operation.label} ({mode.value}): {str(exc)[:1500]}")
    elapsed = time.perf_counter() - started
    storage.close()

    answered = ", ".join(f"{status}: {n}" for status, n in sorted(statuses.items()))
    print(f"\nfuzz: {len(operations)} operations, {statuses.total()} requests ({answered}), {elapsed:.1f} s")
    assert len(operations) > 100  # the whole API, not a filtered part
    assert not failures, f"{len(failures)} failing:\n\n" + "\n\n".join(failures)
