"""Shared fixtures: every storage test runs on memory, SQLite and PostgreSQL.

PostgreSQL: ``BILLINGKIT_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``)
names a server; each test session creates its own database there and drops it at the end, and each
test starts from empty tables. Unreachable PostgreSQL skips those tests with the reason, unless
``BILLINGKIT_REQUIRE_POSTGRES=1`` (set by CI), which makes them fail instead.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from sqlalchemy import create_engine, text

from billingkit.storage.memory import MemoryStorage
from billingkit.storage.sql import SqlStorage
from billingkit.storage.sql.tables import metadata

# Hypothesis' per-example deadline (200 ms) measures the machine, not the code: on a shared, loaded
# machine a garbage-collector pause fails a property that holds. Properties keep their example
# counts; only the wall-clock deadline goes.
settings.register_profile("billingkit", deadline=None)
settings.load_profile("billingkit")

PG_URL = os.environ.get(
    "BILLINGKIT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REQUIRE_PG = os.environ.get("BILLINGKIT_REQUIRE_POSTGRES") == "1"
STORES = ["memory", "sqlite", "postgres"]


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite") / "template.db"
    # A new file is migrated automatically; closing the last connection checkpoints the WAL, so
    # the single file is a complete copyable template.
    SqlStorage.from_url(f"sqlite:///{path}").close()
    assert not path.with_name(path.name + "-wal").exists()
    return path


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    admin_url = PG_URL.replace("postgresql://", "postgresql+psycopg://", 1)
    name = f"billingkit_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        message = f"PostgreSQL unreachable at {PG_URL}: {type(exc).__name__}: {exc}"
        if REQUIRE_PG:
            pytest.fail(message + " (BILLINGKIT_REQUIRE_POSTGRES=1)")
        pytest.skip(message)
    url = admin.url.set(database=name).render_as_string(hide_password=False)
    SqlStorage.from_url(url, migrate=True).close()
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


_PG_EMPTY = "; ".join(f"DELETE FROM {t.name}" for t in reversed(metadata.sorted_tables))


def make_storage(kind: str, request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    if kind == "memory":
        return MemoryStorage()
    if kind == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        path = tmp_path / "billing.db"
        shutil.copy(template, path)
        return SqlStorage.from_url(f"sqlite:///{path}")
    url = request.getfixturevalue("postgres_url")
    storage = SqlStorage.from_url(url, migrate=False)
    with storage.engine.begin() as conn:
        # DELETE beats TRUNCATE on a few rows: TRUNCATE replaces every table's files.
        conn.exec_driver_sql(_PG_EMPTY)
    return storage


@pytest.fixture(params=STORES)
def storage(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    store = make_storage(request.param, request, tmp_path)
    yield store
    store.close()


# -- a bootstrapped Billing on the parametrised store, shared by service and HTTP tests ----------


@pytest.fixture
def clock():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from billingkit import TestClock

    return TestClock(datetime(2026, 5, 1, 9, 30, tzinfo=UTC))


@pytest.fixture
def test_clock(clock):  # type: ignore[no-untyped-def]
    """The plugin's name for ``clock`` (billingkit.testing.pytest_plugin): one clock either way."""
    return clock


@pytest.fixture
def billing(storage, clock):  # type: ignore[no-untyped-def]
    from billingkit import Billing

    return Billing(storage, clock, token_secret=b"test-secret")


@pytest.fixture
def owner_password():  # type: ignore[no-untyped-def]
    """No owner password by default (hashing one is deliberately slow); login tests override this."""
    return None


@pytest.fixture
def setup(billing, owner_password):  # type: ignore[no-untyped-def]
    """A tenant with an owner and test/production environments."""
    return billing.bootstrap(tenant_name="Acme", owner_email="owner@acme.test", owner_password=owner_password)


@pytest.fixture(autouse=True, scope="session")
def cheap_password_hashing() -> Iterator[tuple[int, int, int]]:
    """Every bootstrap hashes the owner's password; at production cost (scrypt n=2**14, ~50 ms)
    that dominated the suite. Hashes record their own parameters, so verification is unchanged;
    yields the production parameters, which tests/unit/test_foundation_values.py checks."""
    from billingkit.domain import credentials

    production = credentials._SCRYPT
    credentials._SCRYPT = (2**4, 8, 1)
    yield production
    credentials._SCRYPT = production
