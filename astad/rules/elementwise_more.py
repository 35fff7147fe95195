"""More of numpy's elementwise functions: hyperbolic and inverse
trigonometric functions, logarithms and exponentials of other bases,
``logaddexp``, ``cbrt``, ``sinc``, unit conversions, rounding, the float
classifiers, ``nan_to_num``.  Each is given by its derivative ``f'(x)`` or
its partial derivatives (:mod:`astad.rules.derive`), as in
:mod:`astad.rules.elementwise`.

Numerically careful, and numpy's domains kept: a derivative is nan where the
primal is nan (``arccosh`` below 1, ``arctanh`` beyond ±1, ``log1p`` below -1),
inf at a pole where the primal is finite or infinite (``cbrt`` at 0,
``arcsin`` at ±1), and never a Python exception: where an argument may be a
Python float, a denominator that can be zero is made a numpy float first
(``np.sqrt``, ``np.reciprocal``, ``log_domain``), so dividing by it gives
inf or nan as numpy does.  ``logaddexp``'s partials are ``exp(x - out)``
(no overflow), ``sinc``'s derivative near 0 is its Taylor series (0 at 0,
no cancellation).
"""

from __future__ import annotations

import math

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..ir import Atom, Var
from . import emit
from .derive import Partial, Rules, elementwise as by_partials, scale, unary
from .elementwise import _picked
from .table import TABLE, DerivativeKind, Primitive, register
from .types import elementwise

RULE, ZERO, DISCRETE = DerivativeKind.RULE, DerivativeKind.ZERO, DerivativeKind.DISCRETE

LN2, LN10 = float(np.log(2.0)), float(np.log(10.0))


# --------------------------------------------------------------------------- derivatives f'(x) of one argument


def _one_minus_square(b: Any, x: Atom) -> Atom:
    """``1 - x * x`` as ``(1 - x) * (1 + x)``: exact near ±1, where ``1 - x * x`` cancels."""
    return b.prim("mul", b.prim("sub", b.const(1.0), x), b.prim("add", b.const(1.0), x))


def _over(denominator: Callable[[Any, Atom, Var], Atom], neg: bool = False) -> Callable[[Any, Atom, Atom, Var], Atom]:
    """``v * f'(x)`` as ``v / denominator`` (negated if ``neg``)."""

    def times(b, v, x, out):
        q = b.prim("div", v, denominator(b, x, out))
        return b.prim("neg", q) if neg else q

    return times


def _sqrt_one_minus_square(b, x, out):
    return b.prim("sqrt", _one_minus_square(b, x))  # nan beyond ±1 (the derivative too), 0 at ±1 (inf)


def _one_plus_square(b, x, out):
    return b.prim("add", b.const(1.0), b.prim("mul", x, x))  # at least 1


def _hypot_one(b, x, out):
    return b.prim("hypot", x, b.const(1.0))  # sqrt(x * x + 1) without overflow


def _arccosh(b, x, out):
    """``sqrt(x * x - 1)`` as ``sqrt(x - 1) * sqrt(x + 1)``: no overflow, nan below 1, 0 at 1 (inf)."""
    below, above = b.prim("sub", x, b.const(1.0)), b.prim("add", x, b.const(1.0))
    return b.prim("mul", b.prim("sqrt", below), b.prim("sqrt", above))


def _times_per_domain(factor: float | None, shift: float | None) -> Callable[[Any, Atom, Atom, Var], Atom]:
    """``v / (factor * (x + shift))``, nan where ``x + shift < 0`` (the primal,
    a logarithm, is nan there) and inf where it is 0 (``log_domain``)."""

    def times(b, v, x, out):
        d = b.prim("log_domain", x if shift is None else b.prim("add", b.const(shift), x))
        return b.prim("div", v, d if factor is None else b.prim("mul", d, b.const(factor)))

    return times


def _arctanh(b, v, x, out):
    """``v / (1 - x * x)``: nan beyond ±1 (the primal is nan there), inf at ±1."""
    return b.prim("div", v, b.prim("log_domain", _one_minus_square(b, x)))


def _cbrt(b, x, out):
    return b.prim("mul", b.const(3.0), b.prim("mul", out, out))  # 0 at 0: the derivative is inf


def _reciprocal(b, x, out):
    return b.prim("neg", b.prim("mul", out, out))


#: below this ``|x|``, sinc's derivative is its Taylor series (the quotient cancels: ``eps / x**2`` relative error)
SINC_SERIES_BELOW = 0.01


def _sinc(b, x, out):
    """``d sinc(x) / dx = (cos(pi x) - sinc(x)) / x``, and near 0 ``pi * g(pi x)``
    with ``g(t) = -t/3 + t**3/30 - t**5/840`` (exactly 0 at 0)."""
    t = b.prim("mul", b.const(np.pi), x)
    tt = b.prim("mul", t, t)
    series = b.prim("mul", b.const(np.pi), b.prim("mul", t, b.prim("add", b.const(-1.0 / 3.0), b.prim(
        "mul", tt, b.prim("sub", b.const(1.0 / 30.0), b.prim("div", tt, b.const(840.0)))))))
    small = b.prim("lt", b.prim("abs", x), b.const(SINC_SERIES_BELOW))
    safe_x = b.prim("where", small, b.const(1.0), x)  # no division by 0 where the series is taken
    quotient = b.prim("div", b.prim("sub", b.prim("cos", t), out), safe_x)
    return b.prim("where", small, series, quotient)


def _constant(c: float) -> Callable[[Any, Atom, Var], Atom]:
    return lambda b, x, out: b.const(c)


def _finite_only(b, v, x, out):
    """``nan_to_num``: the identity where ``x`` is finite, 0 where it was replaced."""
    return b.prim("select", b.prim("isfinite", x), v, branch=True)


# --------------------------------------------------------------------------- partial derivatives


def _hypot_partials(b, p, out):
    x, y = p.args  # x / out and y / out, the reciprocal a numpy float; at the origin (out == 0) 0, as abs's
    # derivative at 0 (np.sign(0)) and JAX's hypot (not 0 * inf = nan): the reciprocal of inf there, 0, so that
    # the second derivative is 0 there too, as abs's (the reciprocal of 1 made it 1)
    r = b.prim("reciprocal", b.prim("where", b.prim("ne", out, b.const(0.0)), out, b.const(math.inf)))
    return [Partial(lambda m, v: m.prim("mul", v, m.prim("mul", x, r))),
            Partial(lambda m, v: m.prim("mul", v, m.prim("mul", y, r)))]


def _arctan2_partials(b, p, out):
    y, x = p.args  # d/dy = x / (x*x + y*y), d/dx = -y / (x*x + y*y)
    r = b.prim("reciprocal", b.prim("add", b.prim("mul", x, x), b.prim("mul", y, y)))
    return [Partial(lambda m, v: m.prim("mul", v, m.prim("mul", x, r))),
            Partial(lambda m, v: m.prim("mul", v, m.prim("mul", y, r)), neg=True)]


def _logaddexp_partials(exp: str) -> Callable:
    """``log(e**x + e**y)``: d/dx = ``e**(x - out)``, at most 1 (no overflow)."""

    def partials(b, p, out):
        x, y = p.args
        return [Partial(lambda m, v: m.prim("mul", v, m.prim(exp, m.prim("sub", x, out)))),
                Partial(lambda m, v: m.prim("mul", v, m.prim(exp, m.prim("sub", y, out))))]

    return partials


def _copysign_partials(b, p, out):
    """``|x|`` with the sign of ``y``: d/dx = ``sign(x) * copysign(1, y)`` (0 at x = 0, as ``abs``); none in y."""
    x, y = p.args
    slope = b.prim("mul", b.prim("sign", x), b.prim("copysign", b.const(1.0), y))
    return [Partial(lambda m, v: m.prim("mul", v, slope)), None]


def _heaviside_partials(b, p, out):
    """``np.heaviside(x, h)`` is ``h`` where ``x == 0``: derivative 1 in ``h`` there, none in ``x`` (a step)."""
    return [None, _picked(b.prim("eq", p.args[0], b.const(0.0)), True)]


# --------------------------------------------------------------------------- the entries


def one(name: str, deriv: Callable | None = None, *, times: Callable | None = None, zero: bool = False,
        impl: Callable | None = None, statics: tuple[str, ...] = ()) -> Primitive:
    """``np.name`` of one argument, by ``deriv(b, x, out) = f'(x)`` or ``times(b, v, x, out) = v * f'(x)``;
    neither: piecewise constant (kind ZERO).  ``zero``: f(0) == 0."""
    fn = impl or getattr(np, name)
    rules: Rules = unary(deriv) if deriv else scale(times) if times else {}
    return Primitive(name, fn, elementwise(fn), emit.np_call(name, *statics), zero_in=(0,) if zero else (),
                     kind=RULE if rules else ZERO, **rules)


def two(name: str, partials: Callable, zero_in: tuple[int, ...] = ()) -> Primitive:
    fn = getattr(np, name)
    return Primitive(name, fn, elementwise(fn), emit.np_call(name), zero_in=zero_in, kind=RULE, **by_partials(partials))


def _discrete(name: str) -> Primitive:
    fn = getattr(np, name)
    return Primitive(name, fn, elementwise(fn), emit.np_call(name), kind=DISCRETE)


def _nan_to_num(x: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Any:
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _identity(name: str) -> Primitive:
    """``np.positive``, ``np.conjugate`` of a real argument (the frontend refuses complex ones): a copy, as a numpy value."""
    fn = getattr(np, name)
    return Primitive(name, fn, elementwise(fn), emit.np_call(name), zero_in=(0,), kind=RULE,
                     **scale(lambda b, v, x, out: v))


register(
    # hyperbolic and inverse trigonometric
    one("sinh", lambda b, x, out: b.prim("cosh", x), zero=True),
    one("cosh", lambda b, x, out: b.prim("sinh", x)),
    one("arcsinh", times=_over(_hypot_one), zero=True),
    one("arccosh", times=_over(_arccosh)),
    one("arctanh", times=_arctanh, zero=True),
    one("arcsin", times=_over(_sqrt_one_minus_square), zero=True),
    one("arccos", times=_over(_sqrt_one_minus_square, neg=True)),
    one("arctan", times=_over(_one_plus_square), zero=True),
    two("arctan2", _arctan2_partials),
    two("hypot", _hypot_partials),
    # logarithms and exponentials
    one("log1p", times=_times_per_domain(None, 1.0), zero=True),
    one("expm1", lambda b, x, out: b.prim("add", out, b.const(1.0)), zero=True),
    one("log2", times=_times_per_domain(LN2, None)),
    one("log10", times=_times_per_domain(LN10, None)),
    one("exp2", lambda b, x, out: b.prim("mul", out, b.const(LN2))),
    two("logaddexp", _logaddexp_partials("exp")),
    two("logaddexp2", _logaddexp_partials("exp2")),
    one("cbrt", times=_over(_cbrt), zero=True),
    one("reciprocal", _reciprocal),
    one("sinc", _sinc),
    one("deg2rad", _constant(np.pi / 180.0), zero=True),
    one("rad2deg", _constant(180.0 / np.pi), zero=True),
    one("fabs", lambda b, x, out: b.prim("sign", x), zero=True),
    two("copysign", _copysign_partials, zero_in=(0,)),
    replace(TABLE["power"], name="float_power", impl=np.float_power, infer=elementwise(np.float_power),
            emit=emit.np_call("float_power")),
    _identity("positive"),
    _identity("conjugate"),
    Primitive("nan_to_num", _nan_to_num, elementwise(_nan_to_num), emit.np_call("nan_to_num", "nan", "posinf", "neginf"),
              kind=RULE, **scale(_finite_only)),
    # piecewise constant (kind ZERO) and a step in its value argument
    one("round", statics=("decimals",), zero=True),
    one("fix", zero=True),
    two("heaviside", _heaviside_partials),
    # float classifiers (bool results)
    _discrete("isinf"),
    _discrete("isfinite"),
)
