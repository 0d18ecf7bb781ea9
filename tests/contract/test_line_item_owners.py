"""Every line item of a stored subscription can be found by its id alone: through the owner index
written with it, and, for subscriptions stored before that index existed (migration 0013), through
the rows the migration backfills."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, text

from billingkit import Billing
from billingkit.errors import NotFound
from billingkit.services.subscription_lines import find_line_item
from billingkit.storage.sql import SqlStorage, schema
from tests.stories import weekly_subscription


def test_each_line_item_of_a_new_subscription_is_found_by_its_id(billing: Billing) -> None:
    setup, sub = weekly_subscription(billing)
    (line,) = sub.line_items
    with billing.storage.unit_of_work(setup.tenant.id, setup.environments[0][0].id) as uow:
        found_sub, found_line = find_line_item(uow, line.id)
        assert (found_sub.id, found_line) == (sub.id, line)
        with pytest.raises(NotFound):
            find_line_item(uow, "subs_line_missing")
    other_env = setup.environments[1][0].id
    with billing.storage.unit_of_work(setup.tenant.id, other_env) as uow, pytest.raises(NotFound):
        find_line_item(uow, line.id)  # another environment never sees it


def test_migration_0013_backfills_the_owners_of_line_items_stored_before_it(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'old.db'}"
    storage = SqlStorage.from_url(url)
    billing = Billing(storage, clock, token_secret=b"test-secret")
    setup, sub = weekly_subscription(billing)
    storage.close()
    engine = create_engine(url)
    with engine.begin() as conn:
        command.downgrade(schema._config(conn), "0012")
        assert "line_item_owners" not in {r[0] for r in conn.execute(text("SELECT name FROM sqlite_master"))}
    schema.upgrade(engine)
    engine.dispose()
    storage = SqlStorage.from_url(url)
    with storage.unit_of_work(setup.tenant.id, setup.environments[0][0].id) as uow:
        found_sub, found_line = find_line_item(uow, sub.line_items[0].id)
        assert found_sub.id == sub.id and found_line == sub.line_items[0]
    storage.close()
