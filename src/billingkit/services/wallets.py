"""Wallets: create one for a customer, read, list, search, update, terminate (reference notes §6.2).

Rules:

- A wallet belongs to a live customer (``customer_id``, or ``external_customer_id`` for the
  customer's external id), holds credits in one ``currency`` (lower-cased) and is ``PRE_PAID``
  (credits pay invoice lines; the default) or ``POST_PAID``. One credit is worth
  ``conversion_rate`` of the currency (default 1); a purchase of ``amount`` buys
  ``amount / topup_conversion_rate`` credits (default: the ``conversion_rate``).
- A customer has at most one wallet that is not closed per type, currency and conversion rate
  (``AlreadyExists``, 409); a second wallet at another rate is allowed, and a closed wallet does
  not count (see docs/decisions.md).
- ``initial_credits_to_load`` lands as a ``FREE_CREDIT_GRANT`` credit in the same unit of work,
  expiring at ``initial_credits_expiry_date_utc`` or at the end of the day
  ``initial_credits_to_load_expiry_date`` (``YYYYMMDD``) names, in the future either way.
- ``alert_settings`` drive the wallet's balance alerts (:mod:`billingkit.services.wallet_alerts`);
  ``auto_topup`` is validated and stored, nothing acts on it yet.
- Updates change ``name``, ``description``, ``metadata``, ``config``, ``auto_topup`` and
  ``alert_settings`` of a wallet that is not closed (``wallet.updated``).
- Terminating debits every credit left on every lot with reason ``WALLET_TERMINATION`` and closes
  the wallet (``wallet.terminated``); a closed wallet refuses every movement and a second
  terminate. A wallet with a purchase still awaiting payment cannot be terminated: its invoice is
  paid or voided first.

Top-ups: :mod:`billingkit.services.wallet_topups`; transactions:
:mod:`billingkit.services.wallet_transactions`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, ClassVar, Self

from pydantic import model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog.features import AlertSettings
from billingkit.domain.customers import Customer
from billingkit.domain.queries import Filter, Op, Page
from billingkit.domain.validation import (
    CurrencyCode,
    DecimalText,
    Description,
    Identifier,
    InputModel,
    Key,
    Metadata,
    Name,
    UtcDatetime,
)
from billingkit.domain.wallet_topups import check_auto_topup, end_of_day, initial_credits_key
from billingkit.domain.wallets import (
    AutoTopup,
    TransactionReason,
    TransactionStatus,
    TransactionType,
    Wallet,
    WalletConfig,
    WalletStatus,
    WalletType,
    consumption_order,
    draws_for_credits,
)
from billingkit.errors import AlreadyExists, InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications, wallet_ledger
from billingkit.services.context import Context
from billingkit.services.records import PartialUpdate, get_live, list_where_in, new_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "CustomerWalletsQuery",
    "WalletCreate",
    "WalletSearch",
    "WalletUpdate",
    "create_wallet",
    "customer_wallets",
    "get_wallet",
    "live_wallet",
    "search_wallets",
    "terminate_wallet",
    "update_wallet",
    "wallets_of_customer",
]

ENTITY = "wallet"
LABEL = "wallet"


def _positive(value: Decimal | None, field: str) -> None:
    if value is not None and value <= 0:
        raise ValidationError(f"{field} must be greater than 0", field=field)


class WalletCreate(InputModel):
    """The reference's ``CreateWalletRequest`` (plus ``config``, which the reference only takes on
    update). ``price_unit`` (a wallet in a custom pricing unit) is not supported."""

    not_supported: ClassVar[frozenset[str]] = frozenset({"price_unit"})

    customer_id: Identifier | None = None
    external_customer_id: Key | None = None
    currency: CurrencyCode
    name: Name | None = None
    description: Description | None = None
    wallet_type: WalletType = WalletType.PRE_PAID
    conversion_rate: DecimalText = Decimal(1)
    topup_conversion_rate: DecimalText | None = None
    config: WalletConfig = WalletConfig()
    auto_topup: AutoTopup | None = None
    alert_settings: AlertSettings | None = None
    metadata: Metadata = {}
    initial_credits_to_load: DecimalText | None = None
    initial_credits_expiry_date_utc: UtcDatetime | None = None
    initial_credits_to_load_expiry_date: int | None = None

    @model_validator(mode="after")
    def _fields_agree(self) -> Self:
        if self.customer_id is None and self.external_customer_id is None:
            raise ValidationError("customer_id or external_customer_id is required", field="customer_id")
        _positive(self.conversion_rate, "conversion_rate")
        _positive(self.topup_conversion_rate, "topup_conversion_rate")
        if self.initial_credits_to_load is not None and self.initial_credits_to_load < 0:
            raise ValidationError(
                "initial_credits_to_load must not be negative", field="initial_credits_to_load"
            )
        if (
            self.initial_credits_expiry_date_utc is not None
            and self.initial_credits_to_load_expiry_date is not None
        ):
            raise ValidationError(
                "give initial_credits_expiry_date_utc or initial_credits_to_load_expiry_date, not both",
                field="initial_credits_to_load_expiry_date",
            )
        if self.initial_credits_to_load_expiry_date is not None:
            end_of_day(self.initial_credits_to_load_expiry_date, field="initial_credits_to_load_expiry_date")
        check_auto_topup(self.auto_topup)
        return self


class WalletUpdate(PartialUpdate):
    """The reference's ``UpdateWalletRequest``: only these change; the currency, type and rates
    are fixed for the wallet's life."""

    required = frozenset({"metadata", "config"})

    name: Name | None = None
    description: Description | None = None
    metadata: Metadata | None = None
    config: WalletConfig | None = None
    auto_topup: AutoTopup | None = None
    alert_settings: AlertSettings | None = None

    @model_validator(mode="after")
    def _auto_topup(self) -> Self:
        check_auto_topup(self.auto_topup)
        return self


_WALLET_STATUSES = frozenset(s.value for s in WalletStatus)


class WalletSearch(SearchRequest):
    """``POST /wallets/search`` (the reference's ``types.WalletFilter``), plus the library's
    ``customer_id``, ``currency`` and ``wallet_type``.

    The reference's ``status`` here is the *wallet* status (``active``, ``frozen``, ``closed``):
    such a value filters ``wallet_status``; the record statuses (``published``...) keep their
    meaning. ``sort`` may be one field name (the reference's form) or the list of sort conditions.
    ``alert_enabled`` is not supported (alerts are evaluated by a later version)."""

    kind: ClassVar[str] = "wallets"
    not_supported: ClassVar[frozenset[str]] = frozenset({"alert_enabled"})

    wallet_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    wallet_status: Annotated[list[WalletStatus] | None, Searches("wallet_status", Op.IN)] = None
    customer_id: Annotated[list[str] | None, Searches("customer_id", Op.IN)] = None
    currency: Annotated[CurrencyCode | None, Searches("currency", Op.EQ)] = None
    wallet_type: Annotated[WalletType | None, Searches("wallet_type", Op.EQ)] = None

    @model_validator(mode="before")
    @classmethod
    def _reference_forms(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        status = data.get("status")
        if isinstance(status, str) and status in _WALLET_STATUSES:
            data["wallet_status"] = [*(data.get("wallet_status") or []), data.pop("status")]
        sort = data.get("sort")
        if isinstance(sort, str):
            data["sort"] = (
                [{"field": sort, "direction": data.get("order") or "desc"}] if sort.strip() else None
            )
        return data


class CustomerWalletsQuery(InputModel):
    """``GET /customers/wallets``: the customer named by ``id`` or by ``lookup_key`` (its
    external id)."""

    id: Identifier | None = None
    lookup_key: Key | None = None

    @model_validator(mode="after")
    def _one_of(self) -> Self:
        if self.id is None and self.lookup_key is None:
            raise ValidationError("id or lookup_key is required", field="id")
        return self


def live_wallet(uow: UnitOfWork, wallet_id: str) -> Wallet:
    """The live wallet ``wallet_id``; ``NotFound`` otherwise."""
    return get_live(uow.wallets, LABEL, wallet_id)


def _customer(uow: UnitOfWork, data: WalletCreate) -> Customer:
    if data.customer_id is not None:
        customer = get_live(uow.customers, "customer", data.customer_id)
        if data.external_customer_id is not None and customer.external_id != data.external_customer_id:
            raise ValidationError(
                f"customer {customer.id} has external id {customer.external_id!r}, "
                f"not {data.external_customer_id!r}",
                field="external_customer_id",
            )
        return customer
    assert data.external_customer_id is not None  # the request model requires one of the two
    found = uow.customers.find_one(external_id=data.external_customer_id)
    return get_live(uow.customers, "customer", found.id if found else data.external_customer_id)


def _check_unique(uow: UnitOfWork, customer_id: str, data: WalletCreate) -> None:
    same = list_where_in(
        uow.wallets,
        "customer_id",
        [customer_id],
        Filter("currency", Op.EQ, data.currency),
        Filter("wallet_type", Op.EQ, data.wallet_type),
    )
    for wallet in same:
        if wallet.wallet_status is not WalletStatus.CLOSED and wallet.conversion_rate == data.conversion_rate:
            raise AlreadyExists(
                f"customer {customer_id} already has a {data.wallet_type.value} wallet in {data.currency} "
                f"at conversion rate {data.conversion_rate} ({wallet.id})",
                details={"wallet_id": wallet.id},
            )


def create_wallet(uow: UnitOfWork, ctx: Context, *, data: WalletCreate) -> Wallet:
    """Create a wallet for a customer (see the module docstring); ``wallet.created``, and
    ``wallet.transaction.created`` for initial credits. Answers the wallet with its balance.

    Raises ``NotFound`` for an unknown customer; ``AlreadyExists`` for a second open wallet of
    the same type, currency and rate; ``ValidationError`` naming the field (an expiry not in the
    future included); nothing is written then."""
    ctx.require(ENTITY, Action.WRITE)
    customer = _customer(uow, data)
    _check_unique(uow, customer.id, data)
    expiry = data.initial_credits_expiry_date_utc
    if data.initial_credits_to_load_expiry_date is not None:
        expiry = end_of_day(
            data.initial_credits_to_load_expiry_date, field="initial_credits_to_load_expiry_date"
        )
    if expiry is not None and expiry <= ctx.now:
        field = (
            "initial_credits_expiry_date_utc"
            if data.initial_credits_expiry_date_utc is not None
            else "initial_credits_to_load_expiry_date"
        )
        raise ValidationError("the initial credits' expiry must be in the future", field=field)
    wallet = Wallet(
        **new_fields(ctx, "wallet"),
        customer_id=customer.id,
        currency=data.currency,
        name=data.name,
        description=data.description,
        wallet_type=data.wallet_type,
        conversion_rate=data.conversion_rate,
        topup_conversion_rate=data.topup_conversion_rate or data.conversion_rate,
        config=data.config,
        auto_topup=data.auto_topup,
        alert_settings=data.alert_settings,
        metadata=data.metadata,
    )
    uow.wallets.add(wallet)
    notifications.notify(uow, ctx, "wallet.created", wallet)
    credits = data.initial_credits_to_load
    if credits is not None and credits > 0:
        movement = wallet_ledger.credit(
            uow,
            ctx,
            wallet,
            credits=credits,
            reason=TransactionReason.FREE_CREDIT_GRANT,
            key=initial_credits_key(wallet.id),
            expiry_date=expiry,
            description="Initial credits",
        )
        wallet = movement.wallet
    return wallet


def get_wallet(uow: UnitOfWork, ctx: Context, *, wallet_id: str) -> Wallet:
    """The wallet with its ``balance`` and ``credit_balance``; ``NotFound`` otherwise."""
    ctx.require(ENTITY, Action.READ)
    return live_wallet(uow, wallet_id)


def _of_customer(uow: UnitOfWork, customer_id: str) -> list[Wallet]:
    found = list_where_in(uow.wallets, "customer_id", [customer_id])
    return sorted(found, key=lambda wallet: (wallet.created_at, wallet.id))


def wallets_of_customer(uow: UnitOfWork, ctx: Context, *, customer_id: str) -> list[Wallet]:
    """Every live wallet of customer ``customer_id`` (closed ones included), oldest first.
    Raises ``NotFound`` for an unknown customer."""
    ctx.require(ENTITY, Action.READ)
    customer = get_live(uow.customers, "customer", customer_id)
    return _of_customer(uow, customer.id)


def customer_wallets(uow: UnitOfWork, ctx: Context, *, query: CustomerWalletsQuery) -> list[Wallet]:
    """As :func:`wallets_of_customer`, the customer named by id or by external id (``lookup_key``).
    Raises ``NotFound`` for an unknown customer."""
    ctx.require(ENTITY, Action.READ)
    if query.id is not None:
        customer = get_live(uow.customers, "customer", query.id)
    else:
        found = uow.customers.find_one(external_id=query.lookup_key)
        customer = get_live(uow.customers, "customer", found.id if found else str(query.lookup_key))
    return _of_customer(uow, customer.id)


def search_wallets(uow: UnitOfWork, ctx: Context, *, search: WalletSearch) -> Page[Wallet]:
    """A page of wallets (newest first by default)."""
    ctx.require(ENTITY, Action.READ)
    return uow.wallets.list(search.to_query())


def _open(wallet: Wallet, doing: str) -> None:
    if wallet.wallet_status is WalletStatus.CLOSED:
        raise InvalidOperation(f"wallet {wallet.id} is closed: it cannot be {doing}")


def update_wallet(uow: UnitOfWork, ctx: Context, *, wallet_id: str, data: WalletUpdate) -> Wallet:
    """Change what :class:`WalletUpdate` allows; ``wallet.updated`` when something changed.
    Raises ``NotFound``; ``InvalidOperation`` for a closed wallet; ``VersionConflict`` when a
    movement saved the wallet meanwhile."""
    ctx.require(ENTITY, Action.WRITE)
    wallet = live_wallet(uow, wallet_id)
    _open(wallet, "updated")
    changes = {name: value for name, value in data.changes().items() if getattr(wallet, name) != value}
    if not changes:
        return wallet
    changed = wallet.model_copy(update={**changes, **ctx.touch()})
    saved = uow.wallets.update(Wallet.model_validate(changed.model_dump()), expected_version=wallet.version)
    notifications.notify(uow, ctx, "wallet.updated", saved)
    return saved


def terminate_wallet(uow: UnitOfWork, ctx: Context, *, wallet_id: str) -> Wallet:
    """Debit every credit left on every lot (``WALLET_TERMINATION``, one debit row per lot) and
    close the wallet; ``wallet.transaction.created`` per debit row, then ``wallet.terminated``.
    Answers the closed wallet (balance 0).

    Raises ``NotFound``; ``InvalidOperation`` for a wallet already closed or with a purchase
    still pending (pay or void its invoice first); ``VersionConflict`` when a movement saved the
    wallet meanwhile."""
    ctx.require(ENTITY, Action.WRITE)
    wallet = live_wallet(uow, wallet_id)
    if wallet.wallet_status is WalletStatus.CLOSED:
        raise InvalidOperation(f"wallet {wallet.id} is already terminated")
    pending = uow.wallet_transactions.find_one(
        wallet_id=wallet.id, type=TransactionType.CREDIT, transaction_status=TransactionStatus.PENDING
    )
    if pending is not None:
        raise InvalidOperation(
            f"wallet {wallet.id} has a purchase awaiting payment ({pending.id}, invoice "
            f"{pending.reference_id}): pay or void that invoice before terminating the wallet"
        )
    held = consumption_order(wallet_ledger.lots(uow, [wallet.id])[wallet.id])
    left = sum((lot.credits_left for lot in held), Decimal(0))
    if left > 0:
        draws = draws_for_credits(held, left, wallet.conversion_rate, wallet.currency)
        wallet = wallet_ledger.debit(
            uow,
            ctx,
            wallet,
            draws,
            reason=TransactionReason.WALLET_TERMINATION,
            cause="wallet_termination",
            parts=[wallet.id],
            description="Wallet terminated",
        ).wallet
    closed = wallet.model_copy(
        update={"wallet_status": WalletStatus.CLOSED, "next_expiry_at": None, **ctx.touch()}
    )
    saved = uow.wallets.update(closed, expected_version=wallet.version)
    notifications.notify(uow, ctx, "wallet.terminated", saved)
    return saved
