"""Derivatives of ``np.linalg`` functions at singular and nearly singular
matrices: ``det``'s derivative (the adjugate) exists everywhere and is checked
against central finite differences of numpy's ``det`` (a polynomial: the
differences are exact enough) and forward against reverse mode; where no
derivative exists (``slogdet`` and ``qr`` of a singular matrix) astad gives
nans, never numpy's ``LinAlgError`` from generated code; ``inv`` and
``solve`` of a singular matrix raise numpy's error from the primal."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad

RNG = np.random.default_rng(5)


def low_rank(n, rank, rng=RNG, batch=()):
    """An exactly rank-deficient matrix (``rank < n``) with integer entries (exact in float64)."""
    left = rng.integers(-2, 3, batch + (n, rank)).astype(float)
    right = rng.integers(-2, 3, batch + (rank, n)).astype(float)
    return left @ right


def det_loss(a):
    return np.sum(np.linalg.det(a) * np.linalg.det(a + 1.0))


def plain_det(a):
    return np.linalg.det(a)


def _fd(f, a, t, h=1e-3):
    """Central differences of fourth order (error h^4 f^(5): the products of determinants are polynomials)."""
    return (8 * (f(a + h * t) - f(a - h * t)) - (f(a + 2 * h * t) - f(a - 2 * h * t))) / (12 * h)


def check(f, a, rng=RNG, rtol=1e-6):
    t = rng.standard_normal(a.shape)
    want = _fd(f, a, t)
    g = astad.grad(f)(a)
    back = float(np.sum(g * t))
    value, forward = astad.jvp(f, (a,), (t,))
    np.testing.assert_allclose(value, f(a), rtol=1e-12, atol=1e-12)
    scale = 1.0 + abs(want) + float(np.sum(np.abs(g) * np.abs(t)))
    assert abs(back - want) <= rtol * scale, (back, want)
    assert abs(forward - want) <= rtol * scale, (forward, want)
    assert abs(forward - back) <= 1e-10 * scale, (forward, back)


@pytest.mark.parametrize("n, rank", [(1, 0), (2, 1), (3, 2), (3, 1), (4, 3), (4, 2), (5, 0), (6, 5)])
def test_det_at_singular_matrices(n, rank):
    a = low_rank(n, rank) if rank else np.zeros((n, n))
    check(plain_det, a)
    check(det_loss, a)


def test_det_gradient_is_the_adjugate():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(astad.grad(plain_det)(a), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    np.testing.assert_allclose(astad.grad(plain_det)(np.zeros((3, 3))), np.zeros((3, 3)), atol=1e-15)
    e = np.zeros((3, 3))
    e[0, 0] = e[1, 1] = 1.0  # rank 2: only the (2, 2) cofactor is non-zero
    want = np.zeros((3, 3))
    want[2, 2] = 1.0
    np.testing.assert_allclose(astad.grad(plain_det)(e), want, atol=1e-15)


def test_det_of_a_stack_with_singular_matrices():
    a = np.stack([low_rank(3, 2), np.zeros((3, 3)), RNG.standard_normal((3, 3)), low_rank(3, 1)])
    check(det_loss, a)


def test_det_near_singular_and_well_conditioned():
    for eps in (1e-3, 1e-7):
        check(det_loss, low_rank(4, 3) + eps * RNG.standard_normal((4, 4)))
    for n in (1, 2, 5):
        check(det_loss, RNG.standard_normal((n, n)) + 3 * np.eye(n))


def test_det_hessian_at_singular_matrices():
    for a in (low_rank(3, 2), low_rank(4, 2), np.zeros((3, 3)), RNG.standard_normal((3, 3))):
        h = astad.hessian(plain_det)(a)
        n = a.shape[0]
        t, u = RNG.standard_normal((n, n)), RNG.standard_normal((n, n))
        eps = 1e-4
        want = (plain_det(a + eps * t + eps * u) - plain_det(a + eps * t - eps * u)
                - plain_det(a - eps * t + eps * u) + plain_det(a - eps * t - eps * u)) / (4 * eps * eps)
        got = np.einsum("ij,ijkl,kl->", t, h, u)
        assert abs(got - want) <= 1e-5 * (1 + abs(want)), (got, want)
        np.testing.assert_allclose(h, h.transpose(2, 3, 0, 1), atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(0, 5), st.integers(0, 2**32 - 1))
def test_det_of_random_low_rank_matrices(n, rank, seed):
    """The gradient against the cofactors (determinants of the minors: an independent, exact reference for
    integer matrices), forward against reverse, and finite differences where they are exact enough."""
    rng = np.random.default_rng(seed)
    a = low_rank(n, min(rank, n), rng) if rank else np.zeros((n, n))
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) if n > 1 else 1.0
                     for j in range(n)] for i in range(n)])
    g = astad.grad(plain_det)(a)
    np.testing.assert_allclose(g, cof, atol=1e-9 * (1 + np.max(np.abs(cof))))
    t = rng.standard_normal((n, n))
    _, forward = astad.jvp(plain_det, (a,), (t,))
    assert abs(forward - np.sum(g * t)) <= 1e-10 * (1 + np.sum(np.abs(g * t)))
    if n <= 4:
        check(det_loss, a, rng)


def logabsdet(a):
    sign, logdet = np.linalg.slogdet(a)
    return logdet


def qr_loss(a):
    q, r = np.linalg.qr(a)
    return np.sum(q * q * r[0, 0]) + np.sum(r)


@pytest.mark.parametrize("f", [logabsdet, qr_loss])
def test_no_derivative_gives_nans_not_linalgerror(f):
    a = np.zeros((3, 3))
    a[0, 0] = 1.0
    grad = astad.grad(f)(a)
    assert np.isnan(grad).any()
    _, tangent = astad.jvp(f, (a,), (RNG.standard_normal((3, 3)),))
    assert np.isnan(tangent)


def test_slogdet_of_a_stack_with_one_singular_matrix():
    def f(a):
        return np.sum(np.linalg.slogdet(a)[1][:2])

    good = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    a = np.concatenate([good, np.zeros((1, 3, 3))])
    g = astad.grad(f)(a)
    assert np.isnan(g[2]).all() and np.isfinite(g[:2]).all()
    np.testing.assert_allclose(g[:2], np.swapaxes(np.linalg.inv(good), -1, -2), rtol=1e-10)


def test_slogdet_and_qr_still_match_finite_differences_where_regular():
    a = RNG.standard_normal((4, 4)) + 2 * np.eye(4)
    check(logabsdet, a)
    check(qr_loss, RNG.standard_normal((5, 3)))


@pytest.mark.parametrize("f", [lambda a: np.sum(np.linalg.inv(a)),
                               lambda a: np.sum(np.linalg.solve(a, np.ones(3)))])
def test_inv_and_solve_of_a_singular_matrix_raise_from_the_primal(f):
    with pytest.raises(np.linalg.LinAlgError):
        astad.grad(f)(np.zeros((3, 3)))


def test_det_derivatives_at_a_matrix_with_a_nan_are_nan():
    """numpy's det is nan there; its SVD would raise: the derivative is nan (for that matrix of a stack only)."""
    a = np.stack([RNG.standard_normal((3, 3)), np.full((3, 3), np.nan)])
    g = astad.grad(det_loss)(a)
    assert np.isnan(g[1]).all() and np.isfinite(g[0]).all()
    _, tangent = astad.jvp(plain_det, (a[1],), (np.ones((3, 3)),))
    assert np.isnan(tangent)
    assert np.isnan(astad.hessian(plain_det)(a[1])).all()


def test_third_derivative_of_det_matches_finite_differences_of_the_hessian():
    a = RNG.standard_normal((3, 3)) + 2 * np.eye(3)
    t = RNG.standard_normal((3, 3))
    h = astad.hessian(plain_det)
    _, third = astad.jvp(h, (a,), (t,))
    eps = 1e-5
    np.testing.assert_allclose(third, (h(a + eps * t) - h(a - eps * t)) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_the_two_ways_to_the_adjugate_agree():
    """``det inv`` (well conditioned matrices) and the SVD (any), on a stack mixing both."""
    from astad.rules.adjugate import _adjugate_svd, _tangent_svd, adjugate, adjugate_tangent
    a = RNG.standard_normal((6, 4, 4)) + 2 * np.eye(4)
    t = RNG.standard_normal((6, 4, 4))
    np.testing.assert_allclose(adjugate(a), _adjugate_svd(a), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(adjugate_tangent(a, t), _tangent_svd(a, t), rtol=1e-9, atol=1e-12)
    mixed = a.copy()
    mixed[1], mixed[4] = low_rank(4, 3), low_rank(4, 2)
    by_svd = _adjugate_svd(mixed)
    np.testing.assert_allclose(adjugate(mixed), by_svd, rtol=1e-9, atol=1e-10 * np.max(np.abs(by_svd)))
    by_svd = _tangent_svd(mixed, t)
    np.testing.assert_allclose(adjugate_tangent(mixed, t), by_svd, rtol=1e-9, atol=1e-10 * np.max(np.abs(by_svd)))


def test_det_hessian_of_a_stack_mixing_singular_and_regular_matrices():
    a = np.stack([low_rank(3, 2), RNG.standard_normal((3, 3)) + 2 * np.eye(3)])
    h = astad.hessian(lambda a: np.sum(np.linalg.det(a)))(a)
    for k in range(2):
        np.testing.assert_allclose(h[k, :, :, k], astad.hessian(plain_det)(a[k]), atol=1e-12)
        np.testing.assert_allclose(h[k, :, :, 1 - k], 0.0, atol=1e-15)
