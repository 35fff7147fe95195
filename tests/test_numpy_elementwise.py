"""End-to-end programs with numpy's elementwise functions of rules/elementwise_more.py
and Python's ``math`` functions (rules/math_functions.py): gradients (reverse
mode) and JVPs (forward mode) against central finite differences in float64,
forward against reverse (``<u, J v> == <J^T u, v>``), and the edges where a
careless derivative is silently wrong (poles, domains, ``sinc`` at 0,
``logaddexp`` at large arguments, ``nan_to_num``'s replaced entries)."""

from __future__ import annotations

import math
from math import exp, pi

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad
from conftest import check_grad

# --------------------------------------------------------------------------- programs


def unary_mix(x):
    a = np.sinh(x) * 0.5 + np.cosh(x) * np.arctan(x) + np.arcsinh(x) - np.expm1(x) + np.exp2(x)
    b = np.log1p(x * x) + np.log2(2.0 + x * x) * np.log10(3.0 + x) + np.cbrt(x + 5.0) + np.reciprocal(3.0 + x)
    c = np.sinc(x) + np.deg2rad(x) * np.rad2deg(x) + np.fabs(x - 9.0) + np.positive(x) + np.conj(x) + np.real(x)
    d = np.arcsin(x / 4.0) + np.arccos(x / 5.0) + np.arctanh(x / 3.0) + np.arccosh(3.0 + x * x) + np.degrees(x)
    return a + b + c + d + np.round(x, decimals=1) + np.fix(x) + np.float_power(x * x + 1.0, 1.5) + np.radians(x)


def binary_mix(x, y):
    a = np.arctan2(y, x) + np.hypot(x, y) + np.logaddexp(x, y) + np.logaddexp2(y, x) + np.copysign(x, y)
    b = np.float_power(x * x + 1.0, y) + np.heaviside(x, y) + np.fmod(x * 7.0, y) + np.remainder(y * 5.0, x)
    return a + b + np.mod(x * 3.0, y) + (y * 4.0) % x


def nan_to_num_sum(x, s):
    return np.sum(np.nan_to_num(x + s, nan=-1.0, posinf=2.0) * np.nan_to_num(x) + np.where(np.isinf(x), 0.0, s))


def classified(x):
    finite = np.isfinite(x)
    return np.sum(np.where(finite, np.sinh(np.where(finite, x, 0.0)), 1.0) + np.where(np.isnan(x), 2.0, 0.0))


def math_loop(x, y, n):
    acc = 0.0
    for i in range(n):
        t = x + 0.1 * i
        acc = acc + math.exp(-t) * math.sin(y * t) + math.log(t, 2.0) + math.hypot(t, y) + math.atan2(y, t)
        acc = acc + math.pow(t, 1.5) + math.sqrt(t) * math.cos(y) + math.tanh(t) + math.asinh(y) - math.log1p(t)
        acc = acc + math.acosh(1.5 + t) + math.atanh(y / 4.0) + math.asin(y / 3.0) + math.acos(y / 5.0) + math.atan(t)
        acc = acc + math.log2(t) + math.log10(t) + math.expm1(-t) + math.sinh(y) * math.cosh(t) + math.tan(y / 3.0)
        acc = acc + math.fabs(y) * math.degrees(t) + math.radians(y) + math.copysign(t, -1.0) + math.floor(t) * t
    return acc + exp(x) * pi + math.pi * math.e + math.tau * x


def math_scalar_of_array(v):
    s = np.sum(v * v)
    return math.sqrt(s) + math.exp(-s) * math.ceil(s) + math.trunc(s)


# --------------------------------------------------------------------------- oracles


def _jvp_fd(fn, args, tangents, eps=1e-6):
    plus = [a if t is None else a + eps * t for a, t in zip(args, tangents)]
    minus = [a if t is None else a - eps * t for a, t in zip(args, tangents)]
    return (np.asarray(fn(*plus)) - np.asarray(fn(*minus))) / (2 * eps)


def _tangent(rng, a):
    if isinstance(a, int):
        return None  # discrete
    if isinstance(a, float):
        return float(rng.standard_normal())
    return rng.standard_normal(np.shape(a))


def check_both(fn, args, seed=0, rtol=1e-5, atol=1e-6):
    """Reverse vs FD (check_grad), forward vs FD, and forward vs reverse."""
    check_grad(fn, args, seed=seed, rtol=rtol, atol=atol)
    rng = np.random.default_rng(seed)
    tangents = [_tangent(rng, a) for a in args]
    value, tangent = astad.jvp(fn, tuple(args), tuple(tangents))
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    np.testing.assert_allclose(tangent, _jvp_fd(fn, args, tangents), rtol=rtol, atol=atol)
    u = _tangent(rng, fn(*args))
    _, pullback = astad.vjp(fn, *args)
    cts = pullback(u)
    lhs = float(np.sum(np.asarray(u) * np.asarray(tangent)))
    rhs = sum(float(np.sum(np.asarray(c) * np.asarray(t))) for c, t in zip(cts, tangents) if t is not None)
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-12)


SHAPES = [(), (3,), (2, 3)]


def _draw(rng, shape, lo=-2.0, hi=2.0):
    return float(rng.uniform(lo, hi)) if shape == "py" else rng.uniform(lo, hi, shape)


# --------------------------------------------------------------------------- tests: numpy


@pytest.mark.parametrize("shape", ["py", *SHAPES])
def test_unary_functions(shape):
    rng = np.random.default_rng(1)
    x = _draw(rng, shape, -1.9, 1.9)
    if shape == "py":  # np.fix, np.round: away from their jumps
        x = 0.37
    check_both(unary_mix_sum, [x])


def unary_mix_sum(x):
    return np.sum(unary_mix(x))


@pytest.mark.parametrize("sx, sy", [("py", "py"), ((3,), (3,)), ((2, 1), (3,)), ("py", (2, 3)), ((), (3,))])
def test_binary_functions_broadcast(sx, sy):
    rng = np.random.default_rng(2)
    x = _draw(rng, sx, 0.6, 1.9) * (1 if sx == "py" else rng.choice([-1.0, 1.0], np.shape(_draw(rng, sx))))
    y = _draw(rng, sy, 0.6, 1.9)
    check_both(binary_mix_sum, [x, y])


def binary_mix_sum(x, y):
    return np.sum(binary_mix(x, y))


def test_mod_and_fmod_have_their_true_derivative_in_the_divisor():
    """``a % b = a - floor(a / b) * b``: d/db = -floor(a / b); ``fmod``: -trunc(a / b) (differ for negative a)."""
    a, b = np.array([-7.3, 5.2, -0.4]), 1.7

    def rem(a, b):
        return np.sum(np.mod(a, b) + 2.0 * np.fmod(a, b))

    ga, gb = astad.grad(rem, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, 3.0)
    assert gb == pytest.approx(float(np.sum(-np.floor(a / b) - 2.0 * np.trunc(a / b))))


def test_sinc_at_and_near_zero():
    """0 at 0 (the limit, not nan), and near 0 the series: -pi**2 x / 3 to full precision."""
    g = astad.grad(sinc_sum)
    x = np.array([0.0, 1e-8, -3e-5, 0.004, 0.5])
    t = np.pi * x[1:3]
    tiny = np.pi * (-t / 3 + t ** 3 / 30)  # the series' next term is t**5 / 840: below 1e-16 relative here
    tl = np.longdouble(np.pi) * x[3:].astype(np.longdouble)  # the quotient in extended precision (80-bit)
    rest = (np.longdouble(np.pi) * (tl * np.cos(tl) - np.sin(tl)) / (tl * tl)).astype(float)
    np.testing.assert_allclose(g(x), [0.0, *tiny, *rest], rtol=1e-13, atol=0)
    assert astad.grad(sinc_sum)(0.0) == 0.0
    assert astad.jvp(sinc_sum, (np.zeros(2),), (np.ones(2),))[1] == 0.0


def sinc_sum(x):
    return np.sum(np.sinc(x))


@settings(max_examples=25, deadline=None)
@given(st.floats(3e-4, 0.05), st.booleans())
def test_sinc_derivative_is_accurate_on_both_sides_of_the_series_cutoff(x, negative):
    x = -x if negative else x
    tl = np.longdouble(np.pi) * np.longdouble(x)
    want = float(np.longdouble(np.pi) * (tl * np.cos(tl) - np.sin(tl)) / (tl * tl))
    assert astad.grad(sinc_sum)(x) == pytest.approx(want, rel=1e-12)


def np_power_15(x):
    return np.power(x, 1.5)


def test_np_power_of_a_negative_python_float_is_nan_as_numpy_not_complex():
    value, pullback = _with_errstate(astad.vjp, np_power_15, -2.0)
    assert np.isnan(value) and isinstance(value, np.float64)
    (ct,) = _with_errstate(pullback, 1.0)
    assert isinstance(ct, float) and np.isnan(ct)
    assert astad.grad(np_power_15)(2.0) == pytest.approx(1.5 * 2.0 ** 0.5, rel=1e-14)


def _with_errstate(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


def edge_cbrt(x):
    return np.sum(np.cbrt(x))


def edge_arccosh(x):
    return np.sum(np.arccosh(x))


def edge_arctanh(x):
    return np.sum(np.arctanh(x))


def edge_arcsin(x):
    return np.sum(np.arcsin(x))


def edge_arccos(x):
    return np.sum(np.arccos(x))


def edge_log1p(x):
    return np.sum(np.log1p(x))


def edge_log2(x):
    return np.sum(np.log2(x))


def edge_log10(x):
    return np.sum(np.log10(x))


def edge_reciprocal(x):
    return np.sum(np.reciprocal(x))


@pytest.mark.parametrize("fn, x, want", [
    (edge_cbrt, 0.0, np.inf),
    (edge_arccosh, 0.5, np.nan),
    (edge_arccosh, 1.0, np.inf),
    (edge_arctanh, 2.0, np.nan),
    (edge_arctanh, -1.0, np.inf),
    (edge_arcsin, 1.0, np.inf),
    (edge_arcsin, 1.5, np.nan),
    (edge_arccos, -1.0, -np.inf),
    (edge_log1p, -2.0, np.nan),
    (edge_log1p, -1.0, np.inf),
    (edge_log2, -1.0, np.nan),
    (edge_log10, 0.0, np.inf),
    (edge_reciprocal, 0.0, -np.inf),
])
def test_derivatives_at_domain_edges_follow_numpy(fn, x, want):
    """nan outside the domain (where the primal is nan), inf at a pole: for a
    Python float, a 0-d and a 1-d array, in both directions; never an exception."""
    for arg in (x, np.array(x), np.array([x, x])):
        g = _with_errstate(astad.grad(fn), arg)
        _, t = _with_errstate(astad.jvp, fn, (arg,), (np.ones_like(arg) if np.ndim(arg) else 1.0,))
        np.testing.assert_array_equal(np.ravel(g), np.full(np.size(arg), want))
        np.testing.assert_array_equal(t, want)  # the sum of one or two equal derivatives


def test_logaddexp_is_stable_at_large_arguments():
    x, y = np.array([1000.0, -1000.0, 3.0]), np.array([0.0, -999.0, 3.0])
    gx, gy = astad.grad(logaddexp_sum, argnums=(0, 1))(x, y)
    s = 1.0 / (1.0 + np.exp(-(x - y)))  # sigmoid(x - y); exp(x - out) loses |out| * eps: 1e-13 at 1000
    np.testing.assert_allclose(gx, s, rtol=1e-12)
    np.testing.assert_allclose(gy, 1.0 - s, rtol=1e-12)
    gx2, gy2 = astad.grad(logaddexp2_sum, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx2, 1.0 / (1.0 + 2.0 ** -(x - y)), rtol=1e-12)


def logaddexp_sum(x, y):
    return np.sum(np.logaddexp(x, y))


def logaddexp2_sum(x, y):
    return np.sum(np.logaddexp2(x, y))


def test_nan_to_num_derivative_is_one_where_finite_zero_where_replaced():
    x = np.array([1.5, np.nan, np.inf, -np.inf, -0.5])
    gx, gs = _with_errstate(astad.grad(nan_to_num_sum, argnums=(0, 1)), x, 2.0)
    # d/dx of nan_to_num(x + s, ...) * nan_to_num(x) is (x + s) + x at finite entries, 0 at replaced ones
    finite = np.isfinite(x)
    xs = np.where(finite, x, 0.0)
    np.testing.assert_array_equal(gx, np.where(finite, 2.0 * xs + 2.0, 0.0))
    assert gs == pytest.approx(float(np.sum(xs)) + 3.0)  # + the entries that are not inf in the where
    check_both(nan_to_num_sum, [np.array([0.3, -1.2, 2.0]), 0.7])


def test_discrete_classifiers_give_no_tangent_and_select():
    x = np.array([0.5, np.inf, np.nan, -1.5])
    g = astad.grad(classified)(x)
    np.testing.assert_allclose(g, np.where(np.isfinite(x), np.cosh(np.where(np.isfinite(x), x, 0.0)), 0.0))


def rounded(x):
    return np.sum(np.round(x, 2) + np.around(x) + x.round(decimals=1) + np.fix(x) + np.floor(x) + np.rint(x) * x)


def test_round_and_rounding_family_have_zero_derivative():
    x = np.array([0.123, -1.678, 2.5])
    np.testing.assert_allclose(astad.grad(rounded)(x), np.rint(x))
    assert astad.jvp(rounded, (x,), (np.ones(3),))[1] == pytest.approx(float(np.sum(np.rint(x))))
    assert "np.round(x, decimals=2)" in astad.reverse(rounded).source


def test_heaviside_value_argument_gets_the_derivative_where_x_is_zero():
    gh = astad.grad(step_sum, argnums=1)(STEPS, np.array([0.2, 0.4, 0.6, 0.8]))
    np.testing.assert_array_equal(gh, (STEPS == 0).astype(float))
    gx, gh = astad.grad(step_sum, argnums=(0, 1))(STEPS, 0.5)
    np.testing.assert_array_equal(gx, 0.0)
    assert gh == 2.0


STEPS = np.array([0.0, 1.0, -1.0, 0.0])


def step_sum(x, h):
    return np.sum(np.heaviside(x, h))


def with_out(x):
    return np.sum(np.sinh(x, out=x))


def with_where(x):
    return np.sum(np.arctan2(x, x, where=x > 0))


def nan_to_num_in_place(x):
    return np.sum(np.nan_to_num(x, copy=False))


def test_out_and_where_keywords_are_refused_with_a_hint():
    with pytest.raises(astad.AstadTypeError, match="unsupported keyword argument `out`") as e:
        astad.grad(with_out)(np.ones(3))
    assert "assign the result" in e.value.hint
    with pytest.raises(astad.AstadTypeError, match="`where`") as e:
        astad.grad(with_where)(np.ones(3))
    assert "np.where(mask" in e.value.hint


def test_nan_to_num_copy_false_is_refused():
    with pytest.raises(astad.AstadTypeError, match="in place"):
        astad.grad(nan_to_num_in_place)(np.ones(3))


# --------------------------------------------------------------------------- tests: math


@pytest.mark.parametrize("x, y, n", [(0.7, 0.9, 1), (1.3, -1.1, 4)])
def test_math_functions_in_a_scalar_loop(x, y, n):
    check_both(math_loop, [x, y, n])
    source = astad.reverse(math_loop).source
    assert "import math" in source and "math.exp(" in source and "math.atan2(" in source
    value, _ = astad.reverse(math_loop)(x, y, n)
    assert type(value) is float  # Python floats throughout, as the primal's


def test_math_of_a_numpy_scalar_and_int_results():
    check_both(math_scalar_of_array, [np.array([0.4, -0.3, 0.9])])


def math_sqrt(x):
    return math.sqrt(x)


def math_hypot(x, y):
    return math.hypot(x, y)


def math_log(x):
    return math.log(x)


def math_of_array(x):
    return math.exp(x)


def math_gamma(x):
    return math.gamma(x)


def test_math_sqrt_and_hypot_at_zero_are_inf_and_0_not_exceptions():
    assert _with_errstate(astad.grad(math_sqrt), 0.0) == np.inf
    # hypot at the origin: 0, as abs's derivative at 0 and JAX's (tests/test_left_alone_9.py)
    assert _with_errstate(astad.grad(math_hypot, argnums=(0, 1)), 0.0, 0.0) == (0.0, 0.0)
    assert _with_errstate(astad.jvp, math_hypot, (0.0, 0.0), (1.0, 1.0))[1] == 0.0


def test_math_raises_where_python_does():
    with pytest.raises(ValueError):
        astad.grad(math_log)(-1.0)


def test_math_on_an_array_is_refused_with_a_hint():
    with pytest.raises(astad.AstadTypeError, match="math.exp takes numbers") as e:
        astad.grad(math_of_array)(np.ones(3))
    assert "np.exp" in e.value.hint


def test_unsupported_math_function_is_named():
    with pytest.raises(astad.UnsupportedFunctionError, match="math.gamma is not supported") as e:
        astad.grad(math_gamma)(1.5)
    assert "math.exp" in e.value.hint


def second_order_mix(x):
    return np.sum(np.sinc(x) * np.arcsinh(x) + np.logaddexp(x, x * x) + np.arctan2(x, 1.5) + np.cbrt(x + 3.0)
                  + np.arctanh(x / 3.0) + np.hypot(x, 0.5) + np.log1p(x * x))


def math_second_order(x, y):
    return math.exp(-x) * math.sin(y * x) + math.hypot(x, y) + math.atan2(y, x) + math.sqrt(x) + math.log(x, 3.0)


def test_hessians_through_the_new_rules_match_finite_differences_of_the_gradient():
    """Forward over reverse: the derivative code the rules make is differentiated by the same rules."""
    x, e = np.array([0.3, -0.5, 0.005, 0.0]), 1e-5
    g = astad.grad(second_order_mix)
    fd = np.array([(g(x + e * d) - g(x - e * d)) / (2 * e) for d in np.eye(4)])
    np.testing.assert_allclose(astad.hessian(second_order_mix)(x), fd, rtol=1e-6, atol=1e-7)
    gm = astad.grad(math_second_order, argnums=(0, 1))
    _, column = astad.jvp(gm, (0.7, 1.3), (1.0, 0.0))
    fd_column = [(a - b) / (2 * e) for a, b in zip(gm(0.7 + e, 1.3), gm(0.7 - e, 1.3))]
    np.testing.assert_allclose(column, fd_column, rtol=1e-6)
