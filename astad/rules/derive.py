"""The shapes of derivative rules, each giving both directions from one
description (see the package docstring), and the helpers rules share:

* :func:`unary` / :func:`scale`: an elementwise function of one argument by
  its derivative ``f'(x)`` (JVP ``t * f'(x)``, VJP ``ct * f'(x)``);
* :func:`elementwise`: a broadcasting function of several arguments by its
  partial derivatives, each a pointwise (hence self-adjoint) linear map
  ``v -> v * d_i f``: the JVP adds them over the arguments' tangents and
  broadcasts, the VJP applies each to the cotangent and undoes broadcasting
  with ``sum_to``;
* :func:`linear` / :func:`bilinear`: a function linear in some arguments by
  itself (the JVP is the same primitive applied to the tangents) and its
  transpose (the VJP);
* :func:`explicit`: anything else, a JVP and a VJP side by side.

Each returns the keywords ``jvp=..., vjp=...`` of a :class:`Primitive`.
Rules are written naively: statically-zero values and unused results are
folded away by the optimiser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..ir import Atom, Const, ListT, Num, Prim, Var
from .table import JvpRule, VjpRule, norm_axes, num

Rules = dict  # {"jvp": JvpRule, "vjp": VjpRule}


# --------------------------------------------------------------------------- atoms the rules share


def shape_atom(b: Any, x: Atom) -> Atom:
    """The shape of ``x`` as an atom: a literal when known statically."""
    t = num(x.type)
    if t.known_shape:
        return b.const(tuple(t.shape))
    return b.prim("shape", x)


def sum_to(b: Any, ct: Atom, like: Atom) -> Atom:
    """Undo broadcasting: sum ``ct`` down to the shape of ``like``."""
    ct_t, like_t = ct.type, like.type  # (``num`` of each, for what is not a Num: this runs for every argument)
    cs = (ct_t if type(ct_t) is Num else num(ct_t)).shape
    ls = (like_t if type(like_t) is Num else num(like_t)).shape
    if cs == ls and None not in cs:
        return ct
    if None in ls:
        return b.prim("sum_to", ct, like)
    # ``like``'s shape is known: which axes broadcasting added is known too (an axis
    # of run-time size facing a known size other than 1 has that size)
    lead = len(cs) - len(ls)
    ones = tuple(lead + i for i, d in enumerate(ls) if d == 1 and cs[lead + i] != 1)
    axes = tuple(range(lead)) + ones
    keep = not lead and bool(ones)  # only size-1 axes to sum: keep them, no reshape needed
    out = b.prim("sum", ct, axis=axes if len(axes) != 1 else axes[0], keepdims=keep) if axes else ct
    out_t = out.type
    if (out_t if type(out_t) is Num else num(out_t)).shape != ls:
        out = b.prim("reshape", out, *[b.const(d) for d in ls])
    return out


def broadcast_like(b: Any, t: Atom, out: Var) -> Atom:
    """Do broadcasting: ``t`` broadcast to the shape of ``out`` (the transpose of :func:`sum_to`)."""
    ts, os_ = num(t.type).shape, num(out.type).shape
    if ts == os_ and None not in ts:
        return t
    return b.prim("broadcast_to", t, shape_atom(b, out))


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


def zeros_of(b: Any, a: Atom) -> Atom:
    """A materialised zero tangent shaped like ``a`` (a literal for a scalar)."""
    t = a.type
    if isinstance(t, Num) and not t.shape:
        if not t.py and t.differentiable and t.dtype != "float64":  # a literal 0.0 is a Python float
            return b.prim("convert_float", Const.literal(0.0, Num((), "float64", py=True)), dtype=t.dtype, py=False)
        return Const.literal(0.0, Num((), t.dtype if t.differentiable else "float64", py=t.py))
    if isinstance(t, ListT):
        return b.prim("list_zeros_like", a)
    return b.prim("zeros_like", a, **({} if num(t).differentiable else {"dtype": "float64"}))


def is_literal(a: Atom) -> bool:
    return isinstance(a, Const) and a.name is None and a.value is not None


def is_none(a: Atom) -> bool:
    return isinstance(a, Const) and a.value is None


def may_be_nan(a: Atom) -> bool:
    """Whether ``a`` can hold a nan: a float that is not a literal free of nans
    (a module-level array may change after the transformation)."""
    if isinstance(a.type, Num) and np.dtype(a.type.dtype).kind != "f":
        return False
    if is_literal(a):
        with np.errstate(all="ignore"):
            return bool(np.isnan(np.asarray(a.value, dtype=float)).any())
    return True


def add_all(b: Any, terms: Sequence[Atom]) -> Atom | None:
    total = None
    for t in terms:
        total = t if total is None else b.prim("add", total, t)
    return total


def signed_sum(b: Any, terms: Sequence[tuple[Atom, bool]]) -> Atom | None:
    """The sum of ``terms`` (each negated when its flag is set): ``a - b``, not ``a + -b``."""
    positive = [v for v, neg in terms if not neg]
    if not positive:
        total = add_all(b, [v for v, _ in terms])
        return None if total is None else b.prim("neg", total)
    total = add_all(b, positive)
    for v, neg in terms:
        if neg:
            total = b.prim("sub", total, v)
    return total


class Memo:
    """A builder that makes each pure primitive application once: the partial
    derivatives of one application share what they have in common (``a / b``:
    ``ct / b`` for both arguments)."""

    def __init__(self, b: Any) -> None:
        self.b, self.made = b, {}

    def prim(self, op: str, *args: Atom, **params: Any) -> Atom:
        key = (op, tuple([a.name if type(a) is Var else ("const", id(a)) for a in args]),
               tuple(sorted(params.items())) if params else ())
        made = self.made.get(key)
        if made is None:
            made = self.made[key] = self.b.prim(op, *args, **params)
        return made

    def const(self, value: Any) -> Const:
        return self.b.const(value)


# --------------------------------------------------------------------------- one description, both directions


def scale(times: Callable[[Any, Atom, Atom, Var], Atom]) -> Rules:
    """An elementwise function of one argument by ``times(b, v, x, out) = v * f'(x)``."""

    def jvp(b, p, out, ts):
        return None if ts[0] is None else times(b, ts[0], p.args[0], out)

    def vjp(b, p, out, ct):
        return [times(b, ct, p.args[0], out)]

    return {"jvp": jvp, "vjp": vjp}


def unary(deriv: Callable[[Any, Atom, Var], Atom]) -> Rules:
    """An elementwise function of one argument by its derivative ``f'(x)``
    (written with ``x`` and, where cheaper, ``out = f(x)``)."""
    rules = scale(lambda b, v, x, out: b.prim("mul", v, deriv(b, x, out)))

    def vjp(b, p, out, ct):  # (scale's, with its ``times`` written out: this runs for every such function)
        return [b.prim("mul", ct, deriv(b, p.args[0], out))]

    return {**rules, "vjp": vjp}


@dataclass(frozen=True)
class Partial:
    """The partial derivative in one argument, as the linear map ``v -> v * d_i f``
    (``times``; None: the identity), negated after undoing broadcasting (``neg``)."""

    times: Optional[Callable[[Any, Atom], Atom]] = None
    neg: bool = False


ONE = Partial()
MINUS_ONE = Partial(neg=True)

#: ``partials(b, p, out)``: one :class:`Partial` per argument (None: no derivative);
#: what they share and do not depend on ``v`` may be made here, once
Partials = Callable[[Any, Prim, Var], Sequence[Optional[Partial]]]


def elementwise(partials: Partials, floats: bool = False) -> Rules:
    """A broadcasting function of several arguments by its partial derivatives.
    ``floats``: an argument that is a Python float gets a Python float cotangent."""

    def jvp(b, p, out, ts):
        m = Memo(b)
        parts = partials(m, p, out)
        terms = []
        for part, t in zip(parts, ts):
            if part is None or t is None:
                continue
            terms.append((part.times(m, t) if part.times is not None else t, part.neg))
        total = signed_sum(m, terms)
        return None if total is None else broadcast_like(b, total, out)

    def vjp(b, p, out, ct):
        m = Memo(b)
        parts = partials(m, p, out)
        cts = []
        for part, a in zip(parts, p.args):
            if part is None:
                cts.append(None)
                continue
            v = sum_to(m, part.times(m, ct) if part.times is not None else ct, a)
            v = m.prim("neg", v) if part.neg else v
            cts.append(like_scalar(m, v, a) if floats else v)
        return cts

    return {"jvp": jvp, "vjp": vjp}


def linear(transpose: VjpRule, *which: int) -> Rules:
    """A function linear in the arguments ``which`` (all when none are given)
    and constant in the others, by its transpose: the JVP is the primitive
    applied to their tangents (zeros standing in for a missing one)."""

    def jvp(b, p, out, ts):
        idx = which or tuple(range(len(p.args)))
        if all(ts[i] is None for i in idx):
            return None
        args = [((ts[i] if ts[i] is not None else zeros_of(b, a)) if i in idx else a) for i, a in enumerate(p.args)]
        return b.prim(p.op, *args, **dict(p.params))

    return {"jvp": jvp, "vjp": transpose}


def bilinear(transpose: VjpRule) -> Rules:
    """A function linear in each of its two arguments (a product): the JVP is
    ``op(tx, y) + op(x, ty)``; the VJP the transpose in each."""

    def jvp(b, p, out, ts):
        (x, y), (tx, ty) = p.args, ts
        params = dict(p.params)
        terms = ([b.prim(p.op, tx, y, **params)] if tx is not None else []) + \
                ([b.prim(p.op, x, ty, **params)] if ty is not None else [])
        return add_all(b, terms)

    return {"jvp": jvp, "vjp": transpose}


def explicit(jvp: JvpRule, vjp: VjpRule | None) -> Rules:
    """Anything else: the two rules side by side."""
    return {"jvp": jvp, "vjp": vjp}


def no_tangent(b, p, out, ts):
    """The JVP of a function whose result's derivative is zero (a zero made in derivative code)."""
    return None
