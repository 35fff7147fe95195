"""Derivatives at the edges, from the user's level: ``%`` and its numpy names
(against central finite differences), powers at a zero base and with a zero
exponent (against the analytic derivative), and the kinks where numpy
propagates nan (maximum, minimum, max/min reductions, clip, abs): the
cotangent must follow the nan, never be dropped (against numpy's documented
choice of the argument it returns, written out per element)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad
from astad.errors import AstadTypeError
from conftest import check_grad

FEW = settings(max_examples=25, deadline=None)


# --------------------------------------------------------------------------- a % b and friends


def mod_op(a, b):
    return a % b


def mod_np(a, b):
    return np.mod(a, b)


def mod_remainder(a, b):
    return np.remainder(a, b) * 2.0


def mod_fmod(a, b):
    return np.fmod(a, b)


def mod_const(a):
    return (a % 1.5) + np.mod(a, 2)


def mod_in_expression(a, b):
    return np.sum(np.sin(a % b) * (b % 0.7))


def floordiv_op(a, b):
    return a // b + np.floor_divide(a, b) + a


def rounding(a):
    return np.floor(a) + np.ceil(a) * a + np.trunc(a) + np.rint(a)


def _away_from_jumps(a, b):
    """Operands where a / b is at least 0.05 from an integer (no jump of % within the FD step)."""
    q = np.asarray(a) / np.asarray(b)
    return bool(np.all(np.abs(q - np.round(q)) > 0.05))


_rng = np.random.default_rng(7)


def _num(shape, lo=-5.0, hi=5.0, signed=False):
    size = () if shape == "f" else shape
    x = _rng.uniform(lo, hi, size)
    if signed:
        x = x * _rng.choice([-1.0, 1.0], size)
    return float(x) if shape == "f" else x


@pytest.mark.parametrize("fn", [mod_op, mod_np, mod_remainder, mod_fmod, mod_in_expression])
@pytest.mark.parametrize("shapes", [("f", "f"), ((3,), (3,)), ((2, 3), (3,)), ((3,), "f"), ("f", (2, 2)),
                                    ((2, 1), (1, 3))])
def test_mod_matches_finite_differences(fn, shapes):
    for _ in range(50):
        a, b = _num(shapes[0], -6, 6), _num(shapes[1], 0.4, 2.0, signed=True)
        if _away_from_jumps(a, b):
            break
    check_grad(fn, [a, b])


def test_mod_analytic():
    a, b = np.array([5.3, -2.1, 7.0]), np.array([2.0, 1.5, -3.0])
    ga, gb = astad.grad(lambda_free_mod_sum, argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(gb, -np.floor(a / b))  # [-2, 2, 3]


def lambda_free_mod_sum(a, b):
    return np.sum(a % b)


@pytest.mark.parametrize("shape", ["f", (4,)])
def test_mod_by_constants(shape):
    check_grad(mod_const, [_num(shape, 0.1, 0.4)])


def test_floordiv_and_rounding_have_zero_derivative():
    a, b = np.array([5.3, -2.1, 7.2]), np.array([2.0, 1.5, -3.1])
    check_grad(floordiv_op, [a, b])  # the FD of a // b is 0 away from its jumps
    check_grad(rounding, [np.array([0.3, -1.2, 2.4, -2.7])])


# --------------------------------------------------------------------------- powers


def pow_op(x, n):
    return x ** n


def pow_np(x, n):
    return np.power(x, n)


def pow_sum(x, n):
    return np.sum(x ** n)


def square_literal(x):
    return x ** 2


def zero_literal(x):
    return x ** 0


def cube_literal(x):
    return x ** 3


def _dpow(x, n):
    """d(x ** n)/dx: n x^(n-1), 0 where n == 0 (x ** 0 is 1 for every x)."""
    if n == 0:
        return 0.0
    with np.errstate(divide="ignore"):
        return n * np.power(np.float64(x), n - 1)


@FEW
@given(n=st.integers(0, 5), x=st.sampled_from([0.0, -0.0]) | st.floats(-3, 3, allow_subnormal=False))
def test_power_with_run_time_integer_exponent(n, x):
    for fn in (pow_op, pow_np):
        g = astad.grad(fn)(x, n)
        assert g == _dpow(x, n), (fn.__name__, x, n, g)


@FEW
@given(n=st.integers(0, 4), xs=st.lists(st.sampled_from([0.0, 1.5, -2.0, 0.5]), min_size=1, max_size=4))
def test_power_arrays_at_zero_base(n, xs):
    x = np.array(xs)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(astad.grad(pow_sum)(x, n), [_dpow(v, n) for v in xs])
    # an int array of exponents, zero in some entries
    ns = np.arange(len(xs)) % 3
    with np.errstate(divide="ignore"):
        want = [_dpow(v, int(k)) for v, k in zip(xs, ns)]
    np.testing.assert_array_equal(astad.grad(pow_sum)(x, ns), want)


@FEW
@given(y=st.sampled_from([0.0, 1.0, 2.0, 3.5, 0.5]) | st.floats(1.0, 4.0))
def test_power_zero_base_run_time_float_exponent(y):
    gx, gy = astad.grad(pow_op, argnums=(0, 1))(0.0, y)
    want_x = 0.0 if y == 0 else (1.0 if y == 1 else (math.inf if y < 1 else 0.0))
    assert gx == want_x, (y, gx)
    assert gy == 0.0  # d(0 ** y)/dy: 0 ** y is 0 for y > 0 (and 0 by convention at y = 0)


@FEW
@given(x=st.floats(-4, -0.1), n=st.integers(-3, 4))
def test_power_negative_base_integer_exponent(x, n):
    for fn in (pow_op, pow_np):
        np.testing.assert_allclose(astad.grad(fn)(x, n), _dpow(x, n), rtol=1e-13)
    np.testing.assert_allclose(astad.grad(cube_literal)(x), 3 * x * x, rtol=1e-13)


def test_literal_powers_at_zero():
    assert astad.grad(square_literal)(0.0) == 0.0
    assert astad.grad(zero_literal)(0.0) == 0.0
    assert astad.grad(cube_literal)(0.0) == 0.0
    assert astad.grad(pow_op)(0.0, 0) == 0.0  # 0 ** 0, both at run time
    assert astad.grad(pow_op)(0.0, 0.0) == 0.0


# --------------------------------------------------------------------------- nan follows the cotangent


def maximum2(x, y):
    return np.maximum(x, y)


def minimum2(x, y):
    return np.minimum(x, y)


def relu(x):
    return np.maximum(x, 0.0)


def clip3(x, lo, hi):
    return np.clip(x, lo, hi)


def clip_const(x):
    return np.clip(x, -0.5, 0.5)


def max_reduce(x):
    return np.max(x, axis=0)


def min_reduce(x):
    return np.min(x)


def abs_fn(x):
    return np.abs(x)


def max_of_log(x):
    return np.maximum(np.log(x), 1.0)


def _returned(x, y, better):
    """Which argument np.maximum/np.minimum returns (numpy's documentation):
    a nan (the first if both are), else the better one, x at ties."""
    if math.isnan(x):
        return 0
    if math.isnan(y):
        return 1
    return 0 if (x >= y if better == "max" else x <= y) else 1


_values = st.sampled_from([math.nan, 0.0, 1.0, -1.0, 2.5])


@FEW
@given(xs=st.lists(st.tuples(_values, _values), min_size=1, max_size=5))
def test_extremum_cotangent_follows_the_nan(xs):
    x, y = np.array([a for a, _ in xs]), np.array([b for _, b in xs])
    u = np.arange(1.0, len(xs) + 1)
    for fn, better in ((maximum2, "max"), (minimum2, "min")):
        _, pullback = astad.vjp(fn, x, y)
        gx, gy = pullback(u)
        which = np.array([_returned(a, b, better) for a, b in xs])
        np.testing.assert_array_equal(gx, np.where(which == 0, u, 0.0))
        np.testing.assert_array_equal(gy, np.where(which == 1, u, 0.0))
    _, pullback = astad.vjp(relu, x)
    np.testing.assert_array_equal(pullback(u)[0], [ui if math.isnan(a) or a >= 0 else 0.0 for a, ui in zip(x, u)])


def test_maximum_of_scalars_with_nan():
    assert astad.reverse(maximum2)(math.nan, 1.0)[1](1.0) == (1.0, 0.0)
    assert astad.reverse(maximum2)(1.0, math.nan)[1](1.0) == (0.0, 1.0)
    assert astad.reverse(minimum2)(math.nan, math.nan)[1](1.0) == (1.0, 0.0)
    with np.errstate(invalid="ignore"):
        g = astad.grad(lambda_free_max_of_log)(np.array([-1.0, 2.0]))
    assert math.isnan(g[0]) and g[1] == 0.0  # log(-1) is nan: the nan reaches the gradient


def lambda_free_max_of_log(x):
    return np.sum(np.maximum(np.log(x), 1.0))


@FEW
@given(rows=st.lists(st.lists(_values, min_size=3, max_size=3), min_size=1, max_size=4))
def test_max_min_reductions_with_nan(rows):
    x = np.array(rows).T  # 3 x n: reduce over axis 0
    u = np.arange(1.0, x.shape[1] + 1)
    gx = astad.vjp(max_reduce, x)[1](u)[0]
    for j in range(x.shape[1]):
        col = x[:, j]
        hit = np.isnan(col) if np.isnan(col).any() else col == np.max(col)
        np.testing.assert_allclose(gx[:, j], np.where(hit, u[j] / hit.sum(), 0.0))
    flat = x.ravel()
    g = astad.grad(min_reduce)(flat)
    hit = np.isnan(flat) if np.isnan(flat).any() else flat == np.min(flat)
    np.testing.assert_allclose(g, np.where(hit, 1.0 / hit.sum(), 0.0))


def _clip_oracle(x, lo, hi):
    """Which of (x, lo, hi) np.clip returns: it is minimum(maximum(x, lo), hi)."""
    first = _returned(x, lo, "max")  # 0: x, 1: lo
    return 2 if _returned(max(x, lo) if first == 0 and not math.isnan(x) else (x if first == 0 else lo), hi, "min") else first


@FEW
@given(x=_values, lo=_values, hi=_values)
def test_clip_cotangent_goes_to_the_returned_argument(x, lo, hi):
    cts = astad.reverse(clip3)(x, lo, hi)[1](1.0)
    which = _clip_oracle(x, lo, hi)
    assert cts == tuple(1.0 if i == which else 0.0 for i in range(3)), (x, lo, hi, cts)
    g = astad.grad(clip_const)(x)
    assert g == (1.0 if math.isnan(x) or -0.5 <= x <= 0.5 else 0.0)


def test_clip_away_from_kinks():
    x = np.array([-1.3, 0.2, 0.9, 2.0])
    check_grad(clip3, [x, np.array([-0.5, -1.0, 0.5, 0.0]), np.array([0.5, 1.0, 0.6, 1.0])])
    check_grad(clip3, [x, np.array([0.5, 0.3, 1.5, 0.0]), np.array([0.0, -1.0, 0.6, 1.0])])  # lo > hi: hi wins


def test_abs_at_nan_and_zero():
    g = astad.vjp(abs_fn, np.array([np.nan, 0.0, -2.0, 3.0]))[1](np.ones(4))[0]
    assert math.isnan(g[0]) and list(g[1:]) == [0.0, -1.0, 1.0]


# --------------------------------------------------------------------------- dtypes numpy refuses


def neg_bool(x):
    return np.sum(-(x > 0))


def sub_bool(x):
    return np.sum((x > 0) - (x > 1))


@pytest.mark.parametrize("fn", [neg_bool, sub_bool])
def test_bool_arithmetic_numpy_refuses_is_a_type_error(fn):
    with pytest.raises(TypeError):
        fn(np.array([1.0, 2.0]))  # numpy itself refuses
    with pytest.raises(AstadTypeError, match="boolean") as e:
        astad.grad(fn)(np.array([1.0, 2.0]))
    assert "~" in str(e.value)


# --------------------------------------------------------------------------- through a loop and a module constant

COEFFS = np.array([0.5, -2.0, 3.0, 1.5])
BOUND = np.array([0.0, 1.0, 2.0])


def polynomial(x):
    total = 0.0
    for i in range(4):
        total = total + COEFFS[i] * x ** i
    return total


def max_with_module_constant(x):
    return np.sum(np.maximum(x, BOUND))


def test_polynomial_at_zero_through_a_loop():
    # x ** i with i == 0 at x = 0 in a loop: p'(0) = c1, not nan
    assert astad.grad(polynomial)(0.0) == COEFFS[1]
    for x in (0.7, -1.3):
        check_grad(polynomial, [x])


def test_module_constant_with_nan_takes_the_cotangent():
    x = np.array([0.5, 0.5, 3.0])
    np.testing.assert_array_equal(astad.grad(max_with_module_constant)(x), [1.0, 0.0, 1.0])
    BOUND[0] = np.nan  # the constant changed after the transformation: numpy now returns it at 0
    try:
        np.testing.assert_array_equal(astad.grad(max_with_module_constant)(x), [0.0, 0.0, 1.0])
    finally:
        BOUND[0] = 0.0


def nan_to_zero(x):
    return np.sum(np.where(np.isnan(x), 0.0, x) * 2.0)


def test_isnan_masks_the_cotangent():
    np.testing.assert_array_equal(astad.grad(nan_to_zero)(np.array([1.0, np.nan, -3.0])), [2.0, 0.0, 2.0])
    check_grad(nan_to_zero, [np.array([1.0, 0.5, -3.0])])
