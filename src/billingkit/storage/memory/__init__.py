"""The in-memory store: the embedded default. Thread-safe, with real rollback."""

from billingkit.storage.memory.storage import MemoryStorage, MemoryUnitOfWork

__all__ = ["MemoryStorage", "MemoryUnitOfWork"]
