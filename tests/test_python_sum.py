"""Python's builtin ``sum`` of a generator, a comprehension or a list: astad's code adds
left to right from 0 (or ``start``), as Python does, so the value is the plain call's bit
for bit and of its type (numpy's ``.sum()`` adds pairwise: other roundings, an
``np.float64`` for Python floats).  Derivatives against central differences, the JVP
against the VJP, in every mode (reverse, forward, the scalar fast paths of ``grad``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad

FLOATS = st.floats(-1e3, 1e3, allow_nan=False).filter(lambda v: abs(v) > 1e-3)
BIG = st.sampled_from([1.0, 1e8, 1e16, -1e16, 3e15])  # cancellation: the order of the additions shows


def cancel(x, big):
    return sum(x * (big if t % 8 == 0 and t < 8 else -big if t == 8 else 1.0) for t in range(16))


def scaled(x):
    return sum(t * x for t in range(3))


def squares(xs):
    return sum(v * v for v in xs)


def comprehension_start(x, big):
    return sum([x * (big if t == 0 else -big if t == 9 else 0.1 * t) for t in range(12)], 0.5)


def start_arg(x, s):
    return sum([x * t for t in range(10)], s)


def literal(a, b, c):
    return sum([a, b, c])


def literal_start(a, big, s):
    return sum([a * big, a, -a * big], s)


def rows(w, v):
    return np.sum(sum(w * t * v for t in range(12)) ** 2)


def rows_f32(v):
    return float(np.sum(sum(np.float32(t) * v for t in range(20))))


SCALAR_CASES = [
    (cancel, lambda x, y: (x, y)),
    (scaled, lambda x, y: (x,)),
    (comprehension_start, lambda x, y: (x, y)),
    (start_arg, lambda x, y: (x, y / 7)),
    (literal, lambda x, y: (x, -y, x * 1e-3)),
    (literal_start, lambda x, y: (x, y, 0.25)),
]


def _same(got, want):
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    else:
        assert got == want or (got != got and want != want), (got, want)


def _fd(f, args, i, eps=1e-6):
    plus, minus = list(args), list(args)
    plus[i], minus[i] = args[i] + eps, args[i] - eps
    return (f(*plus) - f(*minus)) / (2 * eps)


@settings(max_examples=30, deadline=None)
@given(x=FLOATS, big=BIG)
@pytest.mark.parametrize("f, make", SCALAR_CASES, ids=[c[0].__name__ for c in SCALAR_CASES])
def test_value_bit_identical_and_of_pythons_type(f, make, x, big):
    args = make(x, big)
    want = f(*args)
    value, grads = astad.value_and_grad(f)(*args)  # (the scalar fast path: Python-float arguments)
    _same(value, want)
    value, pullback = astad.vjp(f, *args)
    _same(value, want)
    value, _ = astad.jvp(f, args, tuple(1.0 for _ in args))
    _same(value, want)


@settings(max_examples=20, deadline=None)
@given(x=st.floats(-3, 3), y=st.floats(-3, 3))
@pytest.mark.parametrize("f, make", SCALAR_CASES, ids=[c[0].__name__ for c in SCALAR_CASES])
def test_derivatives_against_differences_and_jvp_against_vjp(f, make, x, y):
    args = make(x, 1.0 + y)  # (no 1e16 here: central differences need a smooth scale)
    nums = tuple(range(len(args)))
    grads = astad.grad(f, nums)(*args)
    for i in nums:
        assert grads[i] == pytest.approx(_fd(f, args, i), rel=1e-6, abs=1e-6)
        assert type(grads[i]) is float
    _, pullback = astad.vjp(f, *args)
    cts = pullback(1.0)
    v = tuple(0.3 + 0.5 * k for k in nums)
    _, tangent = astad.jvp(f, args, v)
    assert tangent == pytest.approx(sum(float(c) * t for c, t in zip(cts, v)), rel=1e-9, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(xs=st.lists(FLOATS, min_size=0, max_size=20), big=BIG)
def test_array_elements_and_empty(xs, big):
    x = np.array(xs + [big, -big]) if xs else np.zeros(0)
    want = squares(x)
    value, pullback = astad.vjp(squares, x)
    _same(value, want)
    if x.size:
        (g,) = pullback(1.0)
        np.testing.assert_allclose(g, 2 * x, rtol=1e-12)


@settings(max_examples=15, deadline=None)
@given(w=st.floats(-2, 2), seed=st.integers(0, 2**16))
def test_sum_of_arrays(w, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(3) * np.array([1e16, 1.0, 1e-8])
    want = rows(w, v)
    value, pullback = astad.vjp(rows, w, v)
    _same(value, want)
    pullback(1.0)
    vs = rng.standard_normal(3)
    _, pb = astad.vjp(rows, w, vs)
    cw, cv = pb(1.0)
    assert cw == pytest.approx(_fd(lambda w_: rows(w_, vs), [w], 0), rel=1e-6, abs=1e-6)
    _, tangent = astad.jvp(rows, (w, vs), (0.7, np.ones(3)))
    assert tangent == pytest.approx(0.7 * cw + float(np.sum(cv)), rel=1e-9)
    v32 = rng.standard_normal(4).astype(np.float32)
    value, _ = astad.vjp(rows_f32, v32)
    _same(value, rows_f32(v32))


def test_generated_code_calls_pythons_sum():
    src = astad.Reverse(scaled).derivative((0.7,), frozenset({0})).source
    assert "sum(items" in src and ".sum(axis=0)" not in src
    assert type(scaled(0.7)) is float and type(astad.vjp(scaled, 0.7)[0]) is float
    assert astad.vjp(cancel, 0.7, 1e16)[0] == cancel(0.7, 1e16)  # 11.899999999999997, numpy's order gives 9.8
