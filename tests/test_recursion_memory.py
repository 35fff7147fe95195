"""A recursion on a static int unrolled deep: transforming it takes memory
linear in the depth (the lowering's snapshot at each level is a mark in undo
logs, not a copy of its names and aliases), and its derivatives are right:
against central differences, forward against reverse."""

import sys
import tracemalloc

import numpy as np
import pytest

import astad
from astad.api import Reverse
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


def _scale(x):
    return 0.5 * x


def _h(x, n):
    if n == 0:
        return x
    return np.sin(_scale(_h(x, n - 1))) + x


def deep_h_50(x):
    return _h(x, 50)


def deep_h_100(x):
    return _h(x, 100)


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
    astad.grad(deep_200)(0.3)  # (modules and tables made once: not measured, so not traced)
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


def test_the_globals_a_recursion_reads_are_noted_once_not_once_per_level():
    # (each level's reads were noted under a path one longer: _h._h._h..._scale)
    astad.clear_caches(disk=False)
    d50 = Reverse(deep_h_50).derivative([0.3])
    d100 = Reverse(deep_h_100).derivative([0.3])
    assert len(d50.deps) == len(d100.deps) < 20, [p for p, _ in d100.deps]
    assert max(len(p) for p, _ in d100.deps) <= 3


def test_a_global_a_deep_recursion_reads_reassigned_is_read_again():
    module = sys.modules[__name__]
    g = astad.grad(deep_h_100)
    before = g(0.3)
    check_grad(deep_h_100, [0.3])
    saved = module._scale
    module._scale = lambda x: 0.25 * x
    try:
        after = g(0.3)
        check_grad(deep_h_100, [0.3])
        eps = 1e-6
        fd = (deep_h_100(0.3 + eps) - deep_h_100(0.3 - eps)) / (2 * eps)
        assert after == pytest.approx(fd, rel=1e-6) and after != pytest.approx(before, rel=1e-3)
    finally:
        module._scale = saved


def _mixed(x, n):
    if n <= 0:
        return x
    return np.sin(_mixed(x, n - 1)) * 0.5 + _f(x * 0.9, 40) * 0.1


def test_a_run_time_depth_recursion_around_a_deep_unrolled_one_is_undone_and_lowered_as_loops():
    # (the first try unrolls the inner recursion 40 levels, each a mark in the undo logs, then goes
    # back to the outer call's mark: what it lowered is undone, the outer call lowered as loops)
    eps = 1e-6
    for n in (0, 1, 7):
        got = astad.grad(_mixed)(0.3, n)
        fd = (_mixed(0.3 + eps, n) - _mixed(0.3 - eps, n)) / (2 * eps)
        assert got == pytest.approx(fd, rel=1e-6, abs=1e-9)
        value, tangent = astad.jvp(lambda x: _mixed(x, n), (0.3,), (1.0,))
        assert tangent == pytest.approx(got, rel=1e-12)
