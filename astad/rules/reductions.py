"""Reductions along axes: ``sum`` and ``mean`` are linear (given by their
transpose: the cotangent broadcast back over the reduced axes), ``max``/``min``
pick the extremum (ties share it; ``nanmax``/``nanmin`` skip the nans), ``prod``
takes the product of the others (through the runtime helper ``prod_vjp``, exact
at zeros), ``var`` sends ``2 (x - mean) / (n - ddof)``, ``std`` that over ``2 std``, ``trace`` is linear
(its transpose puts the cotangent on the diagonal); ``argmax argmin all any
count_nonzero`` are discrete.  Also the conversions of the array methods
``.astype()`` (a cast: its transpose casts back) and ``.item()``."""

from __future__ import annotations

import math

from typing import Any

import numpy as np

from .. import pyexpr as px
from ..ir import Atom, Const, Num, Type
from . import emit
from .derive import expand_reduced, explicit, like_scalar, linear, may_be_nan, shape_atom
from .shape import reshape_like
from .table import DerivativeKind, Expr, Primitive, ShapeError, norm_axes, num, register, runtime
from .types import reduction

RULE, DISCRETE = DerivativeKind.RULE, DerivativeKind.DISCRETE


def _mean_dtype(d: str) -> str:
    return d if np.dtype(d).kind in "fc" else "float64"


def _sum_dtype(d: str) -> str:
    """numpy's sum, prod and trace of booleans and integers: the platform's integer (unsigned: uint64)."""
    kind = np.dtype(d).kind
    return "int64" if kind in "bi" else "uint64" if kind == "u" else d


def _sum_transpose(b, p, out, ct):
    x = p.args[0]
    if num(x.type).py:
        return [like_scalar(b, ct, x)]
    return [b.prim("broadcast_to", expand_reduced(b, ct, p), shape_atom(b, x))]


def _sum_initial_transpose(b, p, out, ct):
    """``np.sum(x, initial=c)``: ``x`` gets sum's cotangent, ``c`` (a number added to every result) their sum."""
    x, c = p.args
    return [_sum_transpose(b, p, out, ct)[0], like_scalar(b, b.prim("sum", ct, axis=None, keepdims=False), c)]


def _prod_of(b, p) -> Atom:
    """``np.prod(x, initial=c)`` is ``c * x0 * x1 ...``: ``np.prod(x)`` of the same axes (``c``'s partial)."""
    return b.prim("prod", p.args[0], axis=p.param("axis"), keepdims=p.param("keepdims", False))


def vjp_prod_initial(b, p, out, ct):
    """``x`` gets prod's cotangent of ``ct * c``, ``c`` the sum of ``ct * np.prod(x)``."""
    x, c = p.args
    dx = b.prim("prod_vjp", x, expand_reduced(b, b.prim("mul", ct, c), p), axis=p.param("axis"))
    dc = b.prim("sum", b.prim("mul", ct, _prod_of(b, p)), axis=None, keepdims=False)
    return [dx, like_scalar(b, dc, c)]


def jvp_prod_initial(b, p, out, ts):
    tx, tc = ts
    terms = []
    if tx is not None:
        terms.append(b.prim("mul", jvp_prod(b, p, out, [tx]), p.args[1]))
    if tc is not None:
        terms.append(b.prim("mul", tc, _prod_of(b, p)))
    return None if not terms else terms[0] if len(terms) == 1 else b.prim("add", *terms)


def _emit_initial(fn: str) -> Any:
    """``np.fn(x, axis=..., initial=c)``: numpy starts from ``c`` (not ``np.fn(x)`` combined with ``c``: other
    roundings)."""

    def printed(a: list[Expr], ps: dict) -> Expr:
        kw = {"axis": px.literal(ps["axis"])} if ps.get("axis") is not None else {}
        keep = {"keepdims": px.literal(True)} if ps.get("keepdims") else {}
        return px.call(f"np.{fn}", a[:1], **kw, **keep, initial=a[1])

    return printed


def _count(b, p, out, numpy: bool = False) -> Atom:
    """The number of entries a reduction ``p`` takes each result from (a literal when known; with
    ``numpy``, an np.float64 at run time: dividing by it gives inf or nan at 0, as numpy does, not
    a ZeroDivisionError, ``np.var(x[x > 5])`` selecting nothing)."""
    x = p.args[0]
    xt = num(x.type)
    counts = [xt.shape[a] for a in norm_axes(p.param("axis"), xt.ndim)]
    if None in counts:
        size = b.prim("size", x)
        if numpy:
            size = b.prim("astype", size, dtype="float64", scalar=True)
        return b.prim("div", size, b.prim("size", out))
    return b.const(int(np.prod(counts, dtype=int)))


def _mean_transpose(b, p, out, ct):
    x = p.args[0]
    xt = num(x.type)
    count = _count(b, p, out)
    if xt.py:
        return [like_scalar(b, b.prim("div", ct, count), x)]
    return [b.prim("broadcast_to", expand_reduced(b, b.prim("div", ct, count), p), shape_atom(b, x))]


def _extremum_share(b, p, out):
    """Where ``x`` is the result (or nan where the result is nan; ``nanmax``, ``nanmin``: never at a nan),
    divided by the number of such places."""
    x = p.args[0]
    mask = b.prim("eq", x, expand_reduced(b, out, p))
    if may_be_nan(x) and not p.op.startswith("nan"):
        mask = b.prim("or_", mask, b.prim("isnan", x))
    count = b.prim("sum", mask, axis=p.param("axis"), keepdims=True, dtype=num(x.type).dtype)
    return mask, count


def vjp_maxmin(b, p, out, ct):
    """``np.max`` / ``np.min``: the cotangent goes to the entries equal to the
    result (ties share it), and to the nans where the result is nan."""
    mask, count = _extremum_share(b, p, out)
    return [b.prim("mul", mask, b.prim("div", expand_reduced(b, ct, p), count))]


def jvp_maxmin(b, p, out, ts):
    """The transpose of :func:`vjp_maxmin`: the tangents at the extremum, averaged over ties."""
    if ts[0] is None:
        return None
    mask, count = _extremum_share(b, p, out)
    share = b.prim("div", b.prim("mul", mask, ts[0]), count)
    return b.prim("sum", share, axis=p.param("axis"), keepdims=p.param("keepdims", False))


def vjp_prod(b, p, out, ct):
    x = p.args[0]
    return [b.prim("prod_vjp", x, expand_reduced(b, ct, p), axis=p.param("axis"))]


def jvp_prod(b, p, out, ts):
    """``sum(t * (product of the others))``, exact at zeros (no division by ``x``)."""
    if ts[0] is None:
        return None
    axis = p.param("axis")
    return b.prim("sum", b.prim("prod_vjp", p.args[0], ts[0], axis=axis), axis=axis, keepdims=p.param("keepdims", False))


# --------------------------------------------------------------------------- variance


def _centered(b, p) -> Atom:
    x = p.args[0]
    return b.prim("sub", x, b.prim("mean", x, axis=p.param("axis"), keepdims=True))


def _per_count(b, p, out, value: float) -> Atom:
    """``value / (n - ddof)``, ``n`` the number of entries each result is taken from."""
    count, ddof = _count(b, p, out, numpy=True), p.param("ddof", 0)
    if isinstance(count, Const):
        return b.const(value / (count.value - ddof) if count.value > ddof else float("nan"))
    return b.prim("div", b.const(value), b.prim("sub", count, b.const(ddof)) if ddof else count)


def _spread(b, p, v: Atom) -> Atom:
    """``(x - mean) * v`` with ``v`` broadcast back over the reduced axes: the pullback of both statistics."""
    return like_scalar(b, b.prim("mul", _centered(b, p), expand_reduced(b, v, p)), p.args[0])


def _gather(b, p, t: Atom) -> Atom:
    """``sum((x - mean) * t)`` over the reduced axes: the transpose of :func:`_spread`."""
    return b.prim("sum", b.prim("mul", _centered(b, p), t), axis=p.param("axis"), keepdims=p.param("keepdims", False))


def _safe_std(b, out) -> Atom:
    """``out``, with inf where it is 0: there every entry equals the mean, so ``x - mean`` is 0 and the
    derivative taken is 0 (the convention of ``abs`` at 0: ``std`` of two entries is ``|x0 - x1| / 2``);
    dividing by inf, not 1, makes its derivative 0 there too, as abs's second derivative."""
    return b.prim("where", b.prim("eq", out, b.const(0.0)), b.const(math.inf), out)


def vjp_var(b, p, out, ct):
    """``ct * 2 (x - mean) / (n - ddof)``."""
    return [_spread(b, p, b.prim("mul", ct, _per_count(b, p, out, 2.0)))]


def jvp_var(b, p, out, ts):
    """``sum(2 (x - mean) t) / (n - ddof)``."""
    return None if ts[0] is None else b.prim("mul", _gather(b, p, ts[0]), _per_count(b, p, out, 2.0))


def vjp_std(b, p, out, ct):
    """``ct * (x - mean) / ((n - ddof) std)``."""
    return [_spread(b, p, b.prim("mul", b.prim("div", ct, _safe_std(b, out)), _per_count(b, p, out, 1.0)))]


def jvp_std(b, p, out, ts):
    """``sum((x - mean) t) / ((n - ddof) std)``."""
    if ts[0] is None:
        return None
    return b.prim("div", b.prim("mul", _gather(b, p, ts[0]), _per_count(b, p, out, 1.0)), _safe_std(b, out))


def _emit_stat(fn: str) -> Any:
    return lambda a, ps: _emit_var(a, ps, fn)


def _emit_var(a: list[Expr], ps: dict, fn: str = "var") -> Expr:
    kw = {}
    if ps.get("axis") is not None:
        kw["axis"] = px.literal(ps["axis"])
    if ps.get("ddof"):
        kw["ddof"] = px.literal(ps["ddof"])
    if ps.get("keepdims"):
        kw["keepdims"] = px.literal(True)
    return px.call(f"np.{fn}", a, **kw)


# --------------------------------------------------------------------------- trace


def _trace_axes(ndim: int, params: dict) -> tuple[int, int]:
    if ndim < 2:
        raise ShapeError(f"needs an array of at least two dimensions, got {ndim}",
                         "np.trace of a matrix (np.sum(x) adds the entries of a vector)")
    a1, a2 = (norm_axes(params.get(k, d), ndim)[0] for k, d in (("axis1", 0), ("axis2", 1)))
    if a1 == a2:
        raise ShapeError("axis1 and axis2 must be different", "two different axes: axis1=0, axis2=1")
    return a1, a2


def _trace_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    axes = _trace_axes(x.ndim, params)
    return Num(tuple(d for i, d in enumerate(x.shape) if i not in axes), _sum_dtype(x.dtype))


@runtime
def trace_embed(ct: Any, like: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The cotangent of ``np.trace(x, offset, axis1, axis2)``: ``ct`` on that diagonal of zeros shaped like ``x``."""
    shape = np.shape(like)
    a1, a2 = _trace_axes(len(shape), {"axis1": axis1, "axis2": axis2})
    mask = np.eye(shape[a1], shape[a2], k=offset, dtype=like.dtype)  # (a float32 x: a float32 cotangent)
    placed = [1] * len(shape)
    placed[a1], placed[a2] = shape[a1], shape[a2]
    return np.expand_dims(ct, (a1, a2)) * (mask if a1 < a2 else mask.T).reshape(placed)


def _trace_transpose(b, p, out, ct):
    return [b.prim("trace_embed", ct, p.args[0], **dict(p.params))]


def _emit_trace(fn: str, first: int) -> Any:
    def emit_(a: list[Expr], ps: dict) -> Expr:
        kw = {k: px.literal(ps[k]) for k, d in (("offset", 0), ("axis1", 0), ("axis2", 1)) if ps.get(k, d) != d}
        return px.call(fn, a[:first], **kw) if first == 1 else px.call(fn, a, **kw)

    return emit_


# --------------------------------------------------------------------------- conversions (array methods)


def _astype_infer(ts: list[Type], params: dict) -> Type:
    return Num(num(ts[0]).shape, params["dtype"])


def _astype(x: Any, dtype: str, scalar: bool = False) -> Any:
    return np.dtype(dtype).type(x) if scalar else x.astype(dtype)


def _emit_astype(a: list[Expr], ps: dict) -> Expr:
    if ps.get("scalar"):
        return px.call(f"np.{ps['dtype']}", a)
    return px.method(a[0], "astype", [px.name(f"np.{ps['dtype']}")])


def _cast(b, v: Atom, dtype: str) -> Atom:
    """``v`` cast to ``dtype`` (a numpy scalar cast when ``v`` is 0-d: a cotangent may be a Python float)."""
    if num(v.type).dtype == dtype:
        return v
    return b.prim("astype", v, dtype=dtype, scalar=not num(v.type).shape)


def jvp_astype(b, p, out, ts):
    if ts[0] is None:
        return None
    o = num(out.type)
    if num(ts[0].type).py and not o.py and not o.shape:  # np.float64(x) of a Python float: its tangent numpy's
        return b.prim("astype", ts[0], dtype=o.dtype, scalar=True)  # too (x_t / 0.0 is inf, no ZeroDivisionError)
    return _cast(b, ts[0], o.dtype)


def vjp_astype(b, p, out, ct):
    """A cast to a float type: the cotangent cast back."""
    x = num(p.args[0].type)
    return [_cast(b, ct, x.dtype) if x.differentiable else None]


def _item_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    if x.known_shape and int(np.prod(x.shape)) != 1:
        raise ShapeError(f"can only convert an array of size 1 to a Python scalar (the shape is {x.shape})",
                         "index the entry you mean: x[i, j]")
    return Num((), {"f": "float64", "b": "bool"}.get(np.dtype(x.dtype).kind, "int64"), py=True)


def jvp_item(b, p, out, ts):
    if ts[0] is None:
        return None
    t = ts[0] if not num(ts[0].type).shape else b.prim("reshape", ts[0])
    return b.prim("to_float", _cast(b, t, "float64"))  # a Python float is a float64


def vjp_item(b, p, out, ct):
    """The cotangent, shaped like the size-1 array."""
    x = p.args[0]
    if not num(x.type).differentiable:
        return [None]
    return [_cast(b, reshape_like(b, ct, x) if num(x.type).shape else ct, num(x.type).dtype)]


#: whether np.count_nonzero(x) (axis=None) gives a Python int (numpy 1) or a numpy int64 (numpy 2)
_COUNT_IS_PY = type(np.count_nonzero(np.zeros(1))) is int


def _count_nonzero_infer(ts: list[Type], params: dict) -> Type:
    if params.get("axis") is None and not params.get("keepdims"):
        return Num((), "int64", py=_COUNT_IS_PY)
    return reduction(lambda d: "int64")(ts, params)


def _sum(x, axis=None, keepdims=False, dtype=None):
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)


def _masked_sum(x, mask, axis=None, keepdims=False, initial=0.0):
    return np.sum(x, axis=axis, keepdims=keepdims, initial=initial, where=mask)


def _emit_masked_sum(a: list[Expr], ps: dict) -> Expr:
    """``np.sum(x, where=mask)``: numpy adds the entries one after another there (no pairwise sum), so the
    float32 and float16 sum of ``np.where(mask, x, 0)`` differs from it in its last bits."""
    kw = {"axis": px.literal(ps["axis"])} if ps.get("axis") is not None else {}
    if ps.get("keepdims"):
        kw["keepdims"] = px.literal(True)
    if "initial" in ps:
        kw["initial"] = px.literal(ps["initial"])
    return px.call("np.sum", [a[0]], **kw, where=a[1])


def _masked_sum_jvp(b, p, out, ts):
    """Linear in ``x`` but for ``initial``, a constant: the tangent is the masked sum of the tangent."""
    if ts[0] is None:
        return None
    return b.prim("masked_sum", ts[0], p.args[1], **{k: v for k, v in dict(p.params).items() if k != "initial"})


def _masked_sum_vjp(b, p, out, ct):
    zero = Const.literal(0.0, Num((), "float64", py=True))
    return [b.prim("where", p.args[1], _sum_transpose(b, p, out, ct)[0], zero), None]


register(
    Primitive("sum", _sum, reduction(_sum_dtype), emit.reduction("sum"), zero_in=(0,), method="sum", kind=RULE,
              **linear(_sum_transpose)),
    Primitive("masked_sum", _masked_sum, reduction(_sum_dtype), _emit_masked_sum, zero_in=(0,), kind=RULE,
              **explicit(_masked_sum_jvp, _masked_sum_vjp)),
    Primitive("sum_initial", lambda x, c, axis=None, keepdims=False: np.sum(x, axis=axis, keepdims=keepdims, initial=c),
              lambda ts, ps: reduction(_sum_dtype)(ts[:1], ps), _emit_initial("sum"), kind=RULE,
              **linear(_sum_initial_transpose)),
    Primitive("prod_initial", lambda x, c, axis=None, keepdims=False: np.prod(x, axis=axis, keepdims=keepdims, initial=c),
              lambda ts, ps: reduction(_sum_dtype)(ts[:1], ps), _emit_initial("prod"), kind=RULE,
              **explicit(jvp_prod_initial, vjp_prod_initial)),
    Primitive("mean", np.mean, reduction(_mean_dtype), emit.reduction("mean"), zero_in=(0,), method="mean", kind=RULE,
              **linear(_mean_transpose)),
    Primitive("max", np.max, reduction(), emit.reduction("max"), method="max", kind=RULE, **explicit(jvp_maxmin, vjp_maxmin)),
    Primitive("min", np.min, reduction(), emit.reduction("min"), method="min", kind=RULE, **explicit(jvp_maxmin, vjp_maxmin)),
    Primitive("prod", np.prod, reduction(_sum_dtype), emit.reduction("prod"), method="prod", kind=RULE, **explicit(jvp_prod, vjp_prod)),
    Primitive("nanmax", np.nanmax, reduction(), emit.reduction("nanmax"), kind=RULE, **explicit(jvp_maxmin, vjp_maxmin)),
    Primitive("nanmin", np.nanmin, reduction(), emit.reduction("nanmin"), kind=RULE, **explicit(jvp_maxmin, vjp_maxmin)),
    Primitive("var", np.var, reduction(_mean_dtype), _emit_stat("var"), kind=RULE, **explicit(jvp_var, vjp_var)),
    Primitive("std", np.std, reduction(_mean_dtype), _emit_stat("std"), kind=RULE, **explicit(jvp_std, vjp_std)),
    Primitive("trace", np.trace, _trace_infer, _emit_trace("np.trace", 1), zero_in=(0,), kind=RULE,
              **linear(_trace_transpose)),
    Primitive("astype", _astype, _astype_infer, _emit_astype, zero_in=(0,), kind=RULE, **explicit(jvp_astype, vjp_astype)),
    Primitive("item", lambda x: np.asarray(x).item(), _item_infer, lambda a, ps: px.method(a[0], "item", []), zero_in=(0,), kind=RULE,
              **explicit(jvp_item, vjp_item)),
    # discrete
    Primitive("argmax", np.argmax, reduction(lambda d: "int64"), emit.reduction("argmax"), kind=DISCRETE),
    Primitive("argmin", np.argmin, reduction(lambda d: "int64"), emit.reduction("argmin"), kind=DISCRETE),
    Primitive("all", np.all, reduction(lambda d: "bool"), emit.reduction("all"), kind=DISCRETE),
    Primitive("any", np.any, reduction(lambda d: "bool"), emit.reduction("any"), kind=DISCRETE),
    Primitive("count_nonzero", np.count_nonzero, _count_nonzero_infer, emit.reduction("count_nonzero"), kind=DISCRETE),
    Primitive("astype_discrete", _astype, _astype_infer, _emit_astype, kind=DISCRETE),
    # made only in derivative code: the transpose of ``trace``
    Primitive("trace_embed", trace_embed, lambda ts, ps: Num(num(ts[1]).shape, num(ts[0]).dtype),
              _emit_trace("trace_embed", 2), zero_in=(0,), kind=DerivativeKind.BACKWARD_ONLY,
              **linear(lambda b, p, out, ct: [b.prim("trace", ct, **dict(p.params)), None], 0)),
)
