"""Items session 8 noticed and left alone (note20), each fixed or refused with astad's own error.

Oracles: the plain Python call (values, dtypes, types), central differences in float64 (gradients),
forward mode against reverse mode."""

from __future__ import annotations

import math

import numpy as np
import pytest

import astad
from conftest import central_differences, check_scalar_function


# ------------------------------------------------------------------ 1. any/all stop at the first element that
# decides them: an element after it is never evaluated by Python (math.log of a negative would raise).  astad
# refuses them with its own error and a rewrite that stops there (which it differentiates).

def any_of_logs(x, xs):
    if any(math.log(v) > 0 for v in xs):
        return x * 2.0
    return x * 3.0


def all_of_logs(x, xs):
    return x * 2.0 if all(math.log(v) < 0 for v in xs) else x * 3.0


def any_as_a_while(x, xs):
    i = 0
    while i < len(xs) and not math.log(xs[i]) > 0:
        i += 1
    return x * 2.0 if i < len(xs) else x * 3.0


@pytest.mark.parametrize("f, xs", [(any_of_logs, [2.0, -1.0]), (all_of_logs, [2.0, -1.0])])
def test_any_all_are_refused_with_astad_s_error(f, xs):
    f(1.5, xs)  # Python stops before the negative element
    for mode in (astad.grad, astad.value_and_grad):
        with pytest.raises(astad.UnsupportedFunctionError, match=r"Python stops at the first element") as info:
            mode(f)(1.5, xs)
        assert "while" in str(info.value) and "^" in str(info.value)
    with pytest.raises(astad.UnsupportedFunctionError, match=r"Python stops at the first element"):
        astad.jvp(f, (1.5, xs), (1.0, None))


@pytest.mark.parametrize("xs", [[2.0, -1.0], [0.5, 0.7]])
def test_the_suggested_while_loop_stops_where_python_does(xs):
    value, g = astad.value_and_grad(any_as_a_while)(1.5, xs)
    assert value == any_as_a_while(1.5, xs)
    assert g == pytest.approx(central_differences(lambda x: any_as_a_while(x, xs), 1.5))
    assert astad.jvp(any_as_a_while, (1.5, xs), (1.0, None))[1] == pytest.approx(g)


# ------------------------------------------------------------------ 2. a list of math.cos(x) (a numpy float64
# tangent) beside a Python float (its tangent a Python float, or zero where the element is constant): forward
# mode refused it ("the elements of a list that is built in a loop must have one type") where reverse accepted it

def zip_generator_map_with_a_constant(x):
    s = 0.0
    for a, b in zip((x * i for i in range(3)), map(math.cos, [x, 2, 3.0 * x])):
        s = s + a * b
    return s


def zip_generator_and_a_mixed_list(x):
    s = 0.0
    for a, b in zip((x * i for i in range(2)), [math.cos(x), x]):
        s = s + a * b
    return s


def mixed_list_read_at_run_time(x, n):
    ys = [math.cos(x), x, 0.5]
    s = 0.0
    for i in range(n):
        s = s + ys[i] * ys[i]
    return s


@pytest.mark.parametrize("f", [zip_generator_map_with_a_constant, zip_generator_and_a_mixed_list])
def test_lists_of_numpy_and_python_float_tangents_in_both_modes(f):
    check_scalar_function(f, (0.7, 1.3))
    for x in (0.7, 1.3):
        value, pushforward = astad.forward(f)(x)
        assert value == f(x)
        assert pushforward(1.0) == pytest.approx(central_differences(f, x), rel=1e-6)


def test_a_mixed_list_read_at_run_time_in_both_modes():
    f = mixed_list_read_at_run_time
    for x in (0.7, -1.1):
        want = central_differences(lambda v: f(v, 3), x)
        value, g = astad.value_and_grad(f)(x, 3)
        assert value == f(x, 3) and g == pytest.approx(want, rel=1e-6)
        assert astad.jvp(f, (x, 3), (1.0, None)) == pytest.approx((f(x, 3), want), rel=1e-6)


# ------------------------------------------------------------------ 3. an object whose __class__ property raises
# (isinstance asks it): read as a global it was an InternalError, as an argument the user's own RuntimeError
# from inside astad; now astad's own errors

class _ClassRaises:
    c = 2.0

    @property
    def __class__(self):
        raise RuntimeError("no __class__ here")


CLASS_RAISES = _ClassRaises()


class _Holder:
    pass


HOLDER = _Holder()
HOLDER.inner = _ClassRaises()


def reads_a_global_whose_class_raises(x):
    return x * CLASS_RAISES.c


def reads_an_attribute_whose_class_raises(x):
    return x * HOLDER.inner.c


def takes_an_argument_whose_class_raises(x, o):
    return x * o.c


@pytest.mark.parametrize("f, shown", [(reads_a_global_whose_class_raises, "`CLASS_RAISES`"),
                                      (reads_an_attribute_whose_class_raises, "`HOLDER.inner`")])
def test_a_global_whose_class_raises_is_refused(f, shown):
    assert f(1.5) == 3.0
    for mode in (astad.grad, astad.value_and_grad, lambda f: astad.reverse(f)):
        with pytest.raises(astad.UnsupportedFunctionError, match="raised RuntimeError: no __class__ here") as info:
            mode(f)(1.5)
        assert shown in str(info.value) and "^" in str(info.value)
    with pytest.raises(astad.UnsupportedFunctionError, match="raised RuntimeError"):
        astad.jvp(f, (1.5,), (1.0,))


def test_an_argument_whose_class_raises_is_refused():
    f = takes_an_argument_whose_class_raises
    assert f(1.5, _ClassRaises()) == 3.0
    with pytest.raises(astad.AstadTypeError, match="argument `o` is a _ClassRaises"):
        astad.grad(f)(1.5, _ClassRaises())
    with pytest.raises(astad.AstadTypeError, match="argument `o` is a _ClassRaises"):
        astad.jvp(f, (1.5, _ClassRaises()), (1.0, None))


# ------------------------------------------------------------------ 4. hypot at the origin: its derivative is
# x / hypot(x, y), 0 / 0 there (nan); now 0, as |x|'s at 0 in astad (np.sign(0), math.fabs, abs) and as JAX's
# jnp.hypot (a `where` at max(|x|, |y|) == 0).  abs(x) ** 0.5 at 0 stays nan: the chain rule gives
# 0.5 * 0 ** -0.5 * sign(0) = inf * 0 (JAX gives nan too), and the function has a cusp there.

def hypot_with_zero(x):
    return math.hypot(x, 0.0)


def np_hypot_with_zero(x):
    return np.hypot(x, 0.0)


def hypot_of_two(x, y):
    return math.hypot(x, y) * 2.0


def abs_of(x):
    return abs(x)


def fabs_of(x):
    return math.fabs(x)


def root_of_abs(x):
    return abs(x) ** 0.5


def sqrt_of_abs(x):
    return math.sqrt(abs(x))


@pytest.mark.parametrize("f", [hypot_with_zero, np_hypot_with_zero])
def test_hypot_with_zero_has_the_derivative_of_abs(f):
    check_scalar_function(f, (0.7, -1.3))  # away from 0: |x|'s, by central differences
    for x in (0.0, -0.0):
        for like in (abs_of, fabs_of):
            want = astad.grad(like)(x)
            assert want == 0.0
            assert astad.grad(f)(x) == want
            assert astad.value_and_grad(f)(x) == (f(x), want)
            assert astad.jvp(f, (x,), (1.0,)) == (f(x), want)
            assert astad.reverse(f)(x)[1](1.0) == (want,)


def test_hypot_at_the_origin_and_away_from_it():
    for x, y in ((0.7, -1.2), (0.0, 2.0), (-3.0, 0.0)):
        g = astad.grad(hypot_of_two, argnums=(0, 1))(x, y)
        assert g[0] == pytest.approx(central_differences(lambda v: hypot_of_two(v, y), x), rel=1e-6, abs=1e-9)
        assert g[1] == pytest.approx(central_differences(lambda v: hypot_of_two(x, v), y), rel=1e-6, abs=1e-9)
    assert astad.grad(hypot_of_two, argnums=(0, 1))(0.0, 0.0) == (0.0, 0.0)
    assert astad.jvp(hypot_of_two, (0.0, 0.0), (1.0, -2.0))[1] == 0.0
    xs = np.array([0.0, 0.5, -2.0])
    value, pullback = astad.vjp(lambda a: np.hypot(a, 0.0), xs)
    assert np.array_equal(value, np.abs(xs))
    assert np.array_equal(pullback(np.ones(3))[0], np.sign(xs))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("f", [root_of_abs, sqrt_of_abs])
def test_root_of_abs_at_0_is_nan_as_the_chain_rule_gives(f):
    check_scalar_function(f, (0.7, -1.3))
    with np.errstate(all="ignore"):
        chain = 0.5 * np.float64(0.0) ** -0.5 * np.sign(0.0)  # inf * 0
    assert np.isnan(chain)
    assert np.isnan(astad.grad(f)(0.0))
    assert np.isnan(astad.jvp(f, (0.0,), (1.0,))[1])


# ------------------------------------------------------------------ 5. np.copy of a numpy scalar is a 0-d array
# in numpy (its .copy() method keeps the scalar): astad gave the scalar

def np_copy_returned(x):
    y = np.copy(x)
    return y


def np_copy_of_a_global_scalar(x):
    return np.copy(SCALAR) * x, np.copy(SCALAR)


def copy_method_returned(x):
    return x.copy()


SCALAR = np.float64(2.0)


@pytest.mark.parametrize("x", [np.float64(0.7), np.float32(0.7), np.array(0.7), np.array(0.7, dtype=np.float32)])
def test_np_copy_of_a_numpy_scalar_is_a_0d_array(x):
    for f in (np_copy_returned, copy_method_returned):
        want = f(x)
        value, g = astad.value_and_grad(f)(x)
        assert type(value) is type(want) and value.dtype == want.dtype and value == want
        assert type(g) is type(x) and g.dtype == x.dtype and g == 1.0  # a gradient has the argument's type
        v, t = astad.jvp(f, (x,), (np.ones_like(x) if isinstance(x, np.ndarray) else x.dtype.type(1.0),))
        assert type(v) is type(want) and type(t) is type(want) and t.dtype == want.dtype and t == 1.0
    assert isinstance(np_copy_returned(x), np.ndarray)


def test_np_copy_of_a_global_numpy_scalar():
    want = np_copy_of_a_global_scalar(0.5)
    value, pullback = astad.vjp(np_copy_of_a_global_scalar, 0.5)
    assert [type(v) for v in value] == [type(w) for w in want] == [np.float64, np.ndarray]
    assert value == want
    assert pullback((1.0, np.array(1.0)))[0] == 2.0


# ------------------------------------------------------------------ 6. astad.reverse(f) and astad.forward(f) have
# .source_for(*args), as astad.grad(f)'s: the code a call at args runs, before any call

def sines(x, w):
    return np.sum(np.sin(x) * w)


@pytest.mark.parametrize("decorate", [astad.reverse, astad.forward])
def test_source_for_of_reverse_and_forward(decorate):
    for args, signature in (((0.5, 2.0), "x: float, w: float"), ((np.ones(3), 2.0), "x: f64[3], w: float")):
        d = decorate(sines)
        text = d.source_for(*args)
        assert f"from sines({signature})" in text
        value, derivative = d(*args)
        assert value == sines(*args)
        assert d.source == text
        compile(text, "<source_for>", "exec")
    assert decorate(sines).source_for(0.5, 2.0) != decorate(sines).source_for(np.ones(3), 2.0)


# ------------------------------------------------------------------ 7. an int argument has no tangent: a
# pushforward (and astad.jvp) takes None, or a zero of the argument's shape (held constant either way), and
# refuses anything else with one message (it said "must be None" and took 0.0 and np.zeros(5) for an int)

def scaled_by_count(x, n):
    return x * n


def scaled_by_ints(x, k):
    return np.sum(x * k)


@pytest.mark.parametrize("held", [None, 0, 0.0, -0.0, np.float64(0.0), np.array(0.0), False])
def test_an_int_argument_held_constant(held):
    value, pushforward = astad.forward(scaled_by_count)(1.5, 3)
    assert value == 4.5 and pushforward(1.0, held) == 3.0
    assert astad.jvp(scaled_by_count, (1.5, 3), (1.0, held)) == (4.5, 3.0)


@pytest.mark.parametrize("given, shown", [(1.0, "got 1.0"), (1, "got 1"), (np.nan, "got nan"), (2.0, "got 2.0")])
def test_an_int_argument_given_a_tangent_is_refused(given, shown):
    value, pushforward = astad.forward(scaled_by_count)(1.5, 3)
    pushforward(1.0, 0.0)  # accepted before, then refused: no state kept between the calls
    message = r"argument `n` of scaled_by_count must be None \(or zero, of the argument's shape\): the argument " \
              r"is int, which is discrete"
    with pytest.raises(astad.AstadTypeError, match=message) as info:
        pushforward(1.0, given)
    assert shown in str(info.value)
    astad.jvp(scaled_by_count, (1.5, 3), (1.0, 0.0))
    with pytest.raises(astad.AstadTypeError, match=message):
        astad.jvp(scaled_by_count, (1.5, 3), (1.0, given))


def test_an_int_array_argument_takes_none_or_zeros_of_its_shape():
    x, k = np.array([0.5, 1.0, 2.0]), np.arange(3)
    want = (scaled_by_ints(x, k), float(np.sum(k)))
    for held in (None, np.zeros(3), np.zeros(3, dtype=np.int64)):
        assert astad.jvp(scaled_by_ints, (x, k), (np.ones(3), held)) == want
    for given, shown in ((np.zeros(2), "of shape (2,)"), (np.ones(3), "of shape (3,)"), (0.0, "got 0.0")):
        with pytest.raises(astad.AstadTypeError, match="argument `k` of scaled_by_ints must be None") as info:
            astad.jvp(scaled_by_ints, (x, k), (np.ones(3), given))
        assert shown in str(info.value)


# ------------------------------------------------------------------ 8. sum of a list written out, without start:
# Python adds from 0 (0 + x0 + x1 + ...); astad added from x0: sum([-0.0]) was -0.0 (Python 0.0), sum([True])
# True (Python 1), and sum([b, b]) of numpy bools np.True_ (a logical or; Python 2)

def sum_of_one(x):
    return sum([x])


def sum_of_two(x):
    return sum([x, x]) * 3.0


def sum_of_products(x, y):
    return sum([x * y, -x * y, 2.0 * x])


def sum_of_bools(x, b):
    return sum([b, b]) * x


def sum_of_one_bool(x, b):
    return sum([b]), x


@pytest.mark.parametrize("x", [-0.0, 0.0, 0.7, np.float32(-0.0), np.float64(-0.0), np.array(-0.0),
                               np.array([-0.0, 1.5], dtype=np.float16)])
def test_sum_of_a_list_from_0(x):
    for f in (sum_of_one, sum_of_two):
        want = f(x)
        value, pullback = astad.vjp(f, x)
        assert type(value) is type(want) and np.array_equal(value, want)
        assert np.array_equal(np.signbit(value), np.signbit(want))  # 0.0, not -0.0
        assert np.dtype(getattr(value, "dtype", float)) == np.dtype(getattr(want, "dtype", float))
        v, t = astad.jvp(f, (x,), (np.ones_like(x) if isinstance(x, np.ndarray) else type(x)(1.0),))
        assert np.array_equal(np.signbit(v), np.signbit(want)) and np.array_equal(v, want)
    check_scalar_function(sum_of_two, (0.7, -1.2))


def test_sum_of_products_from_0():
    for x, y in ((-0.0, 1.0), (0.0, -2.0), (0.7, 1.3)):
        value, g = astad.value_and_grad(sum_of_products, argnums=(0, 1))(x, y)
        want = sum_of_products(x, y)
        assert value == want and math.copysign(1.0, value) == math.copysign(1.0, want)
        assert g[0] == pytest.approx(central_differences(lambda v: sum_of_products(v, y), x))
        assert g[1] == pytest.approx(central_differences(lambda v: sum_of_products(x, v), y))


@pytest.mark.parametrize("b", [True, np.True_, np.array([True, False])])
def test_sum_of_bools_counts(b):
    want = sum_of_bools(1.5, b)
    value, pullback = astad.vjp(sum_of_bools, 1.5, b)
    assert np.array_equal(value, want) and type(value) is type(want)
    assert pullback(np.ones_like(want))[0] == pytest.approx(np.sum(want) / 1.5)
    want = sum_of_one_bool(1.5, b)
    value, _ = astad.reverse(sum_of_one_bool)(1.5, b)
    assert type(value[0]) is type(want[0]) and np.array_equal(value[0], want[0])
    assert np.asarray(value[0]).dtype == np.asarray(want[0]).dtype


# ------------------------------------------------------------------ 9. % and // by 0 on numpy values: the value is
# nan (±inf for a // 0), the derivative was finite (1 and ±inf for %, 0 for //); now nan where the divisor is 0,
# and as before elsewhere (Python floats raise ZeroDivisionError in the primal, as Python does)

def mod_of(x, y):
    return x % y


def np_mod_of(x, y):
    return np.mod(x, y)


def fmod_of(x, y):
    return np.fmod(x, y)


def floordiv_of(x, y):
    return (x // y) * x


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("f", [mod_of, np_mod_of, fmod_of, floordiv_of])
def test_by_zero_the_derivative_is_nan(f):
    x, y = np.array([1.5, 2.5, -1.0, 0.0]), np.array([0.0, 1.0, 0.0, 0.0])
    value, pullback = astad.vjp(f, x, y)
    want = f(x, y)
    assert np.array_equal(value, want, equal_nan=True)
    dx, dy = pullback(np.ones(4))
    tx = astad.jvp(f, (x, y), (np.ones(4), None))[1]
    ty = astad.jvp(f, (x, y), (None, np.ones(4)))[1]
    for d in (dx, dy, tx, ty):
        assert np.isnan(d[[0, 2, 3]]).all()
    h = 1e-6  # where y != 0: central differences
    assert dx[1] == pytest.approx((f(x[1] + h, y[1]) - f(x[1] - h, y[1])) / (2 * h))
    assert dy[1] == pytest.approx((f(x[1], y[1] + h) - f(x[1], y[1] - h)) / (2 * h))
    assert tx[1] == pytest.approx(dx[1]) and ty[1] == pytest.approx(dy[1])
    g = astad.grad(lambda a, b: np.sum(f(a, b)), argnums=(0, 1))(np.float64(1.5), np.float64(0.0))
    assert all(np.isnan(v) for v in g)


@pytest.mark.parametrize("f", [mod_of, floordiv_of])
def test_python_floats_by_zero_raise_and_elsewhere_agree(f):
    with pytest.raises(ZeroDivisionError):
        astad.grad(f)(1.5, 0.0)
    for x, y in ((1.7, 0.5), (-1.7, 0.5), (1.7, -0.3)):
        g = astad.grad(f, argnums=(0, 1))(x, y)
        assert type(g[0]) is float and type(g[1]) is float
        assert g[0] == pytest.approx(central_differences(lambda v: f(v, y), x))
        assert g[1] == pytest.approx(central_differences(lambda v: f(x, v), y), abs=1e-9)


# ------------------------------------------------------------------ 10. np.sum(x, initial=c): numpy adds from c;
# astad computed np.sum(x) + c, which rounds otherwise (float16 by several units in the last place)

def sum_from(x, c):
    return np.sum(x, axis=0, initial=c)


def sum_all_from(x, c):
    return np.sum(x, initial=c)


def sum_kept_from(x, c):
    return np.sum(x * x, axis=1, keepdims=True, initial=c)


def sum_masked_from(x, c):
    return np.sum(x, axis=0, where=x > 0, initial=c)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (5, 3), (200,), (300, 2)])
@pytest.mark.parametrize("f", [sum_from, sum_all_from, sum_kept_from])
def test_sum_with_initial_is_numpy_s_bit_for_bit(f, shape, dtype):
    if f is sum_kept_from and len(shape) < 2:
        pytest.skip("axis 1")
    x = np.random.default_rng(len(shape) + shape[0]).normal(size=shape).astype(dtype)
    for c in (0.1, dtype(0.3)):
        want = f(x, c)
        value, pullback = astad.vjp(f, x, c)
        assert type(value) is type(want) and value.dtype == want.dtype and np.array_equal(value, want)
        dx, dc = pullback(np.ones_like(want))
        assert dx.dtype == x.dtype and type(dc) is type(c)
        assert np.array_equal(astad.jvp(f, (x, c), (np.ones_like(x), None))[0], want)


def test_sum_with_initial_derivatives():
    rng = np.random.default_rng(3)
    x, u = rng.normal(size=(4, 3)), rng.normal(size=3)
    for f in (sum_from, sum_masked_from):
        value, pullback = astad.vjp(f, x, 0.25)
        assert np.array_equal(value, f(x, 0.25))
        dx, dc = pullback(u)
        want_dx = central_differences(lambda a: float(u @ f(a, 0.25)), x)
        assert dx == pytest.approx(want_dx, rel=1e-6, abs=1e-8)
        assert dc == pytest.approx(central_differences(lambda c: float(u @ f(x, c)), 0.25), rel=1e-6)
        v = rng.normal(size=x.shape)
        tangent = astad.jvp(f, (x, 0.25), (v, 1.0))[1]
        assert float(u @ tangent) == pytest.approx(float(np.sum(dx * v)) + dc, rel=1e-9)  # <u, J v> = <J^T u, v>


def prod_from(x, c):
    return np.prod(x, axis=0, initial=c)


def prod_all_from(x, c):
    return np.prod(x, initial=c)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (5, 3), (200,), (300, 2)])
@pytest.mark.parametrize("f", [prod_from, prod_all_from])
def test_prod_with_initial_is_numpy_s_bit_for_bit(f, shape, dtype):
    x = (1.0 + 0.01 * np.random.default_rng(shape[0]).normal(size=shape)).astype(dtype)
    for c in (1.1, dtype(0.7)):
        want = f(x, c)
        value, pullback = astad.vjp(f, x, c)
        assert type(value) is type(want) and value.dtype == want.dtype and np.array_equal(value, want)
        dx, dc = pullback(np.ones_like(want))
        assert dx.dtype == x.dtype and type(dc) is type(c)


def test_prod_with_initial_derivatives():
    rng = np.random.default_rng(4)
    x, u = rng.normal(size=(4, 3)), rng.normal(size=3)
    x[1, 2] = 0.0  # (prod's derivative exact at a zero)
    value, pullback = astad.vjp(prod_from, x, 0.8)
    assert np.array_equal(value, prod_from(x, 0.8))
    dx, dc = pullback(u)
    assert dx == pytest.approx(central_differences(lambda a: float(u @ prod_from(a, 0.8)), x), rel=1e-6, abs=1e-8)
    assert dc == pytest.approx(central_differences(lambda c: float(u @ prod_from(x, c)), 0.8), rel=1e-6)
    v = rng.normal(size=x.shape)
    tangent = astad.jvp(prod_from, (x, 0.8), (v, 1.0))[1]
    assert float(u @ tangent) == pytest.approx(float(np.sum(dx * v)) + dc, rel=1e-9)
    assert astad.grad(lambda c: prod_all_from(x[0], c))(0.8) == pytest.approx(np.prod(x[0]))
