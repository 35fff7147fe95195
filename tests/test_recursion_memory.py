"""A recursion on a static int unrolled deep: transforming it takes memory
linear in the depth (the lowering's snapshot at each level is a mark in undo
logs, not a copy of its names and aliases), and its derivatives are right:
against central differences, forward against reverse."""

import tracemalloc

import numpy as np

import astad
from conftest import check_grad


def _f(x, n):
    if n == 0:
        return x
    return np.sin(_f(x, n - 1)) * 0.5 + x


def _g(x, w, n):
    if n == 0:
        return x * w
    return np.tanh(_g(x, w, n - 1) * w) + 0.1 * x


def deep_200(x):
    return _f(x, 200)


def deep_400(x):
    return _f(x, 400)


def deep_vec_150(x, w):
    return np.sum(_g(x, w, 150) ** 2)


def looped(x):
    acc = 0.0
    for i in range(3):
        acc = acc + _f(x * (i + 1), 60)
    return acc


def _peak(fn, *args):
    astad.clear_caches(disk=False)
    tracemalloc.start()
    try:
        astad.grad(fn)(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_transform_memory_is_near_linear_in_the_depth():
    _peak(deep_200, 0.3)  # (modules and tables made once)
    small, large = _peak(deep_200, 0.3), _peak(deep_400, 0.3)
    assert large / small <= 2.5, (small, large)  # (quadratic before: 13 -> 39 MB, ratio 3)


def test_deep_recursion_derivatives_against_central_differences():
    check_grad(deep_200, [0.3])
    rng = np.random.default_rng(1)
    check_grad(deep_vec_150, [rng.standard_normal(4), 0.7])
    check_grad(looped, [0.2])


def test_deep_recursion_forward_against_reverse():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(4), 0.7
    tx, tw = rng.standard_normal(4), 0.3
    value, tangent = astad.jvp(deep_vec_150, (x, w), (tx, tw))
    value_r, pullback = astad.reverse(deep_vec_150)(x, w)
    gx, gw = pullback(1.0)
    assert value == value_r
    np.testing.assert_allclose(tangent, np.dot(gx, tx) + gw * tw, rtol=1e-10, atol=1e-12)
