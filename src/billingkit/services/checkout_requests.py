"""The ``checkout`` field of requests that the checkout feature will carry out (pay first, then
create the subscription).

Until checkout sessions exist, a request naming ``checkout`` is refused with a 400 on ``checkout``
that says so, before anything is written; a null, ``{}`` or absent ``checkout`` is accepted.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator

from billingkit.errors import ValidationError

__all__ = ["CheckoutRequest", "refuse_checkout"]


def refuse_checkout(value: Any) -> None:
    """``None`` for an empty ``checkout``; a ``ValidationError`` on ``checkout`` otherwise."""
    if value in (None, {}, [], ""):
        return None
    raise ValidationError(
        "checkout sessions (pay first, then create the subscription) arrive with billingkit's "
        "checkout feature; until then create the subscription without checkout and collect its "
        "opening invoice with a payment",
        field="checkout",
    )


#: The reference's ``CheckoutParams``: refused unless empty (see the module doc).
CheckoutRequest = Annotated[Any, AfterValidator(refuse_checkout)]
