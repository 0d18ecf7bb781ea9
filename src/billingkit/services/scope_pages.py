"""Walking the whole store from a due-work step that is not a kind (a step over every scope):
every (tenant, environment) pair, and every live item of a repository matching some filters, a
page at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Sort
from billingkit.domain.resources import Record
from billingkit.ports import Repository, Storage

__all__ = ["all_scopes", "pages"]

R = TypeVar("R", bound=Record)


def pages(repo: Repository[R], *filters: Filter) -> Iterator[R]:
    """Every live item of ``repo`` matching ``filters``, in id order, a page at a time."""
    offset = 0
    while True:
        page = repo.list(
            ListQuery(filters=filters, sort=(Sort("id", descending=False),), limit=MAX_LIMIT, offset=offset)
        )
        yield from page.items
        if not page.has_more:
            return
        offset += len(page.items)


def all_scopes(storage: Storage) -> list[tuple[str, str]]:
    """Every (tenant id, environment id) of the store."""
    scopes: list[tuple[str, str]] = []
    with storage.unit_of_work() as uow:
        for tenant in pages(uow.tenants):
            environments = uow.for_scope(tenant.id, None).environments
            scopes += [(tenant.id, env.id) for env in pages(environments)]
    return scopes
