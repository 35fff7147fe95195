"""Tangent sums factored (astad/optimise/factor.py): derivatives against central
finite differences, the primal's value bit for bit the function's own (its
arithmetic is never rewritten), and the shared factor taken out of the tangent."""

from __future__ import annotations

import re

import numpy as np
import pytest

import astad


def shared(a, y):
    # primal: a * y + a * np.cos(y) must stay as written (bit-for-bit value)
    s = a * y + a * np.cos(y) - a * y * y
    for _ in range(3):
        s = s * y + np.sin(s) - 0.5 * s * a
    return np.sum(s)


def scalar_loop(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * y[i] + 0.5 * x[i] * x[i] - x[i] * y[i]
    return s


def all_negative(x):
    return -(x * np.sin(x)) - x * np.cos(x)


def quotient(x, a):
    # (n / d)' = n_t / d - d_t / d * q: one quotient by d, (n_t - d_t * q) / d
    return np.sum((x * x * x - a) / (3.0 * x * x))


def sigmoid(g):
    # the tangent -(-g_t * e / (1 + e) * s): its two negations cancel
    return np.sum(1.0 / (1.0 + np.exp(-g)))


def fd(f, args, tangents, h=1e-6):
    plus = [a + h * t for a, t in zip(args, tangents)]
    minus = [a - h * t for a, t in zip(args, tangents)]
    return (f(*plus) - f(*minus)) / (2 * h)


@pytest.mark.parametrize("f, make", [
    (shared, lambda r: (r.standard_normal(6), 0.3 * r.standard_normal(6))),
    (scalar_loop, lambda r: (r.standard_normal(7), r.standard_normal(7))),
    (all_negative, lambda r: (r.standard_normal(5),)),
    (quotient, lambda r: (1.0 + r.random(5), r.standard_normal(5))),
    (sigmoid, lambda r: (r.standard_normal(6),)),
])
def test_factored_tangents_match_finite_differences(f, make):
    rng = np.random.default_rng(3)
    for _ in range(3):
        args = make(rng)
        tangents = [rng.standard_normal(np.shape(a)) for a in args]
        value, tangent = astad.jvp(f, args, tangents)
        assert np.array_equal(np.asarray(value), np.asarray(f(*args)))  # the primal's rounding unchanged
        np.testing.assert_allclose(tangent, fd(f, args, tangents), rtol=1e-6, atol=1e-7)


def test_shared_factor_taken_out_of_the_tangent_only():
    fwd = astad.forward(scalar_loop)
    rng = np.random.default_rng(0)
    fwd(rng.standard_normal(4), rng.standard_normal(4))
    head, body = fwd.source.split("    for ")[1].split("return")[0].split("\n", 1)
    # the loop reads the rows (codegen/loops.py): `for xi, xi_t, yi, yi_t in zip(x, x_t, y, y_t):`
    rows = dict(zip(head.split(" in zip(")[1].rstrip("):").split(", "), head.split(" in ")[0].split(", ")))
    # xi_t * (...) + yi_t * (...): two products for the tangent's five terms, beside cos(xi) * yi
    code = "\n".join(line for line in body.splitlines() if not line.strip().startswith("#"))
    assert len(re.findall(rf"\b{rows['x_t']}\b", code)) == 1, fwd.source
    assert len(re.findall(rf"\b{rows['y_t']}\b", code)) == 1, fwd.source


def test_quotients_by_one_value_are_one_quotient():
    fwd = astad.forward(quotient)
    fwd(np.full(3, 2.0), np.ones(3))
    tangent = next(line for line in fwd.source.splitlines() if "x_t *" in line)
    assert tangent.count("/") == 1, fwd.source


def test_negations_of_a_negated_product_cancel():
    fwd = astad.forward(sigmoid)
    fwd(np.ones(3))
    tangent = next(line for line in fwd.source.splitlines() if "g_t" in line and "def" not in line and '"""' not in line)
    assert "-" not in tangent, fwd.source
