"""Storage adapters: ``storage.memory`` (the embedded default) and ``storage.sql`` (SQLAlchemy)."""
