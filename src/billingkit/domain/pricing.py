"""Price math: what a quantity costs under one price.

The calculators work on :class:`PriceSpec`, a light, validated value object (the catalogue's
``Price`` resource is mapped onto it). Validation happens once, when a :class:`PriceSpec` is built;
pricing a quantity is then a plain function call (:func:`price_quantity`) that checks only the
quantity.

Rules (amounts in the price's currency, or in its custom pricing unit when ``conversion_rate`` is
set):

- zero quantity costs zero, tier flat amounts included; a negative quantity is a
  ``ValidationError``;
- ``FLAT_FEE``: ``amount * quantity`` (``transform_quantity`` is ignored),
  e.g. 3 seats at 10.00 = 30.00;
- ``PACKAGE``: ``ceil(quantity / divide_by)`` packages (``floor`` when ``round="down"``) times
  ``amount``,
  e.g. 2,500 emails in packages of 1,000 at 5.00 = ceil(2.5) = 3 * 5.00 = 15.00;
- ``TIERED`` + ``VOLUME``: the whole quantity at the unit amount of the tier it lands in, plus that
  tier's flat amount, e.g. tiers (≤100 at 0.10, ≤200 at 0.08, rest 0.05) and 150 units
  = 150 * 0.08 = 12.00;
- ``TIERED`` + ``SLAB``: each tier's share at its own unit amount, plus the flat amount of every
  tier touched, e.g. the same tiers and 150 units = 100 * 0.10 + 50 * 0.08 = 14.00;
- ``up_to`` is inclusive (``up_to=100`` holds quantity 100), the last tier is open (``up_to=None``);
- a custom pricing unit is priced in the unit, then multiplied by ``conversion_rate`` into the
  currency;
- the money amount is rounded once, half away from zero, at the currency's precision.

VOLUME pricing is not monotonic: when a cheaper tier starts, more usage can cost less. With tiers
(≤100 at 1.00, rest 0.50), 100 units cost 100.00 but 101 units cost 50.50. This is how volume
pricing is defined, not a bug; SLAB pricing never decreases with usage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Context, Decimal, DivisionByZero, InvalidOperation, Overflow
from enum import StrEnum
from typing import Any, NamedTuple

from billingkit.domain.money import ZERO, normalize_currency, parse_decimal, round_money
from billingkit.domain.validation import parse_enum
from billingkit.errors import ValidationError

__all__ = [
    "MAX_LINE_AMOUNT",
    "BillingModel",
    "PriceResult",
    "PriceSpec",
    "QuantityRounding",
    "Tier",
    "TierMode",
    "TierStep",
    "TransformQuantity",
    "default_fixed_quantity",
    "price_buckets",
    "price_quantity",
]

#: The largest line amount (in currency or pricing units, before rounding) billingkit computes.
#: Anything above is almost surely a data error (a quantity in the wrong unit) and is rejected.
MAX_LINE_AMOUNT = Decimal("1e15")

_ONE = Decimal(1)
# A private, never-mutated arithmetic context: results do not depend on the caller's thread context,
# and 80 digits keep every product of validated inputs (at most 38 digits each, see parse_decimal)
# exact enough that rounding to currency precision is never affected.
_CTX = Context(prec=80, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation, DivisionByZero, Overflow])
_MUL = _CTX.multiply
_ADD = _CTX.add
_SUB = _CTX.subtract
# Pricing kinds, fixed when a PriceSpec is built (plain ints: cheaper to test than enum members).
_FLAT, _PACKAGE, _VOLUME, _SLAB = 0, 1, 2, 3
# Results are built with tuple.__new__ in the hot path: same object as the NamedTuple constructor,
# without its Python-level __new__ frame.
_new = tuple.__new__
#: One precomputed tier of a TIERED PriceSpec: (upper bound or None, lower bound, unit amount,
#: flat amount, running total of the tiers below, steps of the tiers below); see _plan_tiers.
_TierRow = tuple[Decimal | None, Decimal, Decimal, Decimal, Decimal, "tuple[TierStep, ...]"]


class BillingModel(StrEnum):
    """How a price turns a quantity into an amount."""

    FLAT_FEE = "FLAT_FEE"
    PACKAGE = "PACKAGE"
    TIERED = "TIERED"


class TierMode(StrEnum):
    """How tiers apply: the whole quantity in one tier (VOLUME) or split across tiers (SLAB)."""

    VOLUME = "VOLUME"
    SLAB = "SLAB"


class QuantityRounding(StrEnum):
    """Rounding of ``quantity / divide_by`` to whole packages (wire values are lowercase)."""

    UP = "up"
    DOWN = "down"


def _non_negative(value: Any, field_name: str) -> Decimal:
    result = parse_decimal(value, field=field_name, allow_negative=False)
    # -0 is not negative but prints oddly; normalise it away.
    return result if result else ZERO


def _positive_int(value: Any, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{field_name} must be an integer", field=field_name)
    if value < 1:
        raise ValidationError(f"{field_name} must be at least 1", field=field_name)
    if value > 10**18:
        raise ValidationError(f"{field_name} is too large", field=field_name)
    return value


@dataclass(frozen=True, slots=True)
class Tier:
    """One pricing tier: quantities up to ``up_to`` (inclusive; ``None`` = no upper bound).

    ``unit_amount`` and ``flat_amount`` are non-negative decimals in the price's unit. Strings and
    ints are accepted and converted exactly; floats are rejected. Raises ``ValidationError``.
    """

    up_to: int | None
    unit_amount: Decimal
    flat_amount: Decimal = ZERO

    def __post_init__(self) -> None:
        if self.up_to is not None:
            _positive_int(self.up_to, "up_to")
        object.__setattr__(self, "unit_amount", _non_negative(self.unit_amount, "unit_amount"))
        object.__setattr__(self, "flat_amount", _non_negative(self.flat_amount, "flat_amount"))


@dataclass(frozen=True, slots=True)
class TransformQuantity:
    """Package size for PACKAGE prices: ``divide_by`` ≥ 1, rounding ``up`` (default) or ``down``."""

    divide_by: int
    round: QuantityRounding = QuantityRounding.UP

    def __post_init__(self) -> None:
        _positive_int(self.divide_by, "transform_quantity.divide_by")
        object.__setattr__(
            self, "round", parse_enum(QuantityRounding, self.round, field="transform_quantity.round")
        )


def _prefix_tier_error(exc: ValidationError, index: int) -> ValidationError:
    name = f"tiers[{index}].{exc.field}" if exc.field else f"tiers[{index}]"
    return ValidationError(exc.message.replace(exc.field or "", name, 1), field=name)


@dataclass(frozen=True, slots=True)
class PriceSpec:
    """A validated price, ready for :func:`price_quantity`.

    Fields (wire names): ``billing_model``; ``amount`` (per unit for FLAT_FEE, per package for
    PACKAGE, ignored for TIERED); ``currency`` (3 letters, stored lowercase); ``tier_mode`` and
    ``tiers`` (TIERED only, required there); ``transform_quantity`` (required for PACKAGE, ignored
    otherwise); ``conversion_rate`` (> 0: one custom pricing unit = rate * currency; ``None`` =
    amounts are in the currency); ``min_quantity`` (default quantity of a fixed line, see
    :func:`default_fixed_quantity`).

    Amounts may be given as ``Decimal``, ``int`` or decimal strings. Every problem raises
    ``ValidationError`` naming the field (``tiers[1].up_to``, ``transform_quantity.divide_by``).
    Example: ``PriceSpec(billing_model="FLAT_FEE", amount=Decimal("10"), currency="USD")``.
    """

    billing_model: BillingModel
    amount: Decimal
    currency: str
    tier_mode: TierMode | None = None
    tiers: tuple[Tier, ...] = ()
    transform_quantity: TransformQuantity | None = None
    conversion_rate: Decimal | None = None
    min_quantity: Decimal | None = None
    # Derived once here so pricing does no per-call conversion or enum dispatch: the upper bounds of
    # the tiers as Decimals, the pricing kind (_FLAT, _PACKAGE, _VOLUME, _SLAB), the package divisor
    # and rounding, and the tier rows (see _plan_tiers).
    _bounds: tuple[Decimal | None, ...] = field(default=(), init=False, repr=False, compare=False)
    _kind: int = field(default=0, init=False, repr=False, compare=False)
    _divisor: Decimal = field(default=_ONE, init=False, repr=False, compare=False)
    _round_up: bool = field(default=True, init=False, repr=False, compare=False)
    _rows: tuple[_TierRow, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        model: BillingModel = parse_enum(BillingModel, self.billing_model, field="billing_model")
        setattr_(self, "billing_model", model)
        setattr_(self, "currency", normalize_currency(self.currency))
        setattr_(self, "amount", _non_negative(self.amount, "amount"))
        if self.conversion_rate is not None:
            rate = parse_decimal(self.conversion_rate, field="conversion_rate")
            if rate <= 0:
                raise ValidationError("conversion_rate must be greater than 0", field="conversion_rate")
            setattr_(self, "conversion_rate", rate)
        if self.min_quantity is not None:
            setattr_(self, "min_quantity", _non_negative(self.min_quantity, "min_quantity"))
        if self.tier_mode is not None:
            setattr_(self, "tier_mode", parse_enum(TierMode, self.tier_mode, field="tier_mode"))
        transform = self.transform_quantity
        if transform is not None and not isinstance(transform, TransformQuantity):
            raise ValidationError(
                "transform_quantity must be a TransformQuantity", field="transform_quantity"
            )
        if model is BillingModel.PACKAGE and transform is None:
            raise ValidationError(
                "transform_quantity is required for PACKAGE prices", field="transform_quantity"
            )
        if model is BillingModel.TIERED:
            if self.tier_mode is None:
                raise ValidationError("tier_mode is required for TIERED prices", field="tier_mode")
            self._check_tiers()
            self._plan_tiers()
        elif self.tiers:
            raise ValidationError("tiers are only allowed on TIERED prices", field="tiers")
        elif model is BillingModel.PACKAGE:
            assert transform is not None  # checked above
            setattr_(self, "_kind", _PACKAGE)
            setattr_(self, "_divisor", Decimal(transform.divide_by))
            setattr_(self, "_round_up", transform.round is QuantityRounding.UP)
        else:
            setattr_(self, "_kind", _FLAT)

    def _check_tiers(self) -> None:
        tiers = self.tiers
        if isinstance(tiers, list):
            tiers = tuple(tiers)
            object.__setattr__(self, "tiers", tiers)
        if not isinstance(tiers, tuple) or not tiers:
            raise ValidationError("TIERED prices need at least one tier", field="tiers")
        previous = 0
        bounds: list[Decimal | None] = []
        last = len(tiers) - 1
        for index, tier in enumerate(tiers):
            if not isinstance(tier, Tier):
                raise ValidationError(f"tiers[{index}] must be a Tier", field=f"tiers[{index}]")
            if tier.up_to is None:
                if index != last:
                    raise ValidationError(
                        "only the last tier may have no up_to", field=f"tiers[{index}].up_to"
                    )
                bounds.append(None)
                continue
            if index and tier.up_to <= previous:
                raise ValidationError(
                    f"tiers[{index}].up_to must be greater than tiers[{index - 1}].up_to "
                    f"({tier.up_to} <= {previous})",
                    field=f"tiers[{index}].up_to",
                )
            if index == last:
                raise ValidationError(
                    "the last tier must have no up_to (it is open-ended)",
                    field=f"tiers[{index}].up_to",
                )
            previous = tier.up_to
            bounds.append(Decimal(tier.up_to))
        object.__setattr__(self, "_bounds", tuple(bounds))

    def _plan_tiers(self) -> None:
        """Precompute what pricing a TIERED quantity needs, with the exact operations it would do.

        One row per tier: ``(bound, lower, unit_amount, flat_amount, before_total, before_steps)``.
        For SLAB, ``lower`` is the previous bound (0 for the first tier) and ``before_total`` /
        ``before_steps`` are the running total and the steps of the tiers below, which are always
        filled to capacity when a quantity lands in this tier. They are computed by the same
        sequence of context operations as a per-call loop would, so results are bit-identical.
        """
        mul = _CTX.multiply
        add = _CTX.add
        slab = self.tier_mode is TierMode.SLAB
        rows: list[_TierRow] = []
        lower = ZERO
        total = ZERO
        steps: tuple[TierStep, ...] = ()
        for index, (bound, tier) in enumerate(zip(self._bounds, self.tiers, strict=True)):
            unit, flat = tier.unit_amount, tier.flat_amount
            rows.append((bound, lower, unit, flat, total, steps))
            if slab and bound is not None:
                in_tier = _CTX.subtract(bound, lower)
                subtotal = add(mul(unit, in_tier), flat)
                steps = (*steps, TierStep(index, in_tier, unit, flat, subtotal))
                total = add(total, subtotal)
                lower = bound
        object.__setattr__(self, "_rows", tuple(rows))
        object.__setattr__(self, "_kind", _SLAB if slab else _VOLUME)

    @classmethod
    def from_wire(cls, data: Any) -> PriceSpec:
        """Build a spec from a JSON-like mapping with the wire field names (strings for decimals).

        ``tiers`` is a list of ``{up_to, unit_amount, flat_amount}``; ``transform_quantity`` is
        ``{divide_by, round}``. Unknown keys are ignored. Raises ``ValidationError``.
        """
        if not isinstance(data, dict):
            raise ValidationError("price must be an object", field="price")
        raw_tiers = data.get("tiers") or ()
        if not isinstance(raw_tiers, list | tuple):
            raise ValidationError("tiers must be a list", field="tiers")
        tiers: list[Tier] = []
        for index, raw in enumerate(raw_tiers):
            if not isinstance(raw, dict):
                raise ValidationError(f"tiers[{index}] must be an object", field=f"tiers[{index}]")
            try:
                tiers.append(
                    Tier(
                        up_to=raw.get("up_to"),
                        unit_amount=raw.get("unit_amount", ZERO),
                        flat_amount=raw.get("flat_amount") or ZERO,
                    )
                )
            except ValidationError as exc:
                raise _prefix_tier_error(exc, index) from None
        raw_transform = data.get("transform_quantity")
        transform: TransformQuantity | None = None
        if raw_transform is not None:
            if not isinstance(raw_transform, dict):
                raise ValidationError("transform_quantity must be an object", field="transform_quantity")
            transform = TransformQuantity(
                divide_by=raw_transform.get("divide_by"),  # type: ignore[arg-type]
                round=raw_transform.get("round") or QuantityRounding.UP,
            )
        return cls(
            billing_model=data.get("billing_model"),  # type: ignore[arg-type]
            amount=data.get("amount") or ZERO,
            currency=data.get("currency"),  # type: ignore[arg-type]
            tier_mode=data.get("tier_mode"),
            tiers=tuple(tiers),
            transform_quantity=transform,
            conversion_rate=data.get("conversion_rate"),
            min_quantity=data.get("min_quantity"),
        )


class TierStep(NamedTuple):
    """One tier's part of a TIERED price: ``subtotal = quantity * unit_amount + flat_amount``.

    ``tier_index`` is 0-based; amounts are unrounded, in the price's unit.
    """

    tier_index: int
    quantity: Decimal
    unit_amount: Decimal
    flat_amount: Decimal
    subtotal: Decimal

    def to_dict(self) -> dict[str, Any]:
        """The step as JSON-ready data (decimals as strings)."""
        return {
            "tier_index": self.tier_index,
            "quantity": str(self.quantity),
            "unit_amount": str(self.unit_amount),
            "flat_amount": str(self.flat_amount),
            "subtotal": str(self.subtotal),
        }


class PriceResult(NamedTuple):
    """What a quantity costs under a price, with the working.

    - ``quantity``: the quantity priced (for buckets, the sum of bucket quantities);
    - ``price_unit_amount``: unrounded amount in the pricing unit (equals ``unrounded_amount`` when
      the price has no ``conversion_rate``);
    - ``unrounded_amount``: exact amount in ``currency``;
    - ``amount``: ``unrounded_amount`` rounded half away from zero at the currency precision;
    - trace: ``tier_steps`` (TIERED), ``package_count`` (PACKAGE), ``conversion_rate`` (custom
      unit), ``buckets`` (one unrounded-then-rounded result per bucket for :func:`price_buckets`).
    """

    billing_model: BillingModel
    currency: str
    quantity: Decimal
    price_unit_amount: Decimal
    unrounded_amount: Decimal
    amount: Decimal
    tier_steps: tuple[TierStep, ...] = ()
    package_count: Decimal | None = None
    conversion_rate: Decimal | None = None
    buckets: tuple[PriceResult, ...] = ()

    def trace(self) -> dict[str, Any]:
        """A machine-readable account of the computation (decimals as strings)."""
        data: dict[str, Any] = {
            "billing_model": self.billing_model.value,
            "currency": self.currency,
            "quantity": str(self.quantity),
            "price_unit_amount": str(self.price_unit_amount),
            "unrounded_amount": str(self.unrounded_amount),
            "amount": str(self.amount),
        }
        if self.tier_steps:
            data["tier_steps"] = [step.to_dict() for step in self.tier_steps]
        if self.package_count is not None:
            data["package_count"] = str(self.package_count)
        if self.conversion_rate is not None:
            data["conversion_rate"] = str(self.conversion_rate)
        if self.buckets:
            data["buckets"] = [bucket.trace() for bucket in self.buckets]
        return data


def _check_quantity(quantity: Any, field_name: str = "quantity") -> Decimal:
    if type(quantity) is Decimal and quantity.is_finite():
        if quantity < 0:
            raise ValidationError(f"{field_name} must not be negative", field=field_name)
        if quantity.adjusted() > 30:
            raise ValidationError(f"{field_name} is too large", field=field_name)
        return quantity
    result = parse_decimal(quantity, field=field_name, allow_negative=False)
    if result.adjusted() > 30:
        raise ValidationError(f"{field_name} is too large", field=field_name)
    return result


def _too_large() -> ValidationError:
    return ValidationError(f"the amount for this quantity exceeds {MAX_LINE_AMOUNT:E}", field="quantity")


def price_quantity(spec: PriceSpec, quantity: Decimal) -> PriceResult:
    """Price ``quantity`` (a non-negative ``Decimal``; ints and decimal strings are accepted).

    Returns a :class:`PriceResult` whose ``amount`` is rounded at the currency precision.
    Example: FLAT_FEE 10.00 usd * 3 → ``amount == Decimal("30.00")``.
    Raises ``ValidationError`` (field ``quantity``) for negative, non-finite, float or absurdly
    large quantities, or when the amount would exceed :data:`MAX_LINE_AMOUNT`.
    """
    # Fast path for the common case (a finite, non-negative, sane Decimal); else the full check.
    if not (
        type(quantity) is Decimal and quantity.is_finite() and quantity >= 0 and quantity.adjusted() <= 30
    ):
        quantity = _check_quantity(quantity)
    if not quantity:
        return _priced(spec, quantity=quantity, unit_total=ZERO, amount=ZERO, steps=(), packages=None)
    # The amount in the pricing unit (unrounded), the tier steps and the package count.
    kind = spec._kind
    steps: tuple[TierStep, ...] = ()
    packages: Decimal | None = None
    if kind == _FLAT:
        unit_total = _MUL(spec.amount, quantity)
    elif kind == _SLAB:
        # Every tier below the one the quantity lands in is full: its share is precomputed.
        for bound, lower, unit, flat, before, before_steps in spec._rows:  # noqa: B007
            if bound is None or quantity <= bound:
                break
        in_tier = _SUB(quantity, lower)
        subtotal = _ADD(_MUL(unit, in_tier), flat)
        unit_total = _ADD(before, subtotal)
        steps = (
            *before_steps,
            _new(TierStep, (len(before_steps), in_tier, unit, flat, subtotal)),
        )
    elif kind == _VOLUME:
        # The first tier whose inclusive bound holds the quantity; the open tier takes the rest.
        index = -1
        for index, (bound, _lower, unit, flat, _before, _steps) in enumerate(spec._rows):  # noqa: B007
            if bound is None or quantity <= bound:
                break
        unit_total = _ADD(_MUL(unit, quantity), flat)
        steps = (_new(TierStep, (index, quantity, unit, flat, unit_total)),)
    else:  # PACKAGE
        divisor = spec._divisor
        packages = _CTX.divide_int(quantity, divisor)
        if spec._round_up and _CTX.remainder(quantity, divisor):
            packages = _ADD(packages, _ONE)
        unit_total = _MUL(spec.amount, packages)
    rate = spec.conversion_rate
    amount = unit_total if rate is None else _MUL(unit_total, rate)
    if amount > MAX_LINE_AMOUNT or unit_total > MAX_LINE_AMOUNT:
        raise _too_large()
    return _priced(
        spec, quantity=quantity, unit_total=unit_total, amount=amount, steps=steps, packages=packages
    )


def _priced(
    spec: PriceSpec,
    *,
    quantity: Decimal,
    unit_total: Decimal,
    amount: Decimal,
    steps: tuple[TierStep, ...],
    packages: Decimal | None,
) -> PriceResult:
    """The :class:`PriceResult` of ``quantity`` under ``spec``: ``unit_total`` in the pricing unit
    and ``amount`` in the currency (both unrounded; the rounded amount is worked out here), with
    the tier ``steps`` and package count. The hot path's one way to build a result: the fields
    below are in :class:`PriceResult`'s order, checked by the unit tests."""
    currency = spec.currency
    return _new(
        PriceResult,
        (
            spec.billing_model,  # billing_model
            currency,  # currency
            quantity,  # quantity
            unit_total,  # price_unit_amount
            amount,  # unrounded_amount
            round_money(amount, currency),  # amount
            steps,  # tier_steps
            packages,  # package_count
            spec.conversion_rate,  # conversion_rate
            (),  # buckets
        ),
    )


def price_buckets(spec: PriceSpec, quantities: Iterable[Decimal]) -> PriceResult:
    """Price each bucket's quantity on its own, sum the unrounded amounts, round once.

    Used for bucketed meters (e.g. the MAX per hour): tiers and packages restart in every bucket.
    Example: PACKAGE of 10 at 1.00 and buckets [3, 12] → 1 + 2 packages = 3.00 (not
    ceil(15/10) = 2.00). The result's ``quantity`` is the sum of the bucket quantities and
    ``buckets`` holds each bucket's result. An empty sequence costs zero.
    Raises ``ValidationError`` (field ``quantities[i]``).
    """
    if isinstance(quantities, str | bytes) or not isinstance(quantities, Iterable):
        raise ValidationError("quantities must be a list of decimals", field="quantities")
    results: list[PriceResult] = []
    total_quantity = ZERO
    unit_total = ZERO
    amount = ZERO
    for index, raw in enumerate(quantities):
        try:
            result = price_quantity(spec, raw)
        except ValidationError as exc:
            raise ValidationError(exc.message, field=f"quantities[{index}]") from None
        results.append(result)
        total_quantity = _CTX.add(total_quantity, result.quantity)
        unit_total = _CTX.add(unit_total, result.price_unit_amount)
        amount = _CTX.add(amount, result.unrounded_amount)
    if amount > MAX_LINE_AMOUNT:
        raise ValidationError(
            f"the amount for these quantities exceeds {MAX_LINE_AMOUNT:E}", field="quantities"
        )
    return PriceResult(
        spec.billing_model,
        spec.currency,
        total_quantity,
        unit_total,
        amount,
        round_money(amount, spec.currency),
        conversion_rate=spec.conversion_rate,
        buckets=tuple(results),
    )


def default_fixed_quantity(spec: PriceSpec, quantity: Decimal | None = None) -> Decimal:
    """The quantity of a FIXED line: ``quantity`` if given and non-zero, else ``min_quantity`` if
    set and non-zero, else 1.

    ``min_quantity`` is a default, not a minimum charge: an explicit quantity of 3 stays 3 even when
    ``min_quantity`` is 5. Example: ``min_quantity=5`` and no quantity → 5 seats.
    Raises ``ValidationError`` (field ``quantity``) for a negative or malformed quantity.
    """
    if quantity is not None:
        checked = _check_quantity(quantity)
        if checked:
            return checked
    if spec.min_quantity:
        return spec.min_quantity
    return _ONE
