"""Linear algebra: products (``matmul``, ``dot``, ``outer``: linear in each
argument, given by their transposes in each) and the diagonal and triangular
parts of matrices (linear, given by their transposes)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..ir import Atom, Num, Type
from . import emit
from .derive import bilinear, linear, sum_to
from .shape import reshape_like
from .table import DerivativeKind, Primitive, ShapeError, num, register, runtime
from .types import broadcast_shapes, fmt_shape

RULE, BACKWARD = DerivativeKind.RULE, DerivativeKind.BACKWARD_ONLY


# --------------------------------------------------------------------------- type rules


def _matmul_infer(ts: list[Type], params: dict) -> Type:
    a, b = num(ts[0]), num(ts[1])
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
    dtype = np.result_type(a.dtype, b.dtype).name
    return Num(shape, dtype)


def _dot_infer(ts: list[Type], params: dict) -> Type:
    a, b = num(ts[0]), num(ts[1])
    if a.ndim > 2 or b.ndim > 2:
        raise ShapeError("np.dot of arrays with more than two dimensions is not supported: use np.matmul or @")
    return _matmul_infer(ts, params)


def _outer_infer(ts: list[Type], params: dict) -> Type:
    a, b = num(ts[0]), num(ts[1])
    size = lambda t: None if not t.known_shape else int(np.prod(t.shape, dtype=int))  # noqa: E731
    return Num((size(a), size(b)), np.result_type(a.dtype, b.dtype).name)


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
