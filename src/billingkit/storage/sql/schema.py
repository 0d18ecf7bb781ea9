"""Applying the Alembic migrations that ship inside the package."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["current_revision", "head_revision", "upgrade"]

_LOCATION = Path(__file__).parent / "migrations"


def _config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_LOCATION))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@contextmanager
def _quiet_alembic() -> Iterator[None]:
    """Alembic logs at INFO (its plugins when first imported, the migration context, each step
    applied), so it is imported and run inside this: those lines stay quiet unless the
    ``alembic`` logger was given a level of its own (``logging.getLogger("alembic").setLevel(
    logging.INFO)``, or ``billingkit ... --log-level debug``). A host logging at INFO should not
    see them on every start."""
    alembic_log = logging.getLogger("alembic")
    if alembic_log.level != logging.NOTSET:
        yield
        return
    alembic_log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        alembic_log.setLevel(logging.NOTSET)


@cache
def head_revision() -> str | None:
    """The newest migration shipped in the package. Read once per process: Alembic compiles
    every migration file to find it (~25 ms, on each storage opened with the schema check), and
    the migrations of an imported package do not change while it runs."""
    with _quiet_alembic():
        from alembic.script import ScriptDirectory

        return ScriptDirectory.from_config(_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with _quiet_alembic(), engine.connect() as conn:
        from alembic.runtime.migration import MigrationContext

        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database schema to ``revision`` (default: the newest)."""
    with _quiet_alembic(), engine.begin() as conn:
        from alembic import command

        command.upgrade(_config(conn), revision)
