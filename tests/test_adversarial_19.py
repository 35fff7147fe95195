"""Adversarial checks, session 10, third round (s10-adv3): this session's merged changes.

1. Unread statements that may raise (frontend/unused.py) inside a lambda or a nested def that is made a
   function value of the IR: the function value's body was never looked at (its unread ``math.log(t)``
   was dropped), and an unread call of a function value (``y = h(x)``, an App) was not taken for one
   that may raise: astad returned a value where Python raises.

2. An unread statement kept in a loop (``y = v[i]`` at a loop index, ``y = np.log(v[i])``: the ``keep``
   effect) made the loop leave the scalar fast path (optimise/scalars.py refused every effect): a loop
   over ``v[i]`` ran on numpy scalars, ~2.2x slower than the same loop without the unread statement.

3. Unread statements that may raise that frontend/unused.py's may_raise did not know: numpy functions of a
   size, shape or index known only when running (``np.zeros(n)``, ``np.repeat(v, n)`` of a negative n,
   ``v.reshape(i, -1)``, ``np.take(v, i)``, ``np.take_along_axis``, ``np.arange(0.0, 5.0, s)`` at s = 0) and
   an SVD that does not converge (``np.linalg.svd``/``pinv`` of a matrix holding a nan): dropped, a value
   where Python raises.  Also numpy's integers to a negative integer power (``k ** n``, ``np.power(k, n)``
   of an int array or np.int64 and n = -1: ValueError).

4. An unread item of a tuple or list computed by a chain (``y = (x, math.sqrt(x) + 1.0)``,
   ``[math.log(x) * 2.0, 1.0]``, ``ys.append(math.log(x) + 1.0)``): the item is an unread temporary whose
   own operation cannot raise (an add) and only a temporary that may raise itself was kept (5327386).
   Every unread binding whose chain may raise is kept now (but an effect's, which is kept anyway).

5. Derivatives over the reverse program (hessian = jacfwd(grad), grad(grad), jacrev(grad)) read its
   cotangents, not its value: what only the value reads was dropped, ``x * 2.0 + math.log(x) * 0.0`` at
   x = -1 gave a nan Hessian where f and grad(f) raise ValueError (before this session too).
   programs.vjp_program keeps what may raise of the forward block (unused.keep_primal_raising).

Oracles: the plain call (Python raises, or its value) and central finite differences in float64.
"""

import math

import numpy as np
import pytest

import astad
from conftest import central_differences


# ---- 1. unread statements that may raise, in function values ---------------------------------------

def helper_unread_log(x):
    def h(t):
        y = math.log(t)  # noqa: F841
        return t * t
    return h(x)


def helper_unread_log_twice(x):
    def h(t):
        y = math.log(t)  # noqa: F841
        return t * t
    return h(x) + h(x + 1.0)


def lambda_unread_call(x):
    h = lambda t: math.log(t)
    y = h(x)  # noqa: F841
    return x * 2.0


def helper_unread_division(x):
    def h(t):
        q = 1.0 / t  # noqa: F841
        return t * 3.0
    return h(x) * x


def helper_raising_in_loop(x, n):
    h = lambda t: math.sqrt(t)
    s = 0.0
    for i in range(n):
        y = h(x - i)  # noqa: F841
        s = s + x * x
    return s


def _apply(f, x):
    return f(x) * 2.0


def helper_passed_on(x):
    def h(t):
        y = math.log(t)  # noqa: F841
        return t * t
    return _apply(h, x)


def helper_made_by_a_function(x):
    def make(c):
        def h(t):
            y = math.log(t - c)  # noqa: F841
            return t * c
        return h
    g = make(1.0)
    return g(x) + g(x * 2.0)


def helper_in_a_generator(v):
    def h(t):
        y = math.sqrt(t)  # noqa: F841
        return t * 3.0
    return sum(h(t) for t in v)


def helper_in_a_loop(x):
    def h(t):
        y = math.log(t)  # noqa: F841
        return t * t
    s = 0.0
    for i in range(4):
        s = s + h(x + i)
    return s


def two_lambdas(x):
    f = lambda t: t * t
    g = lambda t: math.log(t)
    y = g(x)  # noqa: F841
    z = f(x)
    return z + f(x + 1.0)


CASES = [(helper_passed_on, (-1.0,)), (helper_made_by_a_function, (0.7,)),
         (helper_in_a_generator, (np.array([1.0, -2.0]),)), (helper_in_a_loop, (-2.5,)), (two_lambdas, (-1.0,)),
         (helper_unread_log, (-1.0,)), (helper_unread_log_twice, (-0.5,)), (lambda_unread_call, (-1.0,)),
         (helper_unread_division, (0.0,)), (helper_raising_in_loop, (1.5, 3))]


@pytest.mark.parametrize("fn,args", CASES)
@pytest.mark.parametrize("mode", ["grad", "jacfwd"])
def test_function_value_unread_raises_as_python(fn, args, mode):
    with pytest.raises(Exception) as py:
        fn(*args)
    with pytest.raises(type(py.value)):
        getattr(astad, mode)(fn)(*args)


@pytest.mark.parametrize("fn,args", [(helper_passed_on, (1.3,)), (helper_made_by_a_function, (1.3,)),
                                     (helper_in_a_generator, (np.array([1.0, 2.0]),)), (helper_in_a_loop, (1.3,)),
                                     (two_lambdas, (1.3,)), (helper_unread_log, (1.3,)),
                                     (helper_unread_log_twice, (1.3,)),
                                     (lambda_unread_call, (1.3,)), (helper_unread_division, (1.3,)),
                                     (helper_raising_in_loop, (3.5, 3)), (helper_raising_in_loop, (-1.0, 0))])
def test_function_value_unread_derivatives(fn, args):
    expected = central_differences(lambda x: fn(x, *args[1:]), args[0])
    assert astad.grad(fn)(*args) == pytest.approx(expected, rel=1e-7, abs=1e-9)
    assert astad.jacfwd(fn)(*args) == pytest.approx(expected, rel=1e-7, abs=1e-9)


# ---- 2. the scalar fast path with an unread statement kept -----------------------------------------

def unread_item(v):
    s = 0.0
    for i in range(len(v)):
        y = v[i]  # noqa: F841
        s = s + v[i] * 2.0
    return s


def unread_np_log(v):
    s = 0.0
    for i in range(len(v)):
        y = np.log(v[i])  # noqa: F841
        s = s + v[i] * v[i]
    return s


def unread_item_past_end(v):
    s = 0.0
    for i in range(len(v)):
        y = v[i + 1]  # noqa: F841
        s = s + v[i] * 2.0
    return s


@pytest.mark.parametrize("fn", [unread_item, unread_np_log])
def test_unread_statement_keeps_the_scalar_fast_path(fn):
    v = np.array([0.5, 1.5, 2.5])
    assert "v.tolist()" in astad.reverse(fn).source_for(v)
    expected = central_differences(fn, v)
    assert astad.grad(fn)(v) == pytest.approx(expected, rel=1e-7)
    assert astad.jacfwd(fn)(v) == pytest.approx(expected, rel=1e-7)


def test_unread_statement_in_the_fast_path_raises_as_python():
    v = np.array([0.5, 1.5, 2.5])
    with pytest.raises(IndexError):
        unread_item_past_end(v)
    for mode in (astad.grad, astad.jacfwd):
        with pytest.raises(IndexError):
            mode(unread_item_past_end)(v)
    with np.errstate(invalid="ignore"):
        w = np.array([-0.5, 1.5])
        assert astad.grad(unread_np_log)(w) == pytest.approx(2 * w)


# ---- 3. numpy functions of sizes, shapes and indices known when running; SVDs --------------------------

def unread_take(v, i):
    y = np.take(v, i)  # noqa: F841
    return np.sum(v * 2.0)


def unread_zeros(v, n):
    y = np.zeros(n)  # noqa: F841
    return np.sum(v * 2.0)


def unread_repeat(v, n):
    y = np.repeat(v, n)  # noqa: F841
    return np.sum(v * 2.0)


def unread_reshape(v, n):
    y = v.reshape(n, -1)  # noqa: F841
    return np.sum(v * 2.0)


def unread_take_along_axis(v, k):
    y = np.take_along_axis(v, k, axis=0)  # noqa: F841
    return np.sum(v * 2.0)


def unread_arange(v, s):
    y = np.arange(0.0, 5.0, s)  # noqa: F841
    return np.sum(v * 2.0)


def unread_svd(v, m):
    _ = np.linalg.svd(m)
    return np.sum(v * 2.0)


def unread_pinv(v, m):
    _ = np.linalg.pinv(m)
    return np.sum(v * 2.0)


NAN_MATRIX = np.array([[np.nan, 1.0], [1.0, 2.0]])
SIZES = [(unread_take, 5, 1), (unread_zeros, -1, 2), (unread_repeat, -1, 2), (unread_reshape, 2, 3),
         (unread_take_along_axis, np.array([7]), np.array([1])), (unread_arange, 0.0, 1.0),
         (unread_svd, NAN_MATRIX, np.eye(2)), (unread_pinv, NAN_MATRIX, np.eye(2))]


@pytest.mark.parametrize("fn,bad,good", SIZES)
@pytest.mark.parametrize("mode", ["grad", "jacfwd"])
def test_unread_numpy_call_raises_as_python(fn, bad, good, mode):
    v = np.array([1.0, 2.0, 3.0])
    with pytest.raises(Exception) as py:
        fn(v, bad)
    with pytest.raises(type(py.value)):
        getattr(astad, mode)(fn)(v, bad)
    assert getattr(astad, mode)(fn)(v, good) == pytest.approx(central_differences(lambda w: fn(w, good), v))


def unread_int_power(v, k, n):
    y = k ** n  # noqa: F841
    return np.sum(v * 2.0)


def unread_np_power(v, k, n):
    y = np.power(k, n)  # noqa: F841
    return np.sum(v * 2.0)


@pytest.mark.parametrize("fn", [unread_int_power, unread_np_power])
@pytest.mark.parametrize("k", [np.array([2, 3]), np.int64(2)])
@pytest.mark.parametrize("mode", ["grad", "jacfwd"])
def test_unread_integer_power_raises_as_numpy(fn, k, mode):
    v = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        fn(v, k, -1)
    with pytest.raises(ValueError):
        getattr(astad, mode)(fn)(v, k, -1)
    assert getattr(astad, mode)(fn)(v, k, 2) == pytest.approx(2.0 * np.ones(3))
    if fn is unread_int_power:  # Python's 2 ** -1 is 0.5; np.power(2, -1) raises
        assert getattr(astad, mode)(fn)(v, 2, -1) == pytest.approx(2.0 * np.ones(3))
    else:
        with pytest.raises(ValueError):
            getattr(astad, mode)(fn)(v, 2, -1)


# ---- 4. unread items computed by chains ---------------------------------------------------------------

def item_chain_list(x):
    y = [math.log(x) * 2.0, 1.0]  # noqa: F841
    return x * 2.0


def item_chain_tuple(x):
    y = (math.log(x) * 2.0, 1.0)  # noqa: F841
    return x * 2.0


def item_chain_picked(x):
    y = [math.log(x) * 2.0, 1.0][1]
    return x * y


def item_chain_second(x):
    y = (x, math.sqrt(x) + 1.0)
    return y[0] * 2.0


def item_chain_appended(x):
    ys = [x]
    ys.append(math.log(x) + 1.0)
    return ys[0] * 2.0


@pytest.mark.parametrize("fn", [item_chain_list, item_chain_tuple, item_chain_picked, item_chain_second,
                                item_chain_appended])
@pytest.mark.parametrize("mode", ["grad", "jacfwd"])
def test_unread_item_chain_raises_as_python(fn, mode):
    with pytest.raises(ValueError):
        fn(-1.0)
    with pytest.raises(ValueError):
        getattr(astad, mode)(fn)(-1.0)
    assert getattr(astad, mode)(fn)(1.3) == pytest.approx(central_differences(fn, 1.3), rel=1e-7)


# ---- 5. second derivatives over the reverse program ---------------------------------------------------

def value_only_log(x):
    return x * 2.0 + math.log(x) * 0.0


def value_only_log_named(x):
    y = math.log(x)
    return x * x + (y - y)


@pytest.mark.parametrize("fn", [value_only_log, value_only_log_named])
@pytest.mark.parametrize("second", [astad.hessian, lambda f: astad.grad(astad.grad(f)),
                                    lambda f: astad.jacrev(astad.grad(f))])
def test_second_derivative_raises_as_python(fn, second):
    with pytest.raises(ValueError):
        fn(-1.0)
    with pytest.raises(ValueError):
        second(fn)(-1.0)
    expected = central_differences(lambda x: central_differences(fn, x, eps=1e-4), 1.3, eps=1e-4)
    assert second(fn)(1.3) == pytest.approx(expected, rel=1e-5, abs=1e-6)
