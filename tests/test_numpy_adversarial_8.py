"""Adversarial numpy semantics, round 8 (helper advnumpy): corner cases of broadcasting, sizes 0,
dtypes and result types where astad's value or derivative differed from numpy's.  The oracle is
numpy itself for values (value, dtype, type) and central finite differences in float64 for
derivatives (``conftest.check_correct_or_refused``), forward against reverse mode; never astad's
own output.  Each section names what astad did before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from conftest import check_correct_or_refused


def _forward_matches_reverse(fn, args, seed=0):
    """<u, J v> from ``jvp`` equals <J^T u, v> from ``vjp``, for random float ``u`` and ``v``."""
    rng = np.random.default_rng(seed)
    tangents = tuple(rng.standard_normal(np.shape(a)) if np.asarray(a).dtype.kind == "f" else None for a in args)
    value, tangent = astad.jvp(fn, tuple(args), tangents)
    want = fn(*args)
    assert np.shape(value) == np.shape(want) and np.shape(tangent) == np.shape(want)
    u = rng.standard_normal(np.shape(want))
    _, pullback = astad.vjp(fn, *args)
    cts = pullback(u)
    back = sum(float(np.sum(c * t)) for c, t in zip(cts, tangents) if t is not None)
    assert abs(float(np.sum(u * tangent)) - back) <= 1e-10 * (1 + abs(back))


# -- einsum with a letter of size 0 -------------------------------------------------------------------
# A letter of size 0 in one operand and 1 in another broadcasts to 0 in numpy; astad took the larger
# size (1): the output typed (1,) where numpy gives (0,), a pullback that refused numpy's cotangent,
# and cotangents of shape (0,) for an argument of shape (1,) (np.einsum, np.inner, np.tensordot).

def einsum_size_zero(x, e):
    return np.einsum("i,i->i", x, e)


def einsum_size_zero_sum(x, e):
    return np.einsum("i,i", x, e) + np.sum(x)


def einsum_rows_of_none(a, e):
    return np.einsum("ij,kj->ik", a, e)


def inner_of_none(a, e):
    return np.inner(a, e)


def einsum_of_a_selection(x, w):
    return np.sum(np.einsum("a,a->a", x[x > 5.0], w[:1]) ** 2) + np.sum(w)


@pytest.mark.parametrize("fn, args", [
    (einsum_size_zero, [np.array([0.5]), np.zeros(0)]),
    (einsum_size_zero_sum, [np.array([0.5]), np.zeros(0)]),
    (einsum_rows_of_none, [np.full((1, 3), 0.3), np.zeros((0, 3))]),
    (inner_of_none, [np.full((1, 3), 0.3), np.zeros((0, 3))]),
    (einsum_of_a_selection, [np.array([0.3, 1.7, -0.5]), np.array([0.2, -1.0])]),
], ids=["einsum", "einsum-sum", "einsum-rows", "inner", "einsum-selection"])
def test_einsum_with_a_letter_of_size_zero(fn, args):
    value, _ = astad.vjp(fn, *args)
    assert np.shape(value) == np.shape(fn(*args))
    check_correct_or_refused(fn, args)
    _forward_matches_reverse(fn, args)


# -- float32 cotangents of np.trace and np.diff -------------------------------------------------------
# The cotangent of an argument has its dtype (README); np.trace's (a float64 np.eye times the cotangent)
# and np.diff's (np.diff(ct, prepend=0, append=0): numpy makes the int 0 an int64 array, and float32
# joined with int64 is float64) were float64 for a float32 argument.

def trace_of(x):
    return np.trace(x, offset=1) * 2.0


def trace_method(x):
    return x.trace()


def diff_of(x):
    return np.sum(np.diff(x) ** 2)


def diff_twice(x):
    return np.sum(np.diff(x, n=2, axis=0) * x[1:-1])


@pytest.mark.parametrize("fn", [trace_of, trace_method, diff_of, diff_twice])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_cotangents_of_trace_and_diff_have_the_arguments_dtype(fn, dtype):
    x = np.linspace(-1.0, 2.0, 12).reshape(3, 4).astype(dtype)
    g = astad.grad(fn)(x)
    assert g.dtype == dtype and g.shape == x.shape
    _, pullback = astad.vjp(fn, x)
    assert pullback(np.ones_like(fn(x)))[0].dtype == dtype
    check_correct_or_refused(fn, [x.astype(np.float64)])


# -- np.nanmean of float32 and float16 ----------------------------------------------------------------
# astad divided the float32 sum by the int64 count of non-nans: float64 under NEP 50, where numpy's
# nanmean rounds the quotient back to the array's dtype (np.float64(1.1333333333) for np.float32(1.1333334)).

def nanmean_all(x):
    return np.nanmean(x)


def nanmean_rows(x):
    return np.nanmean(x, axis=1)


def nanmean_selection(x):
    return np.nanmean(x[x > 0.5] * 2.0)


@pytest.mark.parametrize("fn", [nanmean_all, nanmean_rows, nanmean_selection])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_nanmean_keeps_the_dtype(fn, dtype):
    x = np.array([[0.3, np.nan, 1.1], [np.nan, 0.7, 2.0]], dtype=dtype)
    want = fn(x)
    for value in (astad.vjp(fn, x)[0], astad.jvp(fn, (x,), (np.ones_like(x),))[0]):
        assert type(value) is type(want) and value.dtype == want.dtype
        np.testing.assert_array_equal(value, want)
    assert astad.grad(lambda a: np.sum(fn(a)))(x).dtype == dtype
    check_correct_or_refused(fn, [x.astype(np.float64)])


# -- np.median of a whole array is a numpy scalar -----------------------------------------------------
# numpy returns np.float64 (a float: isinstance(m, float), json.dumps(m)); astad's lowering ends with
# np.where(nan at the end, nan, mean of the middle), which returns a 0-d array.

def median_all(x):
    return np.median(x)


def median_axis(x):
    return np.median(x[0], axis=0)


def median_kept(x):
    return np.median(x, keepdims=True)


@pytest.mark.parametrize("fn", [median_all, median_axis, median_kept])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_median_is_numpys_type(fn, dtype):
    x = np.array([[0.3, -1.2, 1.1], [0.4, 0.7, 2.0]], dtype=dtype)
    want = fn(x)
    for value in (astad.vjp(fn, x)[0], astad.jvp(fn, (x,), (np.ones_like(x),))[0]):
        assert type(value) is type(want) and value.dtype == want.dtype and np.shape(value) == np.shape(want)
        np.testing.assert_array_equal(value, want)
    check_correct_or_refused(fn, [x.astype(np.float64)])
    x[1, 2] = np.nan
    assert type(astad.vjp(fn, x)[0]) is type(fn(x))


# -- norms that are maxima, of empty arrays ------------------------------------------------------------
# numpy >= 2.3 takes the vector norm ord=inf and the matrix norms ord=1, inf, 2 of an empty array as 0
# (max(..., initial=0)); astad's lowering to np.max(abs(x)) raised numpy's ValueError from the generated
# code (a static size 0, or a mask that selects nothing).  (Older numpy raises: so does astad there.)

EMPTY_NORMS_ARE_ZERO = True
try:
    np.linalg.norm(np.zeros(0), np.inf)
except ValueError:
    EMPTY_NORMS_ARE_ZERO = False


def norm_inf_of_none(x, a):
    return np.linalg.norm(x[x > 5.0], np.inf) + np.sum(x)


def norm_inf_of_empty(x, a):
    return np.linalg.norm(x[5:], np.inf, keepdims=True) + x[0]


def norm_inf_of_rows(x, a):
    return np.linalg.norm(a[:, a[0] > 5.0], np.inf, axis=1) * x[:3]


def matrix_one_of_none(x, a):
    return np.linalg.norm(a[:, a[0] > 5.0], 1) + np.linalg.norm(a[a[:, 0] > 5.0], np.inf) + np.sum(a)


def matrix_two_of_empty(x, a):
    return np.linalg.norm(a[5:], 2) + np.linalg.norm(a[:, 5:], 1) + np.sum(a * a)


def norms_of_some(x, a):
    return (np.linalg.norm(x[x > 0.0], np.inf) + np.linalg.norm(a[a[:, 0] > -0.5], 2)
            + np.linalg.norm(a[:, a[0] < 0.0], 1) + np.linalg.norm(a[a[:, 0] > -0.5], np.inf))


@pytest.mark.skipif(not EMPTY_NORMS_ARE_ZERO, reason="numpy < 2.3 raises for these norms of empty arrays")
@pytest.mark.parametrize("fn", [norm_inf_of_none, norm_inf_of_empty, norm_inf_of_rows, matrix_one_of_none,
                                matrix_two_of_empty, norms_of_some])
def test_maximum_norms_of_empty_arrays_are_zero(fn):
    x, a = np.array([0.5, -1.2, 2.0, 0.7]), np.arange(12.0).reshape(3, 4) * 0.37 - 1.1
    want = fn(x, a)
    value, _ = astad.vjp(fn, x, a)
    np.testing.assert_array_equal(value, want)
    check_correct_or_refused(fn, [x, a])
    _forward_matches_reverse(fn, [x, a])


# -- np.array of an empty list -------------------------------------------------------------------------
# Refused before too, but as "stack: array shapes  do not fit together" (the stack of no arrays), with no
# hint; now it names the construct and says what to write.

def empty_index(x):
    return np.sum(x[np.array([], dtype=int)]) + x[0]


def empty_array(x):
    return np.array([]) + x[:0]


@pytest.mark.parametrize("fn", [empty_index, empty_array])
def test_np_array_of_an_empty_list_is_refused_by_name(fn):
    with pytest.raises(astad.AstadError) as e:
        astad.vjp(fn, np.array([0.5, -1.2, 2.0]))
    assert not isinstance(e.value, astad.InternalError)
    assert "np.array of an empty list" in str(e.value) and "np.zeros(0" in str(e.value)


def test_the_empty_index_it_suggests_works():
    def fn(x):
        return np.sum(x[np.zeros(0, dtype=int)]) + x[0]

    check_correct_or_refused(fn, [np.array([0.5, -1.2, 2.0])])


# -- np.sort and np.argsort with kind= or stable= --------------------------------------------------------
# The kind (a string) reached the code printer, which has no literal for strings: an InternalError
# ("no literal for 'stable'") from a call numpy accepts.

def sort_stable(x):
    return np.sort(x, axis=0, kind="stable") * np.arange(1.0, 4.0)[:, None]


def argsort_stable(x):
    return np.take_along_axis(x, np.argsort(x, axis=1, stable=True), axis=1) ** 2


def argsort_method(x):
    return x[0][x[0].argsort(kind="mergesort")] * np.arange(4.0)


@pytest.mark.parametrize("fn", [sort_stable, argsort_stable, argsort_method])
def test_sort_with_a_kind(fn):
    x = np.arange(12.0).reshape(3, 4) * 0.37 - 1.0
    x = x[[2, 0, 1]][:, [3, 1, 0, 2]]
    check_correct_or_refused(fn, [x])
    _forward_matches_reverse(fn, [x])


# -- numpy's arithmetic functions of Python floats -----------------------------------------------------
# np.add/subtract/multiply/divide/floor_divide/mod/remainder/negative/square/dot/inner of Python numbers
# were lowered to Python's operators: a Python float where numpy gives an np.float64, and so a
# ZeroDivisionError where numpy divides by 0 (np.divide(x, 0.0) is inf; 1.0 / np.subtract(x, x) too),
# an OverflowError for np.square(1e200) (inf).  The tangent of np.float64(x) of a Python float stayed a
# Python float: jvp of np.divide(x, 0.0) raised ZeroDivisionError where grad gave inf.

def divide_by_zero(x):
    return np.divide(x, 0.0) + np.float64(x) / 0.0


def inverse_of_difference(x):
    return 1.0 / np.subtract(x, 1.5) + np.mod(x, 0.0)


def square_overflows(x):
    return np.square(x * 1e200)


def numpy_of_floats(x):
    return np.add(x, 0.5) * np.multiply(x, x) - np.true_divide(x, 3.0) + np.floor_divide(x, 0.4) \
        + np.remainder(x, 0.4) + np.negative(x) + np.square(x) + np.dot(x, 2.0) + np.inner(x, 0.5)


@pytest.mark.parametrize("fn", [divide_by_zero, inverse_of_difference, square_overflows, numpy_of_floats])
@pytest.mark.parametrize("x", [1.5, -0.7])
def test_numpy_functions_of_python_floats_compute_as_numpy(fn, x):
    with np.errstate(all="ignore"):
        want = fn(x)
        for value in (astad.vjp(fn, x)[0], astad.jvp(fn, (x,), (1.0,))[0], astad.value_and_grad(fn)(x)[0]):
            assert type(value) is type(want)
            np.testing.assert_array_equal(value, want)
        g, (_, t) = astad.grad(fn)(x), astad.jvp(fn, (x,), (1.0,))
        assert g == t or (np.isnan(g) and np.isnan(t))
    if np.isfinite(want):
        check_correct_or_refused(fn, [x])


# -- constant expressions and powers that raise in Python ------------------------------------------------
# Folding `1.0 / 0.0`, `1e300 ** 2`, `2.0 % 0.0`, `1 // 0` (and `10 ** 400 * 1.0`, np.isfinite of a big int)
# raised Python's error while transforming: an InternalError, where Python raises when the function runs;
# the type rule of `x ** 2000` of a Python float tried 1.5 ** 2000 (OverflowError: an InternalError for
# every x, though 0.5 ** 2000 is 0.0).

def folds_division_by_zero(x):
    return x * (1.0 / 0.0)


def folds_overflow(x):
    return x * 1e300 ** 2


def folds_modulo_by_zero(x):
    return x + 1 // 0 + 2.0 % 0.0


def folds_a_big_int(x):
    return x * (10 ** 400 * 1.0)


def big_power(x):
    return x ** 2000 + x ** 2000.0 + x * 10 ** 40


@pytest.mark.parametrize("fn", [folds_division_by_zero, folds_overflow, folds_modulo_by_zero, folds_a_big_int])
def test_constants_that_raise_raise_when_the_function_runs(fn):
    with pytest.raises(Exception) as plain:
        fn(0.5)
    for call in (lambda: astad.vjp(fn, 0.5), lambda: astad.jvp(fn, (0.5,), (1.0,)), lambda: astad.grad(fn)(0.5)):
        with pytest.raises(type(plain.value)):
            call()


@pytest.mark.parametrize("x", [0.5, -0.9, 0.999])
def test_a_big_power_of_a_python_float(x):
    assert astad.vjp(big_power, x)[0] == big_power(x)
    check_correct_or_refused(big_power, [x])
    with pytest.raises(OverflowError):
        astad.grad(big_power)(1.5)
