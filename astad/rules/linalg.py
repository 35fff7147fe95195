"""Linear algebra: products (``matmul``, ``dot``, ``outer``: linear in each
argument, given by their transposes in each), the diagonal and triangular
parts of matrices (linear, given by their transposes), and the
``np.linalg`` functions that are not decompositions (``inv solve det
slogdet pinv`` and vector norms), each by an explicit JVP and VJP written
with table primitives, so that their derivatives can be differentiated again.
The formulas are the standard matrix-calculus results (Giles, "Collected
matrix derivative results for forward and reverse mode algorithmic
differentiation", 2008): with ``X = inv(A)``, ``dX = -X dA X``; ``d det A =
tr(adj(A) dA)`` (the adjugate, :mod:`.adjugate`: right where ``A`` is singular); ``x = solve(A, b)``: ``dx = solve(A, db - dA x)``,
``b_bar = solve(A^T, x_bar)``, ``A_bar = -b_bar x^T``.  The decompositions
are in :mod:`.decompositions`."""

from __future__ import annotations

import math

import operator
from typing import Any

import numpy as np

from .. import pyexpr as px
from ..ir import Atom, Num, Type
from . import emit
from .derive import bilinear, expand_reduced, explicit, linear, sum_to
from .shape import reshape_like
from .table import DerivativeKind, Primitive, ShapeError, num, register, runtime
from .types import broadcast_shapes, fmt_shape, reduction, result_dtype, size_of

RULE, ZERO, BACKWARD = DerivativeKind.RULE, DerivativeKind.ZERO, DerivativeKind.BACKWARD_ONLY


# --------------------------------------------------------------------------- type rules


#: matmul's result types made, by the ids of its operands' types (kept with them: a hit is the same
#: objects), and each result by its value: one object per distinct type (the caches of later stages keyed
#: by a type's id, e.g. elementwise's, then hit where a program repeats a product)
_MATMULS: dict[tuple[int, int], tuple[Type, Type, Num]] = {}
_RESULTS: dict[Num, Num] = {}


def _matmul_infer(ts: list[Type], params: dict) -> Type:
    ta, tb = ts[0], ts[1]
    hit = _MATMULS.get((id(ta), id(tb)))
    if hit is not None and hit[0] is ta and hit[1] is tb:
        return hit[2]
    out = _matmul_type(ta, tb)
    try:
        out = _RESULTS.setdefault(out, out)
    except TypeError:  # (an unhashable dimension: the type made)
        pass
    if len(_MATMULS) >= 4096:  # (bounded: a long session sees many shapes)
        _MATMULS.clear()
        _RESULTS.clear()
    _MATMULS[(id(ta), id(tb))] = (ta, tb, out)
    return out


_matmul_infer.pairs = _MATMULS  # type: ignore[attr-defined]  (as rules.types.elementwise's: the result last)


def _matmul_type(ta: Type, tb: Type) -> Num:
    a, b = num(ta), num(tb)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul needs arrays of at least one dimension (use * for scalars)")
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka is not None and kb is not None and ka != kb:
        raise ShapeError(f"matmul: shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} are not aligned ({ka} != {kb})")
    if a.ndim == 1 and b.ndim == 1:
        shape: tuple = ()
    elif a.ndim == 1:
        shape = b.shape[:-2] + b.shape[-1:]
    elif b.ndim == 1:
        shape = a.shape[:-1]
    else:
        shape = broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    return Num(shape, result_dtype(a.dtype, b.dtype))


def _dot_infer(ts: list[Type], params: dict) -> Type:
    a, b = num(ts[0]), num(ts[1])
    if a.ndim > 2 or b.ndim > 2:
        raise ShapeError("np.dot of arrays with more than two dimensions is not supported: use np.matmul or @")
    return _matmul_infer(ts, params)


def _outer_infer(ts: list[Type], params: dict) -> Type:
    a, b = num(ts[0]), num(ts[1])
    size = lambda t: None if not t.known_shape else size_of(t.shape)  # noqa: E731
    return Num((size(a), size(b)), result_dtype(a.dtype, b.dtype))


def _diag_infer(ts: list[Type], params: dict) -> Type:
    x, k = num(ts[0]), params.get("k", 0)
    if x.ndim == 1:
        n = None if x.shape[0] is None else x.shape[0] + abs(k)
        return Num((n, n), x.dtype)
    if x.ndim == 2:
        r, c = x.shape
        if r is None or c is None:
            return Num((None,), x.dtype)
        return Num((max(0, min(r + min(k, 0), c - max(k, 0))),), x.dtype)
    raise ShapeError("np.diag needs a 1-D or 2-D array")


def _tri_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    if x.ndim < 2:
        raise ShapeError("np.tril/np.triu need an array of at least two dimensions")
    return Num(x.shape, x.dtype)


# --------------------------------------------------------------------------- transposes


def _swap_last(b: Any, x: Atom) -> Atom:
    nd = num(x.type).ndim
    if nd == 2:
        return b.prim("transpose", x)
    return b.prim("transpose", x, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _matmul_transpose(b, p, out, ct):
    x, y = p.args
    nx, ny = num(x.type).ndim, num(y.type).ndim
    if nx == 1 and ny == 1:
        return [b.prim("mul", ct, y), b.prim("mul", ct, x)]
    if nx == 1:
        if ny > 2:
            return _batched_matmul_transpose(b, x, y, ct)
        return [b.prim("matmul", y, ct), b.prim("outer", x, ct)]
    if ny == 1:
        if nx > 2:
            return _batched_matmul_transpose(b, x, y, ct)
        return [b.prim("outer", ct, y), b.prim("matmul", ct, x)]
    return [
        sum_to(b, b.prim("matmul", ct, _swap_last(b, y)), x),
        sum_to(b, b.prim("matmul", _swap_last(b, x), ct), y),
    ]


def _batched_matmul_transpose(b, x, y, ct):
    """Vectors on one side of a batched matmul: lift them to matrices first."""
    nx, ny = num(x.type).ndim, num(y.type).ndim
    xm = b.prim("expand_dims", x, axis=0) if nx == 1 else x
    ym = b.prim("expand_dims", y, axis=-1) if ny == 1 else y
    ctm = b.prim("expand_dims", ct, axis=-2 if nx == 1 else -1)
    gx = b.prim("matmul", ctm, _swap_last(b, ym))
    gy = b.prim("matmul", _swap_last(b, xm), ctm)
    gx = b.prim("sum", gx, axis=tuple(range(num(gx.type).ndim - 1))) if nx == 1 else sum_to(b, gx, x)
    gy = b.prim("sum", b.prim("reshape", gy, b.const(-1), *[b.const(d) for d in num(y.type).shape]), axis=0) if ny == 1 else sum_to(b, gy, y)
    return [gx, gy]


def _outer_transpose(b, p, out, ct):
    x, y = p.args
    gx = b.prim("matmul", ct, b.prim("ravel", y))
    gy = b.prim("matmul", b.prim("ravel", x), ct)
    return [reshape_like(b, gx, x), reshape_like(b, gy, y)]


def _diag_transpose(b, p, out, ct):
    x = p.args[0]
    k = p.param("k", 0)
    if num(x.type).ndim == 1:
        return [b.prim("diag", ct, k=k)]
    return [b.prim("diag_embed", ct, x, k=k)]


def _tri_transpose(name: str) -> Any:
    def rule(b, p, out, ct):
        return [b.prim(name, ct, k=p.param("k", 0))]

    return rule


@runtime
def diag_embed(ct: Any, like: Any, k: int) -> Any:
    """Cotangent of ``np.diag(x, k)`` for a 2-D ``x``: ``ct`` put back on the k-th diagonal."""
    out = np.zeros_like(like, dtype=np.result_type(ct, like))
    i = np.arange(len(ct))
    out[i + max(-k, 0), i + max(k, 0)] = ct
    return out


register(
    Primitive("matmul", operator.matmul, _matmul_infer, emit.binop("@"), zero_in=(0, 1), kind=RULE,
              **bilinear(_matmul_transpose)),
    Primitive("dot", np.dot, _dot_infer, emit.np_call("dot"), zero_in=(0, 1), kind=RULE, **bilinear(_matmul_transpose)),
    Primitive("outer", np.outer, _outer_infer, emit.np_call("outer"), zero_in=(0, 1), kind=RULE, **bilinear(_outer_transpose)),
    Primitive("diag", lambda x, k=0: np.diag(x, k), _diag_infer, emit.with_k("diag"), zero_in=(0,), kind=RULE,
              **linear(_diag_transpose)),
    Primitive("tril", lambda x, k=0: np.tril(x, k), _tri_infer, emit.with_k("tril"), zero_in=(0,), kind=RULE,
              **linear(_tri_transpose("tril"))),
    Primitive("triu", lambda x, k=0: np.triu(x, k), _tri_infer, emit.with_k("triu"), zero_in=(0,), kind=RULE,
              **linear(_tri_transpose("triu"))),
    # made only in derivative code: the transpose of ``diag`` of a matrix
    Primitive("diag_embed", diag_embed, lambda ts, ps: Num(num(ts[1]).shape, num(ts[0]).dtype), emit.runtime("diag_embed", "k"),
              zero_in=(0,), kind=BACKWARD, **linear(lambda b, p, out, ct: [b.prim("diag", ct, k=p.param("k", 0)), None], 0)),
)


# --------------------------------------------------------------------------- np.linalg: inv solve det slogdet pinv norm


def float_dtype(dtype: str) -> str:
    """numpy.linalg computes in float64 (float32 stays float32)."""
    return "float32" if dtype == "float32" else "float64"


def square(t: Type, what: str) -> Num:
    """A stack of square matrices (``(..., n, n)``)."""
    x = num(t)
    if x.ndim < 2:
        raise ShapeError(f"{what} needs a matrix (an array of at least two dimensions), got shape {fmt_shape(x.shape)}")
    n, m = x.shape[-2:]
    if n is not None and m is not None and n != m:
        raise ShapeError(f"{what} needs square matrices, got shape {fmt_shape(x.shape)}",
                         "np.linalg.pinv or np.linalg.lstsq-free normal equations for a rectangular matrix")
    return x


def _square_infer(what: str) -> Any:
    return lambda ts, ps: Num(square(ts[0], what).shape, float_dtype(num(ts[0]).dtype))


def _det_infer(what: str) -> Any:
    return lambda ts, ps: Num(square(ts[0], what).shape[:-2], float_dtype(num(ts[0]).dtype))


def _solve_infer(ts: list[Type], params: dict) -> Type:
    a, rhs = square(ts[0], "np.linalg.solve"), num(ts[1])
    # (numpy.linalg: float64 where either is an integer or bool array, float32 only where both are float32)
    dtype = "float32" if a.dtype == rhs.dtype == "float32" else "float64"
    if rhs.ndim == 1:
        if a.ndim != 2:
            raise ShapeError("np.linalg.solve of a stack of matrices with a vector b", "b[..., None], then [..., 0]")
        return Num(a.shape[:1], dtype)
    if rhs.ndim < 2:
        raise ShapeError("np.linalg.solve needs b a vector or a matrix")
    return Num(broadcast_shapes(a.shape[:-2], rhs.shape[:-2]) + rhs.shape[-2:], dtype)


def _pinv_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    if x.ndim != 2:
        raise ShapeError("np.linalg.pinv is differentiated for one matrix (2-D)", "a loop over the stack")
    return Num((x.shape[1], x.shape[0]), float_dtype(x.dtype))


def mT(b: Any, x: Atom) -> Atom:
    """The matrix transpose (the last two axes swapped)."""
    return _swap_last(b, x)


def on_matrices(b: Any, v: Atom, like: Atom) -> Atom:
    """``v`` (one number per matrix of the stack ``like``) broadcast against the matrices."""
    nd = num(like.type).ndim
    return v if nd == 2 else b.prim("expand_dims", v, axis=(nd - 2, nd - 1))


def trace_of_product(b: Any, xt: Atom, t: Atom) -> Atom:
    """``tr(X t)`` per matrix, given ``xt = X^T``: the sum of ``X^T * t`` over the last two axes."""
    nd = num(t.type).ndim
    return b.prim("sum", b.prim("mul", xt, t), axis=(nd - 2, nd - 1))


def _inv_jvp(b, p, out, ts):
    return b.prim("neg", b.prim("matmul", b.prim("matmul", out, ts[0]), out))


def _inv_vjp(b, p, out, ct):
    xt = mT(b, out)
    return [b.prim("neg", b.prim("matmul", b.prim("matmul", xt, ct), xt))]


def _logabsdet_jvp(b, p, out, ts):
    """``tr(inv(A) dA)``; nan where ``A`` is singular (``log|det|`` is -inf there, its derivative infinite)."""
    return trace_of_product(b, mT(b, b.prim("inv_or_nan", p.args[0])), ts[0])


def _logabsdet_vjp(b, p, out, ct):
    a = p.args[0]
    return [b.prim("mul", on_matrices(b, ct, a), mT(b, b.prim("inv_or_nan", a)))]


def _det_jvp(b, p, out, ts):
    """``tr(adj(A) dA)``: right at singular matrices too (:mod:`.adjugate`)."""
    return trace_of_product(b, mT(b, b.prim("adjugate", p.args[0])), ts[0])


def _det_vjp(b, p, out, ct):
    a = p.args[0]
    return [b.prim("mul", on_matrices(b, ct, a), mT(b, b.prim("adjugate", a)))]


def _solve_jvp(b, p, out, ts):
    a, _ = p.args
    ta, tb = ts
    rhs = tb
    if ta is not None:
        change = b.prim("matmul", ta, out)
        rhs = b.prim("neg", change) if tb is None else b.prim("sub", tb, change)
    return b.prim("solve", a, rhs)


def _solve_vjp(b, p, out, ct):
    a, rhs = p.args
    gb = b.prim("solve", mT(b, a), ct)
    ga = b.prim("outer", gb, out) if num(rhs.type).ndim == 1 else b.prim("matmul", gb, mT(b, out))
    return [sum_to(b, b.prim("neg", ga), a), sum_to(b, gb, rhs)]


def _of_full_rank(b, a: Atom, d: Atom) -> Atom:
    """``d`` where numpy's pinv keeps every singular value of ``a`` (``s > 1e-15 * max(s)``), else nans:
    at a matrix of lower rank pinv is not continuous (``pinv(eps * T) = pinv(T) / eps``), no derivative exists."""
    s = b.prim("svdvals", a)
    kept = b.prim("gt", b.prim("min", s), b.prim("mul", b.const(1e-15), b.prim("max", s)))
    return b.prim("where", kept, d, b.const(float("nan")))


def _pinv_jvp(b, p, out, ts):
    """Golub and Pereyra: with ``P = pinv(A)`` of full rank,
    ``dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P``."""
    a, (t,) = p.args[0], ts
    mm = lambda x, y: b.prim("matmul", x, y)  # noqa: E731
    pt, tt = mT(b, out), mT(b, t)
    first = b.prim("neg", mm(mm(out, t), out))
    left = mm(out, pt)  # P P^T
    second = mm(left, b.prim("sub", tt, mm(mm(tt, a), out)))
    right = mm(pt, out)  # P^T P
    third = mm(b.prim("sub", tt, mm(out, mm(a, tt))), right)
    return _of_full_rank(b, a, b.prim("add", b.prim("add", first, second), third))


def _pinv_vjp(b, p, out, ct):
    """The transpose of each term: ``-P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)``."""
    a = p.args[0]
    mm = lambda x, y: b.prim("matmul", x, y)  # noqa: E731
    pt, gt = mT(b, out), mT(b, ct)
    first = b.prim("neg", mm(mm(pt, ct), pt))
    left = mm(gt, mm(out, pt))  # G^T P P^T
    second = b.prim("sub", left, mm(a, mm(out, left)))
    right = mm(mm(pt, out), gt)  # P^T P G^T
    third = b.prim("sub", right, mm(mm(right, out), a))
    return [_of_full_rank(b, a, b.prim("add", b.prim("add", first, second), third))]


# vector norms: ``ord`` 2 (also the Frobenius norm, over two axes) and any other p


def _emit_norm(a: list, ps: dict) -> Any:
    kw = {}
    if ps.get("ord", 2) != 2:
        kw["ord"] = emit.literal(ps["ord"])
    if ps.get("axis") is not None:
        kw["axis"] = emit.literal(ps["axis"])
    if ps.get("keepdims"):
        kw["keepdims"] = emit.literal(True)
    return px.call("np.linalg.norm", a, **kw)


def _norm_impl(x: Any, ord: Any = 2, axis: Any = None, keepdims: bool = False) -> Any:
    """A vector norm (the frontend makes ``ord`` other than 2 only over one axis):
    ``ord`` 2 over all axes or two is numpy's default, the Frobenius norm."""
    return np.linalg.norm(x, None if ord == 2 else ord, axis=axis, keepdims=keepdims)


def _norm_gradient(b: Any, p: Any, out: Atom) -> Atom:
    """The gradient of the p-norm, ``sign(x) |x|^(p-1) / n^(p-1)`` (``x / n`` for p = 2),
    taken as 0 where the norm ``n`` is 0 (the subgradient 0, as abs's): dividing by inf there, so that
    its derivative is 0 too, as abs's second derivative (dividing by 1 made it the identity)."""
    x, order = p.args[0], p.param("ord", 2)
    n = expand_reduced(b, out, p)
    safe = b.prim("where", b.prim("eq", n, b.const(0.0)), b.const(math.inf), n)
    if order == 2:
        return b.prim("div", x, safe)
    ratio = b.prim("div", b.prim("abs", x), safe)
    return b.prim("mul", b.prim("sign", x), b.prim("pow", ratio, b.const(float(order) - 1.0)))


def _norm_jvp(b, p, out, ts):
    g = _norm_gradient(b, p, out)
    return b.prim("sum", b.prim("mul", g, ts[0]), axis=p.param("axis"), keepdims=p.param("keepdims", False))


def _norm_vjp(b, p, out, ct):
    return [b.prim("mul", expand_reduced(b, ct, p), _norm_gradient(b, p, out))]


def _norm_infer(ts: list[Type], params: dict) -> Type:
    t = reduction()(ts, params)
    # (numpy's vector norms keep a float dtype, float16 too: what does not compute in float64 is linalg's LAPACK)
    return Num(t.shape, t.dtype if t.dtype.startswith("float") else "float64")  # type: ignore[union-attr]


def _linalg(name: str) -> Any:
    return emit.np_call(f"linalg.{name}")


def _slogdet_part(i: int) -> Any:
    return lambda a, ps: px.subscript(px.call("np.linalg.slogdet", a), [emit.literal(i)])


register(
    Primitive("inv", np.linalg.inv, _square_infer("np.linalg.inv"), _linalg("inv"), kind=RULE,
              **explicit(_inv_jvp, _inv_vjp)),
    Primitive("solve", np.linalg.solve, _solve_infer, _linalg("solve"), zero_in=(1,), kind=RULE,
              **explicit(_solve_jvp, _solve_vjp)),
    Primitive("det", np.linalg.det, _det_infer("np.linalg.det"), _linalg("det"), kind=RULE,
              **explicit(_det_jvp, _det_vjp)),
    # ``sign, logabsdet = np.linalg.slogdet(a)``: one entry per part (the sign is piecewise constant)
    Primitive("slogdet_sign", lambda a: np.linalg.slogdet(a)[0], _det_infer("np.linalg.slogdet"), _slogdet_part(0),
              kind=ZERO),
    Primitive("slogdet_logabsdet", lambda a: np.linalg.slogdet(a)[1], _det_infer("np.linalg.slogdet"), _slogdet_part(1),
              kind=RULE, **explicit(_logabsdet_jvp, _logabsdet_vjp)),
    Primitive("pinv", np.linalg.pinv, _pinv_infer, _linalg("pinv"), kind=RULE, **explicit(_pinv_jvp, _pinv_vjp)),
    Primitive("norm", _norm_impl, _norm_infer, _emit_norm, kind=RULE, **explicit(_norm_jvp, _norm_vjp)),
)
