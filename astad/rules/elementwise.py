"""Elementwise (broadcasting) functions: Python's operators and numpy's
ufuncs.  A differentiable one is given by its derivative: ``f'(x)`` for one
argument (:func:`~astad.rules.derive.unary`), a partial derivative per
argument otherwise (:func:`~astad.rules.derive.elementwise`; ``x * y``, linear
in each argument, by its transpose in each); both directions follow.  To add
``np.sinh``: one ``unary_entry`` line below, and its sample arguments in
tests/test_primitive_rules.py.

The kinks and edges, where a careless rule is silently wrong:

* at a kink (``maximum``, ``abs``, ``clip``) the derivative is the one of the
  argument numpy returns, and where that value is nan it *follows the nan*
  (numpy propagates nan; dropping the derivative there would turn a nan
  primal into a clean zero gradient);
* ``x ** y`` has derivative 0 in ``x`` where ``y == 0`` (``0 * 0 ** -1`` would
  give nan at ``x = 0``);
* ``a % b`` is ``a - floor(a / b) * b``: slope 1 in ``a`` and ``-floor(a / b)``
  in ``b``, not zero.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import Atom, Const, Num, Prim, Type, Var
from . import emit
from .derive import (MINUS_ONE, ONE, Partial, Rules, bilinear, broadcast_like, elementwise as by_partials, explicit, is_literal,
                     is_none, like_scalar, linear, may_be_nan, scale, sum_to, unary)
from .table import DerivativeKind, Primitive, num, register
from .types import broadcast_shapes, elementwise, sample

RULE, ZERO, DISCRETE = DerivativeKind.RULE, DerivativeKind.ZERO, DerivativeKind.DISCRETE


# --------------------------------------------------------------------------- partial derivatives


def _add_partials(b, p, out):
    return [ONE, ONE]


def _sub_partials(b, p, out):
    return [ONE, MINUS_ONE]


def _mul_transpose(b, p, out, ct):
    """``x * y`` is linear in each argument (JVP ``tx * y + x * ty``): its transpose in each."""
    x, y = p.args
    return [sum_to(b, b.prim("mul", ct, y), x), sum_to(b, b.prim("mul", ct, x), y)]


def _mul_rules() -> Rules:
    """``x * y``: bilinear; the tangent of a square ``x * x`` is ``2.0 * (x * tx)`` (one product, not two)."""
    rules = bilinear(_mul_transpose)
    product = rules["jvp"]

    def jvp(b, p, out, ts):
        (x, y), (tx, ty) = p.args, ts
        if x is y or (isinstance(x, Var) and isinstance(y, Var) and x.name == y.name):
            if tx is not None and (tx is ty or (isinstance(tx, Var) and isinstance(ty, Var) and tx.name == ty.name)):
                return b.prim("mul", b.const(2.0), b.prim("mul", x, tx))
        return product(b, p, out, ts)

    return {**rules, "jvp": jvp}


def _div_partials(b, p, out):
    x, y = p.args  # d/dy (x / y) = -(x / y) / y: ct / y is shared by the two
    return [Partial(lambda m, v: m.prim("div", v, y)),
            Partial(lambda m, v: m.prim("mul", m.prim("div", v, y), out), neg=True)]


def _by_zero(b, x: Atom, y: Atom) -> Atom | None:
    """Where ``y != 0`` (a run-time test; None for a nonzero literal, or Python numbers, whose ``% 0`` raised):
    ``a % 0``, ``np.fmod(a, 0)`` and ``a // 0`` are nan (or ±inf), and so is their derivative (not 1, ±inf or 0)."""
    if (is_literal(y) and np.all(np.asarray(y.value) != 0)) or (num(x.type).py and num(y.type).py):
        return None
    return b.prim("ne", y, b.const(0))


def _nan_where(at: Atom | None, v_or: Callable[[Any, Atom], Atom]) -> Partial:
    """``v_or(m, v)``, and nan where ``at`` is False (``np.where(y != 0, ..., np.nan)``: the dtype of the first)."""
    if at is None:
        return Partial(lambda m, v: v_or(m, v))
    return Partial(lambda m, v: m.prim("where", at, v_or(m, v), m.const(np.nan)))


def _mod_partials(b, p, out):
    """``a % b`` (numpy's ``np.mod``, Python's ``%``) is ``a - floor(a / b) * b``:
    d/da = 1, d/db = -floor(a / b), which is ``a // b`` (numpy's and Python's
    floor division are consistent with their ``%``); negated after the sum to b's shape.
    Both nan where b == 0 (the value is nan there)."""
    x, y = p.args
    quotient, defined = b.prim("floordiv", x, y), _by_zero(b, x, y)
    if defined is not None:
        quotient = b.prim("where", defined, quotient, b.const(np.nan))
    return [ONE if defined is None else _nan_where(defined, lambda m, v: v),
            Partial(lambda m, v: m.prim("mul", v, quotient), neg=True)]


def _fmod_partials(b, p, out):
    """``np.fmod(a, b)`` is ``a - trunc(a / b) * b`` (exactly): d/da = 1 (nan where b == 0, as the value),
    d/db = -trunc(a / b), an integer recovered exactly as ``rint((a - out) / b)`` (nan where b == 0)."""
    x, y = p.args
    neg_quotient = b.prim("rint", b.prim("div", b.prim("sub", out, x), y))
    return [_nan_where(_by_zero(b, x, y), lambda m, v: v), Partial(lambda m, v: m.prim("mul", v, neg_quotient))]


def _floordiv_partials(b, p, out):
    """``a // b`` is a step function: derivative 0 (as ``np.floor``'s), but nan where b == 0 (a pole: the value
    is ±inf, or nan)."""
    defined = _by_zero(b, *p.args)
    if defined is None:
        return [None, None]
    part = _nan_where(defined, lambda m, v: m.prim("mul", v, m.const(0.0)))
    return [part, part]


def _pow_partials(b, p, out):
    x, y = p.args
    if isinstance(y, Const) and y.name is None and np.ndim(y.value) == 0:
        n = y.value
        if n == 0:
            return [None, None]  # x ** 0 is constant (n * x ** -1 would be nan at x = 0)

        def times(m, v):
            scaled = m.prim("mul", v, y)  # the scalar factor first: v is often a broadcast scalar
            return m.prim("mul", scaled, x if n == 2 else m.prim(_pow_op(p, n < 1), x, m.const(n - 1)))

        return [Partial(times), None]
    # d(x ** y)/dx = y * x ** (y - 1), and 0 where y == 0 (x ** 0 is 1 for every x; at x = 0, 0 * 0 ** -1 is nan):
    # the exponent is 0 there, so the product is y * 1 = 0
    exponent = b.prim("where", b.prim("ne", y, b.const(0)), b.prim("sub", y, b.const(1)), b.const(0))
    dx = b.prim("mul", y, b.prim(_pow_op(p, True), x, exponent))
    # d(x ** y)/dy = x ** y * log(x), and 0 where x = 0 (not 0 * -inf; the log of 1 there, so that numpy does not warn)
    nonzero = b.prim("ne", x, b.const(0.0))
    dy = b.prim("mul", out, b.prim("log", b.prim("where", nonzero, x, b.const(1.0))))
    return [_zero_stays_zero(dx), _zero_stays_zero(dy, nonzero)]


def _zero_stays_zero(d: Atom, where: Atom | None = None) -> Partial:
    """``v * d`` where ``where`` (everywhere for None), 0 elsewhere (``d(x ** y)/dy`` at ``x = 0``, where the
    value does not depend on ``y``).  A zero ``v`` meeting an inf or nan ``d`` stays ``0 * inf = nan``, as at
    ``np.sqrt``: the zero may be computed (``(x ** 3) ** (1 / 3)`` at 0 has derivative 1, and its tangent reaching
    the power is ``3 * 0 ** 2 * t``); an argument held constant (None, or not in ``argnums``) has no term at all."""

    def times(m, v):
        return m.prim("mul", v, d if where is None else m.prim("select", where, d, branch=True))

    return Partial(times)


def _pow_op(p: Prim, negative_exponent: bool) -> str:
    """``np.power`` for a Python float base where Python's ``**`` differs from
    numpy: raised to a possibly negative power (``0.0 ** -0.5`` raises where
    numpy gives inf, the derivative of ``x ** 0.5`` at 0), and in the
    derivative of ``np.power``/``math.pow`` (``(-2.0) ** 0.5`` is complex
    where ``np.power`` gives nan, as its primal did).  Any scalar base, not only a
    Python float's type: a numpy scalar's may be a Python float when the code runs
    (an ``if`` that gives a Python float in one branch, an np.float64 in the other,
    joins them as an np.float64)."""
    return "power" if not num(p.args[0].type).shape and (negative_exponent or p.op != "pow") else "pow"


def first_wins(b: Any, x: Atom, y: Atom, wins: str, loses: str) -> tuple[Atom, bool]:
    """Where ``np.maximum(x, y)`` (``wins`` "ge", ``loses`` "lt"; "le"/"gt" for
    minimum) returns ``x``: at ties, and where ``x`` is nan (numpy returns the
    first nan).  A mask and whether it is true where ``x`` wins."""
    if not may_be_nan(y):  # y is returned exactly where it is strictly better (never at a nan x)
        return b.prim(loses, x, y), False
    mask = b.prim(wins, x, y)
    if may_be_nan(x):
        mask = b.prim("or_", mask, b.prim("isnan", x))
    return mask, True


def _picked(mask: Atom, branch: bool) -> Partial:
    """The derivative 1 where ``mask == branch``, else 0."""
    return Partial(lambda m, v: m.prim("select", mask, v, branch=branch))


def extremum(wins: str, loses: str) -> Rules:
    """``np.maximum`` / ``np.minimum``: the derivative of the argument returned."""

    def partials(b, p, out):
        mask, x_wins = first_wins(b, *p.args, wins, loses)
        return [_picked(mask, x_wins), _picked(mask, not x_wins)]

    return by_partials(partials, floats=True)


def _where_partials(b, p, out):
    c = p.args[0]
    return [None, _picked(c, True), _picked(c, False)]


MAXIMUM, MINIMUM = extremum("ge", "lt"), extremum("le", "gt")


def vjp_clip(b, p, out, ct):
    """``np.clip(x, lo, hi)`` is ``np.minimum(np.maximum(x, lo), hi)`` (also
    for lo > hi and nan bounds): with bounds that are constants free of nans,
    ``x`` gets the cotangent where it lies within them (and where it is nan);
    otherwise the rules of maximum and minimum in turn."""
    x, lo, hi = p.args
    if _constant_bounds(lo, hi):
        return [like_scalar(b, sum_to(b, _inside(b, x, lo, hi, ct), x), x), None, None]
    inner, ct_lo = x, None
    if not is_none(lo):
        inner = b.prim("maximum", x, lo)
    ct_inner, ct_hi = (ct, None) if is_none(hi) else MINIMUM["vjp"](b, Prim("minimum", (inner, hi)), out, ct)
    ct_x = ct_inner
    if not is_none(lo):
        ct_x, ct_lo = MAXIMUM["vjp"](b, Prim("maximum", (x, lo)), inner, sum_to(b, ct_inner, inner))
    return [like_scalar(b, sum_to(b, ct_x, x), x), ct_lo, ct_hi]


def jvp_clip(b, p, out, ts):
    x, lo, hi = p.args
    if _constant_bounds(lo, hi):
        return None if ts[0] is None else broadcast_like(b, _inside(b, x, lo, hi, ts[0]), out)
    inner, t_inner = x, ts[0]
    if not is_none(lo):
        inner = b.prim("maximum", x, lo)
        t_inner = MAXIMUM["jvp"](b, Prim("maximum", (x, lo)), inner, [ts[0], ts[1]])
    if not is_none(hi):
        return MINIMUM["jvp"](b, Prim("minimum", (inner, hi)), out, [t_inner, ts[2]])
    return None if t_inner is None else broadcast_like(b, t_inner, out)


def _constant_bounds(lo: Atom, hi: Atom) -> bool:
    return all(is_none(c) or (is_literal(c) and not may_be_nan(c)) for c in (lo, hi))


def _inside(b: Any, x: Atom, lo: Atom, hi: Atom, v: Atom) -> Atom:
    """``v`` where ``x`` lies within constant bounds (or is nan), else 0."""
    for bound, cmp in ((lo, "lt"), (hi, "gt")):
        if not is_none(bound):
            v = b.prim("select", b.prim(cmp, x, bound), v, branch=False)
    return v


def _clip_infer(ts: list[Type], params: dict) -> Type:
    given = [isinstance(t, Num) for t in ts[1:]]  # a bound may be None

    def clip(x: Any, *bounds: Any) -> Any:
        it = iter(bounds)
        lo, hi = (next(it) if g else None for g in given)
        return np.clip(x, lo, hi)

    return elementwise(clip)([ts[0], *(t for t, g in zip(ts[1:], given) if g)], params)


def _where_infer(ts: list[Type], params: dict) -> Type:
    c, a, b = (num(t) for t in ts)
    shape = broadcast_shapes(c.shape, a.shape, b.shape)
    with np.errstate(all="ignore"):
        dtype = np.result_type(sample(a), sample(b)).name
    return Num(shape, dtype)


# --------------------------------------------------------------------------- the entries


def binary(name: str, impl: Callable, printed: Callable, rules: Rules | None, **kw: Any) -> Primitive:
    """A broadcasting function of two arguments (kind RULE with rules, else ZERO)."""
    return Primitive(name, impl, elementwise(impl), printed, kind=RULE if rules else ZERO, **(rules or {}), **kw)


def unary_entry(name: str, impl: Callable, deriv: Callable | None) -> Primitive:
    """``np.name`` by its derivative ``deriv(b, x, out)``; None: piecewise constant (kind ZERO)."""
    return Primitive(name, impl, elementwise(impl), emit.np_call(name), zero_in=(0,) if name != "sign" else (),
                     kind=RULE if deriv else ZERO, **(unary(deriv) if deriv else {}))


def _discrete(name: str, impl: Callable, printed: Callable) -> Primitive:
    return Primitive(name, impl, elementwise(impl), printed, kind=DISCRETE)


def _emit_not(a: list, ps: dict) -> Any:
    return cst.UnaryOperation(operator=cst.Not(), expression=px.paren(a[0]) if px.precedence(a[0]) < 5 else a[0])


def _emit_invert(a: list, ps: dict) -> Any:
    """``~x`` (Python's operator, as written: ``~True`` is -2, ``~mask`` numpy's logical not)."""
    return cst.UnaryOperation(operator=cst.BitInvert(), expression=px.paren(a[0]) if px.precedence(a[0]) < 12 else a[0])


register(
    # arithmetic (Python operators)
    binary("add", operator.add, emit.binop("+"), by_partials(_add_partials)),
    binary("sub", operator.sub, emit.binop("-"), by_partials(_sub_partials)),
    binary("mul", operator.mul, emit.binop("*"), _mul_rules(), zero_in=(0, 1)),
    binary("div", operator.truediv, emit.binop("/"), by_partials(_div_partials), zero_in=(0,)),
    binary("floordiv", operator.floordiv, emit.binop("//"), by_partials(_floordiv_partials)),
    binary("mod", operator.mod, emit.binop("%"), by_partials(_mod_partials)),
    binary("fmod", np.fmod, emit.np_call("fmod"), by_partials(_fmod_partials)),
    binary("pow", operator.pow, emit.binop("**"), by_partials(_pow_partials)),
    binary("power", np.power, emit.np_call("power"), by_partials(_pow_partials)),
    binary("maximum", np.maximum, emit.np_call("maximum"), MAXIMUM),
    binary("minimum", np.minimum, emit.np_call("minimum"), MINIMUM),
    Primitive("neg", operator.neg, elementwise(operator.neg), emit.neg, zero_in=(0,), kind=RULE,
              **linear(lambda b, p, out, ct: [b.prim("neg", ct)])),
    Primitive("where", np.where, _where_infer, emit.np_call("where"), kind=RULE, **by_partials(_where_partials, floats=True)),
    Primitive("clip", np.clip, _clip_infer, emit.np_call("clip"), kind=RULE, **explicit(jvp_clip, vjp_clip)),
    # comparisons and logic (discrete results)
    *(_discrete(n, f, emit.compare(s)) for n, f, s in [
        ("lt", operator.lt, "<"), ("le", operator.le, "<="), ("gt", operator.gt, ">"),
        ("ge", operator.ge, ">="), ("eq", operator.eq, "=="), ("ne", operator.ne, "!="),
    ]),
    _discrete("not_", operator.not_, _emit_not),
    _discrete("invert", operator.invert, _emit_invert),
    _discrete("and_", operator.and_, emit.binop("&")),
    _discrete("or_", operator.or_, emit.binop("|")),
    _discrete("isnan", np.isnan, emit.np_call("isnan")),
    # numpy functions of one argument: f'(x) written with x and, where cheaper, out = f(x)
    unary_entry("exp", np.exp, lambda b, x, out: out),
    # log: v / x, nan where x < 0 (where the primal is nan) and inf at 0, not finite values or an exception
    Primitive("log", np.log, elementwise(np.log), emit.np_call("log"), zero_in=(0,), kind=RULE,
              **scale(lambda b, v, x, out: b.prim("div", v, b.prim("log_domain", x)))),
    unary_entry("sin", np.sin, lambda b, x, out: b.prim("cos", x)),
    unary_entry("cos", np.cos, lambda b, x, out: b.prim("neg", b.prim("sin", x))),
    unary_entry("tan", np.tan, lambda b, x, out: b.prim("add", b.const(1.0), b.prim("mul", out, out))),
    unary_entry("tanh", np.tanh, lambda b, x, out: b.prim("sub", b.const(1.0), b.prim("mul", out, out))),
    # sqrt: 0.5 / out, +inf at -0.0 too (sqrt(-0.0) is -0.0; log_domain makes it 0)
    unary_entry("sqrt", np.sqrt, lambda b, x, out: b.prim("div", b.const(0.5), b.prim("log_domain", out))),
    unary_entry("abs", np.abs, lambda b, x, out: b.prim("sign", x)),
    *(unary_entry(name, getattr(np, name), None) for name in ("sign", "floor", "ceil", "trunc", "rint")),
)
