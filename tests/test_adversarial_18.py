"""Adversarial checks, session 10, second round (s10-adv2): this session's merged changes.

1. isinstance(v, int/float/bool) of a Python number whose type the program decides (frontend/calls.py
   ``exact_number``): ``max(n, 3)`` / ``min(n, 3)`` of ints is an int and ``n ** 2`` (a constant power
   that is not negative) of an int is an int; they were refused as joins that may be floats.

Oracles: the plain call (its branch taken) and central finite differences in float64.
"""

import math
import warnings

import numpy as np
import pytest

import astad
from conftest import central_differences


# ---- 1. isinstance of numbers the program decides ------------------------------------------------------

def max_of_ints(x, n):
    k = max(n, 3)
    return x * (2.0 if isinstance(k, int) else 1.0)


def min_of_ints(x, n):
    k = min(n, 3)
    return x * (2.0 if isinstance(k, int) else 1.0) + x * (5.0 if isinstance(k, bool) else 1.0)


def square_of_int(x, n):
    k = n ** 2
    return x * (2.0 if isinstance(k, int) else 1.0)


def max_of_floats(x, y):
    k = max(y, 0.5)
    return x * (2.0 if isinstance(k, float) else 1.0)


@pytest.mark.parametrize("fn,args", [(max_of_ints, (1.3, 5)), (max_of_ints, (1.3, -5)), (min_of_ints, (1.3, 5)),
                                     (min_of_ints, (1.3, -5)), (square_of_int, (1.3, -3)),
                                     (max_of_floats, (1.3, 0.25)), (max_of_floats, (1.3, 2.0))])
def test_isinstance_of_decided_numbers(fn, args):
    g = astad.grad(fn)(*args)
    assert g == pytest.approx(central_differences(lambda x: fn(x, *args[1:]), args[0]), rel=1e-7)


def max_of_int_and_bool(x, n, b):
    k = max(n, b)
    return x * (2.0 if isinstance(k, bool) else 1.0)


def power_of_ints(x, n, m):
    k = n ** m
    return x * (2.0 if isinstance(k, int) else 1.0)


def max_of_int_and_float(x, n):
    k = max(n, 1.5)
    return x * (2.0 if isinstance(k, int) else 1.0)


@pytest.mark.parametrize("fn,args", [(max_of_int_and_bool, (1.3, 0, True)), (power_of_ints, (1.3, 2, -1)),
                                     (max_of_int_and_float, (1.3, 3))])
def test_isinstance_of_undecided_numbers_refused(fn, args):
    with pytest.raises(astad.AstadTypeError, match="isinstance of a Python number"):
        astad.grad(fn)(*args)


# ---- 2. a zero tangent (or cotangent) that is computed, where the partial is infinite ------------------------
# b872a66 gave 0 where a zero tangent (or cotangent) met an infinite partial (JAX's _safe_mul, which JAX removed
# in jax-ml/jax#2447): right where the zero is structural (an input not varied), silently wrong where the chain rule
# computed it, the other factor of an indeterminate 0 * inf: sqrt(x) ** 2 is x (derivative 1 at 0+, reverse mode's
# cotangent of sqrt is 2 * sqrt(0) = 0), cbrt(x ** 3) is x (forward mode's tangent of x ** 3 is 3 * 0 ** 2 = 0),
# (x * x) ** 0.25 is sqrt(|x|) (derivative infinite).  0 * inf = nan says so; a 0 there is a wrong derivative.

def sqrt_squared(x):
    return np.sqrt(x) ** 2


def cbrt_of_cube(x):
    return np.cbrt(x ** 3)


def quarter_power_of_square(x):
    return (x * x) ** 0.25


def _not_a_silent_finite(d, right):
    """``d`` is the derivative from the right ``right``, or nan: never another finite number."""
    d = float(d)
    assert math.isnan(d) or d == right, (d, right)


@pytest.mark.parametrize("fn,right", [(sqrt_squared, 1.0), (cbrt_of_cube, 1.0), (quarter_power_of_square, math.inf)])
@pytest.mark.parametrize("x", [0.0, np.float64(0.0)])
def test_a_computed_zero_at_an_infinite_partial_is_not_a_silent_zero(fn, right, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _not_a_silent_finite(astad.grad(fn)(x), right)
        _not_a_silent_finite(astad.vjp(fn, x)[1](1.0)[0], right)
        _not_a_silent_finite(astad.jvp(fn, (x,), (1.0,))[1], right)
        _not_a_silent_finite(astad.jacfwd(fn)(x), right)
        _not_a_silent_finite(astad.jacrev(fn)(x), right)
