"""The pure billing core: value objects and calculators.

Imports only the standard library, pydantic, python-dateutil, babel and ``billingkit.errors``.
No I/O, no storage, no clock reads: every instant is passed in.
"""
