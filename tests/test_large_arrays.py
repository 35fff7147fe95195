"""Arrays large enough for the generated code to update buffers in place
(``t = a; t += b`` instead of ``t = a + b``): gradients still agree with
central finite differences along random directions, inputs are never
modified, and the generated code does use the in-place form."""

import numpy as np
import pytest

import astad
from astad.codegen import IN_PLACE_MIN_SIZE


def mlp(w1, b1, w2, x):
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + h
    return np.sum(z * z) / x.shape[0]


def two_uses(x, y):
    u = np.sin(x) * y
    v = u + np.cos(x)
    w = u * v + v
    return np.mean(w * x)


def scaled_sum(x):
    return np.sum(x * x) * 0.5 + np.sum(np.exp(-x * x))


def _directional_check(fn, args, seed):
    rng = np.random.default_rng(seed)
    saved = [np.copy(a) for a in args]
    value, pullback = astad.reverse(fn)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-12)
    cts = pullback(1.0)
    for a, s in zip(args, saved):
        np.testing.assert_array_equal(a, s)  # nothing the user passed was changed
    eps = 1e-6
    for i, a in enumerate(args):
        v = rng.standard_normal(np.shape(a))
        plus = list(args)
        minus = list(args)
        plus[i] = a + eps * v
        minus[i] = a - eps * v
        fd = (fn(*plus) - fn(*minus)) / (2 * eps)
        assert float(np.sum(cts[i] * v)) == pytest.approx(fd, rel=1e-5, abs=1e-7), f"argument {i}"


@pytest.mark.parametrize("seed", [0, 1])
def test_mlp_in_place(seed):
    rng = np.random.default_rng(seed)
    n, d, k = 128, 16, 48  # n * k = 6144 >= IN_PLACE_MIN_SIZE
    assert n * k >= IN_PLACE_MIN_SIZE
    args = [rng.standard_normal((d, k)) * 0.3, rng.standard_normal(k), rng.standard_normal((k, k)) * 0.2,
            rng.standard_normal((n, d))]
    _directional_check(mlp, args, seed)
    assert "+=" in astad.reverse(mlp).source or "*=" in astad.reverse(mlp).source


@pytest.mark.parametrize("fn", [two_uses, scaled_sum])
def test_elementwise_in_place(fn):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((80, 64)) for _ in range(fn.__code__.co_argcount)]
    _directional_check(fn, args, 3)
