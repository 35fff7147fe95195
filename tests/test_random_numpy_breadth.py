"""Everyday numpy in reverse mode: random chains of reductions (axis tuples, negative axes,
keepdims, ddof), indexing (negative indices and steps, Ellipsis, None, masks, repeated integer
indices), gathers, shape changes, broadcasting against size-1 axes, einsum and in-place updates
(tests/numpy_breadth_programs.py draws them), each correct against central finite differences
or refused; and the regressions they found."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

from conftest import Refused, check_correct_or_refused, fuzz_examples, load_program
from numpy_breadth_programs import programs


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("breadth")


@settings(max_examples=fuzz_examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs())
def test_random_numpy_programs_are_correct_or_refused(program_dir, program):
    source, x, w = program
    mod = load_program(source, program_dir, "breadth")
    with np.errstate(all="ignore"):
        assume(np.isfinite(mod.f(x, w)))  # (a nan value: its central differences are nan everywhere)
        try:
            check_correct_or_refused(mod.f, [x, w])
        except Refused:
            pass


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
