"""Adversarial numpy semantics, round 9 (helper advB): ordinary numpy code where astad crashed with an
internal error, computed a value where Python raises, or returned a value of another type or dtype than
the plain call.  The oracle is numpy itself (its value, type, dtype, or the exception it raises) and
central finite differences in float64 (``conftest.check_correct_or_refused``); never astad's own output.
Each section names what astad did before its fix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad
from conftest import check_correct_or_refused

X = np.arange(12.0).reshape(3, 4) / 7 + 0.3


def _refused_like_numpy(fn, args):
    """Python raises; astad refuses with its own error (not an InternalError) in both modes."""
    with pytest.raises(Exception) as plain:
        fn(*args)
    assert not isinstance(plain.value, astad.AstadError)
    for run in (lambda: astad.reverse(fn)(*args), lambda: astad.jvp(fn, tuple(args), tuple(np.ones_like(a) for a in args))):
        with pytest.raises(astad.AstadError) as caught:
            run()
        assert not isinstance(caught.value, astad.InternalError), caught.value
        assert caught.value.loc is not None and caught.value.loc.line > 0


# -- axes out of range ---------------------------------------------------------------------------------
# np.transpose(x, (1, 2)) of a matrix, x.swapaxes(0, 0) of a 0-d array and x[..., ..., 0] raised
# astad's InternalError (an IndexError inside the shape rules); np.moveaxis with a repeated axis gave a
# value where numpy raises ValueError.

def transpose_axis_too_large(x):
    return np.transpose(x, (1, 2))


def transpose_method_axis_too_large(x):
    return x.transpose(2, 0)


def swapaxes_of_a_number(x):
    return np.sum(x) * np.sum(x).swapaxes(0, 0)


def two_ellipses(x):
    return x[..., ..., 0]


def moveaxis_repeated_destination(x):
    return np.moveaxis(x, [0, 1], [1, 1])


def moveaxis_repeated_source(x):
    return np.moveaxis(x, [1, 1], [0, 1])


@pytest.mark.parametrize("fn", [transpose_axis_too_large, transpose_method_axis_too_large, swapaxes_of_a_number,
                                two_ellipses, moveaxis_repeated_destination, moveaxis_repeated_source])
def test_axes_numpy_refuses_are_refused(fn):
    _refused_like_numpy(fn, [X.copy()])


def transpose_negative_axes(x):
    return np.sum(np.transpose(x, (-1, 0)) * np.arange(12.0).reshape(4, 3))


def moveaxis_negative(x):
    return np.sum(np.moveaxis(x[None], -1, 0) ** 2)


@pytest.mark.parametrize("fn", [transpose_negative_axes, moveaxis_negative])
def test_axes_numpy_accepts_still_work(fn):
    check_correct_or_refused(fn, [X.copy()])


# -- array attributes of Python numbers ----------------------------------------------------------------
# ``b.mean()``, ``b.sum()``, ``b.reshape(1)``, ``b.ndim``, ``b.shape`` ... of a Python float, int or bool
# gave numpy's answer where Python raises AttributeError; ``b.dot(b)`` of a numpy scalar likewise.

def mean_of_b(a, b):
    return a * b.mean()


def sum_of_b(a, b):
    return a * b.sum()


def reshape_of_b(a, b):
    return a * b.reshape(1)


def clip_of_b(a, b):
    return a * b.clip(0, 1)


def ndim_of_b(a, b):
    return a * b.ndim


def size_of_b(a, b):
    return a * b.size


def shape_of_b(a, b):
    return a * len(b.shape)


def dot_of_b(a, b):
    return a * b.dot(b)


@pytest.mark.parametrize("fn", [mean_of_b, sum_of_b, reshape_of_b, clip_of_b, ndim_of_b, size_of_b, shape_of_b,
                                dot_of_b])
@pytest.mark.parametrize("b", [2.0, 3, True], ids=["float", "int", "bool"])
def test_array_attributes_of_a_python_number_are_refused(fn, b):
    a = np.linspace(0.2, 1.5, 6)
    with pytest.raises(AttributeError):
        fn(a, b)
    with pytest.raises(astad.AstadError) as caught:
        astad.reverse(fn)(a, b)
    assert not isinstance(caught.value, astad.InternalError) and "AttributeError" in str(caught.value)


@pytest.mark.parametrize("b", [np.float64(2.0), np.float32(2.0), np.int64(2)], ids=["f64", "f32", "i64"])
def test_dot_of_a_numpy_scalar_is_refused(b):
    a = np.linspace(0.2, 1.5, 6)
    with pytest.raises(AttributeError):
        dot_of_b(a, b)
    with pytest.raises(astad.AstadError) as caught:
        astad.reverse(dot_of_b)(a, b)
    assert not isinstance(caught.value, astad.InternalError)


@pytest.mark.parametrize("fn", [mean_of_b, sum_of_b, reshape_of_b, clip_of_b, ndim_of_b, size_of_b, shape_of_b])
def test_array_attributes_of_numpy_scalars_still_work(fn):
    a = np.linspace(0.2, 1.5, 6)
    for b in (np.float64(0.7), np.array(0.7)):
        check_correct_or_refused(fn, [a, b])


# -- x.astype of a 0-d array ---------------------------------------------------------------------------
# astad emitted ``np.float32(s)`` for ``s.astype(np.float32)`` of a 0-d array: a numpy scalar where numpy
# gives a 0-d array (of a numpy scalar, a numpy scalar: the method keeps which).

def astype32(s):
    return s.astype(np.float32)


def astype64_twice(s):
    return s.astype(np.float64) * 2


def astype_then_add(s):
    y = s.astype(np.float64)
    y += 1.0
    return y * s


@pytest.mark.parametrize("fn", [astype32, astype64_twice, astype_then_add])
@pytest.mark.parametrize("s", [np.array(0.7), np.float64(0.7), np.array(0.7, np.float32), np.float32(0.7)],
                         ids=["0d64", "np64", "0d32", "np32"])
def test_astype_of_a_number_keeps_the_type(fn, s):
    want = fn(s.copy())
    for value in (astad.reverse(fn)(s.copy())[0], astad.jvp(fn, (s.copy(),), (np.ones_like(s),))[0]):
        assert type(value) is type(want) and value.dtype == want.dtype and value == want
    if fn is not astype32:
        check_correct_or_refused(fn, [np.asarray(s, dtype=np.float64)])


# -- dtypes of reductions of ints and of np.dot with a Python number -----------------------------------
# astad typed np.prod of a bool or int8 array as that dtype (numpy: int64), np.sum/np.prod/np.cumsum of
# uint8 as uint8 (numpy: uint64), so ``x32 * np.prod(m)`` was typed float32 where numpy computes float64:
# the cotangent of x32 came out float64.  np.dot(x32, 2.0) and np.inner(x32, 2.0) were float32 (numpy
# makes 2.0 a float64 array: float64).

def times_prod(a, b):
    return np.prod(a) * np.prod(b)


def times_sum(a, b):
    return a * np.sum(b)


def times_cumsum(a, b):
    return a * np.cumsum(b)


def times_cumprod(a, b):
    return a * np.cumprod(b)


INTS = [np.array([True, False, True, True, False, True]), np.arange(1, 7, dtype=np.int8),
        np.arange(1, 7, dtype=np.uint8), np.arange(1, 7, dtype=np.uint32)]


@pytest.mark.parametrize("fn", [times_prod, times_sum, times_cumsum, times_cumprod])
@pytest.mark.parametrize("b", INTS, ids=[b.dtype.name for b in INTS])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_reductions_of_ints_have_numpys_dtype(fn, b, dtype):
    a = (np.arange(6.0) / 5 + 0.1).astype(dtype)
    want = fn(a, b)
    value, pullback = astad.vjp(fn, a, b)
    assert value.dtype == want.dtype and np.array_equal(value, want)
    assert pullback(np.ones_like(want))[0].dtype == dtype
    assert astad.jvp(fn, (a, b), (np.ones_like(a), None))[0].dtype == want.dtype
    check_correct_or_refused(fn, [a.astype(np.float64), b])


def dot_number(a):
    return np.dot(a, 2.0)


def dot_number_first(a):
    return np.dot(2, a)


def dot_method(a):
    return a.dot(0.5)


def inner_number(a):
    return np.inner(a, 2.0)


def dot_of_an_element(a):
    return np.dot(a[0], 2.0)


@pytest.mark.parametrize("fn", [dot_number, dot_number_first, dot_method, inner_number, dot_of_an_element])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_dot_of_a_python_number_is_float64(fn, dtype):
    a = (np.arange(6.0) / 5 + 0.1).astype(dtype)
    want = fn(a)
    for value in (astad.vjp(fn, a)[0], astad.jvp(fn, (a,), (np.ones_like(a),))[0]):
        assert type(value) is type(want) and value.dtype == want.dtype and np.array_equal(value, want)
    _, pullback = astad.vjp(fn, a)
    assert pullback(np.ones_like(want))[0].dtype == dtype
    check_correct_or_refused(fn, [a.astype(np.float64)])


# -- np.linalg.pinv of a matrix of lower rank ---------------------------------------------------------
# pinv is not continuous where the rank drops (pinv(eps * T) = pinv(T) / eps): no derivative exists there.
# astad gave the derivative along matrices of that rank (Golub and Pereyra's formula): finite numbers
# that are no derivative (0 at the zero matrix, where finite differences grow as 1 / eps).  Now nans,
# as slogdet's and qr's at a singular matrix (tests/test_linalg_singular.py).

def pinv_loss(a):
    return np.sum(np.linalg.pinv(a) * np.arange(1.0, 1.0 + a.size).reshape(a.shape[::-1]))


LOW_RANK = [np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]), np.zeros((3, 2)),
            np.outer([1.0, -2.0, 0.5, 1.0], [0.3, 1.0, 2.0])]


@pytest.mark.parametrize("a", LOW_RANK, ids=["3x3-rank2", "zeros", "4x3-rank1"])
def test_pinv_of_a_matrix_of_lower_rank_has_no_derivative(a):
    g = astad.grad(pinv_loss)(a.copy())
    assert g.shape == a.shape and np.isnan(g).all()
    value, tangent = astad.jvp(pinv_loss, (a.copy(),), (np.ones_like(a),))
    assert value == pinv_loss(a) and np.isnan(tangent)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (2, 5)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pinv_of_full_rank_still_differentiated(shape, dtype):
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    check_correct_or_refused(pinv_loss, [a])
    g = astad.grad(pinv_loss)(a.astype(dtype))
    assert g.dtype == dtype and np.isfinite(g).all()
    assert np.isfinite(astad.hessian(pinv_loss)(a)).all()


def pinv_through(a):
    p = np.linalg.pinv(np.tanh(a) * 2.0)
    return np.sum(np.tanh(p @ a))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 4), st.integers(0, 2**32 - 1), st.booleans())
def test_pinv_of_random_matrices_of_any_rank(m, n, rank, seed, through):
    """Integer matrices of a drawn rank (exactly: products of integer factors, ``tanh`` of them keeps
    the rank only where it is 0 or full, so ``pinv_through`` draws full ranks): nans below full rank,
    central differences at full rank (where they are accurate: condition number below 1e4)."""
    rng = np.random.default_rng(seed)
    rank = min(rank, m, n)
    a = (rng.integers(-2, 3, (m, rank)) @ rng.integers(-2, 3, (rank, n))).astype(float)
    fn = pinv_loss
    if through:
        fn, a = pinv_through, a + rng.standard_normal((m, n))
    s = np.linalg.svd(np.tanh(a) * 2.0 if through else a, compute_uv=False)
    full = s.min() > 1e-15 * s.max()
    g = astad.grad(fn)(a)
    _, tangent = astad.jvp(fn, (a,), (rng.standard_normal((m, n)),))
    if not full:
        assert np.isnan(g).all() and np.isnan(tangent)
    elif s.max() < 1e4 * s.min():
        check_correct_or_refused(fn, [a])


# -- np.linalg.qr of a square matrix whose last column depends on the others ---------------------------
# Q is smooth there (its last column is the complement of the others) and finite differences converge;
# astad's dQ = Q (W - C) + dA R^-1 cancels dA R^-1 against Q C, each ~1 / R[-1, -1] = 1e15 there: the
# derivative of Q was wrong by O(1) (the VJP likewise).  For a square matrix now Q W (and its transpose).

def qr_loss(a):
    q, r = np.linalg.qr(a)
    n = a.shape[0]
    return np.sum(q * np.arange(1.0, 1.0 + n * n).reshape(n, n)) + np.sum(np.triu(r) * 0.5)


def qr_q_only(a):
    return np.sum(np.sin(np.linalg.qr(a)[0]))


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 5), st.integers(0, 2**32 - 1), st.sampled_from([qr_loss, qr_q_only]))
def test_qr_of_a_square_matrix_of_rank_n_minus_1(n, seed, fn):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((n, n - 1))
    a = np.concatenate([b, b @ rng.standard_normal((n - 1, 1))], axis=1)  # R[-1, -1] ~ 1e-16
    g = astad.grad(fn)(a)
    t = rng.standard_normal((n, n))
    _, tangent = astad.jvp(fn, (a,), (t,))
    if np.linalg.qr(a)[1][-1, -1] == 0.0:  # (R exactly singular: nans, as before, though Q is smooth there)
        assert np.isnan(tangent) and np.isnan(g).all()
        return
    eps = 1e-6
    fd = (fn(a + eps * t) - fn(a - eps * t)) / (2 * eps)
    scale = 1.0 + abs(fd)
    assert abs(tangent - fd) <= 1e-5 * scale and abs(float(np.sum(g * t)) - fd) <= 1e-5 * scale, (tangent, np.sum(g * t), fd)
    check_correct_or_refused(fn, [a])


@pytest.mark.parametrize("shape", [(3, 3), (4, 4), (5, 3)])
def test_qr_of_regular_matrices_still_differentiated(shape):
    a = np.random.default_rng(shape[0]).standard_normal(shape)
    check_correct_or_refused(qr_q_only, [a])
    check_correct_or_refused(lambda_free_qr_r, [a])


def lambda_free_qr_r(a):
    return np.sum(np.linalg.qr(a)[1] ** 2 * 0.5)


# -- axes that are not integers ------------------------------------------------------------------------
# np.prod(x, axis=0.0) was an InternalError (a TypeError inside the rule of its transpose); np.sum(x,
# axis=[0, 1]) gave numpy's value of axis=(0, 1) where numpy raises TypeError; np.mean(x, axis=True) ran
# into numpy's TypeError from the generated code.

def prod_float_axis(x):
    return np.prod(x, axis=0.0)


def sum_list_axis(x):
    return np.sum(x, axis=[0, 1])


def mean_bool_axis(x):
    return np.mean(x, axis=True)


def max_list_axis(x):
    return np.max(x, axis=[0])


def var_list_axis(x):
    return np.var(x, axis=[1])


def cumsum_float_axis(x):
    return np.cumsum(x, axis=1.0)


@pytest.mark.parametrize("fn", [prod_float_axis, sum_list_axis, mean_bool_axis, max_list_axis, var_list_axis,
                                cumsum_float_axis])
def test_axes_that_are_not_integers_are_refused(fn):
    _refused_like_numpy(fn, [X.copy()])


def average_list_axis(x):
    return np.average(x, axis=[1])


def test_average_takes_a_list_of_axes_as_numpy():
    check_correct_or_refused(average_list_axis, [X.copy()])


# -- cotangents' types and dtypes ----------------------------------------------------------------------
# A numpy scalar argument the value does not depend on got ``np.zeros_like(s)``: a 0-d array, where a
# used one gets a numpy scalar (README: a cotangent has its argument's type).  A float64 cotangent of a
# float32 value flowed through as float64: ``pullback(ones64)`` of ``x32 * 2`` gave x32 a float64
# cotangent (README: the cotangent of an argument has its dtype); the code computes with the value's.

def unused_first(s, v):
    return np.sum(v * 2.0)


def used_first(s, v):
    return np.sum(v * s)


@pytest.mark.parametrize("fn", [unused_first, used_first])
@pytest.mark.parametrize("s", [np.float64(0.5), np.float32(0.5), 0.5, np.array(0.5)], ids=["np64", "np32", "float", "0d"])
def test_the_cotangent_of_a_scalar_has_its_type(fn, s):
    v = np.ones(3)
    for got in (astad.grad(fn)(s, v), astad.vjp(fn, s, v)[1](1.0)[0], astad.reverse(fn)(s, v)[1](1.0)[0],
                astad.value_and_grad(fn)(s, v)[1]):
        assert type(got) is type(s) and np.asarray(got).dtype == np.asarray(s).dtype, (type(got), got)


def times_two(x):
    return x * 2.0


def identity(x):
    return x


@pytest.mark.parametrize("fn", [times_two, identity])
@pytest.mark.parametrize("x", [np.ones(3, np.float32), np.array(1.0, np.float32), np.ones(2, np.float16)],
                         ids=["f32", "0d-f32", "f16"])
def test_a_float64_cotangent_of_a_narrower_value_gives_the_arguments_dtype(fn, x):
    _, pullback = astad.vjp(fn, x)
    for ct in (np.ones(x.shape), np.float64(1.0) if not x.shape else np.ones(x.shape)):
        got = pullback(ct)[0]
        assert type(got) is type(x) and got.dtype == x.dtype and np.all(got == fn(np.ones_like(x)))


# -- np.sum with where= in float32 and float16 ---------------------------------------------------------
# astad summed np.where(mask, x, 0) with numpy's pairwise sum; numpy's sum with where= adds the entries one
# after another (from `initial`): the float32 and float16 values differed in their last bits (float16: by 3.0
# on sums of ~1000).  Now np.sum(x, where=mask) itself, with its own derivative rule (masked_sum).

def sum_where_rows(x):
    return np.sum(x, axis=1, where=x > 0)


def sum_where_all(x):
    return np.sum(x * 0.5, where=x > 0)


def sum_where_initial(x):
    return np.sum(x, axis=0, where=x < 5.0, initial=1.5, keepdims=True)


@pytest.mark.parametrize("fn", [sum_where_rows, sum_where_all, sum_where_initial])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sum_with_where_is_numpys_bit_for_bit(fn, dtype):
    x = (np.random.default_rng(0).standard_normal((7, 300)) * 10).astype(dtype)
    want = fn(x)
    for got in (astad.reverse(fn)(x)[0], astad.jvp(fn, (x,), (np.ones_like(x),))[0]):
        assert type(got) is type(want) and got.dtype == want.dtype and np.array_equal(got, want)
    small = np.random.default_rng(1).standard_normal((3, 4))
    check_correct_or_refused(fn, [small])
    _forward_matches_reverse(fn, [small])


def _forward_matches_reverse(fn, args, seed=0):
    """<u, J v> from ``jvp`` equals <J^T u, v> from ``vjp``."""
    rng = np.random.default_rng(seed)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    _, tangent = astad.jvp(fn, tuple(args), tangents)
    u = rng.standard_normal(np.shape(tangent))
    cts = astad.vjp(fn, *args)[1](u)
    back = sum(float(np.sum(c * t)) for c, t in zip(cts, tangents))
    assert abs(float(np.sum(u * tangent)) - back) <= 1e-10 * (1 + abs(back))
