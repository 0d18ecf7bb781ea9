"""The storage contract, part one: what a store keeps and who can see it."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from billingkit.domain.access import (
    Account,
    ApiKey,
)
from billingkit.domain.customers import Customer
from billingkit.domain.queries import Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Status
from billingkit.errors import AlreadyExists, NotFound, ValidationError
from billingkit.ports import Storage
from billingkit.storage.kinds import KINDS, Level
from billingkit.testing.contracts.samples import sample

__all__ = ["RecordContract"]


class RecordContract:
    """Readiness, round trips, scoping, uniqueness, lists and the unscoped lookups."""

    # -- readiness -------------------------------------------------------------------------
    def test_ping_answers_even_while_a_writer_holds_its_transaction(self, storage: Storage) -> None:
        storage.ping()
        answered = threading.Event()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(sample("customers"))  # an open write transaction, not committed

            def probe() -> None:
                storage.ping()
                answered.set()

            thread = threading.Thread(target=probe, daemon=True)
            thread.start()
            # A probe that needed the write lock would wait for this transaction to end.
            assert answered.wait(5), "ping waited for a writer"
        thread.join()

    # -- round trips -----------------------------------------------------------------------
    @pytest.mark.parametrize("kind", sorted(KINDS))
    def test_every_kind_round_trips_exactly(self, storage: Storage, kind: str) -> None:
        item = sample(kind)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            getattr(uow, kind).add(item)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            loaded = getattr(uow, kind).get(item.id)
        assert loaded == item
        assert loaded.created_at.tzinfo is not None and loaded.created_at.utcoffset() == timedelta(0)

    @pytest.mark.parametrize("kind", sorted(KINDS))
    def test_find_many_returns_exactly_the_stored_items_of_the_scope(
        self, storage: Storage, kind: str
    ) -> None:
        level = KINDS[kind].level
        ours = [sample(kind) for _ in range(3)]
        archived = sample(kind, status=Status.ARCHIVED)
        theirs = sample(kind, tenant_id="tenant_b") if level is not Level.GLOBAL else None
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            getattr(uow, kind).add_many([*ours, archived])
            uow.commit()
        if theirs is not None:
            with storage.unit_of_work("tenant_b", "env_a") as uow:
                getattr(uow, kind).add(theirs)
                uow.commit()
        wanted = [item.id for item in (*ours, archived)] + [ours[0].id, "missing_id"]
        if theirs is not None:
            wanted.append(theirs.id)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            repo = getattr(uow, kind)
            found = sorted(repo.find_many(wanted), key=lambda item: item.id)
            assert found == sorted([*ours, archived], key=lambda item: item.id)
            assert repo.find_many([]) == []
            many = [sample(kind) for _ in range(1100)]  # more than one statement's worth of ids
            repo.add_many(many)
            assert len(repo.find_many(item.id for item in many)) == 1100

    def test_missing_resource_is_not_found(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.find("cust_missing") is None
            with pytest.raises(NotFound):
                uow.customers.get("cust_missing")

    # -- scoping ---------------------------------------------------------------------------
    @pytest.mark.parametrize("kind", sorted(k for k, v in KINDS.items() if v.level is not Level.GLOBAL))
    def test_other_scopes_cannot_see_a_resource(self, storage: Storage, kind: str) -> None:
        item = sample(kind)
        field = "name" if "name" in type(item).model_fields else "created_by"
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            getattr(uow, kind).add(item)
            uow.commit()
        others = [("tenant_b", "env_a")]
        if KINDS[kind].level is Level.ENVIRONMENT:
            others.append(("tenant_a", "env_b"))
        for tenant_id, environment_id in others:
            with storage.unit_of_work(tenant_id, environment_id) as uow:
                repo = getattr(uow, kind)
                assert repo.find(item.id) is None
                with pytest.raises(NotFound):
                    repo.get(item.id)
                assert repo.find_one(**{field: getattr(item, field)}) is None
                assert repo.list(ListQuery(status=None)).total == 0
                with pytest.raises(NotFound):
                    repo.update(
                        item.model_copy(
                            update={
                                "tenant_id": tenant_id,
                                **(
                                    {"environment_id": environment_id}
                                    if KINDS[kind].level is Level.ENVIRONMENT
                                    else {}
                                ),
                            }
                        )
                    )

    def test_writing_into_another_scope_is_refused(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(ValidationError):
                uow.customers.add(sample("customers", tenant_id="tenant_b"))
            with pytest.raises(ValidationError):
                uow.customers.add(sample("customers", environment_id="env_b"))

    # -- uniqueness ------------------------------------------------------------------------
    def test_external_id_is_unique_among_live_customers_of_an_environment(self, storage: Storage) -> None:
        first = sample("customers", external_id="acme")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(first)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(AlreadyExists) as info:
                uow.customers.add(sample("customers", external_id="acme"))
            assert info.value.details["field"] == "external_id"
        # another environment may use it
        with storage.unit_of_work("tenant_a", "env_b") as uow:
            uow.customers.add(sample("customers", environment_id="env_b", external_id="acme"))
            uow.commit()
        # once the first is archived the id is free again
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.update(first.model_copy(update={"status": Status.ARCHIVED}))
            uow.customers.add(sample("customers", external_id="acme"))
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.list(ListQuery(status=None)).total == 2

    def test_one_invoice_per_subscription_period_and_reason(self, storage: Storage) -> None:
        first = sample("invoices", subscription_id="subs_1", invoice_number="INV-1")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.invoices.add(first)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(AlreadyExists) as info:
                uow.invoices.add(sample("invoices", subscription_id="subs_1", invoice_number="INV-2"))
            assert info.value.details["field"] == "subscription_id"
            # another billing reason, period or subscription is another invoice
            uow.invoices.add(
                sample(
                    "invoices",
                    subscription_id="subs_1",
                    invoice_number="INV-3",
                    billing_reason="SUBSCRIPTION_CREATE",
                )
            )
            uow.invoices.add(sample("invoices", subscription_id="subs_2", invoice_number="INV-4"))
            # invoices without a subscription never collide
            uow.invoices.add(sample("invoices", subscription_id=None, invoice_number="INV-5"))
            uow.invoices.add(sample("invoices", subscription_id=None, invoice_number="INV-6"))
            with pytest.raises(AlreadyExists):
                uow.invoices.add(sample("invoices", subscription_id="subs_9", invoice_number="INV-1"))
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.invoices.list(ListQuery(status=None)).total == 5

    # -- lists -----------------------------------------------------------------------------
    def _five(self, storage: Storage) -> list[Customer]:
        names = ["delta", "Alpha", "charlie", "bravo", "echo"]
        items = [
            sample(
                "customers",
                name=n,
                email=f"{n.lower()}@x.io" if i % 2 == 0 else None,
                metadata={"tier": "gold" if i < 2 else "free"},
            )
            for i, n in enumerate(names)
        ]
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            for item in items:
                uow.customers.add(item)
            uow.commit()
        return items

    def test_list_pages_with_total_and_default_newest_first(self, storage: Storage) -> None:
        items = self._five(storage)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            first = uow.customers.list(ListQuery(limit=2))
            second = uow.customers.list(ListQuery(limit=2, offset=2))
            last = uow.customers.list(ListQuery(limit=2, offset=4))
        assert first.total == second.total == last.total == 5
        ids = [c.id for c in [*first.items, *second.items, *last.items]]
        assert ids == [c.id for c in reversed(items)]
        assert first.has_more and not last.has_more

    def test_list_sorts_and_filters_identically(self, storage: Storage) -> None:
        items = self._five(storage)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            by_name = uow.customers.list(ListQuery(sort=(Sort("name", descending=False),)))
            assert [c.name for c in by_name.items] == ["Alpha", "bravo", "charlie", "delta", "echo"]
            gold = uow.customers.list(ListQuery(filters=(Filter("metadata.tier", Op.EQ, "gold"),)))
            assert {c.id for c in gold.items} == {items[0].id, items[1].id}
            contains = uow.customers.list(ListQuery(filters=(Filter("name", Op.CONTAINS, "ALP"),)))
            assert [c.name for c in contains.items] == ["Alpha"]
            not_contains = uow.customers.list(ListQuery(filters=(Filter("name", Op.NOT_CONTAINS, "a"),)))
            assert [c.name for c in not_contains.items] == ["echo"]
            chosen = uow.customers.list(ListQuery(filters=(Filter("id", Op.IN, [items[2].id, items[4].id]),)))
            assert chosen.total == 2
            after = uow.customers.list(
                ListQuery(filters=(Filter("created_at", Op.AFTER, items[2].created_at),))
            )
            assert {c.id for c in after.items} == {items[3].id, items[4].id}
            by_email = uow.customers.list(
                ListQuery(sort=(Sort("email", descending=False),), filters=(Filter("name", Op.NE, "Alpha"),))
            )
            # NULL sorts first ascending on every store
            assert [c.email for c in by_email.items] == [
                None,
                None,
                "charlie@x.io",
                "delta@x.io",
                "echo@x.io",
            ][0:1] + [c.email for c in by_email.items[1:]]
            assert by_email.items[0].email is None and by_email.items[-1].email == "echo@x.io"

    def test_list_by_status(self, storage: Storage) -> None:
        items = self._five(storage)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.update(items[0].model_copy(update={"status": Status.ARCHIVED}))
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.list(ListQuery()).total == 4
            assert uow.customers.list(ListQuery(status=Status.ARCHIVED)).total == 1
            assert uow.customers.list(ListQuery(status=None)).total == 5
            assert uow.customers.find_one(external_id=items[0].external_id) is None
            assert uow.customers.find_one(external_id=items[0].external_id, include_archived=True) is not None

    def test_unknown_fields_are_validation_errors(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(ValidationError):
                uow.customers.list(ListQuery(sort=(Sort("no_such_field"),)))
            with pytest.raises(ValidationError):
                uow.customers.list(ListQuery(filters=(Filter("no_such_field", Op.EQ, "x"),)))

    # -- unscoped lookups ------------------------------------------------------------------
    def test_api_key_lookup_by_hash_crosses_scopes(self, storage: Storage) -> None:
        key = sample("api_keys", tenant_id="tenant_z", environment_id="env_z", key_hash="f" * 64)
        assert isinstance(key, ApiKey)
        with storage.unit_of_work("tenant_z", "env_z") as uow:
            uow.api_keys.add(key)
            uow.commit()
        with storage.unit_of_work() as uow:
            assert uow.find_api_key_by_hash("f" * 64) == key
            assert uow.find_api_key_by_hash("e" * 64) is None

    def test_api_key_with_account_in_one_lookup(self, storage: Storage) -> None:
        account = sample("accounts", tenant_id="tenant_z")
        assert isinstance(account, Account)
        live = sample(
            "api_keys", tenant_id="tenant_z", environment_id="env_z", key_hash="a" * 64, account_id=account.id
        )
        orphan = sample(
            "api_keys",
            tenant_id="tenant_z",
            environment_id="env_z",
            key_hash="b" * 64,
            account_id="acct_gone",
        )
        # Same account id in another tenant: never the key's account.
        elsewhere = sample("api_keys", tenant_id="tenant_y", environment_id="env_y", key_hash="c" * 64)
        assert isinstance(elsewhere, ApiKey)
        with storage.unit_of_work("tenant_z", "env_z") as uow:
            uow.for_scope("tenant_z", None).accounts.add(account)
            uow.api_keys.add(live)
            uow.api_keys.add(orphan)
            uow.for_scope("tenant_y", "env_y").api_keys.add(
                elsewhere.model_copy(update={"account_id": account.id})
            )
            uow.commit()
        with storage.unit_of_work() as uow:
            assert uow.find_api_key_with_account("a" * 64) == (live, True)
            assert uow.find_api_key_with_account("b" * 64) == (orphan, False)
            found = uow.find_api_key_with_account("c" * 64)
            assert found is not None and found[1] is False
            assert uow.find_api_key_with_account("d" * 64) is None
        with storage.unit_of_work("tenant_z", None) as uow:
            uow.accounts.update(account.model_copy(update={"status": Status.ARCHIVED}))
            uow.commit()
        with storage.unit_of_work() as uow:
            assert uow.find_api_key_with_account("a" * 64) == (live, False)

    def test_accounts_by_email_across_tenants(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", None) as uow:
            uow.accounts.add(sample("accounts", email="same@x.io"))
            uow.for_scope("tenant_b", None).accounts.add(
                sample("accounts", tenant_id="tenant_b", email="same@x.io")
            )
            uow.commit()
        with storage.unit_of_work() as uow:
            found = uow.find_accounts_by_email("same@x.io")
        assert sorted(a.tenant_id for a in found) == ["tenant_a", "tenant_b"]
        assert all(isinstance(a, Account) for a in found)

    def test_for_scope_shares_the_transaction(self, storage: Storage) -> None:
        with storage.unit_of_work(None, None) as uow:
            uow.tenants.add(sample("tenants", id="tenant_q"))
            uow.for_scope("tenant_q", None).environments.add(sample("environments", tenant_id="tenant_q"))
            # not committed: both writes vanish together
        with storage.unit_of_work("tenant_q", None) as uow:
            assert uow.tenants.find("tenant_q") is None
            assert uow.environments.list(ListQuery()).total == 0
