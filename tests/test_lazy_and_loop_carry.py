"""Generator expressions and map(...) read by a ``for`` loop, consumers shadowed by the user's functions
(astad/frontend/lazy.py); values a loop rebinds that its carry does not carry (astad/frontend/loops.py).

Oracles: the plain Python call (values), central differences in float64 (gradients), jvp against the
gradient (forward against reverse)."""

from __future__ import annotations

import pytest

import astad
from conftest import central_differences, check_refused_both_modes, check_scalar_function, load_program


def _agrees(f, xs=(0.7, -1.3)):
    check_scalar_function(f, xs)


_refused = check_refused_both_modes


# ------------------------------------------------------------------ a for loop over a generator or map(...)

FOR_LAZY = """\
import numpy as np


def for_map(x):
    s = 0.0
    for v in map(lambda u: u * x, [1.0, 2.0]):
        s = s + v * v
    return s


def for_generator(x):
    s = 0.0
    for v in (x * i for i in range(3)):
        s = s + np.sin(v)
    return s


def for_enumerate_map(x):
    s = 0.0
    for i, v in enumerate(map(lambda u: u * x, [1.0, 2.0])):
        s = s + i * v
    return s


def for_zip_generators(x):
    s = 0.0
    for a, b in zip((x * i for i in range(3)), map(np.cos, [x, 2.0 * x, 3.0])):
        s = s + a * b
    return s


def for_map_of_nested_def(x):
    def f(u):
        return u * x

    s = 0.0
    for v in map(f, [1.0, 2.0]):
        s = s + v
    return s


def for_nested_generators(x):
    s = 0.0
    for v in (t * t for t in (x * i for i in range(3))):
        s = s + v
    return s


def for_over_name_assigned_just_before(x):
    s = 0.0
    g = (x * i for i in range(3))
    for v in g:
        s = s + v * v
    return s


def comprehension_over_zip_of_generators(x):
    return sum(a * b for a, b in zip((x * i for i in range(3)), (x + i for i in range(3))))


def map_of_a_generator(x):
    s = sum(map(np.sin, (x * i for i in range(3))))
    for v in map(lambda u: u * u, (x * i for i in range(3))):
        s = s + v
    return s


def map_of_a_generator_read_after_rebinding(x):
    m = map(np.sin, (x * i for i in range(3)))
    x = 2.0 * x
    return sum(m)


def target_is_what_it_reads(x):
    s = 0.0
    for x in (x * i + 1.0 for i in range(3)):
        s = s + x
    return s


def body_updates_the_array_it_reads(x):
    a = np.array([x, 2.0 * x, 3.0])
    s = 0.0
    for v in (t * t for t in a):
        a[2] = v
        s = s + v
    return s


def body_appends_to_the_list_it_maps(x):
    xs = [x, 2.0 * x]
    s = 0.0
    for v in map(lambda u: u * 2.0, xs):
        if len(xs) < 4:
            xs.append(v)
        s = s + v
    return s


def body_rebinds_what_the_mapped_function_reads(x):
    f = lambda u: u * x
    s = 0.0
    for v in map(f, [1.0, 2.0, 3.0]):
        x = x + 1.0
        s = s + v
    return s


def body_rebinds_what_a_nested_def_reads(x):
    def f(u):
        return u * x

    s = 0.0
    for v in map(f, [1.0, 2.0]):
        x = s + 1.0
        s = s + v
    return s


def body_rebinds_the_mapped_function(x):
    f = lambda u: u * x
    s = 0.0
    for v in map(f, [1.0, 2.0, 3.0]):
        f = lambda u: u + x
        s = s + v
    return s


def inner_generator_binds_what_the_outer_reads(x):
    v = x
    s = 0.0
    for v in (t * v for t in (v for v in [1.0, 2.0])):
        s = s + v
    return s


def consumed_again_after_the_loop(x):
    s = 0.0
    g = (x * i for i in range(3))
    for v in g:
        s = s + v * v
    for v in g:
        s = s + v
    return s
"""

ACCEPTED = ["for_map", "for_generator", "for_enumerate_map", "for_zip_generators", "for_map_of_nested_def",
            "for_nested_generators", "for_over_name_assigned_just_before", "comprehension_over_zip_of_generators",
            "map_of_a_generator"]
REFUSED = ["map_of_a_generator_read_after_rebinding", "target_is_what_it_reads", "body_updates_the_array_it_reads",
           "body_appends_to_the_list_it_maps", "body_rebinds_what_the_mapped_function_reads",
           "body_rebinds_what_a_nested_def_reads", "body_rebinds_the_mapped_function",
           "inner_generator_binds_what_the_outer_reads", "consumed_again_after_the_loop"]


@pytest.fixture(scope="module")
def for_lazy(tmp_path_factory):
    return load_program(FOR_LAZY, tmp_path_factory.mktemp("for_lazy"), "for_lazy")


@pytest.mark.parametrize("name", ACCEPTED)
def test_for_over_a_generator_whose_reads_the_body_leaves_alone_is_differentiated(for_lazy, name):
    """`for v in map(f, xs):` and `for v in (e for ...):` were refused (lazy): Python reads one element
    before each iteration, which is the element read up front where the loop's target and body change
    nothing the generator reads (names, the functions it calls, what they read)."""
    _agrees(getattr(for_lazy, name))


@pytest.mark.parametrize("name", REFUSED)
def test_for_over_a_generator_whose_reads_the_body_changes_is_refused(for_lazy, name):
    f = getattr(for_lazy, name)
    for x in (0.7, -1.3):
        f(x)  # (Python runs it)
    _refused(f, "consumed|shares its memory")


# ------------------------------------------------------------------ a consumer shadowed by the user's function

SHADOWED = """\
def sum(g):
    t = 0.0
    for v in g:
        t = t + v
    for v in g:
        t = t + v
    return t


def enumerate(xs):
    return [(0, v) for v in xs] + [(1, v) for v in xs]


def shadowed_sum(x):
    return sum(x * i for i in range(3))


def shadowed_enumerate(x):
    s = 0.0
    for i, v in enumerate(x * k for k in range(3)):
        s = s + (i + 1) * v
    return s


def list_of_the_builtin(x):
    return max(list(x * i for i in range(3)))
"""


@pytest.fixture(scope="module")
def shadowed(tmp_path_factory):
    return load_program(SHADOWED, tmp_path_factory.mktemp("shadowed"), "shadowed")


@pytest.mark.parametrize("name", ["shadowed_sum", "shadowed_enumerate"])
def test_a_consumer_shadowed_by_a_function_of_the_users_is_refused(shadowed, name):
    """`sum` of the user's own that runs over its argument twice: Python's second pass finds the generator
    empty (sum(x * i ...) is 3 x), astad's list twice (6 x: gradient 6 for 3); now refused: only the
    builtins consume a generator at once."""
    _refused(getattr(shadowed, name), "consumed")


def test_the_builtins_of_a_module_that_shadows_others_still_consume(shadowed):
    _agrees(shadowed.list_of_the_builtin)


# ------------------------------------------------------------------ function values and loops that return

CARRY = """\
import numpy as np


def called_in_and_after_a_returning_loop(x, c):
    acc = 0.0
    u = c
    op = lambda t: np.sin(t) * c
    k = 0
    while k < 4:
        k += 1
        if acc < -0.4:
            return acc + op(u)
        acc = acc + acc + x
    acc = acc + op(np.cos(acc) * acc)
    return acc + op(u)
"""


@pytest.fixture(scope="module")
def carry(tmp_path_factory):
    return load_program(CARRY, tmp_path_factory.mktemp("carry"), "carry")


@pytest.mark.parametrize("x", [0.3, -0.2])
def test_a_function_value_made_in_a_loop_that_returns_keeps_its_name(carry, x):
    """A lambda called with a Python float in a loop's first pass (undone: the loop returns, and is lowered
    again knowing what it returns) and with an array scalar after it: the function value made in the undone
    pass kept its binding, its name was given again to the next one: InternalError (structural pass: not
    linear, `op` bound twice), found by tests/test_random_loop_forms.py."""
    f = carry.called_in_and_after_a_returning_loop
    value, g = astad.value_and_grad(f, argnums=(0, 1))(x, 0.083)
    assert value == pytest.approx(f(x, 0.083), rel=1e-12)
    for k, d in enumerate(g):
        want = central_differences(lambda t: f(*[t if j == k else a for j, a in enumerate((x, 0.083))]),
                                   (x, 0.083)[k])
        assert d == pytest.approx(want, rel=1e-6, abs=1e-8)
    assert astad.jvp(f, (x, 0.083), (1.0, 0.5))[1] == pytest.approx(g[0] + 0.5 * g[1], rel=1e-9)
