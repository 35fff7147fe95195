"""Adversarial checks, session 10, second round (s10-adv2): this session's merged changes.

1. isinstance(v, int/float/bool) of a Python number whose type the program decides (frontend/calls.py
   ``exact_number``): ``max(n, 3)`` / ``min(n, 3)`` of ints is an int and ``n ** 2`` (a constant power
   that is not negative) of an int is an int; they were refused as joins that may be floats.

Oracles: the plain call (its branch taken) and central finite differences in float64.
"""

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
