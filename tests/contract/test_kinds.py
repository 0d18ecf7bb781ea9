"""The shipped per-kind contract, run on memory, SQLite and PostgreSQL (conftest's ``storage``)."""

from billingkit.testing.contracts import KindContract


class TestKindContract(KindContract):
    """Uses the parametrised ``storage`` fixture from tests/conftest.py."""
