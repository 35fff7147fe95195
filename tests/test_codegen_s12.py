"""Session 12, codegen: Python's order of evaluation kept for operations that may raise.

Codegen inlines a temporary read once into the expression that reads it.  That moved a computation past
others: ``h(b=math.log(x), a=1.0 / x)`` (``h`` a plain function astad inlines, its parameters read in
another order than the call evaluates its arguments) printed ``1.0 / x + math.log(x)``, so at ``x = 0.0``
the derivative raised ZeroDivisionError where the user's own call raises ValueError (math domain error).
The oracle here is the user's own call: the derivative's forward pass (reverse mode's, and forward
mode's) must raise what it raises, and at a point where nothing raises, give its value and derivative
(central finite differences).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import astad
from astad import api, api_forward


def _sum(a, b):
    return a + b


def _diff(a, b):
    return b - a


def _three(a, b, c):
    return a - b * c


def keywords_reversed(x, y):
    return _sum(b=math.log(x), a=1.0 / y)


def keywords_reversed_2(x, y):
    return _sum(b=1.0 / y, a=math.log(x))


def positional_read_reversed(x, y):
    return _diff(math.log(x), 1.0 / y)


def three_keywords(x, y):
    return _three(c=math.sqrt(x), b=math.log(y), a=1.0 / y)


def sqrt_then_division(x, y):
    return _diff(math.sqrt(x) * 2.0, x / y)


def two_divisions(x, y):
    return _diff(1.0 / x, 2.0 / y)  # (both raise ZeroDivisionError: either order is right)


def element_then_division(x, xs, i, y):
    return _diff(xs[i] + x, 1.0 / y)


PROGRAMS = [  # (function, raising arguments, a point where nothing raises)
    (keywords_reversed, (0.0, 0.0), (2.0, 3.0)),
    (keywords_reversed, (-1.0, 0.0), (2.0, 3.0)),
    (keywords_reversed_2, (-1.0, 0.0), (2.0, 3.0)),
    (positional_read_reversed, (0.0, 0.0), (2.0, 3.0)),
    (three_keywords, (-1.0, 0.0), (2.0, 3.0)),
    (three_keywords, (4.0, 0.0), (2.0, 3.0)),
    (sqrt_then_division, (-1.0, 0.0), (2.0, 3.0)),
    (two_divisions, (0.0, 0.0), (2.0, 3.0)),
]


def _raised(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e)
    return None


def _fd(fn, args, k, h=1e-6):
    up, down = list(args), list(args)
    up[k] += h
    down[k] -= h
    return (fn(*up) - fn(*down)) / (2 * h)


@pytest.mark.parametrize("fn,bad,good", PROGRAMS, ids=[f"{p[0].__name__}-{p[1]}" for p in PROGRAMS])
def test_reverse_raises_what_python_raises(fn, bad, good):
    want = _raised(lambda: fn(*bad))
    assert want is not None
    astad.clear_caches()
    assert _raised(lambda: astad.grad(fn, argnums=(0, 1))(*bad)) is want
    d = api.Reverse(fn).derivative(good, frozenset({0, 1}))  # the generated forward pass itself
    assert _raised(lambda: d.forward(*bad)) is want
    g = astad.grad(fn, argnums=(0, 1))(*good)
    np.testing.assert_allclose(g, [_fd(fn, good, 0), _fd(fn, good, 1)], rtol=1e-6)


@pytest.mark.parametrize("fn,bad,good", PROGRAMS, ids=[f"{p[0].__name__}-{p[1]}" for p in PROGRAMS])
def test_forward_raises_what_python_raises(fn, bad, good):
    want = _raised(lambda: fn(*bad))
    astad.clear_caches()
    assert _raised(lambda: astad.jvp(fn, bad, (1.0, 0.0))) is want
    d = api_forward.Forward(fn).derivative(good, frozenset({0, 1}))
    assert _raised(lambda: d.plain_jvp(*bad, 1.0, 0.0)) is want  # (the generated function itself)
    value, tangent = astad.jvp(fn, good, (1.0, 0.0))
    assert value == pytest.approx(fn(*good))
    assert tangent == pytest.approx(_fd(fn, good, 0), rel=1e-6)


def test_runtime_index_and_division_keep_their_order():
    """``xs[i]`` of an index out of range (IndexError) before ``1.0 / y`` (ZeroDivisionError)."""
    xs = [1.0, 2.0]
    want = _raised(lambda: element_then_division(0.0, xs, 5, 0.0))
    assert want is IndexError
    astad.clear_caches()
    assert _raised(lambda: astad.grad(element_then_division)(0.0, xs, 5, 0.0)) is want
    g = astad.grad(element_then_division)(2.0, xs, 1, 3.0)
    assert g == pytest.approx(_fd(lambda x: element_then_division(x, xs, 1, 3.0), (2.0,), 0), rel=1e-6)


def test_linear_algebra_error_before_division():
    """numpy's ``inv`` of a singular matrix (LinAlgError) before a Python float's ``1.0 / s``."""
    def f(A, s):
        return _sum(b=np.linalg.inv(A).sum(), a=1.0 / s)

    singular = np.ones((2, 2))
    want = _raised(lambda: f(singular, 0.0))
    assert want is np.linalg.LinAlgError
    astad.clear_caches()
    for argnums in (1, (0, 1)):
        assert _raised(lambda: astad.grad(f, argnums=argnums)(singular, 0.0)) is want
    A = np.array([[2.0, 1.0], [0.5, 3.0]])
    gA, gs = astad.grad(f, argnums=(0, 1))(A, 2.0)
    assert gs == pytest.approx(-1.0 / 4.0)
    assert astad.grad(f, argnums=1)(A, 2.0) == pytest.approx(-1.0 / 4.0)
    inv = np.linalg.inv(A)
    np.testing.assert_allclose(gA, -(inv.T @ np.ones((2, 2)) @ inv.T), rtol=1e-10)
