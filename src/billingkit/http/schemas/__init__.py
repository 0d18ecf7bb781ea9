"""The shapes of the adapter's JSON answers, one pydantic model per wire shape.

Routes build them from the library's ``to_dict()`` output (``CustomerResponse.model_validate(
customer.to_dict())``), declare them as their return type, and FastAPI writes them to the OpenAPI
document as each operation's response schema. They are strict (``extra="forbid"``, every key the
wire always carries is required), so a ``to_dict()`` that gains or loses a key fails the HTTP tests
instead of silently drifting from the document. Modules follow the areas of the API:
:mod:`.base` (shared fields, paging, the delete answer), :mod:`.access`, :mod:`.customers`,
:mod:`.features` (meters, groups, features), :mod:`.catalog` (price units, prices, plans, add-ons,
entitlements, credit grants), :mod:`.adjustments` (coupons, tax rates), :mod:`.events`
(ingestion, queries, usage reports) and :mod:`.billing` (subscriptions, invoices).
"""
