"""A name assigned only inside a loop and read after it: astad carries out of a loop only the
variables assigned before it, so the read is refused -- with what to write (it said "name `y` is
not defined"). A name the loop assigns and the code assigns again after it, or only reads inside a
later branch that assigns it, is still accepted (checked against central differences)."""

import numpy as np
import pytest

import astad
from conftest import central_differences


def last_of_loop(x):
    for i in range(3):
        y = x * i
    return np.sum(y)


def assigned_again_after(x, c):
    s = 0.0
    for i in range(3):
        t = x * i
        s = s + np.sum(t)
    if c > 0:
        t = x * 3.0
        s = s + np.sum(t * t)
    t = np.sin(x)
    return s + np.sum(t)


def written_as_astad_asks(x):
    y = np.zeros_like(x)
    for i in range(3):
        y = x * i
    return np.sum(y)


def test_a_read_after_the_loop_is_refused_with_what_to_write():
    with pytest.raises(astad.AstadTypeError, match=r"`y` is assigned only inside the loop at line \d+") as info:
        astad.grad(last_of_loop)(np.ones(3))
    assert "assign `y` before the loop" in info.value.hint and info.value.loc.line > 0
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(astad.grad(written_as_astad_asks)(x), central_differences(written_as_astad_asks, x),
                               rtol=1e-6, atol=1e-8)
    assert written_as_astad_asks(x) == last_of_loop(x)


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_loop_names_assigned_again_are_accepted(c):
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(astad.grad(assigned_again_after)(x, c),
                               central_differences(lambda v: assigned_again_after(v, c), x), rtol=1e-6, atol=1e-8)
