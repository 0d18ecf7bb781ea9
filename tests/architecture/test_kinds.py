"""A stored kind is registered everywhere it must be, or one of these fails.

The registry (``billingkit.domain.kinds.KINDS``) is the one declaration; these tests check each
place that cannot read it and must agree with it by hand: the typed repository list, the SQL
table and its unique indexes, the migrations, the contract suite's samples, the search requests.
The checklist in docs/architecture.md ("Adding a stored kind") lists the same places.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Annotated, ClassVar, get_type_hints

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Index, Table, create_engine

import billingkit.services
from billingkit.domain.kinds import KINDS, Kind, Level
from billingkit.domain.queries import Op
from billingkit.ports import Ledger, Repositories, Repository
from billingkit.services.search import Searches, SearchRequest, declared_filters
from billingkit.storage.sql import SqlStorage
from billingkit.storage.sql.tables import TABLES, metadata
from billingkit.testing.contracts import sample

OTHER_STORES = {"events", "usage", "counters"}
SCOPE_COLUMNS = {
    Level.GLOBAL: (),
    Level.TENANT: ("tenant_id",),
    Level.ENVIRONMENT: ("tenant_id", "environment_id"),
}


def test_every_kind_is_a_repository_of_its_model_on_the_unit_of_work() -> None:
    declared = get_type_hints(Repositories)
    assert set(declared) - OTHER_STORES == set(KINDS)
    assert {name: declared[name] for name in KINDS} == {
        name: (Ledger if kind.append_only else Repository)[kind.model]  # type: ignore[name-defined]
        for name, kind in KINDS.items()
    }


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_has_a_table_holding_exactly_its_model_fields(name: str) -> None:
    kind, table = KINDS[name], TABLES[name]
    assert set(table.c.keys()) == set(kind.model.model_fields)
    assert set(SCOPE_COLUMNS[kind.level]) <= set(table.c.keys())
    assert [c.name for c in table.primary_key.columns] == ["id"]


def _unique_rules_of(table: Table, kind: Kind) -> set[tuple[tuple[str, ...], bool]]:
    """The table's unique indexes as (fields beyond the scope, partial on live rows)."""
    scope = SCOPE_COLUMNS[kind.level]
    rules = set()
    for index in table.indexes:
        if isinstance(index, Index) and index.unique:
            fields = tuple(c.name for c in index.columns if c.name not in scope)
            rules.add((fields, index.dialect_options["postgresql"].get("where") is not None))
    return rules


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_uniqueness_rule_is_a_unique_index_and_no_other(name: str) -> None:
    """The SQL store enforces exactly the rules the memory store reads from the registry."""
    kind = KINDS[name]
    declared = {(rule.fields, rule.live_only) for rule in kind.unique}
    assert _unique_rules_of(TABLES[name], kind) == declared


def test_the_migrations_build_the_tables_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'head.db'}"
    SqlStorage.from_url(url).close()  # a new file is migrated to the head
    engine = create_engine(url)
    with engine.connect() as conn:
        # SQLite does not enforce VARCHAR lengths, so revision 0004 widened a column on PostgreSQL
        # only: column types are compared on PostgreSQL below.
        context = MigrationContext.configure(conn, opts={"compare_type": False})
        assert compare_metadata(context, metadata) == []
    engine.dispose()


def test_the_migrations_build_the_tables_on_postgres(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, metadata) == []
    engine.dispose()


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_contract_suite_can_make_every_kind(name: str) -> None:
    """``sample`` feeds the per-kind contract cases (round trip, scopes, uniqueness, filters)."""
    item = sample(name)
    assert type(item) is KINDS[name].model


@pytest.mark.parametrize("name", sorted(KINDS))
def test_what_the_registry_names_exists_on_the_model(name: str) -> None:
    kind = KINDS[name]
    fields = kind.model.model_fields
    for rule in kind.unique:
        assert set(rule.fields) <= set(fields), rule
    assert kind.versioned == ("version" in fields)
    for searchable in kind.searchable:
        assert searchable.field in fields, searchable
        assert searchable.ops, searchable
    assert len({s.field for s in kind.searchable}) == len(kind.searchable), "a field is declared twice"
    assert kind.due_at is None or kind.due_at in fields
    # A ledger's rows never change, so they have no version to check.
    assert not (kind.append_only and kind.versioned)


def _search_requests() -> list[type[SearchRequest]]:
    for module in pkgutil.iter_modules(billingkit.services.__path__):
        importlib.import_module(f"billingkit.services.{module.name}")
    found: list[type[SearchRequest]] = []
    pending = list(SearchRequest.__subclasses__())
    while pending:
        request = pending.pop()
        found.append(request)
        pending += request.__subclasses__()
    return sorted(found, key=lambda r: r.__name__)


def test_every_search_request_names_its_kind_and_filters_only_searchable_fields() -> None:
    requests = _search_requests()
    assert len(requests) >= 14
    for request in requests:
        assert request.kind in KINDS, request
        kind = KINDS[request.kind]
        assert declared_filters(request), request
        for _field, marker in declared_filters(request):
            if isinstance(marker, Searches):
                assert marker.op in kind.search_ops(marker.field), (request, marker)


def test_a_request_filtering_a_field_its_kind_does_not_declare_is_refused() -> None:
    with pytest.raises(TypeError, match=r"customers.*name: name contains"):

        class _NameSearch(SearchRequest):
            kind: ClassVar[str] = "customers"
            name: Annotated[str | None, Searches("name", Op.CONTAINS)] = None

    with pytest.raises(TypeError, match="'clients' is not a stored kind"):

        class _Unknown(SearchRequest):
            kind: ClassVar[str] = "clients"


def test_the_old_extra_filters_hook_is_refused_with_the_new_form() -> None:
    with pytest.raises(TypeError, match=r"extra_filters\(\) is no longer called: mark each filtering field"):

        class _OldStyle(SearchRequest):
            kind: ClassVar[str] = "customers"

            def extra_filters(self) -> list[object]:
                return []
