"""Adversarial cases against forward mode and higher-order derivatives (eighth round):
``astad.jvp``/``forward``, ``jacfwd`` against ``jacrev``, ``hessian``/``hvp``/``grad`` of ``grad``,
over control flow, closures, in-place updates, kinks, mixed numeric kinds and pytrees.  The oracles
are plain Python, central finite differences in float64, and the two modes against each other
(``<u, J v> == <J^T u, v>``, ``jacfwd == jacrev``, a Hessian against the differences of the
gradient), never astad's own output.  Each section names what astad did before its fix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from conftest import central_differences

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)


def check_scalar_function(fn, x, rtol=1e-6, atol=1e-8):
    """Value, ``jvp``, ``grad`` and ``forward`` of a function of one float against Python and
    central differences."""
    want = fn(x)
    d = central_differences(fn, x)
    value, tangent = astad.jvp(fn, (x,), (1.0,))
    assert value == pytest.approx(want, rel=1e-12)
    assert tangent == pytest.approx(d, rel=rtol, abs=atol)
    value, pullback = astad.reverse(fn)(x)
    assert value == pytest.approx(want, rel=1e-12)
    assert pullback(1.0)[0] == pytest.approx(d, rel=rtol, abs=atol)
    assert astad.grad(fn)(x) == pytest.approx(d, rel=rtol, abs=atol)


# ------------------------------------------------------------------ 1. `return` in a `while` loop whose
# condition holds at its start
# astad took `k = 0; while k < 10:` for `while True:` (its condition, known when transforming, holds
# before the first iteration), so that the loop could end only by its `return`: the `return` after the
# loop was lost, and where the loop ran to its end the value and every derivative were 0.0.

def while_counter_return(x):
    k = 0
    while k < 10:
        x = x * 1.1 + 0.1
        if x > 3.0:
            return x * x
        k += 1
    return x


def while_counter_first_return(x):
    k = 0
    while k < 4:
        k = k + 1
        x = np.sin(x) + x
        if x > 2.5:
            return x * 3.0
    return x - 1.0


def while_true_return(x):  # left only by its `return`: the same path as before
    k = 0
    while True:
        x = x * 1.5
        k += 1
        if x > 2.0 or k > 20:
            return x * k


@SETTINGS
@given(st.floats(0.05, 1.5))
def test_return_in_while_loop_with_a_known_first_condition(x):
    for fn in (while_counter_return, while_counter_first_return, while_true_return):
        check_scalar_function(fn, x)
    h = astad.grad(astad.grad(while_counter_return))(x)
    assert h == pytest.approx(central_differences(astad.grad(while_counter_return), x), rel=1e-5, abs=1e-6)


def test_return_in_while_loop_runs_to_its_end():
    assert while_counter_return(0.5) < 3.0  # the loop ends without returning
    check_scalar_function(while_counter_return, 0.5)
    check_scalar_function(while_counter_first_return, 0.1)
