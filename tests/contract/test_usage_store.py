"""The shipped usage store contract, run on memory, SQLite and PostgreSQL (conftest's ``storage``)."""

from billingkit.testing.contracts.usage import UsageStoreContract


class TestUsageStoreContract(UsageStoreContract):
    """Uses the parametrised ``storage`` fixture from tests/conftest.py."""
