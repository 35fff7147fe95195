"""End to end: user programs calling ``np.linalg`` (norms, det, slogdet, inv,
solve, cholesky, eigh, qr, svd, pinv, matrix_power, trace) with numpy's keyword
arguments and several shapes, differentiated by reverse mode (``astad.grad``)
and forward mode (``astad.jvp``), each checked against central finite
differences in float64 and against the other direction (``<grad, t> == jvp(t)``).
Losses of eigenvectors and singular vectors are invariant under their signs
(``V * V``, ``U @ Vh``), as derivatives of those are."""

from __future__ import annotations

import numpy as np
import numpy.linalg as la
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.linalg import norm

import astad
from astad.errors import AstadError

RNG = np.random.default_rng(11)


def _fd(f, args, tangents, h=1e-6):
    plus = [a + h * t if t is not None else a for a, t in zip(args, tangents)]
    minus = [a - h * t if t is not None else a for a, t in zip(args, tangents)]
    return (f(*plus) - f(*minus)) / (2 * h)


def check(f, *args, rtol=1e-6, rng=RNG):
    """Reverse and forward mode of ``f`` at ``args`` against central differences, and against each other."""
    args = [np.asarray(a, dtype=float) for a in args]
    tangents = [rng.standard_normal(a.shape) for a in args]
    want = _fd(f, args, tangents)
    grads = astad.grad(f, argnums=tuple(range(len(args))))(*args)
    back = sum(float(np.sum(g * t)) for g, t in zip(grads, tangents))
    value, forward = astad.jvp(f, tuple(args), tuple(tangents))
    np.testing.assert_allclose(value, f(*args), rtol=1e-12, atol=1e-12)
    scale = 1.0 + abs(want)
    assert abs(back - want) <= rtol * scale * 10, (back, want)
    assert abs(forward - want) <= rtol * scale * 10, (forward, want)
    assert abs(forward - back) <= 1e-9 * scale, (forward, back)


def _orthogonal(n, rng=RNG):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def _full(m, n, rng=RNG):
    """Of full rank, singular values at least 0.8 apart."""
    k = min(m, n)
    s = 1.0 + np.arange(k)[::-1] + rng.uniform(-0.1, 0.1, k)
    return (_orthogonal(m, rng)[:, :k] * s) @ _orthogonal(n, rng)[:, :k].T


def _sym(n):
    q = _orthogonal(n)
    return (q * (np.arange(n) - n / 2 + RNG.uniform(-0.1, 0.1, n))) @ q.T


SQUARE = 2 * np.eye(3) + RNG.uniform(-0.5, 0.5, (3, 3))
STACK = 2 * np.eye(3) + RNG.uniform(-0.5, 0.5, (2, 3, 3))
W3 = RNG.standard_normal((3, 3))


# --------------------------------------------------------------------------- norms


def vector_norms(x):
    return (np.linalg.norm(x) + np.linalg.norm(x, 1) + np.linalg.norm(x, ord=np.inf) + np.linalg.norm(x, -np.inf)
            + np.linalg.norm(x, 3) + np.linalg.norm(x, ord=2.5))


def norms_along_axes(m):
    rows = np.linalg.norm(m, axis=1)
    cols = np.linalg.norm(m, ord=1, axis=0, keepdims=True)
    peaks = np.linalg.norm(m, np.inf, axis=-1, keepdims=True)
    p = np.linalg.norm(m, 3, axis=0)
    return np.sum(rows * rows) + np.sum(cols @ m.T) + np.sum(peaks * m) + np.sum(p)


def matrix_norms(m):
    return (np.linalg.norm(m) + np.linalg.norm(m, 'fro') + np.linalg.norm(m, 'nuc') + np.linalg.norm(m, 2)
            + np.linalg.norm(m, -2) + np.linalg.norm(m, 1) + np.linalg.norm(m, np.inf) + np.linalg.norm(m, -1)
            + np.linalg.norm(m, -np.inf) + np.sum(np.linalg.norm(m, 2, axis=(1, 0), keepdims=True) * m))


def stacked_frobenius(t):
    return np.sum(np.linalg.norm(t, axis=(0, 2)) * np.array([1.0, 2.0, 3.0])) + np.linalg.norm(t, keepdims=True)[0, 0, 0]


def numpy2_norms(t):
    return (np.linalg.vector_norm(t) + np.sum(np.linalg.vector_norm(t, ord=1, keepdims=True) * t)
            + np.sum(np.linalg.vector_norm(t, axis=(0, 2), keepdims=True) * t) + np.sum(np.linalg.vector_norm(t, axis=1, ord=3))
            + np.linalg.matrix_norm(t[0], ord='nuc') + np.sum(np.linalg.matrix_norm(t, ord=1))
            + np.sum(np.linalg.matrix_norm(t, keepdims=True) * t))


def aliases(x):
    return la.norm(x) * norm(x, 1)


def test_vector_norms():
    check(vector_norms, RNG.uniform(0.3, 2, 5) * RNG.choice([-1, 1], 5))


def test_norms_along_axes():
    check(norms_along_axes, RNG.standard_normal((3, 4)))


def test_matrix_norms():
    check(matrix_norms, _full(4, 3))
    check(matrix_norms, _full(2, 3))


def test_frobenius_of_a_stack():
    check(stacked_frobenius, RNG.standard_normal((2, 3, 4)))


@pytest.mark.skipif(not hasattr(np.linalg, "vector_norm"), reason="numpy 2's vector_norm and matrix_norm")
def test_numpy2_norms():
    check(numpy2_norms, RNG.uniform(0.3, 2, (2, 3, 4)) * RNG.choice([-1, 1], (2, 3, 4)))


def test_module_aliases():
    check(aliases, RNG.standard_normal(4))


def test_the_two_norm_at_zero_has_the_subgradient_zero():
    """The choice at the kink: 0 (as JAX), not nan, in both directions."""
    def f(x):
        return np.linalg.norm(x) + np.sum(np.linalg.norm(x, axis=1, keepdims=True) * x)

    x = np.zeros((2, 3))
    x[1] = [1.0, -2.0, 2.0]
    g = astad.grad(f)(x)
    assert np.all(np.isfinite(g))
    _, t = astad.jvp(f, (np.zeros((2, 3)),), (np.ones((2, 3)),))
    assert t == 0.0
    check(f, x + RNG.uniform(0.2, 0.5, x.shape))


# --------------------------------------------------------------------------- det slogdet inv solve pinv


def determinants(a, s):
    sign, logdet = np.linalg.slogdet(a)
    batched = np.linalg.slogdet(s)
    return np.linalg.det(a) + sign * logdet + np.sum(np.linalg.det(s)) + np.sum(batched.logabsdet)


def inverses(a, s):
    return np.sum(np.linalg.inv(a) * W3) + np.sum(np.linalg.inv(s)[1] @ a)


def solves(a, b, m, s):
    x = np.linalg.solve(a, b)
    y = np.linalg.solve(a=a, b=m)
    z = np.linalg.solve(s, m[:, :2])
    return np.sum(x * x) + np.sum(y * W3[:, :2]) + np.sum(z)


def pseudo_inverses(tall, wide):
    return np.sum(np.linalg.pinv(tall) * np.arange(12.0).reshape(3, 4)) + np.sum(np.linalg.pinv(wide) ** 2)


def powers(a):
    return (np.sum(np.linalg.matrix_power(a, 3) * W3) + np.sum(np.linalg.matrix_power(a, n=-2))
            + np.sum(np.linalg.matrix_power(a, 1)) + np.sum(np.linalg.matrix_power(a, 0) * a) + np.linalg.trace(a @ a)
            + np.linalg.trace(a, offset=1))


def test_determinants():
    check(determinants, SQUARE * np.array([[1.0], [-1.0], [1.0]]), STACK)


def test_inverses():
    check(inverses, SQUARE, STACK)


def test_solves():
    check(solves, SQUARE, RNG.standard_normal(3), RNG.standard_normal((3, 2)), STACK)


def test_pseudo_inverses():
    check(pseudo_inverses, _full(4, 3), _full(2, 3))


def test_matrix_powers():
    check(powers, SQUARE)


# --------------------------------------------------------------------------- decompositions


def cholesky_of_a_gram_matrix(x):
    a = x @ x.T + 3.0 * np.eye(3)
    l = np.linalg.cholesky(a)
    return np.sum(l * W3) + 2 * np.sum(np.log(np.diag(l)))


def cholesky_of_an_argument(a):
    return np.sum(np.linalg.cholesky(a) ** 2 * W3)


def eigh_losses(a):
    w, v = np.linalg.eigh(a)
    vu = np.linalg.eigh(a, UPLO='U').eigenvectors
    return (np.sum(w * np.array([1.0, -2.0, 0.5, 3.0])) + np.sum((v * v) @ np.arange(4.0))
            + np.sum((vu * vu) * W3[0, 0]) + np.sum(np.linalg.eigvalsh(a, 'U') ** 2))


def eigh_reconstruction(x):
    w, v = np.linalg.eigh(x + x.T)
    return np.sum((v * np.exp(w)) @ v.T * W3)


def qr_losses(a):
    q, r = np.linalg.qr(a)
    r_only = np.linalg.qr(a, mode='r')
    return np.sum((q * q) @ np.array([1.0, 2.0, -1.0])) + np.sum(r * r * np.triu(np.ones((3, 3)))) + np.sum(r_only ** 2)


def svd_losses(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    just_s = np.linalg.svd(a, compute_uv=False)
    return np.sum((u * u) @ s) + np.sum(u @ vh * a) + np.sum((vh * vh) * s[:, None]) + np.sum(just_s ** 3)


def svd_of_a_square(a):
    r = np.linalg.svd(a)
    return np.sum(r.U @ r.Vh * W3) + np.sum(r.S) + np.sum(np.linalg.svdvals(a))


def test_cholesky_of_a_gram_matrix():
    check(cholesky_of_a_gram_matrix, RNG.standard_normal((3, 3)))


def test_cholesky_reads_the_lower_triangle():
    """numpy reads only the lower triangle: the derivative of what it computes,
    exact in every entry (the upper ones get zero)."""
    x = RNG.standard_normal((3, 3))
    a = x @ x.T + 3 * np.eye(3)
    check(cholesky_of_an_argument, a)
    assert np.all(np.triu(astad.grad(cholesky_of_an_argument)(a), 1) == 0)


def test_eigh():
    check(eigh_losses, _sym(4))
    check(eigh_reconstruction, _sym(3) / 2)


def test_qr():
    check(qr_losses, _full(5, 3))
    check(qr_losses, _full(3, 3))


def test_svd():
    check(svd_losses, _full(5, 3))
    check(svd_losses, _full(3, 5))
    check(svd_of_a_square, _full(3, 3))


def any_shape(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return (np.sum(u @ vh * a) + np.sum(s ** 2) + np.linalg.norm(a, 'nuc') + np.linalg.norm(a, 1)
            + np.sum(np.linalg.norm(a, axis=0, keepdims=True) * a) + np.sum(np.linalg.norm(a, 3, axis=-1)))


def tall_shape(a):
    q, r = np.linalg.qr(a)
    return np.sum((q * q) @ np.diag(r)) + np.sum(np.linalg.pinv(a) ** 2)


@settings(max_examples=6, deadline=None)
@given(m=st.integers(1, 4), n=st.integers(1, 4), seed=st.integers(0, 2**31))
def test_decompositions_of_any_shape(m, n, seed):
    """SVD, norms, QR and pinv of tall, wide and square matrices (shapes drawn by hypothesis)."""
    rng = np.random.default_rng(seed)
    check(any_shape, _full(m, n, rng), rng=rng)
    check(tall_shape, _full(max(m, n), min(m, n), rng), rng=rng)


def logdet(a):
    return np.linalg.slogdet(a)[1] + np.sum(np.linalg.eigvalsh(a + a.T) ** 2)


def pinv_squares(a):
    return np.sum(np.linalg.pinv(a) ** 2) + np.sum(np.linalg.solve(a.T @ a, a[0]) ** 2) + np.linalg.det(a.T @ a)


@pytest.mark.parametrize("f, make", [(logdet, lambda: SQUARE), (svd_losses, lambda: _full(4, 3)),
                                     (svd_losses, lambda: _full(2, 3)), (qr_losses, lambda: _full(4, 3)),
                                     (eigh_losses, lambda: _sym(4)), (cholesky_of_a_gram_matrix, lambda: W3),
                                     (matrix_norms, lambda: _full(3, 2)), (vector_norms, lambda: RNG.uniform(0.3, 2, 4)),
                                     (pinv_squares, lambda: _full(4, 3))], ids=lambda v: getattr(v, "__name__", ""))
def test_second_derivatives_by_forward_over_reverse(f, make):
    """The VJPs are made of table entries, so they are differentiated again: the
    Hessian (forward over reverse) against central differences of the gradient."""
    a = make()
    t = RNG.standard_normal(a.shape)
    h = astad.hessian(f)(a)
    g = astad.grad(f)
    fd = (g(a + 1e-5 * t) - g(a - 1e-5 * t)) / 2e-5
    np.testing.assert_allclose(np.tensordot(h, t, axes=a.ndim), fd, rtol=1e-6, atol=1e-6 * (1 + np.max(np.abs(fd))))


# --------------------------------------------------------------------------- refused, with astad's own error


def wide_qr(a):
    return np.sum(np.linalg.qr(a)[1])


def full_svd(a):
    return np.sum(np.linalg.svd(a)[0])


def count_norm(x):
    return np.linalg.norm(x, 0)


def upper_cholesky(a):
    return np.sum(np.linalg.cholesky(a, upper=True))


def stacked_eigh(a):
    return np.sum(np.linalg.eigvalsh(a))


@pytest.mark.parametrize("f, shape, hint", [(wide_qr, (2, 3), "np.linalg.qr(a.T)"), (full_svd, (2, 3), "full_matrices=False"),
                                             (count_norm, (3,), "np.sum(x != 0)"), (upper_cholesky, (3, 3), ".T"),
                                             (stacked_eigh, (2, 3, 3), "loop")])
def test_refused_with_a_hint(f, shape, hint):
    x = np.eye(*shape[-2:])[None].repeat(2, 0) if len(shape) == 3 else np.ones(shape) + np.eye(*shape[-2:]) if len(shape) == 2 else np.ones(shape)
    with pytest.raises(AstadError) as e:
        astad.grad(f)(x)
    assert e.value.loc is not None and hint in (e.value.hint or ""), str(e.value)
