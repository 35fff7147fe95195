"""Primitives made only in derivative code, by the reverse macro and the
optimiser (kind BACKWARD_ONLY).  Forward mode runs over reverse-mode output
(Hessians), so each has a JVP; most are linear in their cotangent argument
and given by their transpose, which is then their VJP too.  ``prod_vjp`` is
not linear in ``x``: it carries its own tangent directions, so that its
derivatives of every order are ``prod_vjp`` again."""

from __future__ import annotations

from typing import Any

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import ListT, Num, Type
from . import emit
from .derive import add_all, explicit, like_scalar, linear, no_tangent, sum_to, zeros_of
from .lists import (append_infer, append_transpose, list_elem, list_set_infer, list_set_transpose, list_set_value,
                    unknown_length)
from .table import DerivativeKind, Expr, Primitive, norm_axes, num, register, runtime, vjp_zero
from .types import broadcast_shapes

BACKWARD = DerivativeKind.BACKWARD_ONLY


# --------------------------------------------------------------------------- arrays


def _select_infer(ts: list[Type], params: dict) -> Type:
    c, v = num(ts[0]), num(ts[1])
    return Num(broadcast_shapes(c.shape, v.shape), v.dtype)


def _emit_select(a: list[Expr], ps: dict) -> Expr:
    zero = px.literal(0.0)
    return px.call("np.where", [a[0], a[1], zero] if ps["branch"] else [a[0], zero, a[1]])


def _select_transpose(b, p, out, ct):
    c, v = p.args
    return [None, like_scalar(b, sum_to(b, b.prim("select", c, ct, branch=p.param("branch")), v), v)]


@runtime
def prod_vjp(x: Any, ct: Any, *tangents: Any, axis: Any) -> Any:
    """``ct`` times the product of the other entries along ``axis`` (the
    cotangent of ``np.prod(x, axis)``), exact at zeros; with tangents
    ``t_1..t_k`` (arrays shaped like ``x``), the k-th mixed directional
    derivative of that product in ``x``: a sum over the ways of putting each
    ``t_m`` at a distinct other entry."""
    axes = norm_axes(axis, np.ndim(x))
    moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0)))
    flat = moved.reshape(moved.shape[: moved.ndim - len(axes)] + (int(np.prod(moved.shape[moved.ndim - len(axes):])),))
    if not flat.size:  # no entries (np.prod(x[x > 5]) selecting none): nothing to take the others' product of
        others = flat
    elif tangents:
        ts = [np.moveaxis(np.broadcast_to(t, np.shape(x)), axes, tuple(range(-len(axes), 0))).reshape(flat.shape) for t in tangents]
        others = _mixed_others(flat, ts)
    else:
        ones = np.ones(flat.shape[:-1] + (1,), dtype=flat.dtype)
        before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
        after = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat, -1)[..., :-1]], axis=-1), axis=-1), -1)
        others = before * after
    others = np.moveaxis(others.reshape(moved.shape), tuple(range(-len(axes), 0)), axes)
    return others * ct


def _mixed_others(x: Any, ts: list) -> Any:
    """For each entry i along the last axis, the mixed derivative of the product
    of the other entries in the directions ``ts``: exclusive prefix and suffix
    products, kept per subset of directions placed (a bitmask), then joined."""
    n, k = x.shape[-1], len(ts)
    full = (1 << k) - 1

    def scan(order: range) -> list:
        state = [np.ones(x.shape[:-1])] + [np.zeros(x.shape[:-1]) for _ in range(full)]
        seen: list = [None] * n
        for i in order:
            seen[i] = state
            state = [state[s] * x[..., i] + sum((state[s ^ (1 << m)] * ts[m][..., i] for m in range(k) if s >> m & 1),
                                                np.zeros(x.shape[:-1])) for s in range(full + 1)]
        return seen

    before, after = scan(range(n)), scan(range(n - 1, -1, -1))
    out = np.empty(x.shape, dtype=np.result_type(x, *ts))
    for i in range(n):
        out[..., i] = sum(before[i][s] * after[i][full ^ s] for s in range(full + 1))
    return out


def _prod_vjp_jvp(b, p, out, ts):
    x, ct, *dirs = p.args
    axis = p.param("axis")
    terms = []
    if ts[0] is not None:
        terms.append(b.prim("prod_vjp", x, ct, *dirs, ts[0], axis=axis))
    if ts[1] is not None:
        terms.append(b.prim("prod_vjp", x, ts[1], *dirs, axis=axis))
    for m, t in enumerate(ts[2:]):
        if t is not None:
            terms.append(b.prim("prod_vjp", x, ct, *dirs[:m], t, *dirs[m + 1:], axis=axis))
    return add_all(b, terms)


def _prod_vjp_vjp(b, p, out, ct_out):
    """In ``ct`` and each direction linear; in ``x`` (and in a direction) the
    mixed derivative is symmetric in the entry removed and the entry moved, so
    each transpose is ``prod_vjp`` with the weights ``ct_out * ct`` as one more direction."""
    x, ct, *dirs = p.args
    axis = p.param("axis")
    one = b.const(1.0)
    w = b.prim("mul", ct_out, ct)
    cts = [b.prim("prod_vjp", x, one, *dirs, w, axis=axis),
           sum_to(b, b.prim("prod_vjp", x, ct_out, *dirs, axis=axis), ct)]
    cts += [b.prim("prod_vjp", x, one, *dirs[:m], *dirs[m + 1:], w, axis=axis) for m in range(len(dirs))]
    return cts


@runtime
def log_domain(x: Any) -> Any:
    """``x`` where ``log`` is defined (``x >= 0``), nan elsewhere, as numpy
    floats: the derivative ``ct / x`` of ``log`` is then nan outside its domain,
    as the primal is, and inf at 0 (a Python float would raise there).  -0.0 is
    0 (``x + 0.0``): its derivative is +inf, the limit from inside the domain, not
    ``1 / -0.0``; so is ``sqrt``'s ``0.5 / log_domain(out)`` at ``sqrt(-0.0) == -0.0``.
    A Dask or CuPy array (not numpy's nor a number) gets the ``where`` unasked: asking would compute it."""
    if type(x) is np.ndarray and x.ndim:  # the common case first (count_nonzero: no Python-level reduction)
        return np.where(x >= 0, x + 0.0, np.nan) if np.count_nonzero(x <= 0) else x
    if not isinstance(x, (np.ndarray, np.generic, float, int)):
        return np.where(x >= 0, x + 0.0, np.nan)
    if np.ndim(x) == 0:
        x = x[()] if type(x) is np.ndarray else x  # (a 0-d array: its scalar, of its dtype)
        x = x if isinstance(x, np.floating) else np.float64(x)
        return x if x > 0 else x.dtype.type(0.0 if x == 0 else np.nan)
    if (x <= 0).any():
        return np.where(x >= 0, x + 0.0, np.nan)
    return x


def _log_domain_infer(t: Type) -> Num:
    """A float (numpy) with the shape of ``t``: ints become float64."""
    x = num(t)
    return Num(x.shape, x.dtype if x.dtype in ("float32", "float64") else "float64")


# --------------------------------------------------------------------------- lists


@runtime
def list_onehot(like: list, i: int, ct: Any) -> list:
    """Cotangent of ``xs[i]``: zeros like each element, ``ct`` at ``i``."""
    out = list_zeros_like(like)
    out[i] = ct
    return out


@runtime
def list_unslice(like: list, ct: list, lower: Any = None, upper: Any = None, step: Any = None) -> list:
    """Cotangent of ``xs[lower:upper:step]``: zeros like each element, ``ct``'s where the slice took them."""
    out = list_zeros_like(like)
    out[lower:upper:step] = ct
    return out


def _emit_list_unslice(a: list[Expr], ps: dict) -> Expr:
    return px.call("list_unslice", a, **{k: px.literal(v) for k, v in ps.items() if v is not None})


def _list_scatter_add_value(acc: list, i: int, ct: Any) -> list:
    out = list(acc)
    out[i] = list_add(out[i], ct) if isinstance(ct, list) else out[i] + ct
    return out


def _stmts_list_scatter_add(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``acc[i] = acc[i] + ct``: a read ``xs[i]`` inside a loop, accumulated into
    the loop's own list of cotangents (its elements are replaced, never changed)."""
    acc, i, ct = a
    item = px.subscript(target, [i])
    return [emit.assign(target, acc), emit.assign(item, px.binop("+", item, ct))]


@runtime
def list_add(a: list, b: list) -> list:
    """Cotangents of a list, added element by element."""
    return [list_add(x, y) if isinstance(x, list) else x + y for x, y in zip(a, b)]


@runtime
def list_zeros_like(like: list) -> list:
    # np.zeros of a numpy array's shape and dtype: the same zeros, five times faster than zeros_like
    return [np.zeros(e.shape, e.dtype) if type(e) is np.ndarray else list_zeros_like(e) if isinstance(e, list)
            else np.zeros_like(e) if hasattr(e, "shape")
            else 0.0 for e in like]  # zeros_like: of a Dask (CuPy) array, a Dask (CuPy) array


def or_zeros_like(ct: Any, like: Any) -> Any:
    """``ct``, or zeros like ``like`` when ``ct`` is the zero of a list (None)."""
    if ct is None:
        return list_zeros_like(like) if isinstance(like, list) else np.zeros_like(like)
    return ct


@runtime
def unstack(ct: Any, axis: int) -> list:
    """Cotangent of ``np.stack(xs, axis)``: one slice per element."""
    return list(np.moveaxis(ct, axis, 0))


@runtime
def list_fill(ct: Any, n: int) -> list:
    """Cotangent of ``sum(xs)`` for ``xs``: ``ct`` once per element (read-only views)."""
    return list(np.broadcast_to(ct, (n,) + np.shape(ct)))


@runtime
def split_like(ct: Any, like: list, axis: int) -> list:
    """Cotangent of ``np.concatenate(xs, axis)``: ``ct`` cut at the elements' sizes."""
    cuts = np.cumsum([np.shape(e)[axis] for e in like])[:-1]
    return list(np.split(ct, cuts, axis=axis))


def _unstack_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    shape = list(x.shape)
    del shape[params["axis"]]
    return ListT(Num(tuple(shape), x.dtype))


def _init_transpose(b, p, out, ct):
    """The cotangent of ``l[:-1]``: a zero appended for the last element."""
    (l,) = p.args
    return [b.prim("append", ct, zeros_of(b, b.prim("list_get", l, b.const(-1))))]


def _stmts_append_in_place(t: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    return [emit.assign(t, a[0]), cst.Expr(px.method(t, "append", [a[1]]))]


def _stmts_list_set_in_place(t: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``t = xs; t[i] = v``: the list itself, one element replaced (no copy)."""
    return [emit.assign(t, a[0]), emit.assign(px.subscript(t, [a[2]]), a[1])]


#: ``xs.pop()`` and the list it leaves: linear, but their transposes would read
#: the list after the pop changed it, so they have no reverse-mode rule
_in_place = explicit(lambda b, p, out, ts: None if ts[0] is None else b.prim(p.op, ts[0]), None)


register(
    Primitive("select", lambda c, v, branch: np.where(c, v, 0.0) if branch else np.where(c, 0.0, v), _select_infer, _emit_select,
              zero_in=(1,), kind=BACKWARD, **linear(_select_transpose, 1)),
    Primitive("prod_vjp", prod_vjp, lambda ts, ps: Num(num(ts[0]).shape, num(ts[1]).dtype), emit.runtime("prod_vjp", "axis"),
              zero_in=(1,), kind=BACKWARD, **explicit(_prod_vjp_jvp, _prod_vjp_vjp)),
    Primitive("log_domain", log_domain, lambda ts, ps: _log_domain_infer(ts[0]), emit.runtime("log_domain"), kind=BACKWARD,
              **explicit(lambda b, p, out, ts: ts[0], lambda b, p, out, ct: [ct])),
    # lists
    Primitive("list_init", lambda l: l[:-1], lambda ts, ps: unknown_length(ts[0]),
              lambda a, ps: px.subscript(a[0], [px.slice_(None, px.literal(-1), None)]), zero_in=(0,), kind=BACKWARD,
              **linear(_init_transpose)),
    # in place, where the optimiser proved the old list is read by nothing else (O(1), not O(length))
    Primitive("append_in_place", lambda l, v: l + [v], append_infer, None, stmts=_stmts_append_in_place, kind=BACKWARD,
              **linear(append_transpose)),
    Primitive("list_set_in_place", list_set_value, list_set_infer, None, stmts=_stmts_list_set_in_place,
              kind=BACKWARD, **linear(list_set_transpose, 0, 1)),
    Primitive("list_pop", lambda l: l[-1], list_elem, None, zero_in=(0,),
              stmts=lambda t, a, ps: [emit.assign(t, px.method(a[0], "pop"))], kind=BACKWARD, **_in_place),
    Primitive("list_popped", lambda l: l[:-1], lambda ts, ps: unknown_length(ts[0]), lambda a, ps: a[0], zero_in=(0,),
              kind=BACKWARD, **_in_place),
    Primitive("list_onehot", list_onehot, lambda ts, ps: ts[0], emit.runtime("list_onehot"), zero_in=(2,), kind=BACKWARD,
              **linear(lambda b, p, out, ct: [None, None, b.prim("list_get", ct, p.args[1])], 2)),
    Primitive("list_unslice", list_unslice, lambda ts, ps: ts[0], _emit_list_unslice,
              zero_in=(1,), kind=BACKWARD,
              **linear(lambda b, p, out, ct: [None, b.prim("list_slice", ct, **dict(p.params))], 1)),
    Primitive("list_scatter_add", _list_scatter_add_value, lambda ts, ps: ts[0], None, stmts=_stmts_list_scatter_add,
              kind=BACKWARD, **linear(lambda b, p, out, ct: [ct, None, b.prim("list_get", ct, p.args[1])], 0, 2)),
    Primitive("unstack", unstack, _unstack_infer, emit.runtime("unstack", "axis"), zero_in=(0,), kind=BACKWARD,
              **linear(lambda b, p, out, ct: [b.prim("stack_list", ct, axis=p.param("axis"))])),
    Primitive("list_fill", list_fill, lambda ts, ps: ListT(ts[0]), emit.runtime("list_fill"), zero_in=(0,), kind=BACKWARD,
              **linear(lambda b, p, out, ct: [b.prim("py_sum", ct), None], 0)),
    Primitive("split_like", split_like, lambda ts, ps: ts[1], emit.runtime("split_like", "axis"), zero_in=(0,), kind=BACKWARD,
              **linear(lambda b, p, out, ct: [b.prim("concatenate_list", ct, axis=p.param("axis")), None], 0)),
    Primitive("list_zeros_like", list_zeros_like, lambda ts, ps: ts[0], emit.runtime("list_zeros_like"), kind=BACKWARD,
              **explicit(no_tangent, vjp_zero)),
    # a cotangent leaving a branch or loop body whose zero is made at run time (a
    # list, an array of run-time length): the simplifier turns it into the
    # cotangent, or into zeros like the primal if the cotangent is zero
    Primitive("or_zeros_like", or_zeros_like, lambda ts, ps: ts[1], None, kind=BACKWARD,
              **linear(lambda b, p, out, ct: [ct, None], 0)),
)
