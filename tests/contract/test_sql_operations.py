"""``SqlStorage`` operations: ``ping`` on a database that does not answer, a missing PostgreSQL
driver, quiet migrations."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from billingkit.errors import ServiceUnavailable
from billingkit.storage.sql import SqlStorage


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ping_on_an_unopenable_sqlite_file_is_service_unavailable(tmp_path: Path) -> None:
    storage = SqlStorage.from_url(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}", migrate=False)
    with pytest.raises(ServiceUnavailable) as caught:
        storage.ping()
    assert caught.value.http_status == 503
    assert caught.value.message == "the database does not answer"
    assert caught.value.__cause__ is not None  # the driver's error is kept for the logs
    storage.close()


def test_ping_on_a_postgres_port_nobody_listens_on_is_service_unavailable() -> None:
    pytest.importorskip("psycopg")
    storage = SqlStorage.from_url(f"postgresql://postgres@127.0.0.1:{_closed_port()}/x", migrate=False)
    with pytest.raises(ServiceUnavailable):
        storage.ping()
    storage.close()


BLOCK_PSYCOPG = "import sys; sys.modules['psycopg'] = None; "


def test_a_postgres_url_without_the_driver_names_the_extra() -> None:
    code = (
        BLOCK_PSYCOPG + "from billingkit.errors import ConfigurationError\n"
        "from billingkit.storage.sql import SqlStorage\n"
        "try:\n"
        "    SqlStorage.from_url('postgresql://postgres@127.0.0.1/x')\n"
        "except ConfigurationError as exc:\n"
        "    print(exc.code, exc.message)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        "configuration_error PostgreSQL needs the psycopg driver (psycopg is not installed): "
        "pip install 'billingkit[postgres]'"
    )


def test_auto_migration_is_quiet_at_info_unless_alembic_is_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        SqlStorage.from_url(f"sqlite:///{tmp_path / 'quiet.db'}").close()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("alembic")] == []
    assert logging.getLogger("alembic").level == logging.NOTSET  # left as it was found
    with caplog.at_level(logging.INFO, logger="alembic"):
        SqlStorage.from_url(f"sqlite:///{tmp_path / 'loud.db'}").close()
    assert any("Running upgrade" in r.getMessage() for r in caplog.records if r.name.startswith("alembic"))
