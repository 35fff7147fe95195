"""``for ... else`` and ``while ... else`` with Python's meaning: the ``else`` block runs where the
loop ends without ``break`` (also where it never iterates; not where a ``return`` in it ends the
function).  Before, astad refused every loop with an ``else`` block.  A ``for`` with ``break``
carries whether it still runs; a ``while`` with ``break`` carries whether it ended by its condition
(before the condition it carries).  ``break``/``continue`` in the ``else`` block itself (leaving an
enclosing loop) stay refused with astad's own error.  Derivatives against central finite
differences in float64 and forward vs reverse ``<u, J v> == <J^T u, v>``, over drawn inputs that
take each way out of the loop."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward
from test_errors import check_located


def for_else_break(x):
    s = 0.0
    for v in x:
        s = s + v * v
        if s > 1.0:
            break
    else:
        s = s * np.sin(x[0])
    return s * x[1]


def for_range_else(x, n):
    acc = x[0]
    for i in range(n):  # (n == 0: no iteration, the else block runs)
        acc = acc * np.cos(x[i % 3])
        if acc < -0.5:
            break
    else:
        acc = acc + 10.0 * x[2]
    return acc


def for_else_no_break(x):
    y = x * 1.0
    for i in range(3):
        y[i] = y[i] * x[(i + 1) % 3]
    else:
        y = np.tanh(y)
    return np.sum(y * x)


def while_else_break(x):
    k = 0
    s = x[0]
    while k < 4:
        s = s * x[1] + x[2]
        if s > 1.5:
            break
        k += 1
    else:
        s = s - x[0] * x[0]
    return s * s


def while_else_no_break(x):
    s = x[0] * 1.0
    k = 0
    while k < 3 and s < 2.0:
        s = s + x[1] * x[1] + 0.1
        k += 1
    else:
        s = s * x[2]
    return s


def returns_in_loop_or_else(x):
    for v in x:
        if v > 0.5:
            return v * x[0]
    else:
        return np.sum(x * x)


def return_in_else_only(x):
    t = x[0]
    for i in range(3):
        t = t * x[i]
        if t > 0.8:
            break
    else:
        return t * 100.0
    return t - x[1]


def nested_else(x):
    total = 0.0
    for i in range(3):
        s = x[i]
        for j in range(3):
            s = s * x[j]
            if s > 0.4:
                break
        else:
            s = -s
        total = total + s
    else:
        total = total * 2.0
    return total


def smooth_at(fn, args):
    """Whether no branch boundary (a jump or a kink) is near ``args``: one-sided differences agree
    along each axis and a few other directions."""
    x = args[0]
    rng = np.random.default_rng(0)
    f0 = fn(x, *args[1:])
    for e in [*np.eye(x.size), *rng.normal(size=(3, x.size))]:
        h = 1e-5
        ahead, back = (fn(x + h * e, *args[1:]) - f0) / h, (f0 - fn(x - h * e, *args[1:])) / h
        if not np.isclose(ahead, back, rtol=1e-3, atol=1e-3):
            return False
    return True


ONE_ARG = [for_else_break, for_else_no_break, while_else_break, while_else_no_break, returns_in_loop_or_else,
           return_in_else_only, nested_else]


@settings(max_examples=fuzz_examples(4, long=8), deadline=None)
@given(x=arrays(np.float64, 3, elements=st.floats(-1.5, 1.5)), data=st.data())
@pytest.mark.parametrize("fn", ONE_ARG, ids=lambda f: f.__name__)
def test_loop_else(fn, x, data):
    assume(smooth_at(fn, [x]))
    check_correct_or_refused(fn, [x])
    check_forward(fn, (x,), data)


@settings(max_examples=fuzz_examples(8), deadline=None)
@given(x=arrays(np.float64, 3, elements=st.floats(-1.5, 1.5)), n=st.integers(0, 5), data=st.data())
def test_for_range_else(x, n, data):
    assume(smooth_at(for_range_else, [x, n]))
    check_correct_or_refused(for_range_else, [x, n])
    check_forward(for_range_else, (x, n), data)


def test_both_ways_out_are_taken():
    """Each program runs its ``else`` block at one point and breaks at another (not refused)."""
    for fn, broke, ended in [(for_else_break, [0.9, 0.9, 0.1], [0.1, 0.2, 0.3]),
                             (while_else_break, [1.0, 1.0, 1.0], [0.1, 0.1, 0.1]),
                             (return_in_else_only, [1.0, 1.0, 1.0], [0.5, 0.5, 0.5])]:
        for x in (broke, ended):
            x = np.array(x)
            value, pullback = astad.reverse(fn)(x)
            assert value == fn(x)
            astad.jvp(fn, (x,), (np.ones(3),))


def break_in_else(x):
    s = 0.0
    for i in range(3):
        for j in range(2):
            s = s + x[j]
        else:
            break
    return s


def test_break_in_the_else_block_is_refused():
    with pytest.raises(astad.AstadError) as e:
        astad.grad(break_in_else)(np.ones(3))
    check_located(e.value, break_in_else, "else:")
    assert "set a flag" in str(e.value)
