"""The shipped ledger contract, run on memory, SQLite and PostgreSQL (conftest's ``storage``)."""

from billingkit.testing.contracts.ledger import LedgerContract


class TestLedgerContract(LedgerContract):
    """Uses the parametrised ``storage`` fixture from tests/conftest.py."""
