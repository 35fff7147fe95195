"""What the ``np.linalg`` rules use where a matrix may be singular.

**The adjugate.**  ``d det(A)[dA] = tr(adj(A) dA)``: the derivative of the
determinant exists everywhere (it is a polynomial), but ``det(A) inv(A)``, the
adjugate's usual formula, does not exist where ``A`` is singular.  With the
singular value decomposition ``A = U S V^T`` the adjugate is
``adj(A) = det(U) det(V) V adj(S) U^T`` (``adj`` reverses products, ``adj(U) =
det(U) U^T`` for an orthogonal ``U``) and ``adj(S)`` is diagonal with the
products ``prod_{k != i} s_k``, which need no division: right at any rank
(the approach of JAX's ``det``, whose JVP solves by cofactors for the same
reason).  Its own derivative (for a Hessian of ``det``) follows the same way:
``d adj(A)[T] = det(U) det(V) V D(U^T T V) U^T`` with
``D(M) = diag(P diag(M)) - P o M`` and ``P_ij = prod_{k != i, j} s_k`` off
the diagonal, 0 on it (``D`` is self-adjoint, so the transpose of ``T ->
d adj(A)[T]`` is ``G -> d adj(A^T)[G]``).  Its derivative in ``A`` (a third
derivative of ``det``) is made with ``inv``: nans at singular matrices.

**An inverse that says "none".**  ``log|det A|``'s derivative is ``inv(A)^T``
and the QR decomposition's is made with ``R^-1``: where the matrix is singular
these derivatives do not exist (they are infinite; R's zero diagonal of a
rank-deficient matrix is not differentiable).  ``inv_or_nan`` gives nans for
the singular matrices of a stack instead of raising numpy's ``LinAlgError``
from generated code (JAX's LU-based rules give infs and nans there too); the
primal ``np.linalg.inv`` keeps raising."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Num
from . import emit
from .derive import explicit
from .linalg import _inv_jvp, _inv_vjp, float_dtype, mT, on_matrices, square, trace_of_product
from .table import DerivativeKind, Primitive, num, register, runtime
from .types import broadcast_shapes

RULE, BACKWARD = DerivativeKind.RULE, DerivativeKind.BACKWARD_ONLY


def _exclusive_products(v: Any) -> Any:
    """``out[..., i] = prod_{k != i} v[..., k]`` by prefix and suffix products (no division)."""
    ones = np.ones(v.shape[:-1] + (1,), dtype=v.dtype)
    before = np.cumprod(np.concatenate([ones, v[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, v[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return before * after


def _svd_parts(a: Any) -> tuple:
    """``U, s, V^T`` and ``det(U) det(V^T)`` (+-1); for a matrix with a nan or an infinity (where numpy's SVD
    raises) a sign of nan, so that what is made from them is nan (as ``det`` and ``inv`` of such a matrix)."""
    bad = ~np.isfinite(a).all(axis=(-2, -1))
    if bad.any():
        a = np.where(bad[..., None, None], 0.0, a)
    u, s, vh = np.linalg.svd(a)
    sign = np.linalg.det(u) * np.linalg.det(vh)  # each +-1
    if bad.any():
        sign = np.where(bad, np.nan, sign)
    return u, s, vh, sign[..., None, None]


def _by_inverse(a: Any) -> tuple:
    """``det(a)`` and ``inv(a)`` per matrix, and which matrices are well conditioned enough that ``det(a)
    inv(a)`` is the adjugate to rounding (1-norm condition number below ``1e-8 / eps``); ``None`` if numpy's
    ``inv`` raises (an exactly singular matrix in the stack)."""
    try:
        x = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return None
    norm_a, norm_x = (np.abs(m).sum(axis=-2).max(axis=-1) for m in (a, x))  # 1-norms
    well = norm_a < (1e-8 / np.finfo(x.dtype).eps) / norm_x  # false for a nan
    return np.linalg.det(a), x, well


def _mixed(a: Any, fast: Any, slow: Any, *more: Any) -> Any:
    """``fast(det, inv, *more)`` where ``a`` is well conditioned, else ``slow(a, *more)`` (by the SVD)."""
    a = np.asarray(a)
    if a.shape[-1] == 0:
        return np.zeros(np.broadcast_shapes(a.shape, *(np.shape(m) for m in more)),
                        dtype=np.result_type(a.dtype, *more, np.float32))
    if a.ndim == 2 and np.ndim(more[0] if more else a) == 2:  # one matrix: no masks (the common case, kept cheap)
        try:
            x = np.linalg.inv(a)
        except np.linalg.LinAlgError:
            return slow(a, *more)
        norm_a, norm_x = np.abs(a).sum(axis=0).max(), np.abs(x).sum(axis=0).max()
        if norm_a < (1e-8 / np.finfo(x.dtype).eps) / norm_x:
            return fast(np.linalg.det(a), x, *more)
        return slow(a, *more)
    parts = _by_inverse(a)
    if parts is None or not parts[2].any():
        return slow(a, *more)
    det, x, well = parts
    out = fast(det[..., None, None], x, *more)
    if not well.all():
        bad = ~np.broadcast_to(well, out.shape[:-2])
        ab = np.broadcast_to(a, out.shape[:-2] + a.shape[-2:])
        out[bad] = slow(ab[bad], *(np.broadcast_to(m, out.shape)[bad] for m in more))
    return out


def _adjugate_svd(a: Any) -> Any:
    u, s, vh, sign = _svd_parts(a)
    return sign * np.swapaxes(vh, -1, -2) @ (_exclusive_products(s)[..., :, None] * np.swapaxes(u, -1, -2))


@runtime
def adjugate(a: Any) -> Any:
    """The adjugate of each matrix of ``a`` (``..., n, n``): ``det(a) inv(a)`` where ``a`` is well
    conditioned, else from the SVD (right at singular matrices)."""
    return _mixed(a, lambda det, x: det * x, _adjugate_svd)


def _pair_products(s: Any) -> Any:
    """``P[..., i, j] = prod_{k != i, j} s_k`` for ``i != j``, 0 for ``i == j``."""
    n = s.shape[-1]
    eye = np.eye(n, dtype=bool)
    rows = np.where(eye, 1.0, s[..., None, :])  # row i: s with s_i replaced by 1
    return np.where(eye, 0.0, _exclusive_products(rows))


def _tangent_svd(a: Any, t: Any) -> Any:
    u, s, vh, sign = _svd_parts(a)
    m = np.swapaxes(u, -1, -2) @ t @ np.swapaxes(vh, -1, -2)  # U^T t V
    p = _pair_products(s)
    d = -p * m
    i = np.arange(s.shape[-1])
    d[..., i, i] = np.einsum("...ij,...j->...i", p, np.diagonal(m, axis1=-2, axis2=-1))
    return sign * np.swapaxes(vh, -1, -2) @ d @ np.swapaxes(u, -1, -2)


def _tangent_by_inverse(det: Any, x: Any, t: Any) -> Any:
    """``det (tr(X t) X - X t X)``."""
    xt = x @ t
    return det * (np.trace(xt, axis1=-2, axis2=-1)[..., None, None] * x - xt @ x)


@runtime
def adjugate_tangent(a: Any, t: Any) -> Any:
    """``d adj(a)[t]``, for each matrix of the stacks ``a`` and ``t``."""
    return _mixed(a, _tangent_by_inverse, _tangent_svd, np.asarray(t))


@runtime
def inv_or_nan(a: Any) -> Any:
    """``np.linalg.inv`` of each matrix of ``a``, nans for the singular ones (where no derivative exists)."""
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        a = np.asarray(a)
        out = np.full(a.shape, np.nan, dtype=np.result_type(a.dtype, np.float32))
        for idx in np.ndindex(a.shape[:-2]):
            try:
                out[idx] = np.linalg.inv(a[idx])
            except np.linalg.LinAlgError:
                pass
        return out


def _adjugate_jvp(b, p, out, ts):
    return b.prim("adjugate_tangent", p.args[0], ts[0])


def _adjugate_vjp(b, p, out, ct):
    return [b.prim("adjugate_tangent", mT(b, p.args[0]), ct)]


def _tangent_jvp(b, p, out, ts):
    a, t = p.args
    terms = [] if ts[1] is None else [b.prim("adjugate_tangent", a, ts[1])]
    if ts[0] is not None:  # a third derivative of det: by inv (nans where ``a`` is singular)
        terms.append(_tangent_in_a(b, a, t, ts[0]))
    return None if not terms else terms[0] if len(terms) == 1 else b.prim("add", *terms)


def _tangent_in_a(b: Any, a: Any, t: Any, s: Any) -> Any:
    """``d/da adjugate_tangent(a, t)[s]``: with ``X = inv(a)``, ``adjugate_tangent(a, t) = det(a) (tr(X t) X -
    X t X)``, whose derivative along ``s`` is ``det(a) (tr(X s) (tr(X t) X - X t X) - tr(X s X t) X
    - tr(X t) X s X + X s X t X + X t X s X)``."""
    mm = lambda x, y: b.prim("matmul", x, y)  # noqa: E731
    x = b.prim("inv_or_nan", a)
    xt = mT(b, x)
    tr = lambda m: on_matrices(b, trace_of_product(b, xt, m), a)  # noqa: E731  tr(X m), broadcast per matrix
    xs, xt_ = mm(x, s), mm(x, t)
    xsx, xtx = mm(xs, x), mm(xt_, x)
    first = b.prim("mul", tr(s), b.prim("sub", b.prim("mul", tr(t), x), xtx))
    second = b.prim("add", b.prim("mul", tr(mm(s, xt_)), x), b.prim("mul", tr(t), xsx))
    third = b.prim("add", mm(xs, xtx), mm(xt_, xsx))
    inner = b.prim("add", b.prim("sub", first, second), third)
    return b.prim("mul", on_matrices(b, b.prim("det", a), a), inner)


def _tangent_vjp(b, p, out, ct):
    """The transpose in ``t`` is ``adjugate_tangent(a^T, ct)``; in ``a``, of the map in ``s`` above:
    ``det(a) (<G, K> X^T - <G, X> Y^T - tr(X t) X^T G X^T + X^T G Y^T + Y^T G X^T)`` with ``G = ct``,
    ``Y = X t X`` and ``K = tr(X t) X - Y``."""
    a, t = p.args
    mm = lambda x, y: b.prim("matmul", x, y)  # noqa: E731
    inner = lambda x, y: on_matrices(b, trace_of_product(b, x, y), a)  # noqa: E731  <x, y> per matrix
    x = b.prim("inv_or_nan", a)
    xt = mT(b, x)
    y = mm(mm(x, t), x)
    yt = mT(b, y)
    tr_t = inner(xt, t)
    k = b.prim("sub", b.prim("mul", tr_t, x), y)
    xgx = mm(mm(xt, ct), xt)
    scalars = b.prim("sub", b.prim("mul", inner(ct, k), xt), b.prim("mul", inner(ct, x), yt))
    pairs = b.prim("add", mm(mm(xt, ct), yt), mm(mm(yt, ct), xt))
    total = b.prim("add", b.prim("sub", scalars, b.prim("mul", tr_t, xgx)), pairs)
    return [b.prim("mul", on_matrices(b, b.prim("det", a), a), total), b.prim("adjugate_tangent", mT(b, a), ct)]


def _square(ts: list, ps: dict) -> Num:
    return Num(square(ts[0], "the adjugate").shape, float_dtype(num(ts[0]).dtype))


def _tangent_infer(ts: list, ps: dict) -> Num:
    a, t = _square(ts, ps), num(ts[1])
    return Num(broadcast_shapes(a.shape[:-2], t.shape[:-2]) + a.shape[-2:], a.dtype)


register(
    Primitive("adjugate", adjugate, _square, emit.runtime("adjugate"), kind=RULE,
              **explicit(_adjugate_jvp, _adjugate_vjp)),
    # made only in derivative code (derivatives of det's rules): linear in its second argument
    Primitive("adjugate_tangent", adjugate_tangent, _tangent_infer, emit.runtime("adjugate_tangent"), zero_in=(1,),
              kind=BACKWARD, jvp=_tangent_jvp, vjp=_tangent_vjp),
    Primitive("inv_or_nan", inv_or_nan, _square, emit.runtime("inv_or_nan"), kind=RULE,
              **explicit(_inv_jvp, _inv_vjp)),
)
