"""The shipped due-work claim contract, run on memory, SQLite and PostgreSQL (conftest's ``storage``)."""

from billingkit.testing.contracts.due_work import DueWorkContract


class TestDueWorkContract(DueWorkContract):
    """Uses the parametrised ``storage`` fixture from tests/conftest.py."""
