"""A call of your function binds its arguments as Python does: by the function's code and defaults.
``inspect.signature`` reads a ``__signature__`` attribute first (a decorator or a library may set one),
and astad bound an inlined call by it: ``helper(x, y)`` with a ``__signature__`` naming ``(b, a)`` gave
``a`` the value of ``y`` (a wrong gradient), a default of the attribute replaced the function's.
Checked against Python's own execution and central differences, in both modes."""

import inspect

import numpy as np
import pytest

import astad
from conftest import central_differences

_P = inspect.Parameter


def helper(a, b):
    return a * 2.0 + np.sin(b) * 3.0


helper.__signature__ = inspect.Signature([_P("b", _P.POSITIONAL_OR_KEYWORD), _P("a", _P.POSITIONAL_OR_KEYWORD)])


def scaled(a, b=1.0):
    return a * b


scaled.__signature__ = inspect.Signature([_P("a", _P.POSITIONAL_OR_KEYWORD),
                                          _P("b", _P.POSITIONAL_OR_KEYWORD, default=5.0)])


def by_position(x):
    return np.sum(helper(x, x * x))


def by_keyword(x):
    return np.sum(helper(b=x * x, a=x))


def by_default(x):
    return np.sum(scaled(x) * x)


@pytest.mark.parametrize("fn", [by_position, by_keyword, by_default])
def test_calls_bind_by_the_code_not_a_signature_attribute(fn):
    x = np.array([0.4, -1.3, 2.1])
    want = central_differences(fn, x)
    value, grad = astad.value_and_grad(fn)(x)
    assert value == pytest.approx(fn(x), rel=1e-12)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(astad.jacfwd(fn)(x), want, rtol=1e-6, atol=1e-6)
