"""Values that depend on no differentiated input get no cotangent work: a
backward loop drops an accumulator nobody reads after it (the cotangent of
the evaluation nodes `t` of a polynomial, summed over the coefficients), with
the work that computed it.  Gradients checked against finite differences."""

from __future__ import annotations

import re

import numpy as np

import astad


def poly_fit(c, n):
    t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)
    p = np.zeros(n)
    for k in range(c.shape[0]):
        p = p * t + c[k]
    return np.sum(p * p)


def test_an_inactive_value_gets_no_cotangent_in_the_backward_loop():
    c = np.random.default_rng(0).normal(size=12) / 12
    r = astad.reverse(poly_fit)
    value, pullback = r(c, 40)
    (dc, dn) = pullback(1.0)
    eps = 1e-6
    fd = np.array([(poly_fit(c + eps * e, 40) - poly_fit(c - eps * e, 40)) / (2 * eps) for e in np.eye(12)])
    np.testing.assert_allclose(dc, fd, rtol=1e-6, atol=1e-9)
    assert dn is None
    backward = r.source.split("def poly_fit_backward")[1]
    assert not re.search(r"\bt_ct", backward)  # nothing accumulates the cotangent of t
