"""The storage contract: what every ``Storage`` must do, whatever it stores data in.

:class:`StorageContract` is the whole suite, composed from its parts: :class:`RecordContract`
(what a store keeps and who can see it), :class:`WriteContract` (counters, claims, versions,
batches, transactions), :class:`EventStoreContract` (usage events and event queries) and
:class:`KindContract` (one case per registered kind and rule: uniqueness, versions, searchable
filters) and :class:`ReadOnlyContract` (read-only units of work read and refuse every write).
"""

from __future__ import annotations

from billingkit.testing.contracts.events import EventStoreContract
from billingkit.testing.contracts.kinds import KindContract
from billingkit.testing.contracts.read_only import ReadOnlyContract
from billingkit.testing.contracts.records import RecordContract
from billingkit.testing.contracts.samples import sample
from billingkit.testing.contracts.writes import WriteContract

__all__ = ["StorageContract", "sample"]


class StorageContract(RecordContract, WriteContract, EventStoreContract, KindContract, ReadOnlyContract):
    """Subclass and provide a ``storage`` fixture returning a fresh, empty store (a class
    method fixture or one from your ``conftest.py``)."""
