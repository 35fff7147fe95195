"""Adversarial numpy semantics, session 10 (advN).  Each section names what astad did before its fix.
Oracles: the plain call (value, type, dtype), central finite differences in float64, and forward
mode against reverse mode; never astad's own output."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from conftest import check_correct_or_refused


def _refused_at_its_line(fn, args, line_text):
    """astad refuses ``fn`` with its own error (not an InternalError), naming the line that holds ``line_text``."""
    for run in (lambda: astad.reverse(fn)(*args), lambda: astad.jvp(fn, tuple(args), tuple(np.ones_like(a) for a in args))):
        with pytest.raises(astad.AstadError) as caught:
            run()
        assert not isinstance(caught.value, astad.InternalError), caught.value
        assert caught.value.loc is not None and line_text in str(caught.value), caught.value


# -- abstract numpy types ------------------------------------------------------------------------------
# `isinstance(v, np.floating)` (np.integer, np.generic, np.number, np.inexact) raised astad's
# InternalError: reading `np.floating` converted it to a dtype, which numpy does not allow.

def isinstance_np_floating(x):
    e = x[0] * 2.0
    return x[0] * float(isinstance(e, np.floating))


def isinstance_np_integer(x):
    return x[0] * float(isinstance(len(x), np.integer))


def isinstance_np_generic(x):
    return x[0] * float(isinstance(x, (float, np.generic)))


def np_number_as_a_value(x):
    kind = np.number
    return x * 2.0, kind


@pytest.mark.parametrize("fn", [isinstance_np_floating, isinstance_np_integer, isinstance_np_generic,
                                np_number_as_a_value])
def test_abstract_numpy_types_are_refused(fn):
    _refused_at_its_line(fn, [np.array([0.3, -0.2, 1.1])], "np.")


# -- np.count_nonzero's type ---------------------------------------------------------------------------
# numpy 2 returns a numpy int64 for np.count_nonzero(x) (axis=None), numpy 1 a Python int; astad typed it a
# Python int always, so with numpy 2 `isinstance(n, int)` was decided True (numpy: False: 0.2 where numpy
# gives 0.0) and `np.count_nonzero(x) * x32` typed float32 (numpy: float64) gave a float64 cotangent for a
# float32 argument.

def count_is_an_int(x):
    n = np.count_nonzero(x)
    return np.sum(x * n) * isinstance(n, int)


def count_times_x(x):
    return np.count_nonzero(x > 0) * x


def test_count_nonzero_has_numpys_type():
    x = np.array([0.3, -0.2, 1.1])
    try:
        value, grad = astad.value_and_grad(count_is_an_int)(x)
    except astad.AstadError as e:
        assert not isinstance(e, astad.InternalError)
    else:
        assert value == count_is_an_int(x) and type(value) is type(count_is_an_int(x))
        np.testing.assert_array_equal(grad, np.full(3, 3.0 * isinstance(np.count_nonzero(x), int)))
    x32 = x.astype(np.float32)
    want = count_times_x(x32)
    value, pullback = astad.vjp(count_times_x, x32)
    assert value.dtype == want.dtype
    (ct,) = pullback(np.ones_like(want))
    assert ct.dtype == np.float32
    np.testing.assert_allclose(ct, np.full(3, 2.0))
    value, tangent = astad.jvp(count_times_x, (x32,), (np.ones_like(x32),))
    assert tangent.dtype == want.dtype


# -- isinstance of a Python number that may be an int or a float ---------------------------------------
# astad types a join of a Python int and a Python float (`n if c else 1.5`, `max(n, 1.0)`, a loop's
# `s = 0` then `s = s + 0.5`) a Python float, and `2 ** n` of ints a Python int (a float where n < 0);
# `isinstance(v, int)` of such a value was decided from the type when transforming: 1.0 * x[0] where
# Python gives 2.0 * x[0] (`n if c else 1.5` with n=3 is the int 3).  Now refused where the answer
# depends on which it is; decided where it does not, and for parameters, constants and what is computed
# from them alone.

def _kind(e):
    return float(isinstance(e, float)) + 2.0 * float(isinstance(e, int)) + 4.0 * float(isinstance(e, bool))


def int_or_float_join(x, n):
    e = n if x[0] > 0 else 1.5
    return x[0] * _kind(e)


def int_or_float_max(x, n):
    return x[0] * _kind(max(n, 1.0))


def int_or_float_min_of_a_shape(x, n):
    return x[0] * _kind(min(0.5, x.shape[0]))


def int_power_of_ints(x, n):
    return x[0] * _kind(2 ** n)


def int_or_float_plus_one(x, n):
    e = n if x[0] > 0 else 1.5
    return x[0] * _kind(e + 1)


def int_or_float_loop(x, n):
    s = 0
    for i in range(n):
        s = s + 0.5
    return x[0] * _kind(s)


@pytest.mark.parametrize("n", [3, -2, 0])
@pytest.mark.parametrize("fn", [int_or_float_join, int_or_float_max, int_or_float_min_of_a_shape, int_power_of_ints,
                                int_or_float_plus_one, int_or_float_loop])
def test_isinstance_of_an_int_or_a_float(fn, n):
    x = np.array([0.3, -0.2, 1.1])
    try:
        value, grad = astad.value_and_grad(fn)(x, n)
    except astad.AstadError as e:
        assert not isinstance(e, astad.InternalError), e
        assert "isinstance" in str(e)
        return
    assert value == fn(x, n)
    assert grad[0] == fn(x, n) / x[0]


def exact_kinds(x, n):
    f = float(n)
    return x[0] * (_kind(n) + 10 * _kind(len(x)) + 100 * _kind(f) + 1000 * _kind(x.shape[0] / 2)
                   + 10000 * _kind(n * 2 + 1) + 100000 * _kind(n > 0) + 1e6 * _kind(max(n, 1.0) + 0.5)
                   + 1e7 * float(isinstance(max(n, 1.0), (int, float))) + 1e8 * _kind(2 ** 3) + 1e9 * _kind(2.0 ** n))


@pytest.mark.parametrize("n", [3, -2])
def test_isinstance_of_numbers_of_known_kind_is_decided(n):
    x = np.array([0.3, -0.2, 1.1])
    value, grad = astad.value_and_grad(exact_kinds)(x, n)
    assert value == exact_kinds(x, n)
    np.testing.assert_allclose(grad[0], exact_kinds(x, n) / x[0])


def range_index_is_an_int(x, n):
    s = x[0]
    for i in range(n):
        s = s * (1.0 + isinstance(i, int) + 2 * isinstance(i + 0.5, float))
    return s


def test_isinstance_of_a_range_index_is_decided():
    x = np.array([0.3, -0.2, 1.1])
    value, grad = astad.value_and_grad(range_index_is_an_int)(x, 3)
    assert value == range_index_is_an_int(x, 3)
    np.testing.assert_allclose(grad[0], 64.0)


# -- np.median of a line holding a nan -------------------------------------------------------------------
# numpy's median of a line with a nan is nan; astad returned a constant nan there, so the derivative was a
# silent 0 (forward mode: tangent 0 with a nan value; `np.median(2 * x)` with x = [nan, 1, 2]: gradient
# [0, 0, 0]), against README's rule for nans (the cotangent goes to the nan numpy returns, as np.max's).
# Its forward tangent was also a 0-d array where the value is a numpy float64.

def median_of_log(x):
    return np.median(np.log(x))


def median_rows(x):
    return np.median(2.0 * x, axis=1)


def max_rows(x):
    return np.max(2.0 * x, axis=1)


def test_median_of_a_line_with_a_nan():
    with np.errstate(invalid="ignore"):
        x = np.array([-1.0, 2.0, 3.0])
        value, tangent = astad.jvp(median_of_log, (x,), (np.ones(3),))
        assert np.isnan(value) and np.isnan(tangent) and type(tangent) is type(value) is np.float64
        assert np.isnan(astad.grad(median_of_log)(x)[0])
        a = np.array([[np.nan, 1.0, 2.0], [1.0, 2.0, 3.0]])
        (ct,) = astad.vjp(median_rows, a)[1](np.ones(2))
        np.testing.assert_array_equal(ct[0], astad.vjp(max_rows, a)[1](np.ones(2))[0][0])  # [2, 0, 0]: the nan's
        np.testing.assert_array_equal(ct[1], [0.0, 2.0, 0.0])
        v = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        np.testing.assert_array_equal(astad.jvp(median_rows, (a,), (v,))[1], [2.0, 2.0])


# -- the list np.split returns ------------------------------------------------------------------------
# np.split (array_split, hsplit, vsplit, dsplit) gave a list whose identity the alias analysis did not know
# (UNKNOWN: it may be any list), so every `out.append(...)` while it could still be read was refused, and
# so was a comprehension over it (`sum(np.sum(p) for p in np.split(v, 2))`: "`items.append` changes the
# list in place", naming a list astad made).  It is a new list, of views of the array.

def append_while_split_is_alive(v):
    ps = np.split(v, 2)
    out = []
    for p in ps:
        out.append(np.sum(p * p))
    return sum(out) + ps[0][0]


def generator_over_split(v):
    return sum(np.sum(p) * (i + 1.0) for i, p in enumerate(np.array_split(v, 3)))


def append_to_the_split_list(v):
    ps = np.split(v, 2)
    ps.append(v[:2] * 2.0)
    return np.sum(np.stack(ps) ** 2)


def update_a_part_of_the_split_list(v):
    y = v * 1.0
    ps = np.split(y, 2)
    ps[0] += 1.0  # (a view of y: y changes too)
    return np.sum(y * v)


@pytest.mark.parametrize("fn", [append_while_split_is_alive, generator_over_split, append_to_the_split_list,
                                update_a_part_of_the_split_list])
def test_the_list_np_split_returns(fn):
    v = np.array([0.5, -1.2, 2.0, 0.7])
    if fn is update_a_part_of_the_split_list:
        with pytest.raises(astad.AstadError) as caught:
            astad.reverse(fn)(v)
        assert not isinstance(caught.value, astad.InternalError)
        return
    check_correct_or_refused(fn, (v,))  # (raises Refused where refused)


# -- np.linspace of float32 numbers ---------------------------------------------------------------------
# numpy's linspace of two float32 numbers is float32 (NEP 50: the count is a weak Python float); astad typed
# it float64, so a loop over its entries ran on Python floats: `w = np.linspace(x32[0], x32[1], 5)`, then
# `s = 0.0; for i in range(5): s = s + w[i] * w[i] / 3` gave np.float64(0.05625000397364318) where numpy
# gives np.float32(0.056250002); with `s = np.float32(0.0)` it was refused (f32 joined with f64); the
# tangent of np.linspace(x32[0], x32[1], 3) was float64.

def linspace_loop(x):
    w = np.linspace(x[0], x[1], 5)
    s = 0.0
    for i in range(5):
        s = s + w[i] * w[i] / 3
    return s


def linspace_loop_f32(x):
    w = np.linspace(x[0], x[1], 5)
    s = np.float32(0.0)
    for i in range(5):
        s = s + w[i] * w[i] / 3
    return s


def linspace_of(x):
    return np.linspace(x[0], x[1], 3) * x[2], np.linspace(x[0], 2.0, 4, endpoint=False), np.linspace(0, x[1], 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_linspace_has_numpys_dtype(dtype):
    x = np.array([0.3, -0.2, 1.1], dtype)
    for fn in (linspace_loop, linspace_loop_f32, linspace_of):
        if fn is linspace_loop_f32 and dtype == np.float64:
            continue  # (s is float32, then float64: refused, a loop carries one dtype)
        want = fn(x)
        try:
            value, pullback = astad.vjp(fn, x)
        except astad.AstadError as e:  # (s = 0.0, then a float32: refused, as README says)
            assert fn is linspace_loop and dtype != np.float64 and not isinstance(e, astad.InternalError), e
            continue
        for got, expected in zip(value if isinstance(value, tuple) else [value],
                                 want if isinstance(want, tuple) else [want]):
            assert type(got) is type(expected) and got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
        assert pullback(astad_ones(want))[0].dtype == dtype
        _, tangent = astad.jvp(fn, (x,), (np.ones_like(x),))
        for t, expected in zip(tangent if isinstance(tangent, tuple) else [tangent],
                               want if isinstance(want, tuple) else [want]):
            assert t.dtype == expected.dtype
    check_correct_or_refused(linspace_of, (np.array([0.3, -0.2, 1.1]),))


def astad_ones(v):
    return tuple(astad_ones(u) for u in v) if isinstance(v, tuple) else np.ones_like(v)


# -- np.full_like / np.full(..., dtype=np.float64) of a fill of another dtype ----------------------------
# The generated code dropped `dtype=np.float64` from np.full (float64 is the dtype of a Python float fill,
# not of every fill): np.full_like(x, b[0]) + np.full_like(x, b[0]) of a float64 x and a bool b[0] gave
# [True, True, True] where numpy gives [2., 2., 2.]; np.full_like(x, 3) // 2 gave an int array.

def full_like_of_a_bool(x, b):
    return np.full_like(x, b[0]) + np.full_like(x, b[0]) + x


def full_like_of_an_int(x, b):
    return np.full_like(x, 3) // 2 * x, np.full_like(x, np.int8(100)) * np.int8(3)


def full_float64_of_a_float32(x, b):
    return np.full(3, x.astype(np.float32)[0], dtype=np.float64) * x + np.full(3, b[1], dtype=np.float64)


def full_like_of_a_float16(x, b):
    return np.full_like(x, x.astype(np.float16)[1] / 3) * x


@pytest.mark.parametrize("fn", [full_like_of_a_bool, full_like_of_an_int, full_float64_of_a_float32,
                                full_like_of_a_float16])
def test_full_keeps_the_dtype_asked_for(fn):
    x, b = np.array([0.3, -0.7, 1.1]), np.array([True, False])
    want = fn(x, b)
    for got, expected in zip(astad.vjp(fn, x, b)[0] if isinstance(want, tuple) else [astad.vjp(fn, x, b)[0]],
                             want if isinstance(want, tuple) else [want]):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    if fn is not full_like_of_a_float16:  # (finite differences through a float16 rounding mean nothing)
        check_correct_or_refused(fn, (x, b), eps=1e-4, rtol=1e-3)  # (through a float32 rounding)


# -- np.average with weights of another dtype ------------------------------------------------------------
# numpy computes np.average(a, weights=w) in result_type(a, w) (float64 at least for integer a):
# multiply(a, w, dtype=r).sum() / w.sum(dtype=r).  astad computed sum(a * w) / sum(w), whose sum(w) of
# int8, uint8 or bool weights is an int64: np.average(x32, weights=int8s) was a float64 (numpy: float32).

def average_weighted(x, w):
    return np.average(x, weights=w), np.average(x.reshape(3, 1) * x, axis=0, weights=w)


@pytest.mark.parametrize("wdtype", [np.int8, np.uint8, np.bool_, np.float16, np.int64, np.float32])
@pytest.mark.parametrize("xdtype", [np.float32, np.float16, np.float64])
def test_average_in_numpys_dtype(xdtype, wdtype):
    x, w = np.array([0.3, -0.7, 1.1], xdtype), np.array([1, 2, 1], wdtype)
    want = average_weighted(x, w)
    got, pullback = astad.vjp(average_weighted, x, w)
    for g, e in zip(got, want):
        assert type(g) is type(e) and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-3 if xdtype == np.float16 else 1e-6)
    ct = pullback(tuple(np.ones_like(e) for e in want))
    assert ct[0].dtype == xdtype
    if xdtype == np.float64 and wdtype in (np.float32, np.int64):
        check_correct_or_refused(average_weighted, (x, w), eps=1e-4, rtol=1e-4)


# -- np.linalg.norm of integers --------------------------------------------------------------------------
# numpy's norms convert an integer or bool array to float64 first; astad's ord=1 and ord=inf norms (sum and
# max of abs) ran on the integers: np.linalg.norm(int8s, np.inf) of [-128, 5] gave -128 (abs overflows in
# int8; numpy: 128.0), and an int where numpy gives a float.

def norms_of_ints(x, i):
    m = i.reshape(1, 2)
    return (x * np.linalg.norm(i, np.inf), np.linalg.norm(i, 1), np.linalg.norm(i, -np.inf),
            np.linalg.vector_norm(i, ord=np.inf), np.linalg.norm(m, 1), np.linalg.matrix_norm(m, ord=np.inf),
            np.linalg.norm(i, 3))


@pytest.mark.parametrize("idtype", [np.int8, np.uint8, np.int64, np.bool_])
def test_norms_of_integers_are_floats(idtype):
    x, i = np.array([0.3, -0.7]), np.array([-128, 5]).astype(idtype)
    want = norms_of_ints(x, i)
    got, pullback = astad.vjp(norms_of_ints, x, i)
    for g, e in zip(got, want):
        assert type(g) is type(e) and g.dtype == e.dtype
        np.testing.assert_allclose(g, e)
    np.testing.assert_allclose(pullback(tuple(np.ones_like(e) for e in want))[0],
                               np.full(2, np.linalg.norm(i.astype(float), np.inf)))


# -- np.linalg.norm(x, 'fro') ---------------------------------------------------------------------------
# numpy computes norm(m, 'fro') of a matrix (axis=None) as norm(m): sqrt of the dot product of the raveled
# matrix with itself; astad wrote np.linalg.norm(m, axis=(0, 1)), a sum over the axes, which rounds
# differently: np.float32(104.021614) where numpy gives np.float32(104.02162).

def fro_norm(m):
    return np.linalg.norm(m, "fro")


def test_fro_norm_is_numpys():
    m = (np.random.default_rng(40).normal(size=(40, 3)) * 10).astype(np.float32)
    assert astad.vjp(fro_norm, m)[0] == fro_norm(m)
    assert astad.jvp(fro_norm, (m,), (np.ones_like(m),))[0] == fro_norm(m)


# -- np.prod(ints, initial=c) ----------------------------------------------------------------------------
# numpy's product of int8 (int32, uint8) entries is an int64 (uint64), with `initial=` too; astad typed
# np.prod(k8, initial=2) an int8, so x32 * np.prod(k8, initial=2) was typed float32 (numpy: float64) and
# its tangent was rounded to float32.

def prod_of_ints_with_initial(x, k):
    return x * np.prod(k, initial=2)


@pytest.mark.parametrize("kdtype", [np.int8, np.uint8, np.int32, np.bool_])
def test_prod_of_ints_with_initial(kdtype):
    x, k = np.array([0.3, -0.7, 1.1], np.float32), np.array([1, 2, 3]).astype(kdtype)
    want = prod_of_ints_with_initial(x, k)
    if kdtype == np.bool_:  # (refused: astad's np.prod with initial= takes numbers)
        with pytest.raises(astad.AstadError):
            astad.vjp(prod_of_ints_with_initial, x, k)
        return
    value, pullback = astad.vjp(prod_of_ints_with_initial, x, k)
    assert value.dtype == want.dtype
    assert pullback(np.ones_like(want))[0].dtype == np.float32
    assert astad.jvp(prod_of_ints_with_initial, (x, k), (np.ones_like(x), None))[1].dtype == want.dtype


# -- np.linalg.solve of float32 and integers --------------------------------------------------------------
# numpy.linalg computes in float64 where any operand is an integer or bool array (float32 only where all are
# float32); astad typed solve(a32, b8) float32 (result_type(float32, int8)), the value being float64.

def solve_mixed(a, b):
    return np.linalg.solve(a, b) * 1.5


@pytest.mark.parametrize("dtypes", [(np.float32, np.int8), (np.int8, np.float32), (np.float32, np.bool_),
                                    (np.float32, np.float32), (np.uint8, np.float64)])
def test_solve_of_float32_and_integers(dtypes):
    a = (np.array([[3.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 2.0, 5.0]])).astype(dtypes[0])
    b = np.array([[1, 2], [0, 1], [3, 1]]).astype(dtypes[1])
    want = solve_mixed(a, b)
    value, pullback = astad.vjp(solve_mixed, a, b)
    assert value.dtype == want.dtype
    np.testing.assert_allclose(value, want, rtol=1e-6)
    cts = pullback(np.ones_like(want))
    for arg, ct in zip((a, b), cts):
        assert ct is None if arg.dtype.kind in "biu" else ct.dtype == arg.dtype
    tangents = tuple(np.ones_like(arg) if arg.dtype.kind == "f" else None for arg in (a, b))
    assert astad.jvp(solve_mixed, (a, b), tangents)[1].dtype == want.dtype


# -- np.linalg.matrix_power(a, 0) -------------------------------------------------------------------------
# numpy's a ** 0 is the identity of a's dtype; astad's was always float64 (np.eye(n)).

def matrix_power_zero(x, a):
    return x * 2.0, np.linalg.matrix_power(a, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.bool_, np.float64])
def test_matrix_power_zero_has_the_dtype_of_a(dtype):
    x, a = np.array([0.5]), np.array([[1, 2], [0, 1]]).astype(dtype)
    want = matrix_power_zero(x, a)[1]
    got = astad.vjp(matrix_power_zero, x, a)[0][1]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
