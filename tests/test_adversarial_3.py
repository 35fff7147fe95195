"""Adversarial cases against the passes that landed last (third round): ``release`` (``del`` of the
names a long generated function is done with), the checked fast path of ``astad.jvp`` on arrays.

- every construct the generated reverse-mode code has (nested loops with tapes, ``while``,
  ``break``, closures and comprehensions inlined, element updates, lists, unrolled and run-time
  recursion, the scalar fast path's ``try``/``except`` and its fallback) with every function
  released however short (``MIN_NAMES = 0``): the value against the plain function, the gradient
  against central finite differences (the first call and the later checked calls), and the
  Hessian (forward over reverse) against central differences of the gradient;
- ``astad.jvp`` called again and again with values of other kinds (0-d arrays, numpy scalars,
  floats, read-only, strided, Fortran-ordered, big-endian arrays, memmaps, an array reshaped in
  place, tangents that are the primals): each answer against central differences."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

import astad
from astad.codegen import release
from conftest import check_grad, load_program

PROGRAMS = '''\
import math
import numpy as np


def helper(u, n):
    if n <= 0:
        return u
    return np.sin(helper(u, n - 1)) + u


def rec(y, n):
    if n <= 0:
        return y
    return np.sin(rec(y * 0.9, n - 1)) + y


def closures(x, y):
    a = x * y
    def g(t):
        return t * a + np.cos(a)
    b = g(x)
    c = g(b) * 2.0
    h = lambda s: s * b
    d = h(c) + h(a)
    e = sum([v * a[0] for v in d])
    return np.sum(d) + e


def while_loop(x, n):
    s = np.sum(x * x)
    t = x * 1.5
    k = 0
    while k < n:
        t = np.sin(t) * s
        if np.sum(t) > 0.0:
            t = t + x
        else:
            t = t - x
        k = k + 1
    last = t * 2.0
    return np.sum(last * t)


def early_break(x):
    acc = x * 0.0
    w = x + 1.0
    for i in range(6):
        acc = acc + w * i
        if np.sum(acc) > 3.0:
            break
        w = np.tanh(w)
    q = acc * w
    return np.sum(q)


def updates(x):
    y = np.zeros(x.shape[0])
    z = x * 2.0
    for i in range(x.shape[0]):
        y[i] = z[i] * x[i]
        y[i] += z[i - 1]
    z2 = y * z
    y2 = z2.copy()
    y2 *= 3.0
    y2[1:3] = y2[0:2] * x[1:3]
    m = x[x > 0.5]
    return np.sum(y2) + np.sum(m * m)


def lists(x):
    xs = []
    a = x * 1.0
    for i in range(4):
        a = np.cos(a) + x
        xs.append(a)
    st = np.stack(xs)
    pair = (st, a)
    p, q = pair
    return np.sum(p) * np.sum(q)


def unrolled(x):
    return np.sum(helper(x, 30))


def runtime_depth(x, n):
    r = rec(x, n)
    return np.sum(r * r)


def scalars(a, b):
    c = a * b
    d = math.sin(c) + b
    e = d / (1.0 + c * c)
    f = math.exp(-e) * a
    g = f ** 2 + math.sqrt(abs(d) + 1.0)
    for i in range(3):
        g = g * 0.5 + math.tanh(g) * c
    if g > 0.0:
        h = g * d
    else:
        h = g - d
    return h + e


def fast_loops(x, y):
    a = x * 2.0
    b = y + 1.0
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.log(x[i]) * a[i] + np.sin(b[i]) / x[i]
    c = s * np.sum(a)
    t = 0.0
    for i in range(y.shape[0]):
        t = t + np.exp(c * y[i]) * b[i]
    return t + c


def pairs(x):
    v = x
    w = x * 0.5
    for k in range(40):
        v, w = np.sin(v) * 0.5 + w, np.tanh(w + 0.1 * v)
    return np.sum(v * w)
'''

RNG = np.random.default_rng(3)
X = RNG.uniform(0.1, 0.9, 5)
Y = RNG.uniform(0.1, 0.9, 5)
CASES = [("closures", (X, Y)), ("while_loop", (X, 3)), ("early_break", (X,)), ("updates", (X,)),
         ("lists", (X,)), ("unrolled", (X,)), ("runtime_depth", (X, 7)), ("scalars", (0.3, 0.7)),
         ("fast_loops", (X[:3], Y[:3])), ("pairs", (X,))]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    old, release.MIN_NAMES = release.MIN_NAMES, 0
    try:
        yield load_program(PROGRAMS, tmp_path_factory.mktemp("adversarial_3"), "released")
    finally:
        release.MIN_NAMES = old


def _fd_grad(fn, args, eps=1e-6):
    """Central differences of ``fn`` in its first argument (a float or an array): for each
    coordinate of it, the derivative of ``fn``'s value (a number or an array) along the last axis."""
    a = args[0]
    if isinstance(a, float):
        return (fn(a + eps, *args[1:]) - fn(a - eps, *args[1:])) / (2 * eps)
    columns = []
    for k in range(a.size):
        e = np.zeros_like(a)
        e.flat[k] = eps
        columns.append((fn(a + e, *args[1:]) - fn(a - e, *args[1:])) / (2 * eps))
    return np.moveaxis(np.array(columns), 0, -1).reshape(np.shape(columns[0]) + a.shape)


@pytest.mark.parametrize("name,args", CASES, ids=[c[0] for c in CASES])
def test_released_constructs(programs, name, args):
    fn = getattr(programs, name)
    check_grad(fn, args)
    r = astad.reverse(fn)
    r(*args)
    # (released: the test tests what it means to; the run-time recursion's code is one group of lines)
    assert ("    del " in r.source) != (name == "runtime_depth")
    grad = astad.grad(fn)
    for _ in range(3):  # the first call and the checked ones
        np.testing.assert_allclose(grad(*args), _fd_grad(fn, args), rtol=1e-5, atol=1e-6)
    hessian = astad.hessian(fn)(*args)
    by_fd = _fd_grad(lambda z, *rest: np.asarray(astad.grad(fn)(z, *rest)), args, eps=1e-5)
    np.testing.assert_allclose(np.reshape(hessian, np.shape(by_fd)), by_fd, rtol=1e-4, atol=1e-5)


def test_released_fast_loop_falls_back(programs):
    """The scalar fast path's ``try`` raises (``math.log(0.0)``) and the array loop runs: nan as numpy gives."""
    x, y = np.array([0.0, 0.2, 0.7]), np.array([0.1, 0.3, 0.2])
    for _ in range(2):
        with np.errstate(all="ignore"):
            value, grad = astad.value_and_grad(programs.fast_loops)(x, y)
            assert np.isnan(value) == np.isnan(programs.fast_loops(x, y))
        assert np.isnan(grad).all()


def _jvp_oracle(x, y, tx, ty, eps=1e-6):
    f = _sin_product
    x, y = np.asarray(x, float), np.asarray(y, float)
    tx = np.zeros_like(x) if tx is None else np.asarray(tx, float)
    ty = np.zeros_like(y) if ty is None else np.asarray(ty, float)
    return f(x, y), (f(x + eps * tx, y + eps * ty) - f(x - eps * tx, y - eps * ty)) / (2 * eps)


def _sin_product(x, y):
    return np.sin(x) * y + x * x


def _kinds():
    a, b = np.array([0.3, 0.5, 0.7]), np.array([1.0, 2.0, 3.0])
    read_only = a.copy()
    read_only.flags.writeable = False
    grid = np.arange(12.0).reshape(3, 4) / 10
    mapped = np.memmap(tempfile.TemporaryFile(), dtype="f8", mode="w+", shape=(3,))
    mapped[:] = a
    reshaped = a.copy()
    shared = a.copy()
    return [
        ((a, b), (np.ones(3), np.zeros(3))),
        ((np.array(0.3), np.array(2.0)), (np.array(1.0), np.array(0.0))),
        ((np.float64(0.3), np.float64(2.0)), (np.float64(1.0), np.float64(0.0))),
        ((0.3, 2.0), (1.0, 0.0)),
        ((a, b), (np.ones(3), np.zeros(3))),
        ((read_only, b), (read_only, b)),
        ((grid[:, 1], b), (np.ones(3), grid[:, 2])),
        ((np.asfortranarray(grid[:, :3].T), np.asfortranarray(grid[:, :3])), (np.ones((3, 3)), np.ones((3, 3)))),
        ((a.astype(">f8"), b), (np.ones(3, ">f8"), np.zeros(3))),
        ((mapped, b), (np.ones(3), np.zeros(3))),
        ((reshaped, b), (np.ones(3), None)),
        ((reshaped, b), "reshape"),
        ((shared, b), (shared, shared)),
        ((a, b), (None, b)),
        ((a, b), (np.ones(3), np.zeros(3))),
    ]


def test_jvp_of_changing_kinds():
    """Each call's kinds differ from the last one's (or match, answered by the checked code)."""
    for primals, tangents in _kinds():
        if tangents == "reshape":  # the same object, another shape
            primals[0].shape = (3, 1)
            tangents = (np.ones((3, 1)), np.zeros(3))
        for _ in range(2):
            value, tangent = astad.jvp(_sin_product, primals, tangents)
            want_value, want_tangent = _jvp_oracle(*primals, *tangents)
            assert np.shape(value) == np.shape(want_value) and np.shape(tangent) == np.shape(want_tangent)
            np.testing.assert_allclose(value, want_value, rtol=1e-12)
            np.testing.assert_allclose(tangent, want_tangent, rtol=1e-6, atol=1e-8)


def scaled_exp_clipped(u, a):
    y = a * np.exp(u)
    return np.sum(np.minimum(y, 1.0))


def test_a_product_that_overflows_is_not_shared():
    """``(ct * a) * e`` is not ``ct * y`` where ``y = a * e`` may overflow (``e = exp(u)`` is not
    bounded): at 1e10 * exp(700) = inf, clipped, the cotangent is 0 and ``0 * inf`` was nan where
    the derivative is 0 (central differences, forward mode, and the backward pass before the
    products were shared all say 0)."""
    u, a = np.array([700.0, 0.1]), np.array([1e10, 0.5])
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(2):
            grad_u = astad.grad(scaled_exp_clipped)(u, a)
            _, tangent = astad.jvp(scaled_exp_clipped, (u, a), (np.array([1.0, 0.0]), np.zeros(2)))
            eps = 1e-6
            fd = (scaled_exp_clipped(u + [eps, 0.0], a) - scaled_exp_clipped(u - [eps, 0.0], a)) / (2 * eps)
            assert grad_u[0] == 0.0 and tangent == 0.0 and fd == 0.0
            np.testing.assert_allclose(grad_u[1], 0.5 * np.exp(0.1), rtol=1e-12)
