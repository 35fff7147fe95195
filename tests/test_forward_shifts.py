"""Tangent algebra of forward mode: shifted tangents cancelled
(astad/optimise/shifts.py: the tangent of the max a stable logsumexp or
log-softmax subtracts is not computed; a shift that is not constant along the
summed axes is left alone) and sums of vector products as dot products
(astad/optimise/dots.py).  The JVP still equals central finite differences
(float64) and reverse mode's <J^T u, v>, the value the function's own."""

from __future__ import annotations

import numpy as np
import pytest

import astad


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)))


def log_softmax(x, w):
    z = x * w
    shifted = z - np.max(z, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return np.sum(logp * w)


def shift_by_other(x, a):
    # a (1, k) row is constant along axis 0, not along the summed axis 1: nothing cancels
    return np.sum(a + np.log(np.sum(np.exp(x - a), axis=1, keepdims=True)))


def shift_read_twice(x):
    m = np.max(x)
    y = x - m
    return m + np.log(np.sum(np.exp(y))) + np.sum(y * y)


def least_squares(w, A, b):
    r = A @ w - b
    return np.sum(r**2) / A.shape[0]


def products(x, y, c):
    return np.sum(x * c * y * 3.0) + np.sum(x[:, None] * y[None, :] * c)


def half_square(z, w):
    # the tangent 0.5 * (2.0 * z_t * z).sum(axis=1): its constants cancel
    return np.sum(w * (0.5 * np.sum(z * z, axis=1)))


def scaled_square(z):
    return np.sum(3 * np.sum(z * z, axis=0))


CASES = [
    (logsumexp, lambda r: (r.standard_normal(7),)),
    (logsumexp_rows, lambda r: (r.standard_normal((4, 5)),)),
    (log_softmax, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4))),
    (shift_by_other, lambda r: (r.standard_normal((3, 4)), r.standard_normal((1, 4)))),
    (shift_read_twice, lambda r: (r.standard_normal(6),)),
    (least_squares, lambda r: (r.standard_normal(3), r.standard_normal((5, 3)), r.standard_normal(5))),
    (products, lambda r: (r.standard_normal(4), r.standard_normal(4), float(r.standard_normal()))),
    (half_square, lambda r: (r.standard_normal((3, 4)), r.standard_normal(3))),
    (scaled_square, lambda r: (r.standard_normal((3, 4)),)),
]


def fd(f, args, tangents, h=1e-6):
    plus = [a + h * t for a, t in zip(args, tangents)]
    minus = [a - h * t for a, t in zip(args, tangents)]
    return (f(*plus) - f(*minus)) / (2 * h)


@pytest.mark.parametrize("f, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_jvp_matches_finite_differences_and_reverse_mode(f, make):
    rng = np.random.default_rng(5)
    for _ in range(3):
        args = make(rng)
        tangents = [rng.standard_normal(np.shape(a)) for a in args]
        value, tangent = astad.jvp(f, tuple(args), tuple(tangents))
        assert np.array_equal(np.asarray(value), np.asarray(f(*args)))  # the primal's rounding unchanged
        np.testing.assert_allclose(tangent, fd(f, args, tangents), rtol=1e-6, atol=1e-7)
        grads = astad.grad(f, argnums=tuple(range(len(args))))(*args)
        reverse = sum(np.sum(g * t) for g, t in zip(grads, tangents))
        assert abs(tangent - reverse) <= 1e-10 * (abs(tangent) + sum(np.sum(np.abs(g * t)) for g, t in zip(grads, tangents)))


@pytest.mark.parametrize("f, make", CASES[:3], ids=[c[0].__name__ for c in CASES[:3]])
def test_the_max_tangent_is_not_computed(f, make):
    fwd = astad.forward(f)
    fwd(*make(np.random.default_rng(0)))
    assert "isnan" not in fwd.source and "==" not in fwd.source, fwd.source  # no argmax mask


def test_a_shift_not_constant_along_the_axis_keeps_its_tangent():
    fwd = astad.forward(shift_by_other)
    fwd(*CASES[3][1](np.random.default_rng(0)))
    assert "x_t - a_t" in fwd.source, fwd.source


def test_a_sum_of_vector_products_is_a_dot_product():
    fwd = astad.forward(least_squares)
    fwd(*CASES[5][1](np.random.default_rng(0)))
    tangent = fwd.source.split("return")[-1].split(",")[1]
    assert "@ r" in tangent and ".sum()" not in tangent, fwd.source


def closure_map(a, xs):
    g = lambda z: a * np.sin(z) + z * z / (1.0 + a * a)  # noqa: E731
    return np.sum(np.array([g(z) for z in xs]))


def test_a_loop_calling_a_closure_names_only_temporaries_read_twice():
    """A loop without a tape saves nothing (optimise/copowers.py), so the temporaries
    of the closure's inlined body are inlined where they are read once."""
    import re

    rng = np.random.default_rng(2)
    args, tangents = (0.7, rng.standard_normal(6)), (0.3, rng.standard_normal(6))
    value, tangent = astad.jvp(closure_map, args, tangents)
    np.testing.assert_allclose(tangent, fd(closure_map, args, tangents), rtol=1e-6, atol=1e-7)
    source = astad.forward(closure_map).source
    temporaries = re.findall(r"^\s+(t\d+) = ", source.split("    for ")[1], re.M)  # in the loop body
    assert all(len(re.findall(rf"\b{t}\b", source)) >= 3 for t in temporaries), source


def test_constant_factors_leave_a_sum():
    fwd = astad.forward(half_square)
    fwd(np.ones((2, 3)), np.ones(2))
    tangent_lines = [line for line in fwd.source.splitlines() if "z_t" in line and "def" not in line and '"""' not in line]
    assert tangent_lines and not any("2.0" in line or "0.5" in line for line in tangent_lines), fwd.source
