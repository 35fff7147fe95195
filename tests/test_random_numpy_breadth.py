"""Everyday numpy in reverse mode: random chains of reductions (axis tuples, negative axes,
keepdims, ddof), indexing (negative indices and steps, Ellipsis, None, masks, repeated integer
indices), gathers, shape changes, broadcasting against size-1 axes, einsum and in-place updates
(tests/numpy_breadth_programs.py draws them), each correct against central finite differences
or refused; and the regressions they found."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from hypothesis import HealthCheck, given, settings

from conftest import Refused, check_correct_or_refused, fuzz_examples, load_program
from numpy_breadth_programs import programs


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("breadth")


@settings(max_examples=fuzz_examples(25, long=60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs())
def test_random_numpy_programs_are_correct_or_refused(program_dir, program):
    source, x, w = program
    mod = load_program(source, program_dir, "breadth")
    with np.errstate(all="ignore"):
        try:
            if np.isfinite(mod.f(x, w)):
                check_correct_or_refused(mod.f, [x, w])
            else:  # (a nan value: its central differences are nan everywhere) no crash, the primal's value
                _runs_as_numpy(mod.f, x, w)
        except Refused:
            pass


def _runs_as_numpy(fn, *args):
    """``fn`` (with a nan or inf value) runs, value and pullback, with no error but astad's own."""
    try:
        value, pullback = astad.reverse(fn)(*args)
    except astad.InternalError:
        raise
    except astad.AstadError:
        return None
    np.testing.assert_equal(value, fn(*args))
    return pullback(1.0)


# ---------------------------------------------------------------- regressions

def take_last_axis(x):
    return np.sum(np.take(x, [0, 0, 2], axis=-1) ** 2)


def repeat_counts_last_axis(x):
    return np.sum(np.repeat(x, np.array([1, 0, 2]), axis=-1) ** 2 * np.arange(3.0))


def einsum_size_one_letters(x, y):
    return np.sum(np.einsum("abc,abc->b", x, y) ** 2)


def einsum_masked_against_three(x, w):
    return np.sum(np.einsum("i,i->i", x[x > 1.0], w[:3]) ** 2)


def einsum_masked_outer(x, w):
    return np.sum(np.einsum("ij,ij->j", x[x > 1.0][:, None], w[None, :3]) ** 2)


@pytest.mark.parametrize("fn, args", [
    (take_last_axis, [np.linspace(-1.0, 1.0, 18).reshape(2, 3, 3)]),  # scatter-added into axis 0 (crash)
    (repeat_counts_last_axis, [np.linspace(-1.0, 1.0, 18).reshape(2, 3, 3)]),
    (einsum_size_one_letters, [np.linspace(-1.0, 1.0, 3).reshape(1, 3, 1),  # y's cotangent had shape (1, 1, 1)
                               np.linspace(0.5, 2.0, 6).reshape(2, 1, 3)]),
    (einsum_masked_against_three, [np.array([0.3, 1.7, -0.5, 0.2]), np.linspace(-1.0, 1.0, 4)]),  # one entry: crash
    (einsum_masked_against_three, [np.array([0.3, 1.7, 1.5, 1.2]), np.linspace(-1.0, 1.0, 4)]),
    (einsum_masked_outer, [np.array([0.3, 1.7, -0.5, 0.2]), np.linspace(-1.0, 1.0, 4)]),
    (einsum_masked_outer, [np.array([0.3, 1.7, 1.5, 1.2]), np.linspace(-1.0, 1.0, 4)]),
], ids=["take-axis-1", "repeat-counts-axis-1", "einsum-size-1", "einsum-mask-1", "einsum-mask-3",
        "einsum-mask-outer-1", "einsum-mask-outer-3"])
def test_regressions(fn, args):
    check_correct_or_refused(fn, args)


def var_of_none(x, w):
    return np.var(x[x > 5.0]) + np.std(x[x > 5.0], ddof=1) + np.sum(w)


def prod_of_none(x, w):
    return np.prod(x[x > 5.0]) * np.sum(w)


def var_of_one(x, w):
    return np.var(x[x > 1.0], ddof=1) + np.sum(w)


@pytest.mark.parametrize("fn", [var_of_none, prod_of_none, var_of_one])
def test_statistics_of_a_selection_of_none_or_one_run_as_numpy(fn):
    """np.var of no entries (or ddof=1 of one) divided by a Python 0 (ZeroDivisionError); np.prod's
    pullback of no entries could not reshape: numpy's nan (or the empty product 1) now, and the
    unselected entries get 0."""
    x, w = np.array([0.3, 1.7, -0.5, 0.2]), np.linspace(-1.0, 1.0, 3)
    with np.errstate(all="ignore"):
        cts = _runs_as_numpy(fn, x, w)
        assert cts is not None
        np.testing.assert_equal(cts[0][x <= 1.0], 0.0)
        if fn is prod_of_none:
            check_correct_or_refused(fn, [x, w])
