"""Contract suites for the storage ports. Subclass and provide a ``storage`` fixture::

    import pytest
    from billingkit.testing.contracts import StorageContract

    class TestMyStore(StorageContract):
        @pytest.fixture
        def storage(self):
            return MyStorage()

Its part ``KindContract`` holds one case per stored kind and rule of the registry (uniqueness,
versions, searchable filters), so it grows with the registry.

Needs pytest (extra ``testing``).
"""

from billingkit.testing.contracts.kinds import KindContract
from billingkit.testing.contracts.storage import StorageContract, sample

__all__ = ["KindContract", "StorageContract", "sample"]
