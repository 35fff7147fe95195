"""A loop whose body reads ``x[i]`` inside an ``if``: in the backward pass each
branch adds its part into the loop's accumulator in place (``acc[i] += v``),
O(1) per iteration, never a one-hot array of zeros per iteration."""

import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_grad


def two_branches(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + x[i] * y
        else:
            s = s - x[i]
    return s


def elif_chain(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            s = s + x[i] * y
        elif x[i] > -0.5:
            s = s + np.sin(x[i])
        else:
            s = s * y - x[i]
    return s


def one_branch_reads(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        if y > 0:
            s = s + x[i] * x[i]
        else:
            s = s + y
    return s


def different_indices(x, y):
    s = 0.0
    for i in range(x.shape[0] - 1):
        if x[i] > x[i + 1]:
            s = s + x[i] * y
        else:
            s = s + x[i + 1] * x[i + 1]
    return s


def nested_loops(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > 0:
                s = s + x[i, j] * y
            else:
                s = s - x[i, j] * x[i, j]
    return s


def from_list(x, y):
    xs = [x[i] for i in range(x.shape[0])]
    s = 0.0
    for i in range(len(xs)):
        if xs[i] > 0:
            s = s + xs[i] * y
        else:
            s = s - xs[i]
    return s


PROGRAMS = [two_branches, elif_chain, one_branch_reads, different_indices, nested_loops, from_list]

#: where the programs' branches switch (an element there is a kink or a jump)
KINKS = np.array([0.0, 0.5, -0.5])


def _x(fn, values):
    x = np.asarray(values, dtype=np.float64)
    return x.reshape(5, -1) if fn is nested_loops else x


def _backward_loops(source):
    """The bodies of the ``for`` loops of the backward function (text)."""
    backward = source[source.index("_backward("):]
    lines = backward.splitlines()
    bodies = []
    for k, line in enumerate(lines):
        if line.lstrip().startswith("for "):
            indent = len(line) - len(line.lstrip())
            body = []
            for nxt in lines[k + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                body.append(nxt)
            bodies.append("\n".join(body))
    return bodies


@pytest.mark.parametrize("fn", PROGRAMS)
def test_no_zeros_inside_the_backward_loop(fn):
    x = _x(fn, np.linspace(-1.3, 1.7, 50))
    source = astad.reverse(fn).transform(x, 1.5).source
    loops = _backward_loops(source)
    assert loops, source
    for body in loops:
        assert "zeros" not in body, source
        assert "[:]" not in body and "list(" not in body, source  # no copy of a whole list either


@pytest.mark.parametrize("fn", [two_branches, elif_chain, different_indices])
def test_the_backward_loop_does_as_much_for_any_length(fn):
    """The loop body's text does not depend on the length: O(1) per iteration."""
    def body(n):
        x = np.linspace(-1.3, 1.7, n)
        return re.sub(r"\(\d+,\)", "(N,)", "\n".join(_backward_loops(astad.reverse(fn).transform(x, 1.5).source)))

    assert body(20) == body(400)


@pytest.mark.parametrize("fn", PROGRAMS)
@settings(max_examples=8, deadline=None)
@given(values=arrays(np.float64, 20, elements=st.floats(-2, 2).filter(lambda v: abs(v) > 1e-2)),
       y=st.floats(-2, 2).filter(lambda v: abs(v) > 1e-2))
def test_gradients_against_finite_differences_and_forward_mode(fn, values, y):
    values = values + np.arange(20) * 1e-3
    # away from the programs' kinks (0, elif_chain's +-0.5, two equal values for different_indices), after the shift
    assume(np.min(np.abs(values[:, None] - KINKS)) > 1e-3 and np.min(np.diff(np.sort(values))) > 1e-4)
    x = _x(fn, values)
    check_grad(fn, (x, float(y)))
    rng = np.random.default_rng(0)
    v = rng.standard_normal(x.shape)
    _, jv = astad.jvp(fn, (x, float(y)), (v, 0.0))
    _, pullback = astad.reverse(fn)(x, float(y))
    x_ct, _ = pullback(1.0)
    np.testing.assert_allclose(jv, np.sum(x_ct * v), rtol=1e-9, atol=1e-9)
