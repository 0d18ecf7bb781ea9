"""Typed operations: one declaration turns a service function and its request model into a method.

An area (``scoped.tax_rates``...) declares its operations instead of writing methods that only
forward a call::

    class TaxRates(Area):
        create = RequestOp(tax_rates.create_tax_rate, tax_rates.TaxRateCreate)
        get = IdOp(tax_rates.get_tax_rate)
        update = IdRequestOp(tax_rates.update_tax_rate, tax_rates.TaxRateUpdate)

``scoped.tax_rates.create`` then takes the request model (``create(TaxRateCreate(...))``) or its
fields as keyword arguments (``create(name="VAT", code="VAT20")``), and the type checker knows
both: the model class is captured as ``Callable[P, M]``, so the keyword form has the model's own
field names (a misspelled one is an error in the editor and under mypy, and a ``ValidationError``
naming it at run time). The call runs ``scoped.run(service, <request>=model, <id>=...)``: one unit
of work, exactly what the forwarding methods did.

A read declares it: ``get = IdOp(tax_rates.get_tax_rate, read_only=True)`` runs through
``scoped.read`` in a read-only unit of work, which never waits for a writer's lock (SQLite) and
refuses any write. Operations that write, or that compute a preview by writing and rolling back,
stay as they are.

The service's keyword names (``data``, ``search``, ``tax_rate_id``...) are read from its signature
once, when the area class is created; a service whose signature does not fit its declaration fails
there, at import, not at the first call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Self, TypeVar, overload

from pydantic import BaseModel

from billingkit.domain.validation import parse_input
from billingkit.errors import VersionConflict

if TYPE_CHECKING:
    from billingkit.facade.scoped import Scoped

__all__ = ["Area", "Call", "IdCall", "IdOp", "IdRequestOp", "RequestOp", "ScopeArguments", "run_retrying"]

P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)


class Area:
    """Base of the objects ``Scoped`` hands out (``scoped.customers``...): their operations run
    in that scope."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._s!r}>"


def _service_keywords(fn: Callable[..., Any], count: int, declaration: str) -> tuple[str, ...]:
    """The names of the ``count`` required parameters of service ``fn(uow, ctx, *, ...)``."""
    params = list(inspect.signature(fn).parameters.values())[2:]
    required = tuple(p.name for p in params if p.default is inspect.Parameter.empty)
    if len(required) != count or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        raise TypeError(
            f"{declaration}({fn.__qualname__}) needs a service taking (uow, ctx) and {count} more "
            f"required argument(s); it takes {', '.join(required) or 'none'}"
        )
    return required


def _check_read_only(fn: Callable[..., Any], read_only: bool, conflict_retries: int) -> None:
    if read_only and conflict_retries:
        raise TypeError(f"{fn.__qualname__}: a read-only operation never conflicts; drop conflict_retries")


def run_retrying(scoped: Scoped, fn: Callable[..., R], retries: int, /, **kwargs: Any) -> R:
    """``scoped.run(fn, **kwargs)``, run again in a new unit of work (up to ``retries`` more
    times) when it ends in a ``VersionConflict``: a concurrent change saved a resource first, and
    the service, reading it afresh, decides again (e.g. a credit note's finalization rechecks the
    invoice's capacity and refuses, rather than answering a bare conflict). The last conflict
    propagates."""
    for attempt in range(retries + 1):
        try:
            return scoped.run(fn, **kwargs)
        except VersionConflict:
            if attempt == retries:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


#: Keyword arguments a service takes from the scope rather than from the caller, e.g.
#: ``lambda scoped: {"renewal_notice": scoped.billing.renewal_notice}``.
ScopeArguments = Callable[["Scoped"], Mapping[str, Any]]


class _ModelOperation(Generic[P, M, R]):
    """What :class:`RequestOp` and :class:`IdRequestOp` share: the service, its keyword names, the
    model, and turning a call's arguments into the service call."""

    def __init__(
        self,
        fn: Callable[..., R],
        model: Callable[P, M],
        ids: int,
        scope_arguments: ScopeArguments | None,
        conflict_retries: int = 0,
        read_only: bool = False,
    ) -> None:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"{type(self).__name__} needs a pydantic model class, got {model!r}")
        _check_read_only(fn, read_only, conflict_retries)
        self.fn = fn
        self.model: type[BaseModel] = model
        self.keywords = _service_keywords(fn, ids + 1, type(self).__name__)
        self.scope_arguments = scope_arguments
        self.conflict_retries = conflict_retries
        self.read_only = read_only

    def request(self, args: tuple[Any, ...], fields: dict[str, Any]) -> Any:
        """The request model from ``(model,)`` or from keyword ``fields`` (validated: a
        ``ValidationError`` names the first bad or unknown field)."""
        if not args or (len(args) == 1 and args[0] is None):
            return parse_input(self.model, fields)
        if len(args) == 1 and isinstance(args[0], self.model) and not fields:
            return args[0]
        name = self.model.__name__
        if len(args) == 1 and isinstance(args[0], self.model):
            raise TypeError(f"pass a {name} or its fields as keyword arguments, not both")
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"expected a {name} or its fields as keyword arguments, got ({got})")

    def run(self, scoped: Scoped, ids: tuple[str, ...], args: tuple[Any, ...], fields: dict[str, Any]) -> R:
        kwargs = dict(zip(self.keywords, (*ids, self.request(args, fields)), strict=True))
        if self.scope_arguments is not None:
            kwargs.update(self.scope_arguments(scoped))
        if self.read_only:
            return scoped.read(self.fn, **kwargs)
        return run_retrying(scoped, self.fn, self.conflict_retries, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.fn.__qualname__}({self.model.__name__})>"


class Call(Generic[P, M, R]):
    """``area.create(request)`` or ``area.create(**fields)``: a :class:`RequestOp` bound to a scope."""

    __slots__ = ("_op", "_scoped")

    def __init__(self, op: RequestOp[P, M, R], scoped: Scoped) -> None:
        self._op = op
        self._scoped = scoped

    @overload
    def __call__(self, request: M, /) -> R: ...
    @overload
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R: ...
    def __call__(self, *args: Any, **kwargs: Any) -> R:
        return self._op.run(self._scoped, (), args, kwargs)

    def __repr__(self) -> str:
        return f"<operation {self._op.fn.__qualname__}({self._op.model.__name__})>"


class RequestOp(_ModelOperation[P, M, R]):
    """An operation taking one request model: ``create = RequestOp(create_x, XCreate)``.
    ``scope_arguments`` adds keyword arguments the service takes from the scope;
    ``conflict_retries`` reruns the call that many times on a ``VersionConflict``
    (:func:`run_retrying`); ``read_only=True`` declares a read (:meth:`Scoped.read`)."""

    def __init__(
        self,
        fn: Callable[..., R],
        model: Callable[P, M],
        *,
        scope_arguments: ScopeArguments | None = None,
        conflict_retries: int = 0,
        read_only: bool = False,
    ) -> None:
        super().__init__(fn, model, 0, scope_arguments, conflict_retries, read_only)

    @overload
    def __get__(self, area: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, area: Area, owner: type[Any]) -> Call[P, M, R]: ...
    def __get__(self, area: Area | None, owner: type[Any]) -> Self | Call[P, M, R]:
        return self if area is None else Call(self, area._s)


class IdCall(Generic[P, M, R]):
    """``area.update(id, request)`` or ``area.update(id, **fields)``: an :class:`IdRequestOp`
    bound to a scope."""

    __slots__ = ("_op", "_scoped")

    def __init__(self, op: IdRequestOp[P, M, R], scoped: Scoped) -> None:
        self._op = op
        self._scoped = scoped

    @overload
    def __call__(self, id: str, request: M, /) -> R: ...
    @overload
    def __call__(self, id: str, /, *args: P.args, **kwargs: P.kwargs) -> R: ...
    def __call__(self, id: str, /, *args: Any, **kwargs: Any) -> R:
        return self._op.run(self._scoped, (id,), args, kwargs)

    def __repr__(self) -> str:
        return f"<operation {self._op.fn.__qualname__}(id, {self._op.model.__name__})>"


class IdRequestOp(_ModelOperation[P, M, R]):
    """An operation on one resource taking a request model:
    ``update = IdRequestOp(update_x, XUpdate)``. The service takes the id first, then the model.
    ``conflict_retries`` and ``read_only``: as :class:`RequestOp`'s."""

    def __init__(
        self,
        fn: Callable[..., R],
        model: Callable[P, M],
        *,
        scope_arguments: ScopeArguments | None = None,
        conflict_retries: int = 0,
        read_only: bool = False,
    ) -> None:
        super().__init__(fn, model, 1, scope_arguments, conflict_retries, read_only)

    @overload
    def __get__(self, area: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, area: Area, owner: type[Any]) -> IdCall[P, M, R]: ...
    def __get__(self, area: Area | None, owner: type[Any]) -> Self | IdCall[P, M, R]:
        return self if area is None else IdCall(self, area._s)


class IdOp(Generic[R]):
    """An operation taking one id or key: ``get = IdOp(get_x)``, ``delete = IdOp(delete_x)``,
    ``get_by_code = IdOp(get_x_by_code)``. ``conflict_retries`` and ``read_only``: as
    :class:`RequestOp`'s."""

    def __init__(self, fn: Callable[..., R], *, conflict_retries: int = 0, read_only: bool = False) -> None:
        _check_read_only(fn, read_only, conflict_retries)
        self.fn = fn
        self.conflict_retries = conflict_retries
        self.read_only = read_only
        (self.keyword,) = _service_keywords(fn, 1, type(self).__name__)

    @overload
    def __get__(self, area: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, area: Area, owner: type[Any]) -> Callable[[str], R]: ...
    def __get__(self, area: Area | None, owner: type[Any]) -> Self | Callable[[str], R]:
        if area is None:
            return self
        scoped, fn, keyword, retries = area._s, self.fn, self.keyword, self.conflict_retries
        if not retries:
            run = scoped.read if self.read_only else scoped.run

            def call(id: str, /) -> R:
                return run(fn, **{keyword: id})

        else:

            def call(id: str, /) -> R:
                return run_retrying(scoped, fn, retries, **{keyword: id})

        call.__qualname__ = call.__name__ = fn.__name__
        call.__doc__ = fn.__doc__
        return call

    def __repr__(self) -> str:
        return f"<IdOp {self.fn.__qualname__}>"
