"""A name your function reads that is not a variable or a global is one of *its* builtins
(``fn.__builtins__``, those of the globals it was made with), as Python reads it; astad read the
interpreter's ``builtins`` module instead: a function made with ``types.FunctionType(code, globals)``
whose globals hold their own ``__builtins__`` (``abs`` replaced) got the real ``abs``'s derivative.
Checked against Python's own execution and central differences, in both modes."""

import builtins
import types

import numpy as np
import pytest

import astad
from conftest import central_differences


def uses_builtins(x):
    return np.sum(abs(x) * 2.0) + float(len([1, 2]))


def _scaled_abs(v):
    return v * 10.0 + np.sin(v)


_custom = dict(vars(builtins), abs=_scaled_abs)
own_builtins = types.FunctionType(uses_builtins.__code__, {**globals(), "__builtins__": _custom}, "uses_builtins")


@pytest.mark.parametrize("fn", [own_builtins, uses_builtins])
def test_builtins_are_the_functions_own(fn):
    x = np.array([0.4, -1.3, 2.1])
    want = central_differences(fn, x)
    value, grad = astad.value_and_grad(fn)(x)
    assert value == pytest.approx(fn(x), rel=1e-12)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(astad.jacfwd(fn)(x), want, rtol=1e-6, atol=1e-6)


def test_two_functions_of_one_code_each_get_their_own_derivative():
    """Forward mode's memory is keyed by the code: the derivative made for one function was checked against
    the other by reading its names' paths from it (``abs`` then ``np`` inside the replaced ``abs``), which
    raised TypeError (vars() of the builtin ``abs``) instead of making the other's derivative."""
    x = np.array([0.4, -1.3, 2.1])
    astad.clear_caches()
    for fn in (own_builtins, uses_builtins, own_builtins):
        want = central_differences(fn, x)
        np.testing.assert_allclose(astad.jacfwd(fn)(x), want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(astad.grad(fn)(x), want, rtol=1e-6, atol=1e-6)
