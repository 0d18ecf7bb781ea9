"""Use cases, one module per area. A service function takes a unit of work and a
:class:`~billingkit.services.context.Context` plus keyword arguments, does one thing, and returns
domain models. Services never commit: the caller's unit of work commits once."""
