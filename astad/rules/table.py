"""The table itself: :class:`Primitive`, :class:`DerivativeKind`, ``TABLE``,
:func:`register`, :func:`infer`, ``RUNTIME`` (the helpers generated code may
call), and the construction-time check that every entry carries the
derivative rules its kind asks for.  The entries live in the sibling modules,
one per family of numpy functions; each registers its own."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, Sequence

import libcst as cst

from ..errors import InternalError
from ..ir import Atom, Comp, NoneT, Num, Prim, Type, Var, nested_blocks

Expr = cst.BaseExpression

#: ``vjp(b, p, out, ct) -> one cotangent atom per argument`` (None: none flows back)
VjpRule = Callable[[Any, Prim, Var, Atom], Sequence[Optional[Atom]]]
#: ``jvp(b, p, out, tangents) -> the output's tangent`` (None: statically zero);
#: ``tangents`` has one entry per argument, None where it is zero or discrete
JvpRule = Callable[[Any, Prim, Var, Sequence[Optional[Atom]]], Optional[Atom]]


class ShapeError(Exception):
    """Raised by a type rule; the frontend turns it into an AstadTypeError at
    the user's line, with ``hint`` (what to write instead) where one is given."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class DerivativeKind(enum.Enum):
    """What an entry's derivative is: every entry states it (``kind=``), and
    tests/test_primitive_rules.py and tests/test_rules_both_directions.py check
    each against finite differences."""

    RULE = "differentiable almost everywhere: its JVP and VJP rules"
    ZERO = "piecewise constant: a float result whose derivative is zero almost everywhere"
    DISCRETE = "an integer, bool or shape result: no tangent, no cotangent"
    BACKWARD_ONLY = ("made only in derivative code (reverse macro, optimiser): a JVP (forward mode runs over "
                     "reverse-mode output for Hessians) and, where it is linear, its transpose as VJP")


@dataclass(frozen=True)
class Primitive:
    name: str
    impl: Callable[..., Any]  # impl(*args, **params)
    infer: Callable[[list[Type], dict], Type]
    emit: Callable[[list[Expr], dict], Expr] | None = None
    vjp: VjpRule | None = None  # kind RULE: given; BACKWARD_ONLY: the transpose where linear
    zero_in: tuple[int, ...] = ()  # arguments in which a zero gives a zero result
    stmts: Callable[[Expr, list[Expr], dict], list[cst.BaseSmallStatement]] | None = None
    method: str | None = None  # the ndarray method computing the same from the first argument (no dispatch cost)
    kind: DerivativeKind = field(kw_only=True)
    jvp: JvpRule | None = field(default=None, kw_only=True)  # kinds RULE and BACKWARD_ONLY: given
    effect: bool = field(default=False, kw_only=True)  # runs for what it does (print, raise): never removed or moved


TABLE: dict[str, Primitive] = {}

#: Names the generated code may use besides ``np``: runtime helpers (``from astad.primitives import ...``).
RUNTIME: dict[str, Callable[..., Any]] = {}


def register(*prims: Primitive) -> None:
    for p in prims:
        if p.name in TABLE:  # two families naming one entry: one would silently lose
            raise InternalError(f"primitive {p.name} is registered twice")
        TABLE[p.name] = with_kind_rule(p)


def runtime(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``fn`` a helper generated code may call by its name."""
    RUNTIME[fn.__name__] = fn
    return fn


def with_kind_rule(p: Primitive) -> Primitive:
    """The entry with the rules its kind implies, checked: kind RULE gives a JVP
    and a VJP, BACKWARD_ONLY a JVP (its VJP, the transpose, where it is linear),
    ZERO and DISCRETE neither (their VJP is the zero one)."""
    if not isinstance(p.kind, DerivativeKind):
        raise InternalError(f"primitive {p.name}: kind {p.kind!r} is not a DerivativeKind")
    differentiated = p.kind in (DerivativeKind.RULE, DerivativeKind.BACKWARD_ONLY)
    if (p.jvp is not None) != differentiated:
        raise InternalError(f"primitive {p.name}: kind {p.kind.name} needs a JVP rule exactly when it is RULE or BACKWARD_ONLY")
    if (p.vjp is not None) != (p.kind is DerivativeKind.RULE) and p.kind is not DerivativeKind.BACKWARD_ONLY:
        raise InternalError(f"primitive {p.name}: kind {p.kind.name} needs a VJP rule exactly when it is DerivativeKind.RULE")
    if p.kind is DerivativeKind.RULE or (p.kind is DerivativeKind.BACKWARD_ONLY and p.vjp is not None):
        return p
    return replace(p, vjp=vjp_never if p.kind is DerivativeKind.BACKWARD_ONLY else vjp_zero)


def vjp_never(b, p, out, ct):
    raise InternalError(f"{p.op} is made only in derivative code and has no reverse-mode derivative of its own")


def vjp_zero(b, p, out, ct):
    """Kinds ZERO and DISCRETE: no cotangent flows back."""
    return [None for _ in p.args]


def has_effect(rhs: Comp) -> bool:
    """Whether a binding's right-hand side is an effect or holds one (in a branch or a loop's body)."""
    if isinstance(rhs, Prim):
        return TABLE[rhs.op].effect
    return any(has_effect(b.rhs) for block in nested_blocks(rhs) for b in block.binds)


def infer(op: str, arg_types: list[Type], params: dict) -> Type:
    return TABLE[op].infer(arg_types, params)


def num(t: Type) -> Num:
    if not isinstance(t, Num):
        raise not_a_number(t)
    return t


def not_a_number(t: Type) -> ShapeError:
    """The refusal of an operand that is not a number or an array (a None: an argument's ``mask=None``)."""
    hint = ("a number or an array here: test `if mask is None:` first (known when transforming, so only "
            "the path Python takes is differentiated)") if isinstance(t, NoneT) else None
    return ShapeError(f"expected a number or an array, got {t}", hint)


def norm_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        if type(a) is not int:  # (not a float, nor a bool: numpy raises TypeError)
            raise ShapeError(f"axis {a!r} is not an integer", "axis=0, or a tuple of ints")
        if not -ndim <= a < ndim:
            raise ShapeError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim)
    return tuple(sorted(out))
