"""``enumerate(x, 1)``, ``enumerate(x, start=k)`` (also over ``zip``), and ``reversed``: over an array
(1-d, the rows of a 2-d one), a list argument, a list built at run time, ``range(...)`` (any step written
in the code) and inside ``enumerate``. They were refused ("use `for i, v in enumerate(x):`", "`reversed`
is a type, which astad cannot use"). Checked against plain Python, central differences in float64 and
forward vs reverse."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from test_forward import check_jvp


def from_one(x):
    s = 0.0
    for i, v in enumerate(x, 1):
        s = s * 0.5 + np.sin(v) * i
    return s


def from_k(x, k):
    s = 0.0
    for i, v in enumerate(x, start=k):
        s = s * 0.5 + np.sin(v) * i * i
    return s


def zipped_from_one(x, w):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, w), 1):
        if a > 0:
            s = s + a * b * i
        else:
            s = s - b * b / i
    return s


def backwards(x):
    s = 0.0
    for v in reversed(x):
        s = s * 0.5 + np.sum(np.sin(v) * v)
    return s


def backwards_counted(x):
    s = 0.0
    for i, v in enumerate(reversed(x), 2):
        s = s * 0.5 + np.sum(np.cos(v)) * i
    return s


def backwards_over_a_list(xs):
    s = 0.0
    for i, r in enumerate(reversed(xs)):
        s = s * 0.5 + np.sum(np.tanh(r)) * (i + 1.0)
    for r in reversed(xs):
        s = s * np.sum(r)
    return s


def backwards_over_a_built_list(x):
    rows = []
    for j in range(3):
        rows.append(x * (j + 1.0))
    s = 0.0
    for r in reversed(rows):
        s = s * 0.5 + np.sum(np.tanh(r))
    return s


def backwards_indices(x):
    s = 0.0
    for i in reversed(range(len(x))):
        s = s * 0.5 + x[i] * i
    for i in reversed(range(1, len(x))):
        s = s * 0.5 - x[i] * x[i - 1]
    return s


def comprehension(x):
    return [np.sin(v) * i for i, v in enumerate(reversed(x), 1)]


finite = st.floats(-2.0, 2.0, allow_nan=False).filter(lambda v: abs(v) > 1e-3)
vectors = arrays(np.float64, st.integers(1, 6), elements=finite)
matrices = arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 3)), elements=finite)


@settings(max_examples=fuzz_examples(6, long=15), deadline=None)
@given(vectors, st.integers(-3, 3))
def test_enumerate_from_a_start(x, k):
    for fn, args in ((from_one, (x,)), (from_k, (x, k)), (backwards_counted, (x,)), (backwards_indices, (x,)),
                     (comprehension, (x,))):
        check_correct_or_refused(fn, list(args))
        check_jvp(fn, args)


@settings(max_examples=fuzz_examples(6, long=15), deadline=None)
@given(vectors, vectors)
def test_enumerate_zip_from_one(x, w):
    check_correct_or_refused(zipped_from_one, [x, w])
    check_jvp(zipped_from_one, (x, w))


@settings(max_examples=fuzz_examples(6, long=15), deadline=None)
@given(st.one_of(vectors, matrices))
def test_reversed_array(x):
    for fn in (backwards, backwards_counted, backwards_over_a_built_list):
        check_correct_or_refused(fn, [x])
        check_jvp(fn, (x,))


def test_reversed_lists():
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(3), rng.standard_normal(2), rng.standard_normal(4)]
    check_correct_or_refused(backwards_over_a_list, [xs])
    check_jvp(backwards_over_a_list, (xs,))
    x = rng.standard_normal((2, 3))
    check_correct_or_refused(backwards_over_a_built_list, [x])
    check_jvp(backwards_over_a_built_list, (x,))


def _ranges(a, b):
    out = []
    for i in reversed(range(a, b, 2)):
        out.append(i)
    for i in reversed(range(a, b, -3)):
        out.append(10 * i)
    for i in reversed(range(b)):
        out.append(100 * i)
    for i in reversed(range(a, b)):
        out.append(1000 * i)
    return out


def scaled_by_ranges(x, a, b):
    s = 0.0
    for j in _ranges(a, b):
        s = s * 0.5 + x * j
    return s


@settings(max_examples=fuzz_examples(25), deadline=None)
@given(st.integers(-7, 7), st.integers(-7, 7), st.floats(-2.0, 2.0))
def test_reversed_range_elements(a, b, x):
    """reversed(range(a, b, step)) runs over the same integers as Python, empty ranges included."""
    check_correct_or_refused(scaled_by_ranges, [x, a, b])


def start_float(x):
    s = 0.0
    for i, v in enumerate(x, 0.5):
        s = s + v * i
    return s


def step_not_known(x, k):
    s = 0.0
    for i in reversed(range(0, 6, k)):
        s = s + x * i
    return s


def reversed_outside_a_loop(x):
    return np.sum(np.array(list(reversed(x))))


def reversed_zip(x, w):
    s = 0.0
    for a, b in reversed(zip(x, w)):
        s = s + a * b
    return s


@pytest.mark.parametrize("fn, args, error, match, hint", [
    (start_float, (np.ones(3),), astad.AstadTypeError, "start must be an integer", "enumerate(x, 1)"),
    (reversed_outside_a_loop, (np.ones(3),), astad.AstadTypeError, "only as what a `for` loop", "x[::-1]"),
    (step_not_known, (1.5, 2), astad.AstadTypeError, "nonzero step known when transforming", "range(last, a - step"),
    (reversed_zip, (np.ones(3), np.ones(3)), astad.UnsupportedSyntaxError, "not over `zip", "range(n - 1, -1, -1)"),
])
def test_refused_with_the_form_to_write(fn, args, error, match, hint):
    with pytest.raises(error, match=match) as info:
        astad.grad(fn)(*args)
    assert hint in info.value.hint and info.value.loc.line > 0 and "^" in str(info.value)


def structured_from_k(xs, k):
    s = 0.0
    for i, r in enumerate(xs, k):
        s = s * 0.5 + np.sum(np.tanh(r)) * i
    return s


def dict_backwards(d):
    s = 0.0
    for key in reversed(d):
        s = s * 0.5 + np.sum(d[key])
    return s


def tuple_backwards_counted(t):
    s = 0.0
    for i, r in enumerate(reversed(t), start=3):
        s = s * 0.5 + r * i
    return s


def backwards_with_break(x):
    s = 1.0
    for i, v in enumerate(reversed(x), 1):
        if v > 0.5:
            break
        s = s + v * i
    for v in reversed(x):
        s = s * v
    return s


def test_structured_arguments_empty_arrays_and_break():
    """Lists, dicts and tuples known element by element (unrolled), an empty array, `break`."""
    rng = np.random.default_rng(6)
    check_correct_or_refused(structured_from_k, [[rng.standard_normal(3), rng.standard_normal(2)], 2])
    check_correct_or_refused(dict_backwards, [{"a": rng.standard_normal(2), "b": rng.standard_normal(3)}])
    check_correct_or_refused(tuple_backwards_counted, [(1.5, 2.5, -0.5)])
    for x in (np.zeros(0), rng.standard_normal(6), np.array([0.1, 0.9, -0.3])):
        check_correct_or_refused(backwards_with_break, [x])
        if x.size:
            check_jvp(backwards_with_break, (x,))
