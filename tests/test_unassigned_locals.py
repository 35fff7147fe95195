"""A name the function assigns anywhere is its local (Python's rule): where a path reaches a read of it
without assigning it, astad refuses; it read the module's global of the same name instead (a wrong value
where Python uses the local, or raises UnboundLocalError). Valid uses of globals next to such names are
checked against central differences."""

import numpy as np
import pytest

import astad
from conftest import central_differences

P = 5.0


def branch_local_shadows_global(x):
    if x[0] > 0:
        P = x[0] * 2.0
    return np.sum(P * x)


def loop_local_shadows_global(x):
    for i in range(2):
        P = x[i]
    return np.sum(P * x)


def read_before_assigned(x):
    y = np.sum(P * x)
    P = 2.0
    return y * P


def first_iteration_only(x):
    s = 0.0
    for i in range(3):
        if i == 0:
            p = x[0]
        s = s + p * x[i]
    return s


@pytest.mark.parametrize("fn, what, line, col", [
    (branch_local_shadows_global, "assigned in only one branch of the `if` at line 16", 18, 19),
    (loop_local_shadows_global, "assigned only inside the loop at line 22", 24, 19),
    (read_before_assigned, "a local variable of the function, read here before it is assigned", 28, 16),
    (first_iteration_only, "assigned in only one branch of the `if` at line 36", 38, 17),
])
def test_a_local_not_assigned_on_the_path_is_refused(fn, what, line, col):
    x = np.array([1.0, 2.0, 3.0])
    for make in (astad.grad, astad.jacfwd):
        with pytest.raises(astad.AstadError) as e:
            make(fn)(x)
        message = str(e.value)
        assert what in message and not isinstance(e.value, astad.InternalError), message
        assert f"test_unassigned_locals.py:{line}:{col}:" in message.splitlines()[0], message
        assert "^" in message and "assign" in message.splitlines()[-1]


def global_next_to_a_comprehension(x):
    ys = [x[i] * P for i in range(2)]
    return np.sum(ys[0] * ys[1]) + P * np.sum(x)


def assigned_on_every_path(x):
    if x[0] > 0:
        q = x * P
    else:
        q = x * 2.0
    return np.sum(q * q)


@pytest.mark.parametrize("fn", [global_next_to_a_comprehension, assigned_on_every_path])
@pytest.mark.parametrize("x0", [-1.5, 0.7])
def test_globals_and_locals_assigned_on_every_path_are_read_as_python(fn, x0):
    x = np.array([x0, 2.0, -0.5])
    value, pullback = astad.reverse(fn)(x)
    assert value == pytest.approx(fn(x))
    np.testing.assert_allclose(pullback(1.0)[0], central_differences(fn, x), rtol=1e-6, atol=1e-6)
