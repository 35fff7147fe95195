"""Adversarial tests of session 8's changes (generators read through zip, ...).

Oracles: the plain Python call (values), central differences in float64 (gradients), jvp against the
gradient (forward against reverse)."""

from __future__ import annotations

import pytest

from conftest import check_refused_both_modes, check_scalar_function, load_program


def _agrees(f, xs=(0.7, 1.3)):
    check_scalar_function(f, xs)


_refused = check_refused_both_modes


# ------------------------------------------------------------------ zip stops at the shortest: a generator
# read through it is evaluated by Python only up to there (astad evaluated every element: an IndexError
# Python never reaches)

ZIP_LAZY = """\
import math


def zip_longer_generator(x):
    s = 0.0
    xs = [x, 2.0 * x]
    for a, b in zip([1.0], (xs[i] for i in range(5))):
        s = s + a * b
    return s


def zip_longer_generator_comprehension(x):
    xs = [x, 2.0 * x]
    return sum([a * b for a, b in zip([1.0], (xs[i] for i in range(5)))])


def map_of_two_longer(x):
    xs = [x, 2.0 * x]
    return sum([v for v in map(lambda a, b: a * b, [1.0], (xs[i] for i in range(5)))])


def enumerate_zip_longer(x):
    s = 0.0
    xs = [x, 2.0 * x]
    for i, (a, b) in enumerate(zip([1.0], (xs[i] for i in range(5)))):
        s = s + a * b
    return s


def zip_equal_lengths(x):
    s = 0.0
    for a, b in zip((x * i for i in range(3)), map(math.cos, [x, 2.0 * x, 3.0 * x])):
        s = s + a * b
    return s


def zip_generator_shorter(x):
    s = 0.0
    for a, b in zip([1.0, 2.0, 3.0], (x * i for i in range(2))):
        s = s + a * b
    return s
"""


@pytest.fixture(scope="module")
def zip_lazy(tmp_path_factory):
    return load_program(ZIP_LAZY, tmp_path_factory.mktemp("zip_lazy"))


@pytest.mark.parametrize("name", ["zip_longer_generator", "zip_longer_generator_comprehension",
                                  "map_of_two_longer", "enumerate_zip_longer"])
def test_zip_with_a_longer_generator_is_refused(zip_lazy, name):
    f = getattr(zip_lazy, name)
    assert f(0.7) == pytest.approx(0.7)  # Python never reads xs[2]
    _refused(f, "zip")


@pytest.mark.parametrize("name", ["zip_equal_lengths", "zip_generator_shorter"])
def test_zip_with_a_generator_no_longer_than_the_others(zip_lazy, name):
    _agrees(getattr(zip_lazy, name))


# ------------------------------------------------------------------ a for loop that may stop early (break,
# return, raise) reads no element of its generator after: astad read them all up front (IndexError, math
# domain error, ZeroDivisionError where Python returns)

STOPS_EARLY = """\
import math
import numpy as np


def generator_break(x):
    xs = [x, 2.0 * x]
    s = 0.0
    for v in (xs[t] for t in range(5)):
        s = s + v
        if s > 0.5:
            break
    return s


def map_break(x):
    w = np.array([1.0, 2.0, -1.0])
    s = 0.0
    for v in map(math.sqrt, w * x):
        s = s + v
        if s > 0.5:
            break
    return s


def generator_return(x):
    xs = [x, 2.0 * x]
    for v in (xs[t] for t in range(5)):
        if v > 0.5:
            return v
    return x


def enumerate_break(x):
    xs = [x, 2.0 * x]
    s = 0.0
    for i, v in enumerate(xs[t] for t in range(5)):
        s = s + v
        if i >= 1:
            break
    return s


def inner_loop_break(x):
    s = 0.0
    for i in range(3):
        for v in (x / (1.0 - t) for t in range(3)):
            s = s + v
            break
    return s


def break_of_a_nested_loop(x):
    s = 0.0
    for v in (x * t for t in range(3)):
        for i in range(2):
            s = s + v * i
            break
    return s
"""


@pytest.fixture(scope="module")
def stops_early(tmp_path_factory):
    return load_program(STOPS_EARLY, tmp_path_factory.mktemp("stops_early"))


@pytest.mark.parametrize("name", ["generator_break", "map_break", "generator_return", "enumerate_break",
                                  "inner_loop_break"])
def test_for_over_a_generator_that_may_stop_early_is_refused(stops_early, name):
    f = getattr(stops_early, name)
    f(0.7)  # Python runs it
    _refused(f, "lazily")


def test_a_break_of_a_loop_nested_in_the_body_is_not_the_loop_s(stops_early):
    _agrees(stops_early.break_of_a_nested_loop)
