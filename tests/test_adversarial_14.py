"""Adversarial tests, session 9 (adv3): the semantic changes merged in session 9 (lazy chained
comparisons, ``and``/``or`` giving the operand, Python's ``sum``, ``%``/``//`` by 0, ``sum``/``prod``
with ``initial=``, ``np.copy`` of numpy scalars, ...) in combination with forward mode, higher order,
loops, dtypes and numpy scalars.  Oracles: the plain call's value and type, central finite differences."""

import math

import numpy as np
import pytest

import astad


def _same(a, b):
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b)


# ---- np.True_ / np.False_ read from numpy: a Const with no literal (InternalError "no literal for np.True_"
# in code generation); since `and`/`or` give their operand, `np.True_ or t` is np.True_ itself, where it
# was folded to Python's True before (so `x * (np.True_ or x > 2.0)` crashed where it used to work)

def np_true_or(x):
    return x * (np.True_ or x > 2.0)


def b_and_np_true(x):
    b = x > 0.5
    return x * 1.0, b and np.True_


def np_false_and(x):
    return x * 1.0, np.False_ and (x > 0.5), b_or_np_false(x)


def b_or_np_false(x):
    return (x > 0.5) or np.False_


def times_np_true(x):
    return x * np.True_, np.True_


@pytest.mark.parametrize("fn", [np_true_or, b_and_np_true, np_false_and, times_np_true])
@pytest.mark.parametrize("x", [0.7, 0.3, 3.0])
def test_numpy_bool_constants_of_numpy(fn, x):
    want = fn(x)
    assert _same(astad.vjp(fn, x)[0], want)
    value, tangent = astad.jvp(fn, (x,), (1.0,))
    assert _same(value, want)
    if fn is np_true_or:
        assert astad.grad(fn)(x) == 1.0 and type(astad.grad(fn)(x)) is float


# ---- a tuple of no leaf nested in a tuple (`((),)`, `((), ())`): codegen had no zero for it (InternalError
# in every transform); `()` itself was fixed in this session

def nested_empty(x, y):
    return x * y, ((),)


def two_empties(x):
    return ((), ())


def deep_empty(x, k):
    return (x if k > 0 else 2.0 * x), (((),),)


def test_nested_empty_tuples():
    x = np.array([1.0, 2.0])
    value, pullback = astad.vjp(nested_empty, x, 2.0)
    assert _same(value, nested_empty(x, 2.0))
    gx, gy = pullback((np.ones(2), ((),)))
    assert np.array_equal(gx, [2.0, 2.0]) and gy == 3.0
    assert np.array_equal(astad.jvp(nested_empty, (x, 2.0), (np.ones(2), 0.0))[1][0], [2.0, 2.0])
    assert np.array_equal(astad.jacfwd(nested_empty)(x, 2.0)[0], 2.0 * np.eye(2))
    assert np.array_equal(astad.jacrev(nested_empty)(x, 2.0)[0], 2.0 * np.eye(2))
    assert astad.vjp(two_empties, x)[0] == ((), ()) and np.array_equal(astad.vjp(two_empties, x)[1](((), ()))[0], [0, 0])
    assert astad.jacrev(two_empties)(x) == ((), ()) and astad.jacfwd(two_empties)(x) == ((), ())
    for k in (1, 0):
        assert _same(astad.vjp(deep_empty, 1.5, k)[0], deep_empty(1.5, k))
        assert astad.jacfwd(deep_empty)(1.5, k)[0] == (1.0 if k else 2.0)


# ---- typed_cotangent: a numpy float (or 0-d array) cotangent of a Python float output was passed on as it
# was, so a Python float argument got an np.float32 (np.float16, np.float64) cotangent computed in that
# dtype, where an array argument gets its own dtype (README: the cotangent of an argument has its dtype)

def twice(x):
    return x * x


def sine_of_first(v):
    return math.sin(v[0]) * 2.0


@pytest.mark.parametrize("ct", [np.float32(1.0), np.float16(1.0), np.array(1.0, np.float32), np.array(1),
                                np.float64(1.0), np.array(1.0)])
def test_python_float_argument_gets_a_float_cotangent(ct):
    _, pullback = astad.vjp(twice, 1.1)
    (g,) = pullback(ct)
    assert type(g) is float and g == 2.2
    _, pullback = astad.vjp(sine_of_first, np.array([1.1, 2.0]))
    (g,) = pullback(ct)
    assert g.dtype == np.float64 and g[0] == 2.0 * np.cos(1.1)


# ---- session 10 (advP): Python-language semantics
#
# a string inside an f-string's field (`f"{'a'}"`, `f"{('a', x)}"`, `f"{s}"` of a string variable, a nested
# f-string, `{'{'}`): codegen wrote it back inside `f"..."` with double quotes, which Python before 3.12 cannot
# read (InternalError: SyntaxError in the generated code, every transform, both modes); such an f-string is now
# written `"...{!r:>5}...".format(v, ...)`

def fstring_literal(x):
    print(f"{'a'} {x:.2f}")
    return x * 2.0


def fstring_tuple_with_string(x):
    print(f"{('a', x)!r:>20}|")
    return x * 2.0


def fstring_string_variable(x):
    s = "z{}\\"
    print(f"{s}{x}", f"{s!r}")
    return x * 2.0


def fstring_nested(x):
    print(f"{f'{x}'} {'{'} {'a' 'b'} {[x, 'q']}")
    return x * 2.0


def fstring_in_raise(x):  # (not `assert`: pytest rewrites the asserts of a test module)
    if x > 10.0:
        raise ValueError(f"{'too big'}: {x}")
    return x * 2.0


@pytest.mark.parametrize("fn", [fstring_literal, fstring_tuple_with_string, fstring_string_variable, fstring_nested,
                                fstring_in_raise])
def test_strings_inside_fstring_fields(fn, capsys):
    want = fn(1.5)
    printed = capsys.readouterr().out
    assert astad.vjp(fn, 1.5)[0] == want
    assert capsys.readouterr().out == printed
    assert astad.jvp(fn, (1.5,), (1.0,)) == (want, 2.0)
    assert capsys.readouterr().out == printed
    assert astad.grad(fn)(1.5) == 2.0
    assert ".format(" in astad.reverse(fn).source_for(1.5)
    if fn is fstring_in_raise:
        with pytest.raises(ValueError, match="too big: 11.0"):
            astad.vjp(fn, 11.0)


# ---- `y[0], y[1] = y[1], y[0]` of rows: Python assigns left to right, and the second value is a view of the
# row the first assignment changed, so both rows end as the old second row; astad read the values before both
# assignments and swapped them (value [[3, 4], [1, 2]] where Python gives [[3, 4], [3, 4]], and its gradient).
# Refused like any update that a value still to be read sees; copies on the right, elements and lists are fine

def swap_rows(x):
    y = x * 1.0
    y[0], y[1] = y[1], y[0]
    return y


def swap_columns(x):
    y = x * 1.0
    y[:, 0], y[:, 1] = y[:, 1], y[:, 0]
    return y


def row_then_name(x):
    y = x * 1.0
    y[0], z = y[1], y[0]
    return z


def swap_row_copies(x):
    y = x * 1.0
    y[0], y[1] = y[1].copy(), y[0] * 2.0
    return y


def swap_elements(x):
    y = x[0] * 1.0
    y[0], y[1] = y[1], y[0]
    return y


def swap_list_items(x):
    xs = [x[0], x[1] * 2.0]
    xs[0], xs[1] = xs[1], xs[0]
    return xs[0] + 10.0 * xs[1]


@pytest.mark.parametrize("fn", [swap_rows, swap_columns, row_then_name])
def test_unpacking_into_an_array_that_a_later_value_views_is_refused(fn):
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(astad.AstadError, match="assigns after it shares its memory") as info:
        astad.vjp(fn, x)
    assert info.value.loc.line == fn.__code__.co_firstlineno + 2
    with pytest.raises(astad.AstadError, match="assigns after it shares its memory"):
        astad.jvp(fn, (x,), (np.ones_like(x),))


@pytest.mark.parametrize("fn", [swap_row_copies, swap_elements, swap_list_items])
def test_unpacking_into_an_array_from_copies(fn):
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    want = fn(x)
    value, pullback = astad.vjp(fn, x)
    assert _same(value, want)
    u = np.array([[0.3, -1.2], [0.7, 2.0]]) if isinstance(want, np.ndarray) else 1.0
    if isinstance(want, np.ndarray) and want.ndim == 1:
        u = u[0]
    (g,) = pullback(u)
    h = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = h
        fd[i] = np.sum(u * (fn(x + e) - fn(x - e))) / (2 * h)
    assert np.allclose(g, fd, atol=1e-8)
    t = np.array([[1.0, -2.0], [0.5, 3.0]])
    assert np.isclose(np.sum(u * astad.jvp(fn, (x,), (t,))[1]), np.sum(g * t))


# ---- a statement whose value nothing reads is still run where it may raise: Python raises at
# `y = math.log(x)` for x <= 0 (at `_ = np.linalg.cholesky(S)` for S not positive definite, at `1.0 / x` of a
# Python float at 0, at `v[i]` out of range) even where nothing reads `y`; astad dropped the statement and
# returned a value (-2.0 for dead_log(-1.0), a matrix for a singular one). Kept by a `keep` effect
# (astad/frontend/unused.py): computed, as in Python, and the exception is Python's

def dead_log(x):
    y = math.log(x)  # noqa: F841
    return x * 2.0


def dead_division_in_branch(x):
    if x < 1.0:
        y = 1.0 / (x - 0.5) + 1.0  # noqa: F841
    return x * 2.0


def dead_in_loop(x, n):
    acc = x
    for i in range(n):
        y = math.acos(x)  # noqa: F841
        acc = acc * 1.5
    return acc


def dead_cholesky(S, x):
    _ = np.linalg.cholesky(S)
    return np.sum(S * x)


def dead_index(v, i):
    first = v[i]  # noqa: F841
    return np.sum(v * v)


def dead_int(x):
    k = int(x)  # noqa: F841
    return x * 2.0


def dead_chain(x):
    y = math.log(x)
    z = y * 2.0  # noqa: F841
    return x * 2.0


def dead_join(x):
    y = math.log(x) if x > -5.0 else 0.0  # noqa: F841
    return x * 2.0


def dead_carried(x):
    y = 0.0
    for i in range(3):
        y = y + math.log(x)
    return x * 2.0


def dead_list_item(x):
    xs = [math.log(x), 2.0]  # noqa: F841
    return x * 2.0


@pytest.mark.parametrize("fn, bad, good", [
    (dead_log, (-1.0,), (2.0,)),
    (dead_list_item, (-1.0,), (2.0,)),
    (dead_chain, (-1.0,), (2.0,)),
    (dead_join, (-1.0,), (2.0,)),
    (dead_carried, (-1.0,), (2.0,)),
    (dead_division_in_branch, (0.5,), (0.25,)),
    (dead_in_loop, (2.0, 3), (0.5, 3)),
    (dead_cholesky, (-np.eye(2), 1.5), (np.eye(2), 1.5)),
    (dead_index, (np.ones(2), 5), (np.ones(2), 1)),
    (dead_int, (math.nan,), (1.5,)),
])
def test_unread_statements_that_may_raise_run(fn, bad, good):
    with pytest.raises(Exception) as plain:
        fn(*bad)
    with pytest.raises(type(plain.value)):
        astad.vjp(fn, *bad)
    tangents = tuple(np.ones_like(a) if isinstance(a, np.ndarray) else (1.0 if isinstance(a, float) else None)
                     for a in bad)
    with pytest.raises(type(plain.value)):
        astad.jvp(fn, bad, tangents)
    value, pullback = astad.vjp(fn, *good)
    assert _same(value, fn(*good))
    g = pullback(1.0)[0]
    h = 1e-6
    first = good[0]
    if isinstance(first, float):
        fd = (fn(first + h, *good[1:]) - fn(first - h, *good[1:])) / (2 * h)
        assert math.isclose(g, fd, rel_tol=1e-6)
        assert math.isclose(astad.jvp(fn, good, (1.0,) + (None,) * (len(good) - 1))[1], g, rel_tol=1e-12)


def test_unread_values_that_cannot_raise_are_still_dropped():
    def source_of(fn, *args):
        return astad.reverse(fn).source_for(*args)
    assert "cholesky" in source_of(dead_cholesky, np.eye(2), 1.5)
    assert "math.log(x)" in source_of(dead_log, 2.0)
    assert "np.sin" not in source_of(unread_sine, 2.0)


def unread_sine(x):
    y = np.sin(x) * 3.0  # noqa: F841
    return x * 2.0
