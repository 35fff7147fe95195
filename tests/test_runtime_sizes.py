"""Arrays whose sizes are known only at run time (issue 11, point 6): sizes
that change from one loop iteration to the next, branches that join arrays of
different lengths, slices with run-time bounds.  Their type has an unknown
dimension (``f64[?]``); the derivative code reads the sizes when it runs.

Every program is checked in both directions against central finite
differences (float64), and its Hessian-vector product against finite
differences of the gradient."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad


def banded(l, d):
    """The issue's example: a block whose width changes with ``c``."""
    k = l.shape[0]
    total = 0.0
    for c in range(d):
        m = np.concatenate([np.zeros((k, c + 1)), l[:, 0:d - 1 - c]], axis=1)
        total = total + np.sum(m * m * l[:, :1])
    return total


def growing(x, d):
    v = x[:1]
    for c in range(d):
        v = np.concatenate([v, np.sin(v[-1:]) * x[c % 3]])
    return np.sum(v * v)


def prefixes(x, d):
    s = 0.0
    for c in range(1, d):
        head = x[:c]
        s = s + np.sum(np.outer(head, head)) + np.sum(np.reshape(head, (c, 1)) * 2.0)
    return s


def mirrored(x, n):
    y = x[:n]
    z = np.concatenate([y, y[::-1]], axis=0)
    return np.sum(np.tanh(z) * np.arange(z.shape[0]))


def rotations(a, d):
    acc = 0.0
    for c in range(d):
        m = np.concatenate([a[:, c:], a[:, :c]], axis=1)
        acc = acc + np.sum(m[:, :1] * a[:, :1])
    return acc


def one_branch_shorter(x, c):
    if c > 0:
        v = x[:2]
        w = np.zeros(3)
    else:
        v = np.zeros(4)
        w = x[1:4]
    return np.sum(v ** 2) + np.sum(np.sin(w))


def doubling(x, n):
    v = x[:1]
    while v.shape[0] < n:
        v = np.concatenate([v, v * 0.5])
    return np.sum(np.cos(v))


def shrinking(x, n):
    acc = []
    v = x
    for i in range(n):
        v = v[1:] * v[:-1]
        acc.append(np.sum(v))
    return sum(acc)


def _fd(f, x, *rest, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e, *rest) - f(x - e, *rest)) / (2 * eps)
    return g


def _check(f, x, n, seed=0):
    rng = np.random.default_rng(seed)
    grad = astad.grad(f)(x, n)
    ref = _fd(f, x, n)
    np.testing.assert_allclose(grad, ref, rtol=1e-6, atol=1e-7)
    v = rng.normal(size=x.shape)
    value, tangent = astad.jvp(f, (x, n), (v, None))
    assert value == pytest.approx(f(x, n), rel=1e-12, abs=1e-12)
    assert tangent == pytest.approx(float(np.sum(ref * v)), rel=1e-6, abs=1e-7)
    hv = astad.hvp(f, (x, n), (v, None))[0]
    g = astad.grad(f)
    href = (g(x + 1e-5 * v, n) - g(x - 1e-5 * v, n)) / 2e-5
    np.testing.assert_allclose(hv, href, rtol=1e-5, atol=1e-6)


PROGRAMS = [(banded, (3, 6), (0, 1, 4, 6)), (growing, (5,), (0, 1, 4)), (prefixes, (5,), (1, 2, 4)),
            (mirrored, (5,), (0, 3, 5)), (rotations, (3, 4), (0, 3)), (one_branch_shorter, (5,), (1, -1)),
            (doubling, (5,), (1, 5, 9)), (shrinking, (5,), (0, 1, 3))]


@pytest.mark.parametrize("f, shape, ns", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_gradient_tangent_and_hessian_vector_product(f, shape, ns):
    x = np.random.default_rng(len(shape)).normal(size=shape)
    for n in ns:
        _check(f, x, n)


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 4), cols=st.integers(1, 6), d=st.integers(0, 6), seed=st.integers(0, 2**16))
def test_run_time_widths_at_random_sizes(rows, cols, d, seed):
    x = np.random.default_rng(seed).normal(size=(rows, cols))
    _check(banded, x, d, seed)


def test_the_generated_code_reads_the_sizes_when_it_runs():
    r = astad.reverse(banded)
    r(np.ones((2, 4)), 3)
    assert ".shape[1]" in r.source  # the cotangent is cut at the piece's run-time width


def ranks_differ(x):
    if x[0] > 0.0:
        y = x
    else:
        y = np.reshape(x, (3, 1))
    return np.sum(y)


def test_another_number_of_dimensions_in_each_branch_is_still_refused():
    with pytest.raises(astad.AstadTypeError) as info:
        astad.grad(ranks_differ)(np.ones(3))
    assert "one branch" in str(info.value) and "test_runtime_sizes.py" in str(info.value)
