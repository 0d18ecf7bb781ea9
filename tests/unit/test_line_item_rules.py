"""Line item rules (domain.line_item_rules) and one-time charges in invoice assembly: tables of
worked examples, each row with its dates beside it.

The subscription of most rows is monthly, active, started 1 May 2026, current period
[1 May, 1 Jun), ending 1 Sep.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D
from typing import Any

import pytest

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.invoice_lines import LineItemInput
from billingkit.domain.invoicing import InvoiceRequest, assemble_invoice
from billingkit.domain.line_item_rules import (
    check_effective,
    check_end_date_edit,
    check_line_period,
    check_line_window,
    deletion_end,
    invoiced_until,
    one_time_charge_date,
    one_time_invoiced,
)
from billingkit.domain.periods import BillingPeriod, InvoiceCadence
from billingkit.domain.pricing import PriceSpec
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionStatus
from billingkit.errors import InvalidOperation, ValidationError

ACTIVE, TRIALING, DRAFT = SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING, SubscriptionStatus.DRAFT
MONTHLY, ONETIME, QUARTERLY = BillingPeriod.MONTHLY, BillingPeriod.ONETIME, BillingPeriod.QUARTERLY
ADVANCE, ARREAR = InvoiceCadence.ADVANCE, InvoiceCadence.ARREAR


def d(month: int, day: int, hour: int = 0) -> datetime:
    """An instant of 2026 in UTC."""
    return datetime(2026, month, day, hour, tzinfo=UTC)


def line(**fields: Any) -> SubscriptionLineItem:
    """A recurring monthly 1 x fee from 1 May, unless told otherwise."""
    values: dict[str, Any] = {
        "id": "subs_line_1",
        "subscription_id": "subs_1",
        "customer_id": "cust_1",
        "entity_type": "subscription",
        "entity_id": "subs_1",
        "price_id": "price_1",
        "price_type": PriceType.FIXED,
        "quantity": D(1),
        "currency": "usd",
        "billing_period": MONTHLY,
        "invoice_cadence": ADVANCE,
        "start_date": d(5, 1),
    }
    values.update(fields)
    return SubscriptionLineItem.model_validate(values)


def one_time(date: datetime, **fields: Any) -> SubscriptionLineItem:
    return line(billing_period=ONETIME, start_date=date, **fields)


def sub(**fields: Any) -> Subscription:
    values: dict[str, Any] = {
        "id": "subs_1",
        "tenant_id": "tenant_a",
        "environment_id": "env_a",
        "created_at": d(5, 1),
        "updated_at": d(5, 1),
        "created_by": "test",
        "updated_by": "test",
        "plan_id": "plan_1",
        "customer_id": "cust_1",
        "subscription_status": ACTIVE,
        "billing_period": MONTHLY,
        "billing_anchor": d(5, 1),
        "currency": "usd",
        "start_date": d(5, 1),
        "end_date": d(9, 1),
        "current_period_start": d(5, 1),
        "current_period_end": d(6, 1),
    }
    values.update(fields)
    return Subscription.model_validate(values)


# -- what a line may bill, and where it may sit ------------------------------------------------------


@pytest.mark.parametrize(
    ("price_type", "currency", "period", "count", "accepted"),
    [
        (PriceType.FIXED, "usd", MONTHLY, 1, True),  # the subscription's own period
        (PriceType.USAGE, "USD", MONTHLY, 1, True),  # currencies compare without case
        (PriceType.FIXED, "usd", ONETIME, 1, True),  # a one-time charge
        (PriceType.USAGE, "usd", ONETIME, 1, False),  # usage needs a period
        (PriceType.FIXED, "usd", QUARTERLY, 1, False),  # longer periods are not billed on their own series
        (PriceType.FIXED, "usd", MONTHLY, 2, False),  # every 2 months on a monthly subscription
        (PriceType.FIXED, "eur", MONTHLY, 1, False),  # another currency
    ],
)
def test_line_period(
    price_type: PriceType, currency: str, period: BillingPeriod, count: int, accepted: bool
) -> None:
    def check() -> None:
        check_line_period(
            sub(),
            price_type=price_type,
            currency=currency,
            billing_period=period,
            billing_period_count=count,
            field="line_items[0].price_id",
        )

    if accepted:
        check()
    else:
        with pytest.raises(ValidationError) as caught:
            check()
        assert caught.value.field == "line_items[0].price_id"


@pytest.mark.parametrize(
    ("status", "start", "end", "field"),
    [
        (ACTIVE, d(5, 10), None, None),  # inside the current period
        (ACTIVE, d(7, 1), d(8, 1), None),  # a later period
        (ACTIVE, d(4, 30), None, "start_date"),  # before the subscription
        (ACTIVE, d(5, 10), d(5, 10), "end_date"),  # empty
        (ACTIVE, d(5, 10), d(9, 2), "end_date"),  # past the subscription's end (1 Sep)
        (ACTIVE, d(9, 1), None, "start_date"),  # at the subscription's end
        (DRAFT, d(5, 1), None, None),
    ],
)
def test_line_window(
    status: SubscriptionStatus, start: datetime, end: datetime | None, field: str | None
) -> None:
    if field is None:
        check_line_window(sub(subscription_status=status), start, end)
        return
    with pytest.raises(ValidationError) as caught:
        check_line_window(sub(subscription_status=status), start, end, prefix="line_items[1].")
    assert caught.value.field == "line_items[1]." + field


def test_a_started_subscription_takes_no_line_before_its_current_period() -> None:
    # The second period [1 Jun, 1 Jul) is current: May is invoiced.
    june = sub(current_period_start=d(6, 1), current_period_end=d(7, 1))
    with pytest.raises(ValidationError, match="earlier periods are invoiced") as caught:
        check_line_window(june, d(5, 20), None)
    assert caught.value.field == "start_date"
    draft = sub(subscription_status=DRAFT, current_period_start=d(6, 1), current_period_end=d(7, 1))
    check_line_window(draft, d(5, 20), None)  # nothing is invoiced for a draft


# -- one-time charges --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "trial_end", "date", "charged_on", "invoiced"),
    [
        (ACTIVE, None, d(5, 10), d(5, 10), True),  # dated in the invoiced current period
        (ACTIVE, None, d(6, 3), d(6, 3), False),  # next period: on the 1 Jun invoice
        (TRIALING, d(5, 15), d(5, 3), d(5, 15), False),  # in the trial: charged when it ends
        (TRIALING, d(5, 15), d(5, 20), d(5, 20), False),
        (DRAFT, None, d(5, 10), d(5, 10), False),  # nothing is invoiced for a draft
    ],
)
def test_one_time_charge_date(
    status: SubscriptionStatus,
    trial_end: datetime | None,
    date: datetime,
    charged_on: datetime,
    invoiced: bool,
) -> None:
    subscription = sub(subscription_status=status, trial_end=trial_end)
    item = one_time(date)
    assert one_time_charge_date(item, subscription) == charged_on
    assert one_time_invoiced(item, subscription) is invoiced


def test_invoiced_until_by_cadence() -> None:
    # ADVANCE charges of [1 May, 1 Jun) went out on 1 May; ARREAR ones go out on 1 Jun.
    assert invoiced_until(sub(), ADVANCE) == d(6, 1)
    assert invoiced_until(sub(), ARREAR) == d(5, 1)
    assert invoiced_until(sub(subscription_status=TRIALING), ADVANCE) is None


def _assemble(item: LineItemInput, reference_point: str = "period_end") -> list[tuple[Any, ...]]:
    # period [1 May, 1 Jun), next [1 Jun, 1 Jul)
    draft = assemble_invoice(
        InvoiceRequest(
            currency="usd",
            reference_point=reference_point,
            period_start=d(5, 1),
            period_end=d(6, 1),
            next_period_end=d(7, 1),
            lines=(item,),
        )
    )
    return [(ln.period_start, ln.period_end, ln.amount) for ln in draft.lines]


SETUP = PriceSpec(billing_model="FLAT_FEE", amount=D("50"), currency="usd")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("date", "end", "cadence", "point", "billed"),
    [
        # period_start: the ADVANCE window [1 May, 1 Jun) holds 10 May -> 50.00 in full, no proration
        (d(5, 10), None, "ADVANCE", "period_start", [(d(5, 10), d(6, 1), D("50.00"))]),
        # period_end: the ADVANCE window is [1 Jun, 1 Jul): 10 May is not in it
        (d(5, 10), None, "ADVANCE", "period_end", []),
        (d(6, 20), None, "ADVANCE", "period_end", [(d(6, 20), d(7, 1), D("50.00"))]),
        # an end at or before its date cancels the charge
        (d(6, 20), d(6, 20), "ADVANCE", "period_end", []),
        (d(6, 20), d(6, 21), "ADVANCE", "period_end", [(d(6, 20), d(7, 1), D("50.00"))]),
        # ARREAR: on the invoice closing the period that holds it
        (d(5, 10), None, "ARREAR", "period_end", [(d(5, 10), d(6, 1), D("50.00"))]),
        (d(5, 10), None, "ARREAR", "period_start", []),
    ],
)
def test_a_one_time_line_is_charged_once_in_full(
    date: datetime, end: datetime | None, cadence: str, point: str, billed: list[tuple[Any, ...]]
) -> None:
    item = LineItemInput("li_setup", SETUP, "FIXED", cadence, start_date=date, end_date=end, one_time=True)
    assert _assemble(item, point) == billed


def test_a_one_time_line_is_fixed_and_dated() -> None:
    with pytest.raises(ValidationError) as caught:
        LineItemInput("li", SETUP, "FIXED", "ADVANCE", one_time=True)
    assert caught.value.field == "one_time"


# -- end-date edits (spec rule 7) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "end", "refusal"),
    [
        # a terminated recurring line moves its end earlier or later within the window
        (line(end_date=d(7, 1)), d(6, 15), None),
        (line(end_date=d(7, 1)), d(8, 20), None),
        (line(end_date=d(7, 1)), d(9, 1), None),  # up to the subscription's end
        (line(end_date=d(7, 1)), d(9, 2), "after the subscription's end"),
        (line(end_date=d(7, 1)), d(5, 1), "after the line item's start"),  # it would cover nothing
        (line(end_date=d(7, 1)), None, "keeps its termination"),
        (line(), d(7, 1), None),  # an open line may be given an end
        (line(), None, None),
        # a one-time charge dated 10 May, invoiced (ADVANCE, current period): its charge stands
        (one_time(d(5, 10)), d(5, 31), None),  # forward: the charge stays
        (one_time(d(5, 10)), d(5, 10), "backdating"),  # at its date: would disown the charge
        (one_time(d(5, 10)), d(5, 5), "must not be before"),
        (one_time(d(5, 10), end_date=d(5, 10)), d(5, 20), "forward-dating"),  # cancelled, invoice out
        (one_time(d(5, 10), end_date=d(5, 10)), d(5, 10), None),
        # dated 20 Jun (not invoiced yet): any end in the window
        (one_time(d(6, 20)), d(6, 20), None),
        (one_time(d(6, 20), end_date=d(6, 20)), d(7, 1), None),
        # ARREAR one-time dated 10 May: invoiced on 1 Jun, so still free now
        (one_time(d(5, 10), invoice_cadence=ARREAR), d(5, 10), None),
    ],
)
def test_end_date_edits(item: SubscriptionLineItem, end: datetime | None, refusal: str | None) -> None:
    if refusal is None:
        check_end_date_edit(sub(), item, end)
        return
    with pytest.raises(ValidationError, match=refusal) as caught:
        check_end_date_edit(sub(), item, end)
    assert caught.value.field == "end_date"


def test_an_arrear_one_time_charge_is_final_once_its_period_closed() -> None:
    june = sub(current_period_start=d(6, 1), current_period_end=d(7, 1))
    with pytest.raises(ValidationError, match="backdating"):
        check_end_date_edit(june, one_time(d(5, 10), invoice_cadence=ARREAR), d(5, 10))


# -- effective instants and deletion ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "at", "end"),
    [
        (line(), d(5, 20), d(5, 20)),  # ends then
        (line(start_date=d(5, 25)), d(5, 20), d(5, 25)),  # not started: ends at its start, never billed
        (line(end_date=d(8, 1)), d(5, 20), d(5, 20)),  # a later scheduled end comes earlier
        (one_time(d(6, 20)), d(5, 20), d(6, 20)),  # cancels a charge not invoiced yet
    ],
)
def test_deletion_end(item: SubscriptionLineItem, at: datetime, end: datetime) -> None:
    assert deletion_end(sub(), item, at) == end


@pytest.mark.parametrize(
    ("item", "at", "error", "text"),
    [
        (line(), d(4, 30), ValidationError, "within the subscription's window"),
        (line(), d(9, 2), ValidationError, "within the subscription's window"),
        (line(end_date=d(5, 15)), d(5, 20), InvalidOperation, "ended at"),
        (line(end_date=d(5, 20)), d(5, 20), InvalidOperation, "ended at"),
        (one_time(d(5, 10)), d(5, 5), ValidationError, "backdating"),  # invoiced on 1 May
    ],
)
def test_deletion_refusals(
    item: SubscriptionLineItem, at: datetime, error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text):
        deletion_end(sub(), item, at)


def test_changes_never_reach_into_an_invoiced_period() -> None:
    june = sub(current_period_start=d(6, 1), current_period_end=d(7, 1))
    with pytest.raises(ValidationError, match="earlier periods are invoiced") as caught:
        check_effective(june, line(), d(5, 20), field="effective_from")
    assert caught.value.field == "effective_from"
