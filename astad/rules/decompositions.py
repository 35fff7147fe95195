"""Matrix decompositions: ``cholesky``, ``eigh``, ``qr`` (reduced) and ``svd``
(reduced), each part of a result one entry (``w, v = np.linalg.eigh(a)`` is
``eigvalsh(a)`` and ``eigh_vectors(a)``), by an explicit JVP and VJP written
with table primitives, so that they can be differentiated again.

The formulas are the standard ones (Giles 2008, "Collected matrix derivative
results for forward and reverse mode algorithmic differentiation"; the JVPs
of JAX's ``linalg``), transposed by hand for the VJPs:

* ``eigh``: ``dw = diag(V^T dS V)``, ``dV = V (F o (V^T dS V))`` with
  ``F_ij = 1 / (w_j - w_i)`` off the diagonal (distinct eigenvalues);
* ``cholesky``: ``dL = L Phi(L^-1 dS L^-T)``, ``Phi`` the lower triangle with
  the diagonal halved;
* ``qr`` (``m >= n``): with ``C = Q^T dA R^-1`` and ``W = tril(C, -1) -
  tril(C, -1)^T``: ``dQ = Q (W - C) + dA R^-1``, ``dR = (C - W) R``;
* ``svd``: with ``P = U^T dA V`` and ``F_ij = 1 / (s_j^2 - s_i^2)``: ``ds =
  diag(P)``, ``dU = U (F o (P S + S P^T)) + (I - U U^T) dA V S^-1``, ``dV =
  V (F o (S P + P^T S)) + (I - V V^T) dA^T U S^-1`` (distinct, non-zero
  singular values).

**Which matrix ``cholesky`` and ``eigh`` differentiate.**  numpy reads only
one triangle of the matrix (the lower one; ``eigh``'s ``UPLO='U'``: the
upper one), so the function of the whole matrix is ``f(S)`` with ``S = tril(A)
+ tril(A, -1)^T``: the JVP takes ``dS`` so, and the VJP gives the cotangent
of that triangle (the entries numpy does not read get zero).  Along
symmetric directions (``A = X X^T``, say) this is JAX's symmetrised rule; it
is also exact for the entries numpy reads, as finite differences of numpy
are.  Decompositions of stacks of matrices are not supported."""

from __future__ import annotations

from typing import Any

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import Atom, Num, Type
from .derive import explicit
from .linalg import float_dtype, mT, square
from .table import DerivativeKind, Primitive, ShapeError, num, register
from .types import fmt_shape

RULE = DerivativeKind.RULE


# --------------------------------------------------------------------------- shapes


def matrix(t: Type, what: str) -> Num:
    x = num(t)
    if x.ndim != 2:
        raise ShapeError(f"{what} is differentiated for one matrix (2-D), got shape {fmt_shape(x.shape)}",
                         "a loop (or a comprehension) over the stack of matrices")
    return x


def _square_matrix(what: str) -> Any:
    def infer(ts: list[Type], ps: dict) -> Type:
        x = square(matrix(ts[0], what), what)
        return Num(x.shape, float_dtype(x.dtype))

    return infer


def _eigvalsh_infer(ts: list[Type], ps: dict) -> Type:
    x = square(matrix(ts[0], "np.linalg.eigh"), "np.linalg.eigh")
    return Num(x.shape[:1], float_dtype(x.dtype))


def _qr_infer(part: int) -> Any:
    def infer(ts: list[Type], ps: dict) -> Type:
        x = matrix(ts[0], "np.linalg.qr")
        m, n = x.shape
        if m is not None and n is not None and m < n:
            raise ShapeError(f"np.linalg.qr of a wide matrix {fmt_shape(x.shape)} is not differentiable (R is not square)",
                             "the QR decomposition of a square or tall matrix, e.g. np.linalg.qr(a.T)")
        return Num(((m, n), (n, n))[part], float_dtype(x.dtype))

    return infer


def _svd_infer(part: str) -> Any:
    def infer(ts: list[Type], ps: dict) -> Type:
        x = matrix(ts[0], "np.linalg.svd")
        m, n = x.shape
        k = None if m is None or n is None else min(m, n)
        return Num({"u": (m, k), "s": (k,), "vh": (k, n)}[part], float_dtype(x.dtype))

    return infer


# --------------------------------------------------------------------------- shared steps


def mm(b: Any, x: Atom, y: Atom) -> Atom:
    return b.prim("matmul", x, y)


def read_triangle(b: Any, t: Atom, upper: bool) -> Atom:
    """``dS``: the symmetric matrix numpy's function reads from ``t`` (one triangle, mirrored)."""
    tri = "triu" if upper else "tril"
    return b.prim("add", b.prim(tri, t, k=0), mT(b, b.prim(tri, t, k=1 if upper else -1)))


def to_triangle(b: Any, m: Atom, upper: bool) -> Atom:
    """The transpose of :func:`read_triangle`: the cotangent ``m`` of ``S`` on the triangle read."""
    tri = "triu" if upper else "tril"
    return b.prim("add", b.prim(tri, m, k=0), b.prim(tri, mT(b, m), k=1 if upper else -1))


def gaps(b: Any, w: Atom) -> Atom:
    """``F_ij = 1 / (w_j - w_i)`` off the diagonal, 0 on it."""
    n = num(w.type).shape[0]
    eye = b.prim("eye", b.const(n) if n is not None else b.prim("dim", w, axis=0))
    diff = b.prim("sub", b.prim("expand_dims", w, axis=0), b.prim("expand_dims", w, axis=1))
    return b.prim("sub", b.prim("div", b.const(1.0), b.prim("add", diff, eye)), eye)


def diag_of(b: Any, x: Atom) -> Atom:
    return b.prim("diag", x, k=0)


# --------------------------------------------------------------------------- cholesky


def _phi(b: Any, x: Atom) -> Atom:
    """The lower triangle with the diagonal halved."""
    return b.prim("mul", b.const(0.5), b.prim("add", b.prim("tril", x, k=0), b.prim("tril", x, k=-1)))


def _cholesky_jvp(b, p, out, ts):
    ds = read_triangle(b, ts[0], upper=False)
    left = b.prim("solve", out, ds)  # L^-1 dS
    inner = mT(b, b.prim("solve", out, mT(b, left)))  # L^-1 dS L^-T
    return mm(b, out, _phi(b, inner))


def _cholesky_vjp(b, p, out, ct):
    lt = mT(b, out)
    phi = _phi(b, mm(b, lt, ct))
    left = b.prim("solve", lt, phi)  # L^-T Phi
    m = mT(b, b.prim("solve", lt, mT(b, left)))  # L^-T Phi L^-1
    return [to_triangle(b, m, upper=False)]


# --------------------------------------------------------------------------- eigh


def _upper(p: Any) -> bool:
    return p.param("UPLO", "L") == "U"


def _eigvalsh_jvp(b, p, out, ts):
    v = b.prim("eigh_vectors", p.args[0], UPLO=p.param("UPLO", "L"))
    ds = read_triangle(b, ts[0], _upper(p))
    return b.prim("sum", b.prim("mul", v, mm(b, ds, v)), axis=0)


def _eigvalsh_vjp(b, p, out, ct):
    v = b.prim("eigh_vectors", p.args[0], UPLO=p.param("UPLO", "L"))
    return [to_triangle(b, mm(b, b.prim("mul", v, ct), mT(b, v)), _upper(p))]


def _eigh_vectors_jvp(b, p, out, ts):
    f = gaps(b, b.prim("eigvalsh", p.args[0], UPLO=p.param("UPLO", "L")))
    ds = read_triangle(b, ts[0], _upper(p))
    return mm(b, out, b.prim("mul", f, mm(b, mT(b, out), mm(b, ds, out))))


def _eigh_vectors_vjp(b, p, out, ct):
    f = gaps(b, b.prim("eigvalsh", p.args[0], UPLO=p.param("UPLO", "L")))
    inner = b.prim("mul", f, mm(b, mT(b, out), ct))
    return [to_triangle(b, mm(b, mm(b, out, inner), mT(b, out)), _upper(p))]


# --------------------------------------------------------------------------- qr


def _right_inv_r(b: Any, x: Atom, r: Atom) -> Atom:
    """``x R^-1``: nans where ``R`` is singular (a rank-deficient matrix, whose QR decomposition has no derivative)."""
    return mm(b, x, b.prim("inv_or_nan", r))


def _right_inv_rt(b: Any, x: Atom, r: Atom) -> Atom:
    """``x R^-T``."""
    return mm(b, x, mT(b, b.prim("inv_or_nan", r)))


def _qr_parts(b, p):
    a = p.args[0]
    return b.prim("qr_q", a), b.prim("qr_r", a)


def _qr_tangents(b, p, t):
    q, r = _qr_parts(b, p)
    x = _right_inv_r(b, t, r)  # dA R^-1
    c = mm(b, mT(b, q), x)
    low = b.prim("tril", c, k=-1)
    w = b.prim("sub", low, mT(b, low))
    return q, r, x, c, w


def _square(a: Atom) -> bool:
    m, n = num(a.type).shape
    return m is not None and m == n


def _qr_q_jvp(b, p, out, ts):
    """``dQ = Q (W - C) + dA R^-1``; of a square matrix ``Q W``: ``dA R^-1 - Q C`` is 0 there, computed it is
    rounding times ``R^-1`` (of a singular matrix whose last pivot is ~1e-15, wrong by O(1))."""
    q, _, x, c, w = _qr_tangents(b, p, ts[0])
    if _square(p.args[0]):
        return mm(b, q, w)
    return b.prim("add", mm(b, q, b.prim("sub", w, c)), x)


def _qr_r_jvp(b, p, out, ts):
    _, r, _, c, w = _qr_tangents(b, p, ts[0])
    return mm(b, b.prim("sub", c, w), r)


def _qr_vjp(b, p, q_ct, r_ct):
    """``A_bar = (Q_bar + Q K) R^-T`` with ``N = R_bar R^T - Q^T Q_bar`` and
    ``K = triu(N) + tril(N^T, -1)``."""
    q, r = _qr_parts(b, p)
    terms = ([mm(b, r_ct, mT(b, r))] if r_ct is not None else []) + \
            ([b.prim("neg", mm(b, mT(b, q), q_ct))] if q_ct is not None else [])
    n = terms[0] if len(terms) == 1 else b.prim("add", *terms)
    if _square(p.args[0]):  # the same, as ``Q (R_bar + tril(N^T - N, -1) R^-T)``: R^-T only of a strictly lower
        low = _right_inv_rt(b, b.prim("tril", b.prim("sub", mT(b, n), n), k=-1), r)  # triangle (see _qr_q_jvp)
        return [mm(b, q, low if r_ct is None else b.prim("add", r_ct, low))]
    k = b.prim("add", b.prim("triu", n, k=0), b.prim("tril", mT(b, n), k=-1))
    total = mm(b, q, k) if q_ct is None else b.prim("add", q_ct, mm(b, q, k))
    return [_right_inv_rt(b, total, r)]


# --------------------------------------------------------------------------- svd


def _svd_parts(b, p):
    a = p.args[0]
    return b.prim("svd_u", a), b.prim("svdvals", a), b.prim("svd_vh", a)


def _svd_gaps(b: Any, s: Atom) -> Atom:
    return gaps(b, b.prim("mul", s, s))


def _tall(a: Atom) -> int:
    """1 for a tall matrix, -1 for a wide one, 0 for a square one (``None``: not known)."""
    m, n = num(a.type).shape
    return None if m is None or n is None else int(np.sign(m - n))  # type: ignore[return-value]


def _shape_known(a: Atom) -> None:
    if _tall(a) is None:
        raise ShapeError("np.linalg.svd is differentiated for a matrix whose shape is known when transforming")


def _svdvals_jvp(b, p, out, ts):
    u, _, vh = _svd_parts(b, p)
    return b.prim("sum", b.prim("mul", u, mm(b, ts[0], mT(b, vh))), axis=0)


def _svdvals_vjp(b, p, out, ct):
    u, _, vh = _svd_parts(b, p)
    return [mm(b, b.prim("mul", u, ct), vh)]


def _projected(b: Any, x: Atom, basis: Atom, s: Atom) -> Atom:
    """``(I - B B^T) x S^-1``: the part of ``x`` outside the span of ``basis``, columns divided by ``s``."""
    return b.prim("div", b.prim("sub", x, mm(b, basis, mm(b, mT(b, basis), x))), s)


def _svd_vectors_jvp(b, p, ts, left: bool):
    """The tangent of U (``left``) or of V: the same formula, with the roles of U and V (and of
    ``P = U^T dA V`` and its transpose) exchanged; the part outside the span for a tall (U) or wide (V) matrix."""
    a, t = p.args[0], ts[0]
    _shape_known(a)
    u, s, vh = _svd_parts(b, p)
    v = mT(b, vh)
    pm = mm(b, mm(b, mT(b, u), t), v)
    first, second = (pm, mT(b, pm)) if left else (mT(b, pm), pm)
    sym = b.prim("add", b.prim("mul", first, s), b.prim("mul", b.prim("expand_dims", s, axis=1), second))
    basis, other, across = (u, v, t) if left else (v, u, mT(b, t))
    d = mm(b, basis, b.prim("mul", _svd_gaps(b, s), sym))
    if (_tall(a) > 0) if left else (_tall(a) < 0):
        d = b.prim("add", d, _projected(b, mm(b, across, other), basis, s))
    return d if left else mT(b, d)


def _svd_u_jvp(b, p, out, ts):
    return _svd_vectors_jvp(b, p, ts, left=True)


def _svd_vh_jvp(b, p, out, ts):
    return _svd_vectors_jvp(b, p, ts, left=False)


def _svd_u_vjp(b, p, out, ct):
    a = p.args[0]
    _shape_known(a)
    u, s, vh = _svd_parts(b, p)
    j = b.prim("mul", _svd_gaps(b, s), mm(b, mT(b, u), ct))
    pbar = b.prim("mul", b.prim("add", j, mT(b, j)), s)
    grad = mm(b, mm(b, u, pbar), vh)
    return [b.prim("add", grad, mm(b, _projected(b, ct, u, s), vh)) if _tall(a) > 0 else grad]


def _svd_vh_vjp(b, p, out, ct):
    a = p.args[0]
    _shape_known(a)
    u, s, vh = _svd_parts(b, p)
    v, v_ct = mT(b, vh), mT(b, ct)
    k = b.prim("mul", _svd_gaps(b, s), mm(b, vh, v_ct))
    pbar = b.prim("mul", b.prim("expand_dims", s, axis=1), b.prim("add", k, mT(b, k)))
    grad = mm(b, mm(b, u, pbar), vh)
    return [b.prim("add", grad, mm(b, u, mT(b, _projected(b, v_ct, v, s)))) if _tall(a) < 0 else grad]


# --------------------------------------------------------------------------- printing and the entries


def _string(text: str) -> Any:
    return cst.SimpleString(repr(text))


def _part_of(call: str, i: int, **kw: Any) -> Any:
    """``np.linalg.<call>(a, ...)[i]``: one part of a decomposition."""
    def emit_(a: list, ps: dict) -> Any:
        extra = {k: px.literal(v) for k, v in kw.items()}
        if ps.get("UPLO", "L") != "L":
            extra["UPLO"] = _string(ps["UPLO"])
        return px.subscript(px.call(f"np.linalg.{call}", a, **extra), [px.literal(i)])

    return emit_


def _eigvalsh_emit(a: list, ps: dict) -> Any:
    return px.call("np.linalg.eigvalsh", a, **({"UPLO": _string(ps["UPLO"])} if ps.get("UPLO", "L") != "L" else {}))


register(
    Primitive("cholesky", np.linalg.cholesky, _square_matrix("np.linalg.cholesky"),
              lambda a, ps: px.call("np.linalg.cholesky", a), kind=RULE, **explicit(_cholesky_jvp, _cholesky_vjp)),
    Primitive("eigvalsh", lambda a, UPLO="L": np.linalg.eigvalsh(a, UPLO), _eigvalsh_infer, _eigvalsh_emit, kind=RULE,
              **explicit(_eigvalsh_jvp, _eigvalsh_vjp)),
    Primitive("eigh_vectors", lambda a, UPLO="L": np.linalg.eigh(a, UPLO)[1], _square_matrix("np.linalg.eigh"),
              _part_of("eigh", 1), kind=RULE, **explicit(_eigh_vectors_jvp, _eigh_vectors_vjp)),
    Primitive("qr_q", lambda a: np.linalg.qr(a)[0], _qr_infer(0), _part_of("qr", 0), kind=RULE,
              **explicit(_qr_q_jvp, lambda b, p, out, ct: _qr_vjp(b, p, ct, None))),
    Primitive("qr_r", lambda a: np.linalg.qr(a)[1], _qr_infer(1), _part_of("qr", 1), kind=RULE,
              **explicit(_qr_r_jvp, lambda b, p, out, ct: _qr_vjp(b, p, None, ct))),
    Primitive("svdvals", lambda a: np.linalg.svd(a, compute_uv=False), _svd_infer("s"),
              lambda a, ps: px.call("np.linalg.svd", a, compute_uv=px.literal(False)), kind=RULE,
              **explicit(_svdvals_jvp, _svdvals_vjp)),
    Primitive("svd_u", lambda a: np.linalg.svd(a, full_matrices=False)[0], _svd_infer("u"),
              _part_of("svd", 0, full_matrices=False), kind=RULE, **explicit(_svd_u_jvp, _svd_u_vjp)),
    Primitive("svd_vh", lambda a: np.linalg.svd(a, full_matrices=False)[2], _svd_infer("vh"),
              _part_of("svd", 2, full_matrices=False), kind=RULE, **explicit(_svd_vh_jvp, _svd_vh_vjp)),
)
