"""Scans and orderings along one axis: ``cumsum`` and ``diff`` are linear
(given by their transposes: the cumulative sum from the end, the padded
difference), ``cumprod`` is differentiated exactly also where ``x`` has zeros
(no division by ``x``: its JVP and VJP are first-order linear recurrences,
``linear_scan``), ``sort`` moves the tangent through the sorting permutation
(``permute``, a gather whose transpose gathers by the inverse permutation),
``argsort`` is discrete.

``axis=None`` (numpy: flatten first) is handled in the rules by working on
``np.ravel(x)`` and reshaping the cotangent back.  ``linear_scan``,
``shift_along`` and ``permute`` are made only in derivative code; their
derivatives are made of the same primitives, so every order is exact."""

from __future__ import annotations

from typing import Any

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import Atom, Num, Type
from .derive import add_all, explicit, linear, zeros_of
from .shape import reshape_like
from .table import DerivativeKind, Expr, Primitive, ShapeError, norm_axes, num, register, runtime

RULE, DISCRETE, BACKWARD = DerivativeKind.RULE, DerivativeKind.DISCRETE, DerivativeKind.BACKWARD_ONLY


# --------------------------------------------------------------------------- runtime helpers


@runtime
def reverse_cumsum(x: Any, axis: int) -> Any:
    """The cumulative sum from the end along ``axis`` (the transpose of ``np.cumsum``)."""
    return np.flip(np.cumsum(np.flip(x, axis), axis), axis)


@runtime
def diff_padded(x: Any, n: int, axis: int) -> Any:
    """``np.diff`` of ``x`` with ``n`` zeros put before and after it along ``axis``
    (the transpose of ``np.diff(x, n, axis)``, up to the sign ``(-1)**n``)."""
    widths = [(0, 0)] * np.ndim(x)
    widths[axis] = (n, n)
    return np.diff(np.pad(x, widths), n, axis)


@runtime
def shift_along(x: Any, by: int, axis: int, fill: float = 0.0) -> Any:
    """``x`` moved ``by`` (+1 or -1) places along ``axis``, ``fill`` in the place left empty."""
    out = np.roll(np.asarray(x), by, axis)
    if not np.shape(x)[axis]:
        return out
    empty = [slice(None)] * np.ndim(x)
    empty[axis] = 0 if by > 0 else -1
    out[tuple(empty)] = fill
    return out


@runtime
def linear_scan(a: Any, b: Any, axis: int, reverse: bool = False) -> Any:
    """The recurrence ``y[i] = a[i] * y[i-1] + b[i]`` along ``axis`` (``y[-1] = 0``);
    ``reverse``: its transpose in ``b``, ``y[i] = a[i+1] * y[i+1] + b[i]`` from the end.
    Computed by doubling (log2(n) vectorised steps; no division, so exact at zeros of ``a``):
    after the step of width ``d``, ``(A[i], B[i])`` is the affine map ``y -> A y + B`` of the
    entries ``i-2d+1 .. i`` composed."""
    a, b = np.broadcast_arrays(a, b)
    a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
    if reverse:  # run it forwards on the flipped line, each entry's coefficient being the next entry's
        a, b = np.flip(np.concatenate([a[..., 1:], a[..., :1]], axis=-1), -1), np.flip(b, -1)
    dtype = np.result_type(a, b)
    coef, y = np.array(a, dtype=dtype), np.array(b, dtype=dtype)
    n, d = y.shape[-1], 1
    while d < n:
        y[..., d:] += coef[..., d:] * y[..., :-d]
        coef[..., d:] = coef[..., d:] * coef[..., :-d]
        d *= 2
    return np.moveaxis(np.flip(y, -1) if reverse else y, -1, axis)


# --------------------------------------------------------------------------- axes


def _axis(p: Any) -> int:
    """The axis the scan runs along, as a non-negative int (0 for ``axis=None``: the flattened array)."""
    axis = p.param("axis", -1)
    x = num(p.args[0].type)
    return 0 if axis is None else norm_axes(axis, x.ndim)[0]


def _along(b: Any, v: Atom, p: Any) -> Atom:
    """``v`` (shaped like the scan's input) as the scan sees it: flattened for ``axis=None``."""
    if p.param("axis", -1) is None and num(p.args[0].type).ndim != 1:
        return b.prim("ravel", v)
    return v


def _back(b: Any, v: Atom, p: Any) -> Atom:
    """The transpose of :func:`_along`: ``v`` reshaped like the scan's input."""
    if p.param("axis", -1) is None and num(p.args[0].type).ndim != 1:
        return reshape_like(b, v, p.args[0])
    return v


# --------------------------------------------------------------------------- type rules


def _scan_infer(dtype_rule: Any = None) -> Any:
    def infer(ts: list[Type], params: dict) -> Type:
        x = num(ts[0])
        dtype = dtype_rule(x.dtype) if dtype_rule else x.dtype
        if params.get("axis", -1) is None:
            size = int(np.prod(x.shape)) if x.known_shape else None
            return Num((size,), dtype)
        if x.ndim == 0:
            raise ShapeError("a scan along an axis needs an array of at least one dimension", "axis=None")
        norm_axes(params.get("axis", -1), x.ndim)
        return Num(x.shape, dtype)

    return infer


def _int_sum_dtype(d: str) -> str:
    kind = np.dtype(d).kind  # (numpy's cumsum of unsigned integers: uint64)
    return "int64" if kind in "bi" else "uint64" if kind == "u" else d


def _diff_infer(ts: list[Type], params: dict) -> Type:
    x, n = num(ts[0]), params.get("n", 1)
    if x.ndim == 0:
        raise ShapeError("needs an array of at least one dimension", "np.diff of a 1-D array or more")
    if n < 0:
        raise ShapeError(f"the order n={n} must be non-negative", "n=0 (the array itself), 1, 2, ...")
    axis = norm_axes(params.get("axis", -1), x.ndim)[0]
    d = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = None if d is None else (d + n if params.get("pad") else max(d - n, 0))
    return Num(tuple(shape), x.dtype)


def _same_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    return Num(x.shape, x.dtype)


def _argsort_infer(ts: list[Type], params: dict) -> Type:
    return Num(_scan_infer()(ts, params).shape, "int64")


def _linear_scan_infer(ts: list[Type], params: dict) -> Type:
    a, b = num(ts[0]), num(ts[1])
    return Num(b.shape, np.result_type(a.dtype, b.dtype).name)


# --------------------------------------------------------------------------- printing


def _emit_axis(fn: str, default: Any) -> Any:
    """``np.fn(x, axis=...)``, the axis printed unless it is numpy's default (``None`` printed when it is not)."""

    def emit_(a: list[Expr], ps: dict) -> Expr:
        kw = {} if ps.get("axis", default) == default else {"axis": px.literal(ps.get("axis", default))}
        if ps.get("kind") is not None:
            kw["kind"] = cst.SimpleString(repr(ps["kind"]))  # (a string: px.literal has none)
        return px.call(f"np.{fn}", a, **kw)

    return emit_


def _emit_cumsum(a: list[Expr], ps: dict) -> Expr:
    if ps.get("reverse"):
        return px.call("reverse_cumsum", a, axis=px.literal(ps["axis"]))
    return _emit_axis("cumsum", None)(a, ps)


def _emit_diff(a: list[Expr], ps: dict) -> Expr:
    n, axis = ps.get("n", 1), ps.get("axis", -1)
    if ps.get("pad") and (n != 1 or ps.get("narrow")):  # (prepend=0 would make a float32 array float64)
        return px.call("diff_padded", [a[0], px.literal(n)], axis=px.literal(axis))
    kw = {} if n == 1 else {"n": px.literal(n)}
    if axis != -1:
        kw["axis"] = px.literal(axis)
    if ps.get("pad"):
        kw.update(prepend=px.literal(0), append=px.literal(0))
    return px.call("np.diff", a, **kw)


def _emit_shift(a: list[Expr], ps: dict) -> Expr:
    kw = {"axis": px.literal(ps["axis"])}
    if ps.get("fill"):
        kw["fill"] = px.literal(ps["fill"])
    return px.call("shift_along", [a[0], px.literal(ps["by"])], **kw)


def _emit_linear_scan(a: list[Expr], ps: dict) -> Expr:
    kw = {"axis": px.literal(ps["axis"])}
    if ps.get("reverse"):
        kw["reverse"] = px.literal(True)
    return px.call("linear_scan", a, **kw)


# --------------------------------------------------------------------------- implementations


def _cumsum(x: Any, axis: Any = None, reverse: bool = False) -> Any:
    return reverse_cumsum(x, axis) if reverse else np.cumsum(x, axis)


def _diff(x: Any, n: int = 1, axis: int = -1, pad: bool = False, narrow: bool = False) -> Any:
    return diff_padded(x, n, axis) if pad else np.diff(x, n, axis)


# --------------------------------------------------------------------------- rules


def _cumsum_transpose(b, p, out, ct):
    """The transpose of a cumulative sum is the cumulative sum from the other end."""
    axis = _axis(p)
    return [_back(b, b.prim("cumsum", ct, axis=axis, reverse=not p.param("reverse", False)), p)]


def _diff_transpose(b, p, out, ct):
    """``np.diff`` with zero padding is minus the transpose of ``np.diff`` (and the other way round), n times."""
    n = p.param("n", 1)
    x = p.args[0]
    axis = norm_axes(p.param("axis", -1), num(x.type).ndim)[0]
    size = num(x.type).shape[axis]
    if not p.param("pad", False) and size is not None and size < n:
        return [zeros_of(b, x)]  # fewer than n entries: np.diff is empty, its derivative zero
    narrow = {"narrow": True} if num(ct.type).dtype != "float64" else {}  # (float32: padded by np.pad, not prepend=0)
    v = b.prim("diff", ct, n=n, axis=axis, pad=not p.param("pad", False), **narrow)
    if not p.param("pad", False) and size is None:  # cut to x's length (padding an empty diff gives n entries)
        v = b.prim("getitem", v, b.prim("dim", x, axis=axis),
                   index=(("slice", None, None, None),) * axis + (("slice", None, ("arg", 1), None),))
    return [b.prim("neg", v) if n % 2 else v]


def _exclusive(b, p, out):
    """``out`` moved one place along the axis, 1 first: the product of the entries before each."""
    return b.prim("shift_along", out, by=1, axis=_axis(p), fill=1.0)


def jvp_cumprod(b, p, out, ts):
    """``t_out[i] = x[i] * t_out[i-1] + out[i-1] * t[i]``: a linear recurrence, exact at zeros."""
    if ts[0] is None:
        return None
    x = _along(b, p.args[0], p)
    return b.prim("linear_scan", x, b.prim("mul", _exclusive(b, p, out), _along(b, ts[0], p)), axis=_axis(p))


def vjp_cumprod(b, p, out, ct):
    """``ct_x[k] = out[k-1] * g[k]`` with ``g[k] = ct[k] + x[k+1] * g[k+1]`` (the transpose of the JVP)."""
    x = _along(b, p.args[0], p)
    g = b.prim("linear_scan", x, ct, axis=_axis(p), reverse=True)
    return [_back(b, b.prim("mul", _exclusive(b, p, out), g), p)]


def jvp_linear_scan(b, p, out, ts):
    """Linear in ``b``; in ``a``: ``dy[i] = a[i] dy[i-1] + da[i] y[i-1]`` (from the end: ``da[i+1] y[i+1]``)."""
    (a, _), (ta, tb) = p.args, ts
    axis, rev = p.param("axis"), p.param("reverse", False)
    terms = [] if tb is None else [tb]
    if ta is not None:
        if rev:
            terms.append(b.prim("shift_along", b.prim("mul", ta, out), by=-1, axis=axis))
        else:
            terms.append(b.prim("mul", ta, b.prim("shift_along", out, by=1, axis=axis)))
    if not terms:
        return None
    return b.prim("linear_scan", a, add_all(b, terms), axis=axis, reverse=rev)


def vjp_linear_scan(b, p, out, ct):
    """The transpose of :func:`jvp_linear_scan`: the scan the other way, then the shifted outputs."""
    a = p.args[0]
    axis, rev = p.param("axis"), p.param("reverse", False)
    z = b.prim("linear_scan", a, ct, axis=axis, reverse=not rev)
    if rev:
        ct_a = b.prim("mul", out, b.prim("shift_along", z, by=1, axis=axis))
    else:
        ct_a = b.prim("mul", z, b.prim("shift_along", out, by=1, axis=axis))
    return [ct_a, z]


def jvp_shift(b, p, out, ts):
    if ts[0] is None:
        return None
    return b.prim("shift_along", ts[0], by=p.param("by"), axis=p.param("axis"))


def vjp_shift(b, p, out, ct):
    """Moving by one place (zero fill) transposes to moving back by one place."""
    return [b.prim("shift_along", ct, by=-p.param("by"), axis=p.param("axis"))]


def _sort_order(b, p) -> Atom:
    return b.prim("argsort", _along(b, p.args[0], p), axis=_axis(p))


def jvp_sort(b, p, out, ts):
    """The tangent gathered by the sorting permutation."""
    if ts[0] is None:
        return None
    return b.prim("permute", _along(b, ts[0], p), _sort_order(b, p), axis=_axis(p))


def vjp_sort(b, p, out, ct):
    """The cotangent sent back through the permutation (gathered by its inverse)."""
    axis = _axis(p)
    inverse = b.prim("argsort", _sort_order(b, p), axis=axis)
    return [_back(b, b.prim("permute", ct, inverse, axis=axis), p)]


def _permute_transpose(b, p, out, ct):
    axis = p.param("axis")
    return [b.prim("permute", ct, b.prim("argsort", p.args[1], axis=axis), axis=axis), None]


register(
    Primitive("cumsum", _cumsum, _scan_infer(_int_sum_dtype), _emit_cumsum, zero_in=(0,), kind=RULE,
              **linear(_cumsum_transpose)),
    Primitive("cumprod", lambda x, axis=None: np.cumprod(x, axis), _scan_infer(_int_sum_dtype), _emit_axis("cumprod", None),
              kind=RULE, **explicit(jvp_cumprod, vjp_cumprod)),
    Primitive("diff", _diff, _diff_infer, _emit_diff, zero_in=(0,), kind=RULE, **linear(_diff_transpose)),
    Primitive("sort", lambda x, axis=-1, kind=None: np.sort(x, axis, kind), _scan_infer(), _emit_axis("sort", -1),
              zero_in=(0,), kind=RULE, **explicit(jvp_sort, vjp_sort)),
    Primitive("argsort", lambda x, axis=-1, kind=None: np.argsort(x, axis, kind), _argsort_infer,
              _emit_axis("argsort", -1), kind=DISCRETE),
    # made only in derivative code
    Primitive("linear_scan", linear_scan, _linear_scan_infer, _emit_linear_scan, zero_in=(1,), kind=BACKWARD,
              **explicit(jvp_linear_scan, vjp_linear_scan)),
    Primitive("shift_along", shift_along, _same_infer, _emit_shift, kind=BACKWARD, **explicit(jvp_shift, vjp_shift)),
    Primitive("permute", lambda v, order, axis: np.take_along_axis(v, order, axis),
              lambda ts, ps: Num(num(ts[1]).shape, num(ts[0]).dtype),
              lambda a, ps: px.call("np.take_along_axis", a, axis=px.literal(ps["axis"])), zero_in=(0,), kind=BACKWARD,
              **linear(_permute_transpose, 0)),
)
