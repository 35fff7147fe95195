"""Session 12, second-round adversary of codegen/order.py (Python's order of evaluation kept for operations
that may raise) and of the rules at a domain edge.  The oracle is the user's own call: the derivative
(reverse and forward mode) raises what it raises; where nothing raises, its value and derivative match
central finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from test_codegen_s12 import _fd, _raised  # (the exception a call raises; central differences)

XS = [1.0, 2.0, 3.0, 4.0]


def element_then_invariant_division(x, xs, i, y):
    s = 0.0
    for k in range(3):
        s = s + xs[i + k] * x + 1.0 / y  # (1.0 / y does not change in the loop: it was moved before it)
    return s


def element_then_invariant_log(x, xs, i, y):
    s = 0.0
    for k in range(2):
        s = s + xs[i + k] * x * math.log(y)
    return s


LOOPS = [element_then_invariant_division, element_then_invariant_log]


@pytest.mark.parametrize("fn", LOOPS)
@pytest.mark.parametrize("x,i,y", [(0.5, 5, 0.0), (0.5, 3, -1.0), (0.5, 1, 0.0), (0.5, -9, 0.0)])
def test_a_loop_invariant_that_may_raise_is_not_computed_before_what_raises_first(fn, x, i, y):
    """Moving ``1.0 / y`` before the loop made the derivative raise ZeroDivisionError where the user's call
    raises IndexError (``xs[5]``, read before it in the loop's first iteration)."""
    args = (x, XS, i, y)
    want = _raised(lambda: fn(*args))
    astad.clear_caches()
    assert _raised(lambda: astad.grad(fn, argnums=(0, 3))(*args)) is want
    assert _raised(lambda: astad.jvp(fn, args, (1.0, None, None, 0.0))) is want


@pytest.mark.parametrize("fn", LOOPS)
def test_a_loop_invariant_keeps_its_value_and_derivative(fn):
    good = (0.5, XS, 1, 3.0)
    g = astad.grad(fn, argnums=(0, 3))(*good)
    want = [_fd(lambda a, b: fn(a, XS, 1, b), (0.5, 3.0), k) for k in (0, 1)]
    np.testing.assert_allclose(g, want, rtol=1e-6)
    value, tangent = astad.jvp(fn, good, (1.0, None, None, 0.0))
    assert value == pytest.approx(fn(*good))
    assert tangent == pytest.approx(want[0], rel=1e-6)


def element_before_and_after_invariants(x, xs, i, y):
    s = x
    for k in range(2):
        s = s * xs[i - k] + math.sqrt(y) - x / y + xs[i + k]
    return s


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(LOOPS + [element_before_and_after_invariants]), st.integers(-7, 7),
       st.sampled_from([0.0, -0.0, -1.0, 2.0]), st.sampled_from([0.0, 0.5, -2.0]))
def test_loops_raise_what_python_raises(fn, i, y, x):
    """Random run-time indices (in range or not) and invariants that may raise (or not): the exception of the
    user's call, or its value and derivative (central finite differences)."""
    args = (x, XS, i, y)
    want = _raised(lambda: fn(*args))
    assert _raised(lambda: astad.grad(fn, argnums=(0, 3))(*args)) is want
    assert _raised(lambda: astad.jvp(fn, args, (1.0, None, None, 0.0))) is want
    if want is None and y > 0.01:
        g = astad.grad(fn, argnums=(0, 3))(*args)
        fd = [_fd(lambda a, b: fn(a, XS, i, b), (x, y), k) for k in (0, 1)]
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def _sum(a, b):
    return a + b


def int_division_then_float_division(x, n, y):
    return _sum(b=x / n, a=1.0 / y)  # (x / n first: an int too large for a float raises OverflowError)


def int_floordiv_then_float_division(x, n, y):
    return _sum(b=x // n, a=1.0 / y)


@pytest.mark.parametrize("fn", [int_division_then_float_division, int_floordiv_then_float_division])
@pytest.mark.parametrize("n,y", [(10 ** 400, 0.0), (3, 0.0), (10 ** 400, 1.0), (0, 0.0)],
                         ids=["huge-zero", "3-zero", "huge-1", "0-zero"])
def test_division_by_an_int_may_raise_overflow_not_only_zero_division(fn, n, y):
    """Two divisions were taken to raise only ZeroDivisionError (either order right); a division by a Python
    int too large for a float raises OverflowError: at n = 10 ** 400, y = 0.0 the derivative raised
    ZeroDivisionError (``1.0 / y`` printed first) where the user's call raises OverflowError."""
    args = (2.0, n, y)
    want = _raised(lambda: fn(*args))
    astad.clear_caches()
    assert _raised(lambda: astad.grad(fn, argnums=(0, 2))(*args)) is want
    assert _raised(lambda: astad.jvp(fn, args, (1.0, None, 1.0))) is want


def test_division_by_an_int_keeps_its_derivative():
    g = astad.grad(int_division_then_float_division, argnums=(0, 2))(2.0, 3, 4.0)
    assert g == pytest.approx((1.0 / 3.0, -1.0 / 16.0))
