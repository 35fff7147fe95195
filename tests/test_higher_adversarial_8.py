"""Adversarial cases for forward mode and derivatives of derivatives (session 8, helper
"advhigher").  Oracles: central finite differences in float64 of a lower derivative (itself
checked against differences by the first-order tests), never astad's own output of the same
order.  Each section names what astad did before its fix."""

from __future__ import annotations

import numpy as np

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
