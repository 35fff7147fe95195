"""Adversarial tests of Python semantics (session 9): each was a wrong result (or a crash) before its
fix; each checks the value against the plain call (bit for bit, and its type) and derivatives against
central differences in float64, or a refusal with astad's own error."""

from __future__ import annotations

import math

import numpy as np
import pytest

import astad
from conftest import central_differences, load_program


def _same(got, want):
    """The plain call's value bit for bit: its type, dtype, shape and the sign of its zeros."""
    assert type(got) is type(want), (got, want)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert np.shape(got) == np.shape(want) and getattr(got, "dtype", None) == getattr(want, "dtype", None), (got, want)
    assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want)), (got, want)


def _values(f, args):
    """The value of every mode of astad at ``args``."""
    tangents = tuple(np.ones_like(a) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                     else 1.0 if isinstance(a, float) else None for a in args)
    yield astad.reverse(f)(*args)[0]
    yield astad.vjp(f, *args)[0]
    yield astad.jvp(f, args, tangents)[0]
    yield astad.forward(f)(*args)[0]


# ------------------------------------------------------------------ Python's sum of a literal list: from 0

LITERAL_SUMS = """
import numpy as np


def counted(x):
    return np.sum(x * sum([x > 0.5, x > 0.2]))


def one_mask(x):
    return x, sum([x > 0.5])


def signed_zeros(x, y):
    return sum([x, y])


def one_float(x):
    return sum((x,))


def with_negative_zero(x):
    return sum([x, -0.0])
"""


@pytest.fixture(scope="module")
def literal_sums(tmp_path_factory):
    return load_program(LITERAL_SUMS, tmp_path_factory.mktemp("literal_sums"), "literal_sums")


def test_sum_of_a_literal_list_of_masks_counts(literal_sums):
    """`sum([m1, m2])` of numpy bool arrays is `0 + m1 + m2` in Python: the int counts (2 where both hold);
    astad added the elements without the 0, and numpy's `m1 + m2` of bools is their `or` (True): the value
    1.0 for Python's 1.7 at x = [0.7, 0.3, 0.1], and the gradient [1, 1, 0] for [2, 1, 0]."""
    f = literal_sums.counted
    x = np.array([0.7, 0.3, 0.1])
    for got in _values(f, (x,)):
        _same(got, f(x))
    np.testing.assert_allclose(astad.grad(f)(x), central_differences(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(astad.grad(f)(x), [2.0, 1.0, 0.0])
    for x in (np.array([0.7, 0.3]), 0.7):  # one mask: an int (array) in Python, not a bool
        for got in _values(literal_sums.one_mask, (x,)):
            _same(got, literal_sums.one_mask(x))


@pytest.mark.parametrize("name, args", [("signed_zeros", (-0.0, -0.0)), ("one_float", (-0.0,)),
                                        ("with_negative_zero", (-0.0,)),
                                        ("signed_zeros", (np.array([-0.0, 1.0]), np.array([-0.0, -0.0])))])
def test_sum_of_a_literal_list_of_negative_zeros_is_positive(literal_sums, name, args):
    """Python's `0 + -0.0` is 0.0: astad's -0.0 + -0.0 was -0.0 (1 / value: -inf for Python's inf)."""
    f = getattr(literal_sums, name)
    for got in _values(f, args):
        _same(got, f(*args))
    assert math.copysign(1.0, float(np.ravel(astad.vjp(f, *args)[0])[0])) == 1.0


# ------------------------------------------------------------------ Python's sum of an array: its rows, left to right

ARRAY_SUMS = """
import numpy as np


def rows(x):
    return sum(x * x)


def rows_start(x, s):
    return sum(x * x, s)


def matrix_rows(x):
    return np.sum(sum(x) ** 2)


def scaled_by_int_sum(x, k):
    return x * sum(k)


def maybe_empty(x):
    return sum(x[x > 5.0])


def rows_maybe_empty(x, w):
    return np.sum(sum(x[x[:, 0] > 5.0]) * w)


def rows_maybe_empty_from_a_row(x, w):
    return np.sum(sum(x[x[:, 0] > 5.0], w) * w)
"""


@pytest.fixture(scope="module")
def array_sums(tmp_path_factory):
    return load_program(ARRAY_SUMS, tmp_path_factory.mktemp("array_sums"), "array_sums")


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_sum_of_an_array_adds_its_rows_left_to_right(array_sums, dtype):
    """Python's `sum(x)` adds the rows one after the other from 0; astad lowered it to np.sum(x, axis=0),
    which adds a vector pairwise (eight partial sums): 975654444.2126496 for Python's 975654444.2126504 on
    1000 float64 values, another float32 and float16 value."""
    rng = np.random.default_rng(1)
    x = (rng.normal(size=1000) * (1e3 if dtype == "float64" else 1.0)).astype(dtype)
    for f, args in [(array_sums.rows, (x,)), (array_sums.rows_start, (x, 0.5))]:
        for got in _values(f, args):
            _same(got, f(*args))
    x = rng.normal(size=(40, 3))
    for got in _values(array_sums.matrix_rows, (x,)):
        _same(got, array_sums.matrix_rows(x))
    np.testing.assert_allclose(astad.grad(array_sums.matrix_rows)(x), central_differences(array_sums.matrix_rows, x),
                               rtol=1e-6, atol=1e-6)
    small = rng.normal(size=5)
    g = astad.grad(array_sums.rows_start, argnums=(0, 1))(small, 0.5)
    np.testing.assert_allclose(g[0], 2 * small, rtol=1e-12)
    assert g[1] == 1.0 and type(g[1]) is float


def test_sum_of_a_small_int_array_is_of_its_dtype(array_sums):
    """Python's sum of an int32 (int8) array is an int32 (int8), wrapping where it overflows; np.sum's is an
    int64: the values 3221225472.0 for Python's -3221225472.0 and 300.0 for -84.0."""
    f = array_sums.scaled_by_int_sum
    with np.errstate(over="ignore"):
        for k in (np.array([2**30, 2**30], dtype=np.int32), np.array([100, 100], dtype=np.int8),
                  np.array([1, 2], dtype=np.int32)):
            for got in _values(f, (1.5, k)):
                _same(got, f(1.5, k))
            for x in (1.5, np.array([0.5, 1.5], dtype=np.float16)):
                for got in _values(f, (x, np.array([1, 2], dtype=np.int32))):
                    _same(got, f(x, np.array([1, 2], dtype=np.int32)))


@pytest.mark.parametrize("x", [np.zeros(0), np.zeros((0, 3)), np.array([1.0, 6.0, 7.0])])
def test_sum_of_an_empty_array_is_the_int_0(array_sums, x):
    """Python's sum of an empty array is its start, the int 0: astad gave 0.0, and zeros(3) for a (0, 3) array."""
    for f in (array_sums.rows, array_sums.maybe_empty):
        want = f(x)
        for got in _values(f, (x,)):
            _same(got, want)


# ------------------------------------------------------------------ messages

def test_unpacking_an_array_is_refused_with_what_to_write(tmp_path):
    """`a, b, c = x` of an array: the message said "cannot unpack a non-tuple values into 3 names".  (Since
    s11-advX an array whose first axis is known when transforming is unpacked into its rows,
    tests/test_adversarial_21.py; one whose length is known only when running is still refused.)"""
    mod = load_program("def f(x):\n    a, b, c = x[x > 0.0]\n    return a * b - c\n", tmp_path, "unpack_array")
    for run in (lambda: astad.grad(mod.f)(np.array([0.3, -1.2, 2.0])),
                lambda: astad.jvp(mod.f, (np.ones(3),), (np.ones(3),))):
        with pytest.raises(astad.AstadTypeError, match=r"cannot unpack an array \(f64\[\?\]\) into 3 names") as e:
            run()
        assert ":2:5:" in str(e.value) and "a0, a1, a2 = x[0], x[1], x[2]" in str(e.value)


# ------------------------------------------------------------------ chained comparisons evaluate lazily

CHAINS = """
import math


def guarded(x):
    if 0.0 < x < math.sqrt(x):
        return x * 2.0
    return x * 3.0


def announced(x):
    if 0.0 < x < loud(x):
        return x * 2.0
    return x * 3.0


def loud(v):
    print("loud", v)
    return v


def int_guard(x, k):
    if 0 < k < 10 // k:
        return x * 2.0
    return x * 3.0


def long_chain(x, y):
    return x * y if 0.0 < x < y < math.log(y - x) + 5.0 < 10.0 else x - y


def as_value(x, y):
    return x * y, 0.0 < x < y
"""


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    return load_program(CHAINS, tmp_path_factory.mktemp("chains"), "chains")


@pytest.mark.parametrize("name, args", [("guarded", (-1.0,)), ("guarded", (0.25,)), ("guarded", (4.0,)),
                                        ("announced", (-1.0,)), ("announced", (0.5,)),
                                        ("int_guard", (1.5, 0)), ("int_guard", (1.5, 2)),
                                        ("long_chain", (0.5, 0.2)), ("long_chain", (0.5, 0.7))])
def test_chained_comparison_evaluates_what_python_evaluates(chains, name, args, capsys):
    """`a < b < c` is `a < b and b < c` with `c` evaluated only where `a < b` holds: astad lowered every
    comparator up front, so `0.0 < x < math.sqrt(x)` at x = -1 raised a math domain error where Python
    returns -3.0 (and `10 // k` a ZeroDivisionError at k = 0, a call printed where Python does not call it)."""
    f = getattr(chains, name)
    want = f(*args)
    printed = capsys.readouterr().out
    tangents = tuple(1.0 if isinstance(a, float) else None for a in args)
    for run in (lambda: astad.value_and_grad(f)(*args)[0], lambda: astad.vjp(f, *args)[0],
                lambda: astad.jvp(f, args, tangents)[0]):
        _same(run(), want)
        assert capsys.readouterr().out == printed
    assert astad.grad(f)(*args) == pytest.approx(central_differences(lambda v: f(v, *args[1:]), args[0]), rel=1e-6)


# ------------------------------------------------------------------ `and`/`or`: the operand Python returns

BOOL_OPS = """
def either(x, c, d):
    return x * 2.0, c or d


def both(x, c, d):
    return x * 2.0, c and d


def computed(x, y):
    c = x > 0.5
    d = y > 0.5
    return x * y, c or d, c and d, 0.0 < x < y
"""


@pytest.fixture(scope="module")
def bool_ops(tmp_path_factory):
    return load_program(BOOL_OPS, tmp_path_factory.mktemp("bool_ops"), "bool_ops")


@pytest.mark.parametrize("c, d", [(np.True_, np.False_), (np.False_, np.True_), (np.False_, True), (True, np.False_),
                                  (np.True_, True), (False, np.True_)])
def test_and_or_give_the_operand_python_gives(bool_ops, c, d):
    """`np.True_ or d` is np.True_ in Python (and `np.False_ and d` np.False_): astad gave the Python bools
    True and False, of another type than the plain call's value."""
    for f in (bool_ops.either, bool_ops.both):
        for got in _values(f, (1.5, c, d)):
            _same(got, f(1.5, c, d))


@pytest.mark.parametrize("x, y", [(np.float64(1.0), 0.0), (np.float64(0.0), 1.0), (np.float64(0.0), 0.0),
                                  (1.0, np.float64(0.0)), (0.0, np.float64(1.0)), (np.float64(0.7), np.float64(0.9))])
def test_and_or_of_computed_bools_give_the_operand_python_gives(bool_ops, x, y):
    f = bool_ops.computed
    for got in _values(f, (x, y)):
        _same(got, f(x, y))


def test_sum_of_rows_that_may_be_none_is_refused_unless_its_start_is_a_row(array_sums):
    """Python's sum of an array with no rows is its start (the int 0), not a row of zeros: where the number of
    rows is known only when it runs, a start that is not a row is refused (the cotangent of `w` in
    `np.sum(sum(x[mask]) * w)` came back as a number where `w` is a vector); a row start is differentiated."""
    x, w = np.arange(6.0).reshape(3, 2) * 0.3 - 0.5, np.array([0.5, -1.5])
    with pytest.raises(astad.AstadTypeError, match="whose number of rows is known only when it runs") as e:
        astad.grad(array_sums.rows_maybe_empty, argnums=1)(x, w)
    assert "np.sum(x, axis=0)" in str(e.value)
    f = array_sums.rows_maybe_empty_from_a_row
    for x_ in (x, x + 6.0):  # no rows selected, then two
        for got in _values(f, (x_, w)):
            _same(got, f(x_, w))
        np.testing.assert_allclose(astad.grad(f, argnums=1)(x_, w), central_differences(lambda v: f(x_, v), w),
                                   rtol=1e-6, atol=1e-8)
