"""Adversarial checks, session 10, third round (s10-adv3): this session's merged changes.

1. Unread statements that may raise (frontend/unused.py) inside a lambda or a nested def that is made a
   function value of the IR: the function value's body was never looked at (its unread ``math.log(t)``
   was dropped), and an unread call of a function value (``y = h(x)``, an App) was not taken for one
   that may raise: astad returned a value where Python raises.

Oracles: the plain call (Python raises, or its value) and central finite differences in float64.
"""

import math

import numpy as np
import pytest

import astad
from conftest import central_differences


# ---- 1. unread statements that may raise, in function values ---------------------------------------

def helper_unread_log(x):
    def h(t):
        y = math.log(t)
        return t * t
    return h(x)


def helper_unread_log_twice(x):
    def h(t):
        y = math.log(t)
        return t * t
    return h(x) + h(x + 1.0)


def lambda_unread_call(x):
    h = lambda t: math.log(t)
    y = h(x)
    return x * 2.0


def helper_unread_division(x):
    def h(t):
        q = 1.0 / t
        return t * 3.0
    return h(x) * x


def helper_raising_in_loop(x, n):
    h = lambda t: math.sqrt(t)
    s = 0.0
    for i in range(n):
        y = h(x - i)
        s = s + x * x
    return s


CASES = [(helper_unread_log, (-1.0,)), (helper_unread_log_twice, (-0.5,)), (lambda_unread_call, (-1.0,)),
         (helper_unread_division, (0.0,)), (helper_raising_in_loop, (1.5, 3))]


@pytest.mark.parametrize("fn,args", CASES)
@pytest.mark.parametrize("mode", ["grad", "jacfwd"])
def test_function_value_unread_raises_as_python(fn, args, mode):
    with pytest.raises(Exception) as py:
        fn(*args)
    with pytest.raises(type(py.value)):
        getattr(astad, mode)(fn)(*args)


@pytest.mark.parametrize("fn,args", [(helper_unread_log, (1.3,)), (helper_unread_log_twice, (1.3,)),
                                     (lambda_unread_call, (1.3,)), (helper_unread_division, (1.3,)),
                                     (helper_raising_in_loop, (3.5, 3)), (helper_raising_in_loop, (-1.0, 0))])
def test_function_value_unread_derivatives(fn, args):
    expected = central_differences(lambda x: fn(x, *args[1:]), args[0])
    assert astad.grad(fn)(*args) == pytest.approx(expected, rel=1e-7, abs=1e-9)
    assert astad.jacfwd(fn)(*args) == pytest.approx(expected, rel=1e-7, abs=1e-9)
