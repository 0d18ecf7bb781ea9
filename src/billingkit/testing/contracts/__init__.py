"""Contract suites for the storage ports. Subclass and provide a ``storage`` fixture::

    import pytest
    from billingkit.testing.contracts import StorageContract

    class TestMyStore(StorageContract):
        @pytest.fixture
        def storage(self):
            return MyStorage()

Needs pytest (extra ``testing``).
"""

from billingkit.testing.contracts.storage import StorageContract, sample

__all__ = ["StorageContract", "sample"]
