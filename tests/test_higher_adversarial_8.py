"""Adversarial cases for forward mode and derivatives of derivatives (session 8, helper
"advhigher").  Oracles: central finite differences in float64 of a lower derivative (itself
checked against differences by the first-order tests), never astad's own output of the same
order.  Each section names what astad did before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from conftest import central_differences


def mixed(x, y):
    return np.sin(x * y) * x ** 2 + y ** 3 * x


def of_a_vector(x, a):
    return np.sum(np.sin(x) * x[::-1]) * a + np.prod(x) ** 2


# -- vjp of a gradient's gradient ---------------------------------------------------------------------
# astad.vjp(astad.grad(astad.grad(f)), x, y) (reverse over forward over reverse) crashed with
# "TypeError: '_Leaf' object is not subscriptable": the transpose of the program's output selection
# marked only the top level of the generated code's output, and a JVP's program returns
# (value, tangent) with the tangent a tuple again (api_vjp.transpose_select).


def test_vjp_of_grad_of_grad():
    x, y = 0.7, 1.3
    gg = astad.grad(astad.grad(mixed))
    value, pullback = astad.vjp(gg, x, y)
    np.testing.assert_allclose(value, central_differences(lambda s: astad.grad(mixed)(s, y), x), rtol=1e-6)
    dx, dy = pullback(1.0)
    np.testing.assert_allclose(dx, central_differences(lambda s: gg(s, y), x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dy, central_differences(lambda s: gg(x, s), y), rtol=1e-5, atol=1e-6)
    dx2, dy2 = pullback(2.0)
    np.testing.assert_allclose((dx2, dy2), (2 * dx, 2 * dy), rtol=1e-12)


def test_vjp_of_mixed_partials_and_of_a_hessian_entry():
    x, y = 0.7, 1.3
    dxy = astad.grad(astad.grad(mixed, argnums=0), argnums=1)  # d/dy d/dx
    _, pullback = astad.vjp(dxy, x, y)
    dx, dy = pullback(1.0)
    np.testing.assert_allclose(dx, central_differences(lambda s: dxy(s, y), x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dy, central_differences(lambda s: dxy(x, s), y), rtol=1e-5, atol=1e-6)
    h = astad.hessian(mixed)  # of a scalar argument: one program
    _, pullback = astad.vjp(h, x, y)
    dx, dy = pullback(1.0)
    np.testing.assert_allclose(dx, central_differences(lambda s: h(s, y), x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dy, central_differences(lambda s: h(x, s), y), rtol=1e-5, atol=1e-6)


def test_vjp_of_a_column_of_a_hessian():
    x, a = np.array([0.3, 0.7, 1.1]), 1.3
    col = astad.jacfwd(astad.grad(of_a_vector), argnums=1)  # d/da grad_x f: one JVP's program
    u = np.array([0.2, -0.5, 0.9])
    _, pullback = astad.vjp(col, x, a)
    dx, da = pullback(u)
    np.testing.assert_allclose(dx, central_differences(lambda s: u @ col(s, a), x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(da, central_differences(lambda s: u @ col(x, s), a), rtol=1e-5, atol=1e-6)


# -- a function value rebound in a loop --------------------------------------------------------------
# A loop carried from one iteration to the next the names its body rebinds, but not those bound to a
# function (a lambda, a nested def, a numpy function, an array's method): the rebinding was lost, the
# next iteration and the code after the loop called the function bound before the loop.  The value and
# every derivative were wrong (lambda_rebound_in_a_loop(0.6, 0.7): 0.42, Python 1.42; grad 0.7, central
# differences 2.14 for the composing form).  Refused now, at the loop, like a tuple that changes length.


def lambda_rebound_in_a_loop(a, b):
    f = lambda t: t * a  # noqa: E731
    for i in range(2):
        f = lambda t: t * a + 1.0  # noqa: E731
    return f(b)


def lambda_composed_in_a_loop(a, b):
    f = lambda t: t * a  # noqa: E731
    for i in range(3):
        g = f
        f = lambda t, g=g: g(t) * a + t  # noqa: E731
    return f(b)


def def_rebound_in_a_while_loop(a, b):
    def f(t):
        return t * a
    k, s = 0, f(b)
    while k < 2:
        def f(t):
            return t * a + 1.0
        k += 1
    return f(b) + s


def numpy_function_rebound_in_a_loop(x, n):
    op = np.sin
    for i in range(n):
        op = np.cos
    return np.sum(op(x))


def method_rebound_in_a_loop(x):
    s = x.sum
    y = x
    for i in range(2):
        y = y * 2.0
        s = y.sum
    return s()


def def_in_a_loop_read_after_it(x):
    def g(t):
        return t
    s = g(x[0])
    for i in range(3):
        def g(t):
            return t * i
        s = s + g(x[0])
    return s + g(x[1])


def lambda_rebound_before_a_break(x):
    f = lambda t: t * x[0]  # noqa: E731
    s = 0.0
    for i in range(4):
        if s > 0.5:
            f = lambda t: t + 1.0  # noqa: E731
            break
        s = s + f(x[i])
    return s + f(x[1])  # (Python 2.6 at x below; astad gave 1.15)


REBOUND = [(lambda_rebound_before_a_break, (np.array([0.5, 0.9, 1.2, 0.3]),)), (lambda_rebound_in_a_loop, (0.6, 0.7)), (lambda_composed_in_a_loop, (0.6, 0.7)),
           (def_rebound_in_a_while_loop, (0.6, 0.7)), (numpy_function_rebound_in_a_loop, (np.array([0.3, 0.5]), 2)),
           (method_rebound_in_a_loop, (np.array([0.3, 0.5]),)), (def_in_a_loop_read_after_it, (np.array([0.3, 0.5]),))]


@pytest.mark.parametrize("fn, args", REBOUND, ids=[f.__name__ for f, _ in REBOUND])
def test_a_function_rebound_in_a_loop_is_refused(fn, args):
    tangents = tuple(None if isinstance(a, int) else np.ones_like(a) if isinstance(a, np.ndarray) else 1.0
                     for a in args)
    for run in (lambda: astad.reverse(fn)(*args), lambda: astad.grad(fn)(*args),
                lambda: astad.jvp(fn, args, tangents), lambda: astad.grad(astad.grad(fn))(*args)
                if isinstance(args[0], float) else astad.hessian(fn)(*args)):
        with pytest.raises(astad.AstadTypeError, match="changes structure in the loop") as info:
            run()
        assert info.value.loc is not None and info.value.loc.line > 0


def same_function_rebound_in_a_loop(x):
    op = np.sin
    for i in range(2):
        op = np.sin
    return np.sum(op(x) * x)


def lambda_rebound_in_a_loop_over_a_tuple(a, b):  # unrolled: each iteration lowered on its own
    f = lambda t: t * a  # noqa: E731
    for c in (1.0, 2.0):
        f = lambda t, c=c, g=f: g(t) * c + a  # noqa: E731
    return f(b)


def lambda_called_in_a_loop(a, b):
    f = lambda t: t * a  # noqa: E731
    s = b
    for i in range(3):
        s = f(s) + b
    return s


@pytest.mark.parametrize("fn, args", [(same_function_rebound_in_a_loop, (np.array([0.3, 0.5]),)),
                                      (lambda_rebound_in_a_loop_over_a_tuple, (0.6, 0.7)),
                                      (lambda_called_in_a_loop, (0.6, 0.7))])
def test_a_function_kept_in_a_loop_is_still_differentiated(fn, args):
    x = args[0]
    np.testing.assert_allclose(astad.reverse(fn)(*args)[0], fn(*args), rtol=1e-12)
    np.testing.assert_allclose(astad.grad(fn)(*args), central_differences(lambda s: fn(s, *args[1:]), x),
                               rtol=1e-6, atol=1e-8)
    if isinstance(x, float):
        np.testing.assert_allclose(astad.grad(astad.grad(fn))(*args),
                                   central_differences(lambda s: astad.grad(fn)(s, *args[1:]), x), rtol=1e-6)
