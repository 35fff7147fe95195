"""Partial primitives: where the primal raises or yields nan/inf, the
derivative call does the same at the same point.

``np.log`` of a negative is nan (its derivative too, not ``1/x``), of 0 is
-inf (derivative inf); ``np.sqrt`` and fractional powers of a negative are nan
(derivative nan), at 0 finite with an infinite derivative; ``1 / x`` at 0 is
inf for numpy values and raises ``ZeroDivisionError`` for Python floats, in
the primal and in the derivative call alike.  The expected derivatives below
are written per element, from the calculus, independently of astad.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad
from conftest import fuzz_examples

NAN, INF = math.nan, math.inf


def f_log(x):
    return np.sum(np.log(x))


def f_sqrt(x):
    return np.sum(np.sqrt(x))


def f_half_power(x):
    return np.sum(x ** 0.5)


def f_power_3_2(x):
    return np.sum(x ** 1.5)


def f_reciprocal(x):
    return np.sum(1.0 / x)


def f_np_power(x):
    return np.sum(np.power(x, np.ones_like(x) * 0.5))


def f_log_scaled(x):
    y = 2.0 * x
    return np.sum(np.log(y) * y)


def _dlog(x):
    return NAN if x < 0 else INF if x == 0 else 1 / x


def _dsqrt(x):
    return NAN if x < 0 else INF if x == 0 else 0.5 / math.sqrt(x)


def _dpow32(x):
    return NAN if x < 0 else 1.5 * math.sqrt(x)


def _drecip(x):
    return -INF if x == 0 else -1 / x ** 2


def _dlog_scaled(x):  # d/dx (log(2x) * 2x) = 2 log(2x) + 2; nan at 0, where the primal is -inf * 0
    return NAN if x <= 0 else 2 * math.log(2 * x) + 2


# (program, derivative of each element's term)
ELEMENTWISE = [
    (f_log, _dlog),
    (f_sqrt, _dsqrt),
    (f_half_power, _dsqrt),
    (f_power_3_2, _dpow32),
    (f_reciprocal, _drecip),
    (f_np_power, _dsqrt),
    (f_log_scaled, _dlog_scaled),
]

# no -0.0: the sign of an infinite derivative at 0 is numpy's business
points = st.one_of(st.sampled_from([0.0, -1.0, -2.5, 1.0, 3.0]),
                   st.floats(-4.0, 4.0, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-3).map(lambda v: v + 0.0))


def _run(fn, args, ct=1.0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value, pullback = astad.reverse(fn)(*args)
        return value, pullback(ct)


@pytest.mark.parametrize("fn,deriv", ELEMENTWISE, ids=[f.__name__ for f, _ in ELEMENTWISE])
@settings(max_examples=fuzz_examples(16, long=40), deadline=None)
@given(xs=st.lists(points, min_size=1, max_size=6))
def test_array_derivative_is_nan_or_inf_where_the_primal_is(fn, deriv, xs):
    x = np.array(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want_value = fn(x)
    value, (dx,) = _run(fn, (x,))
    np.testing.assert_array_equal(value, want_value)  # the same nan, inf or number
    want = np.array([deriv(v) for v in xs])
    np.testing.assert_allclose(dx, want, rtol=1e-12)  # nan and inf where expected, exactly
    if not np.isfinite(want_value):
        assert not np.all(np.isfinite(dx))


def s_log(x):
    return np.log(x) * 3.0


def s_sqrt(x):
    return np.sqrt(x) * 3.0


def s_half_power(x):
    return x ** 0.5 * 3.0


def s_reciprocal(x):
    return 3.0 / x


SCALAR = [(s_log, _dlog), (s_sqrt, _dsqrt), (s_half_power, _dsqrt), (s_reciprocal, _drecip)]


@pytest.mark.parametrize("fn,deriv", SCALAR, ids=[f.__name__ for f, _ in SCALAR])
@settings(max_examples=30, deadline=None)
@given(x=points)
def test_python_float_derivative_follows_the_primal(fn, deriv, x):
    """A Python float argument: the same value, exception or nan as the primal."""
    if fn is s_half_power and x < 0:
        x = -x  # a negative Python float ** 0.5 is complex in Python itself
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want_value = fn(x)
    except ZeroDivisionError:
        with pytest.raises(ZeroDivisionError):
            _run(fn, (x,))
        return
    value, (dx,) = _run(fn, (x,))
    np.testing.assert_array_equal(value, want_value)
    assert type(dx) is float
    np.testing.assert_allclose(dx, 3.0 * deriv(x), rtol=1e-12)


def test_log_under_where_is_nan_outside_the_domain():
    """The documented convention: ``np.where`` does not hide a partial
    primitive applied outside its domain; guard the argument instead."""

    def masked(x):
        return np.sum(np.where(x > 0, np.log(x), 0.0))

    def guarded(x):
        return np.sum(np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), 0.0))

    x = np.array([-1.0, 0.0, 2.0])
    _, (dx,) = _run(masked, (x,))
    np.testing.assert_array_equal(dx, [NAN, NAN, 0.5])
    _, (dx,) = _run(guarded, (x,))
    np.testing.assert_array_equal(dx, [0.0, 0.0, 0.5])
