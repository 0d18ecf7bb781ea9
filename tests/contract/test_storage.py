"""The shipped storage contract, run on memory, SQLite and PostgreSQL (conftest's ``storage``)."""

from billingkit.testing.contracts import StorageContract


class TestStorageContract(StorageContract):
    """Uses the parametrised ``storage`` fixture from tests/conftest.py."""
