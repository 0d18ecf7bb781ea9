"""Topping a wallet up: ``POST /wallets/{id}/top-up`` (reference notes §6.2).

- The credits: ``credits_to_add``, else ``amount`` (money) at the wallet's
  ``topup_conversion_rate`` (:func:`~billingkit.domain.wallet_topups.topup_credits`).
- ``transaction_reason`` is one of the six the notes list; ``expiry_date_utc`` must be in the
  future; ``priority`` at least 0 (lower is consumed first).
- Idempotency: the movement is keyed by ``idempotency_key`` (default derived from the wallet, the
  credits, the reason and the request's second: :func:`~billingkit.domain.wallet_topups.request_key`).
  The same key again answers the first top-up and moves nothing; the same key with other credits
  or another reason is ``IdempotencyConflict``; on another wallet, ``AlreadyExists``.
- Bonus: ``bonus_credits_to_add`` (purchases only) is a second credit row
  ``PURCHASED_CREDIT_BONUS`` whose ``parent_transaction_id`` is the purchase row, expiring at
  ``bonus_credits_expiry_date_utc``. billingkit has no tenant bonus slabs: a bonus is explicit.
- ``PURCHASED_CREDIT_INVOICED``: the credits (and their bonus) are a *pending* row and an invoice
  sells them (``CREDIT``, ``MANUAL``, one FIXED line "Wallet top-up" for credits *
  ``topup_conversion_rate``, finalized at once, untaxed, metadata ``wallet_transaction_id``); they
  land when that invoice is paid (:mod:`billingkit.services.invoice_settlement`) and fail when it
  is voided. Every other reason lands the credits at once.
- A frozen or closed wallet takes no top-up. ``checkout`` (a payment-gated top-up, with
  ``PURCHASED_CREDIT_INVOICED`` only) is carried out by
  :func:`billingkit.services.checkout_flows.top_up_wallet_checked`: the same invoiced purchase,
  paid through a checkout session.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.invoices import BillingReason, InvoiceType
from billingkit.domain.validation import (
    INT32_MAX,
    DecimalText,
    Description,
    InputModel,
    Key,
    Metadata,
    UtcDatetime,
)
from billingkit.domain.wallet_topups import (
    PURCHASE_REASONS,
    TOPUP_REASONS,
    bonus_key,
    purchase_amount,
    request_key,
    topup_credits,
    topup_key,
)
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    TransactionStatus,
    Wallet,
    WalletStatus,
    WalletTransaction,
)
from billingkit.errors import AlreadyExists, IdempotencyConflict, InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import direct_invoices, wallet_ledger
from billingkit.services.checkout_requests import CheckoutRequest
from billingkit.services.context import Context
from billingkit.services.invoice_settlement import PURCHASE_KEY
from billingkit.services.wallet_transactions import WalletTransactionDetail, details
from billingkit.services.wallets import ENTITY, live_wallet

__all__ = ["TopUpRequest", "TopUpResult", "top_up_wallet"]

#: The invoice line of an invoiced purchase of credits.
TOPUP_LINE = "Wallet top-up"


class TopUpRequest(InputModel):
    """The reference's ``TopUpWalletRequest``. ``checkout``: pay first (``PURCHASED_CREDIT_INVOICED``
    only; see the module doc). Not supported: ``coupons`` and ``effective_date`` (newer SDK fields:
    discounted and backdated top-ups). ``force_sync_invoice`` (syncing to an accounting vendor) is
    accepted and dropped."""

    not_supported: ClassVar[frozenset[str]] = frozenset({"coupons", "effective_date"})
    ignored: ClassVar[frozenset[str]] = frozenset({"force_sync_invoice"})

    transaction_reason: TransactionReason
    credits_to_add: DecimalText | None = None
    amount: DecimalText | None = None
    expiry_date_utc: UtcDatetime | None = None
    priority: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    description: Description | None = None
    metadata: Metadata = {}
    idempotency_key: Key | None = None
    bonus_credits_to_add: DecimalText | None = None
    bonus_credits_expiry_date_utc: UtcDatetime | None = None
    checkout: CheckoutRequest = None


@dataclass(frozen=True, slots=True)
class TopUpResult:
    """What a top-up left: the wallet as saved, the purchase (or grant) transaction, and the
    invoice selling it (``PURCHASED_CREDIT_INVOICED`` only)."""

    wallet: Wallet
    wallet_transaction: WalletTransactionDetail
    invoice_id: str | None = None
    #: The session a payment-gated top-up waits for (``checkout``).
    checkout_session: CheckoutSession | None = None

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``TopUpWalletResponse``."""
        data: dict[str, Any] = {
            "wallet": self.wallet.to_dict(),
            "wallet_transaction": self.wallet_transaction.to_dict(),
        }
        if self.invoice_id is not None:
            data["invoice_id"] = self.invoice_id
        if self.checkout_session is not None:
            data["checkout_session"] = self.checkout_session.to_dict()
        return data


def _check(request: TopUpRequest, ctx: Context) -> None:
    if request.transaction_reason not in TOPUP_REASONS:
        allowed = ", ".join(sorted(reason.value for reason in TOPUP_REASONS))
        raise ValidationError(
            f"a top-up's transaction_reason is one of {allowed}, not {request.transaction_reason.value}",
            field="transaction_reason",
            details={"allowed_values": sorted(r.value for r in TOPUP_REASONS)},
        )
    for name in ("expiry_date_utc", "bonus_credits_expiry_date_utc"):
        when = getattr(request, name)
        if when is not None and when <= ctx.now:
            raise ValidationError(f"{name} must be in the future", field=name)
    bonus = request.bonus_credits_to_add
    if bonus is not None:
        if bonus <= 0:
            raise ValidationError("bonus_credits_to_add must be greater than 0", field="bonus_credits_to_add")
        if request.transaction_reason not in PURCHASE_REASONS:
            raise ValidationError(
                "bonus credits come with a purchase (PURCHASED_CREDIT_DIRECT or PURCHASED_CREDIT_INVOICED)",
                field="bonus_credits_to_add",
            )
    elif request.bonus_credits_expiry_date_utc is not None:
        raise ValidationError(
            "bonus_credits_expiry_date_utc needs bonus_credits_to_add", field="bonus_credits_expiry_date_utc"
        )


def _repeated(
    uow: UnitOfWork, wallet: Wallet, found: WalletTransaction, credits: Decimal, request: TopUpRequest
) -> TopUpResult:
    """The answer to a top-up whose key is stored already: the first top-up, nothing moved."""
    if found.wallet_id != wallet.id:
        raise AlreadyExists(
            f"idempotency_key was used for a top-up of wallet {found.wallet_id}",
            details={"field": "idempotency_key"},
        )
    if found.credit_amount != credits or found.transaction_reason is not request.transaction_reason:
        raise IdempotencyConflict(
            f"idempotency_key was used for another top-up ({found.id}: {found.credit_amount} credits, "
            f"{found.transaction_reason.value})",
            details={"field": "idempotency_key", "wallet_transaction_id": found.id},
        )
    invoice_id = found.reference_id if found.reference_type is TransactionReferenceType.INVOICE else None
    (detail,) = details(uow, [found])
    return TopUpResult(live_wallet(uow, wallet.id), detail, invoice_id)


def _sell(
    uow: UnitOfWork, ctx: Context, wallet: Wallet, credits: Decimal, request: TopUpRequest, row_id: str
) -> str:
    """Issue the finalized, untaxed invoice selling ``credits`` (pending row ``row_id``); its id."""
    price = purchase_amount(
        credits,
        wallet.topup_conversion_rate,
        wallet.currency,
        request.amount if request.credits_to_add is None else None,
    )
    sale = direct_invoices.InvoiceCreate(
        customer_id=wallet.customer_id,
        currency=wallet.currency,
        subtotal=price,
        total=price,
        amount_due=price,
        invoice_type=InvoiceType.CREDIT,
        billing_reason=BillingReason.MANUAL,
        description=request.description or TOPUP_LINE,
        metadata={PURCHASE_KEY: row_id, "wallet_id": wallet.id},
        line_items=[
            direct_invoices.InvoiceLineCreate(
                amount=price,
                quantity=Decimal(1),
                display_name=TOPUP_LINE,
                price_type=PriceType.FIXED,
                metadata={"credits": format(credits.normalize(), "f")},
            )
        ],
    )
    return direct_invoices.create_invoice(uow, ctx, request=sale, taxed=False).id


def top_up_wallet(uow: UnitOfWork, ctx: Context, *, wallet_id: str, request: TopUpRequest) -> TopUpResult:
    """Add credits to wallet ``wallet_id`` (see the module docstring); ``wallet.transaction.created``
    per row written (and ``invoice.update.finalized`` for an invoiced purchase).

    Raises ``NotFound``; ``ValidationError`` naming the field (a reason a top-up cannot give, no
    credits, an expiry not in the future, a bonus on a grant, a key holding ``|``);
    ``InvalidOperation`` for a frozen or closed wallet; ``IdempotencyConflict`` for a key used
    for another top-up. Nothing is written on any of them."""
    ctx.require(ENTITY, Action.WRITE)
    if request.checkout is not None:  # the pay-first flow opens a session around the purchase
        raise ValidationError(
            "checkout is carried out by checkout_flows.top_up_wallet_checked", field="checkout"
        )
    wallet = live_wallet(uow, wallet_id)
    _check(request, ctx)
    credits = topup_credits(request.credits_to_add, request.amount, wallet.topup_conversion_rate)
    reason = request.transaction_reason
    key = topup_key(request.idempotency_key or request_key(wallet.id, credits, reason, ctx.now))
    found = uow.wallet_transactions.find_one(include_archived=True, idempotency_key=key)
    if found is not None:
        return _repeated(uow, wallet, found, credits, request)
    if wallet.wallet_status is not WalletStatus.ACTIVE:
        raise InvalidOperation(f"wallet {wallet.id} is {wallet.wallet_status.value}: it takes no top-up")
    invoiced = reason is TransactionReason.PURCHASED_CREDIT_INVOICED
    status = TransactionStatus.PENDING if invoiced else TransactionStatus.COMPLETED
    row_id = ctx.ids.new("wtx")
    invoice_id = _sell(uow, ctx, wallet, credits, request, row_id) if invoiced else None
    reference = (
        (TransactionReferenceType.INVOICE, invoice_id)
        if invoice_id is not None
        else (TransactionReferenceType.REQUEST, key)
    )
    movement = wallet_ledger.credit(
        uow,
        ctx,
        wallet,
        credits=credits,
        reason=reason,
        key=key,
        status=status,
        expiry_date=request.expiry_date_utc,
        priority=request.priority,
        reference_type=reference[0],
        reference_id=reference[1],
        description=request.description,
        metadata=request.metadata,
        transaction_id=row_id,
    )
    (purchase,) = movement.transactions
    wallet = movement.wallet
    if request.bonus_credits_to_add is not None:
        wallet = wallet_ledger.credit(
            uow,
            ctx,
            wallet,
            credits=request.bonus_credits_to_add,
            reason=TransactionReason.PURCHASED_CREDIT_BONUS,
            key=bonus_key(purchase.id),
            status=status,
            expiry_date=request.bonus_credits_expiry_date_utc,
            priority=request.priority,
            reference_type=reference[0],
            reference_id=reference[1],
            parent_transaction_id=purchase.id,
            description="Bonus credits",
        ).wallet
    (detail,) = details(uow, [purchase], wallets={wallet.id: wallet})
    return TopUpResult(wallet, detail, invoice_id)
