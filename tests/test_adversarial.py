"""What a derivative depends on beyond the names its code reads, changed after fast calls: a called
function's ``__code__``, ``__defaults__`` or ``__kwdefaults__`` assigned (or a keyword-only default
changed in that dict), a ``functools.partial``'s keywords changed in place.  Each call after the change must give the value and derivative of the
function as it is now (against the plain function and central finite differences in float64), by
every entry point that keeps derivatives (``grad`` with its checked latest entry and its forward-mode
path, ``value_and_grad``, ``jvp`` with its checked code, ``vjp``)."""

from __future__ import annotations

import functools

import pytest

import astad
from conftest import load_program

SOURCE = '''
import numpy as np


def square(a):
    return a * a


def cube(a):
    return a * a * a


def helper(a):
    return a * a


def f(x):
    return helper(x) + np.sin(x)


def scaled(a, c=2.0):
    return c * a * a


def g(x):
    return scaled(x) + x


def scaled_kw(a, *, c=2.0):
    return c * a * a


def h(x):
    return scaled_kw(x) + x


def two(x, y):
    return x * y * y
'''

MODES = ["grad", "value_and_grad", "jvp", "vjp"]


@pytest.fixture
def mod(tmp_path):
    return load_program(SOURCE, tmp_path, "adversarial")


def _fd(fn, x, eps=1e-6):
    return (fn(x + eps) - fn(x - eps)) / (2 * eps)


def _derivative(mode, fn, grad, x):
    """``(value or None, derivative)`` of ``fn`` at ``x`` by ``mode`` (``grad``: one object, kept)."""
    if mode == "grad":
        return None, grad(x)
    if mode == "value_and_grad":
        return astad.value_and_grad(fn)(x)
    if mode == "jvp":
        return astad.jvp(fn, (x,), (1.0,))
    value, pullback = astad.vjp(fn, x)
    return value, pullback(1.0)[0]


def _check(mode, fn, grad, x):
    for _ in range(2):  # the first call after the change, then the checked latest entry
        value, d = _derivative(mode, fn, grad, x)
        if value is not None:
            assert value == pytest.approx(fn(x), rel=1e-14)
        assert d == pytest.approx(_fd(fn, x), rel=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_a_called_functions_code_assigned_after_fast_calls(mod, mode):
    """astad gave the derivative of the old ``helper`` (and, by value_and_grad and vjp, its value)."""
    grad = astad.grad(mod.f)
    _check(mode, mod.f, grad, 0.7)
    mod.helper.__code__ = mod.cube.__code__
    _check(mode, mod.f, grad, 0.7)
    mod.helper.__code__ = mod.square.__code__
    _check(mode, mod.f, grad, 0.7)


@pytest.mark.parametrize("mode", MODES)
def test_a_called_functions_defaults_assigned_after_fast_calls(mod, mode):
    grad = astad.grad(mod.g)
    _check(mode, mod.g, grad, 0.7)
    mod.scaled.__defaults__ = (5.0,)
    _check(mode, mod.g, grad, 0.7)


@pytest.mark.parametrize("mode", MODES)
def test_a_called_functions_keyword_defaults_assigned_after_fast_calls(mod, mode):
    grad = astad.grad(mod.h)
    _check(mode, mod.h, grad, 0.7)
    mod.scaled_kw.__kwdefaults__ = {"c": 5.0}
    _check(mode, mod.h, grad, 0.7)


@pytest.mark.parametrize("mode", MODES)
def test_a_called_functions_keyword_default_changed_in_place(mod, mode):
    """``__kwdefaults__`` is a dict: a default changed in it, not the dict assigned."""
    grad = astad.grad(mod.h)
    _check(mode, mod.h, grad, 0.7)
    mod.scaled_kw.__kwdefaults__["c"] = 5.0
    _check(mode, mod.h, grad, 0.7)


def test_a_called_function_replaced_by_a_builtin_after_fast_calls(mod):
    """The derivative depends on ``helper.__code__``: a ``helper`` that is no longer a Python function
    (no ``__code__``) makes it again, with no error of astad's own."""
    grad = astad.grad(mod.f)
    _check("grad", mod.f, grad, 0.7)
    mod.helper = abs
    _check("grad", mod.f, grad, 0.7)
    _check("jvp", mod.f, grad, 0.7)


@pytest.mark.parametrize("mode", MODES)
def test_a_partials_keywords_changed_in_place(mod, mode):
    """``functools.partial(two, y=3.0)``: its ``keywords`` is a dict, which may be changed in place;
    astad bound the keywords the partial held when it was first called."""
    p = functools.partial(mod.two, y=3.0)
    grad = astad.grad(p)
    _check(mode, p, grad, 2.0)
    p.keywords["y"] = 5.0
    _check(mode, p, grad, 2.0)
