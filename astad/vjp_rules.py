"""VJP helpers shared by the rules in :mod:`astad.primitives` (undo
broadcasting, re-insert reduced axes), and the rules of the functions with
kinks and edges, where a careless rule is silently wrong:

* at a kink (``maximum``, ``abs``, ``clip``, ``max``) the cotangent goes to the
  argument numpy returns, and where that value is nan it *follows the nan*
  (numpy propagates nan; dropping the cotangent there would turn a nan
  primal into a clean zero gradient);
* ``x ** y`` has derivative 0 in ``x`` where ``y == 0`` (``0 * 0 ** -1`` would
  give nan at ``x = 0``);
* ``a % b`` is ``a - floor(a / b) * b``: slope 1 in ``a`` and ``-floor(a / b)``
  in ``b``, not zero.

A rule receives a builder ``b`` (:class:`astad.reverse.Builder`), the
primitive application ``p``, its output ``out`` and the output cotangent
``ct``; it returns one cotangent atom per argument (None where there is none).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from .ir import Atom, Const, Num, Prim, Type, Var

VjpRule = Callable[[Any, Prim, Var, Atom], Sequence[Optional[Atom]]]


class ShapeError(Exception):
    """Raised by a type rule; the frontend turns it into an AstadTypeError at
    the user's line, with ``hint`` (what to write instead) where one is given."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def num(t: Type) -> Num:
    if not isinstance(t, Num):
        raise ShapeError(f"expected a number or an array, got {t}")
    return t


def norm_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ShapeError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim)
    return tuple(sorted(out))


# --------------------------------------------------------------------------- helpers


def shape_atom(b: Any, x: Atom) -> Atom:
    """The shape of ``x`` as an atom: a literal when known statically."""
    t = num(x.type)
    if t.known_shape:
        return b.const(tuple(t.shape))
    return b.prim("shape", x)


def sum_to(b: Any, ct: Atom, like: Atom) -> Atom:
    """Undo broadcasting: sum ``ct`` down to the shape of ``like``."""
    cs, ls = num(ct.type).shape, num(like.type).shape
    if cs == ls and None not in cs:
        return ct
    if None in cs or None in ls:
        return b.prim("sum_to", ct, like)
    lead = len(cs) - len(ls)
    ones = tuple(lead + i for i, d in enumerate(ls) if d == 1 and cs[lead + i] != 1)
    axes = tuple(range(lead)) + ones
    keep = not lead and bool(ones)  # only size-1 axes to sum: keep them, no reshape needed
    out = b.prim("sum", ct, axis=axes if len(axes) != 1 else axes[0], keepdims=keep) if axes else ct
    if num(out.type).shape != ls:
        out = b.prim("reshape", out, *[b.const(d) for d in ls])
    return out


def expand_reduced(b: Any, r: Atom, p: Prim) -> Atom:
    """Re-insert the axes a reduction ``p`` removed (so ``r`` broadcasts against its input)."""
    x = num(p.args[0].type)
    if p.param("keepdims", False) or num(r.type).ndim == 0:
        return r
    axes = norm_axes(p.param("axis"), x.ndim)
    return b.prim("expand_dims", r, axis=axes if len(axes) != 1 else axes[0])


def like_scalar(b: Any, v: Atom, like: Atom) -> Atom:
    """The cotangent ``v`` of ``like`` as a Python float when ``like`` is one
    (np.where, np.reshape and np.broadcast_to give 0-d arrays)."""
    t = num(like.type)
    if t.py and not t.shape and not num(v.type).py:
        return b.prim("to_float", v)
    return v


def _literal(a: Atom) -> bool:
    return isinstance(a, Const) and a.name is None and a.value is not None


def is_none(a: Atom) -> bool:
    return isinstance(a, Const) and a.value is None


def _may_be_nan(a: Atom) -> bool:
    """Whether ``a`` can hold a nan: a float that is not a literal free of nans
    (a module-level array may change after the transformation)."""
    if isinstance(a.type, Num) and np.dtype(a.type.dtype).kind != "f":
        return False
    if _literal(a):
        with np.errstate(all="ignore"):
            return bool(np.isnan(np.asarray(a.value, dtype=float)).any())
    return True


# --------------------------------------------------------------------------- rules


def vjp_pow(b, p, out, ct):
    x, y = p.args
    if isinstance(y, Const) and y.name is None and np.ndim(y.value) == 0:
        n = y.value
        if n == 0:
            return [None, None]  # x ** 0 is constant (n * x ** -1 would be nan at x = 0)
        scaled = b.prim("mul", ct, y)  # the scalar factor first: ct is often a broadcast scalar
        dx = x if n == 2 else b.prim(_pow_op(x, n < 1), x, b.const(n - 1))
        return [sum_to(b, b.prim("mul", scaled, dx), x), None]
    # d(x ** y)/dx = y * x ** (y - 1), and 0 where y == 0 (x ** 0 is 1 for every x; at x = 0, 0 * 0 ** -1 is nan):
    # the exponent is 0 there, so the product is y * 1 = 0
    exponent = b.prim("where", b.prim("ne", y, b.const(0)), b.prim("sub", y, b.const(1)), b.const(0))
    dx = b.prim("mul", y, b.prim(_pow_op(x, True), x, exponent))
    # d(x ** y)/dy = x ** y * log(x), and 0 where x = 0 (not 0 * -inf; the log of 1 there, so that numpy does not warn)
    nonzero = b.prim("ne", x, b.const(0.0))
    log_x = b.prim("log", b.prim("where", nonzero, x, b.const(1.0)))
    dy = b.prim("select", nonzero, b.prim("mul", out, log_x), branch=True)
    return [sum_to(b, b.prim("mul", ct, dx), x), sum_to(b, b.prim("mul", ct, dy), y)]


def _pow_op(x: Atom, negative_exponent: bool) -> str:
    """``np.power`` for a Python float base raised to a possibly negative power:
    ``0.0 ** -0.5`` raises where numpy gives inf (the derivative of ``x ** 0.5`` at 0)."""
    return "power" if negative_exponent and num(x.type).py else "pow"


def _first_wins(b: Any, x: Atom, y: Atom, wins: str, loses: str) -> tuple[Atom, bool]:
    """Where ``np.maximum(x, y)`` (``wins`` "ge", ``loses`` "lt"; "le"/"gt" for
    minimum) returns ``x``: at ties, and where ``x`` is nan (numpy returns the
    first nan).  A mask and whether it is true where ``x`` wins."""
    if not _may_be_nan(y):  # y is returned exactly where it is strictly better (never at a nan x)
        return b.prim(loses, x, y), False
    mask = b.prim(wins, x, y)
    if _may_be_nan(x):
        mask = b.prim("or_", mask, b.prim("isnan", x))
    return mask, True


def extremum_cts(b: Any, x: Atom, y: Atom, ct: Atom, wins: str, loses: str) -> list[Atom]:
    mask, x_wins = _first_wins(b, x, y, wins, loses)
    return [like_scalar(b, sum_to(b, b.prim("select", mask, ct, branch=x_wins), x), x),
            like_scalar(b, sum_to(b, b.prim("select", mask, ct, branch=not x_wins), y), y)]


def vjp_extremum(wins: str, loses: str) -> VjpRule:
    """``np.maximum`` / ``np.minimum``: the cotangent goes to the argument returned."""

    def rule(b, p, out, ct):
        x, y = p.args
        return extremum_cts(b, x, y, ct, wins, loses)

    return rule


def vjp_maxmin(b, p, out, ct):
    """``np.max`` / ``np.min``: the cotangent goes to the entries equal to the
    result (ties share it), and to the nans where the result is nan."""
    x = p.args[0]
    mask = b.prim("eq", x, expand_reduced(b, out, p))
    if _may_be_nan(x):
        mask = b.prim("or_", mask, b.prim("isnan", x))
    count = b.prim("sum", mask, axis=p.param("axis"), keepdims=True, dtype=num(x.type).dtype)
    return [b.prim("mul", mask, b.prim("div", expand_reduced(b, ct, p), count))]


def vjp_clip(b, p, out, ct):
    """``np.clip(x, lo, hi)`` is ``np.minimum(np.maximum(x, lo), hi)`` (also
    for lo > hi and nan bounds): with bounds that are constants free of nans,
    ``x`` gets the cotangent where it lies within them (and where it is nan);
    otherwise the rules of maximum and minimum in turn."""
    x, lo, hi = p.args
    if all(is_none(c) or (_literal(c) and not _may_be_nan(c)) for c in (lo, hi)):
        inside = ct
        for bound, cmp in ((lo, "lt"), (hi, "gt")):
            if not is_none(bound):
                inside = b.prim("select", b.prim(cmp, x, bound), inside, branch=False)
        return [like_scalar(b, sum_to(b, inside, x), x), None, None]
    inner, ct_lo = x, None
    if not is_none(lo):
        inner = b.prim("maximum", x, lo)
    ct_inner, ct_hi = (ct, None) if is_none(hi) else extremum_cts(b, inner, hi, ct, "le", "gt")
    ct_x = ct_inner
    if not is_none(lo):
        ct_x, ct_lo = extremum_cts(b, x, lo, sum_to(b, ct_inner, inner), "ge", "lt")
    return [like_scalar(b, sum_to(b, ct_x, x), x), ct_lo, ct_hi]


def vjp_mod(b, p, out, ct):
    """``a % b`` (numpy's ``np.mod``, Python's ``%``) is ``a - floor(a / b) * b``:
    d/da = 1, d/db = -floor(a / b), which is ``a // b`` (numpy's and Python's
    floor division are consistent with their ``%``)."""
    x, y = p.args
    quotient = b.prim("floordiv", x, y)  # negated after the sum to y's shape: a pass over less
    return [sum_to(b, ct, x), b.prim("neg", sum_to(b, b.prim("mul", ct, quotient), y))]


def vjp_fmod(b, p, out, ct):
    """``np.fmod(a, b)`` is ``a - trunc(a / b) * b`` (exactly): d/da = 1,
    d/db = -trunc(a / b), an integer recovered exactly as ``rint((a - out) / b)``."""
    x, y = p.args
    neg_quotient = b.prim("rint", b.prim("div", b.prim("sub", out, x), y))  # -trunc(a / b), without a neg pass
    return [sum_to(b, ct, x), sum_to(b, b.prim("mul", ct, neg_quotient), y)]


def vjp_arange(b, p, out, ct):
    """``np.arange(start, stop, step)[i] = start + i * step``: d/dstart = sum(ct),
    d/dstep = sum(i * ct); ``stop`` (and a lone argument) only sets the length."""
    if len(p.args) == 1:
        return [None]
    start = like_scalar(b, b.prim("sum", ct), p.args[0])
    if len(p.args) == 2:
        return [start, None]
    i = b.prim("arange", b.prim("size", ct))
    return [start, None, like_scalar(b, b.prim("sum", b.prim("mul", ct, i)), p.args[2])]
