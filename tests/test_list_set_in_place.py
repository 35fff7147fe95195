"""``xs[i] = v`` on a list in a loop, done in place where nothing else can see the list
(optimise/lists_in_place.py, as for ``append``): O(1) a step in the forward pass (and forward
mode), and in the backward pass the list of cotangents updated in place (``xs_ct[i] = 0.0``,
``xs_ct[j] += ...``), with no copy of the list and no list taped per step; before, each step
copied the list (``xs_2 = xs[:]``), taped it, and the backward pass made a one-hot list of its
length per read: O(n^2) for a loop of n steps.  Where the old list is read otherwise (by an inner
loop, an ``if``, a copy made before the loop and read after it), it is copied as before.
Derivatives against central finite differences in float64 (conftest.check_correct_or_refused)
and forward vs reverse, ``<u, J v> == <J^T u, v>`` (forward_oracle.check_forward)."""


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward, derivative_sources


def built_then_set(x):
    xs = []
    for v in x:
        xs.append(v * 1.0)
    for i in range(len(xs)):
        xs[i] = xs[i] * np.sin(xs[i - 1]) + 0.5
    return xs[0] + xs[-1] * xs[1]


def display_then_set(x):
    xs = [x[0], x[1], x[2], x[3]]
    n = len(xs)
    for i in range(n):
        xs[i] = xs[i] * x[i] + xs[(i + 1) % n]
    return xs[0] * xs[3] + xs[1] - xs[2]


def two_sets_and_reads_after(x):
    xs = [x[0] * 1.0, x[1] * 1.0, x[2] * 1.0, x[3] * 1.0]
    for i in range(4):
        xs[i] = np.cos(xs[i]) * xs[i - 1]
        t = xs[i] * 2.0  # a read of the new list, after the update
        xs[(i + 2) % 4] = xs[(i + 2) % 4] + t
    return xs[0] * xs[1] + xs[2] * xs[3]


def set_then_append(x):
    xs = [x[0], x[1]]
    for i in range(3):
        xs[i] = xs[i] * xs[-1]
        xs.append(xs[i] + x[i + 1])
    return xs[0] * xs[-1] + xs[2]


def set_in_a_branch(x):
    xs = [x[0], x[1], x[2], x[3]]
    for i in range(4):
        if i % 2 == 0:
            xs[i] = xs[i] * xs[i - 1]
        else:
            xs[i - 1] = np.exp(xs[i]) * 0.5
    return xs[0] + xs[1] * xs[2] * xs[3]


def while_set(x):
    xs = []
    for v in x:
        xs.append(v * v)
    k = 0
    while k < len(xs) - 1:
        xs[k + 1] = xs[k] * np.cos(xs[k + 1])
        k += 1
    return xs[-1] + xs[0]


def rows_set(x):
    rows = []
    for k in range(3):
        rows.append(x * (k + 1.0))
    for k in range(3):
        rows[k] = np.tanh(rows[k] * rows[k - 1])
    return np.sum(np.stack(rows) ** 2)


def two_loops_set(x):
    xs = [x[0], x[1], x[2], x[3]]
    for i in range(4):
        xs[i] = xs[i] * xs[i - 1]
    for i in range(4):
        xs[3 - i] = np.sin(xs[3 - i]) + xs[i]
    return xs[0] * xs[1] + xs[2] + xs[3]


# ---- the old list read otherwise: copied (or its readers computed first), still right


def copy_before_read_after(x):
    xs = [x[0], x[1], x[2], x[3]]
    ys = xs[:]  # a copy: another list, which must keep the old elements
    zs = list(xs)
    for i in range(4):
        xs[i] = xs[i] * xs[i - 1]
    return ys[0] * xs[0] + zs[3] * xs[3] + ys[1]


def read_before_the_loop(x):
    xs = []
    for v in x:
        xs.append(v * 2.0)
    a = xs[0]
    b = xs[-1] * xs[1]
    for i in range(len(xs)):
        xs[i] = xs[i] * a
    return a * xs[0] + b * xs[-1]


def read_by_inner_loop(x):
    xs = [x[0], x[1], x[2], x[3]]
    for i in range(4):
        s = 0.0
        for j in range(4):
            s = s + xs[j] * x[j]
        xs[i] = s * 0.25 + xs[i]
    return xs[0] * xs[3] + xs[2]


def stacked_in_the_loop(x):
    xs = [x[0], x[1], x[2], x[3]]
    total = 0.0
    for i in range(4):
        total = total + np.sum(np.array(xs) ** 2)
        xs[i] = xs[i] * total
    return total + xs[1] * xs[3]


def list_set_out_of_the_loop(x):
    xs = [x[0], x[1], x[2], x[3]]
    for i in range(4):
        xs[i] = xs[i] * 2.0
    ys = xs
    ys_first = ys[0]
    return ys_first * xs[1]


IN_PLACE = [built_then_set, display_then_set, two_sets_and_reads_after, set_then_append, set_in_a_branch, while_set,
            rows_set, two_loops_set]
OTHERS = [copy_before_read_after, read_before_the_loop, read_by_inner_loop, stacked_in_the_loop,
          list_set_out_of_the_loop]


@settings(max_examples=fuzz_examples(3, long=6), deadline=None)
@given(x=arrays(np.float64, 4, elements=st.floats(-1.5, 1.5)), data=st.data())
@pytest.mark.parametrize("fn", IN_PLACE + OTHERS, ids=lambda f: f.__name__)
def test_derivatives(fn, x, data):
    check_correct_or_refused(fn, [x])
    check_forward(fn, (x,), data)


@pytest.mark.parametrize("fn", [built_then_set, display_then_set, two_sets_and_reads_after, while_set, rows_set,
                                two_loops_set], ids=lambda f: f.__name__)
def test_no_copy_per_step(fn):
    """The generated code copies no list (``[:]``), makes no one-hot list (``list_onehot``) and
    adds no lists (``list_add``) in its loops, in reverse and in forward mode."""
    x = np.array([0.3, -0.7, 1.1, 0.5])
    for source in derivative_sources(fn, (x,)):
        loops = [line for line in source.splitlines() if line.startswith(" " * 8)]  # (no `if` outside a loop)
        assert "[:]" not in source, source
        assert not any("list_onehot(" in line or "list_add(" in line for line in loops), source


def test_the_list_is_not_taped():
    """The forward pass records only the step's numbers, not the list, on its tape."""
    reverse, _ = derivative_sources(built_then_set, (np.array([0.3, -0.7, 1.1, 0.5]),))
    tapes = [line for line in reverse.splitlines() if "_tape.append(" in line]
    assert tapes and not any("xs" in line for line in tapes), reverse


def test_copied_where_the_old_list_is_read_by_an_inner_loop():
    reverse, jvp = derivative_sources(read_by_inner_loop, (np.array([0.3, -0.7, 1.1, 0.5]),))
    assert "[:]" in reverse and "[:]" in jvp


def test_copied_where_the_backward_pass_reads_the_list_before_the_loop():
    """``a = xs[0]`` before the loop: the backward pass reads the list as it was then (a residual),
    so the forward pass's loop copies it; forward mode keeps nothing and updates it in place."""
    reverse, jvp = derivative_sources(read_before_the_loop, (np.array([0.3, -0.7, 1.1, 0.5]),))
    assert "xs_7 = xs_6[:]" in reverse and "[:]" not in jvp


@pytest.mark.parametrize("fn", [built_then_set, two_sets_and_reads_after, set_then_append, while_set],
                         ids=lambda f: f.__name__)
def test_hessian(fn):
    """Reverse over reverse reads the in-place updates as the functional ones (ad/lower_target.py)."""
    x = np.array([0.3, -0.7, 1.1, 0.5])
    g, eps = astad.grad(fn), 1e-6
    fd = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(astad.hessian(fn)(x), fd, rtol=1e-6, atol=1e-7)
