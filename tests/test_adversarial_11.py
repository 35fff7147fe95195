"""Adversarial tests of session 8's changes (generators read through zip, ...).

Oracles: the plain Python call (values), central differences in float64 (gradients), jvp against the
gradient (forward against reverse)."""

from __future__ import annotations

import pytest

import astad
from conftest import central_differences, load_program


def _agrees(f, xs=(0.7, 1.3)):
    for x in xs:
        value, g = astad.value_and_grad(f)(x)
        assert value == pytest.approx(f(x), rel=1e-12, abs=1e-12)
        assert g == pytest.approx(central_differences(f, x), rel=1e-6, abs=1e-8)
        assert astad.jvp(f, (x,), (1.0,))[1] == pytest.approx(g, rel=1e-9, abs=1e-12)


def _refused(f, match):
    with pytest.raises(astad.AstadError, match=match) as info:
        astad.grad(f)(0.7)
    assert "line" in str(info.value) or ":" in str(info.value)
    with pytest.raises(astad.AstadError, match=match):
        astad.jvp(f, (0.7,), (1.0,))


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
