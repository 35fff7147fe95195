"""Adversarial cases against forward mode and higher-order derivatives (eighth round):
``astad.jvp``/``forward``, ``jacfwd`` against ``jacrev``, ``hessian``/``hvp``/``grad`` of ``grad``,
over control flow, closures, in-place updates, kinks, mixed numeric kinds and pytrees.  The oracles
are plain Python, central finite differences in float64, and the two modes against each other
(``<u, J v> == <J^T u, v>``, ``jacfwd == jacrev``, a Hessian against the differences of the
gradient), never astad's own output.  Each section names what astad did before its fix."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from conftest import central_differences

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)


def check_scalar_function(fn, x, rtol=1e-6, atol=1e-8):
    """Value, ``jvp``, ``grad`` and ``forward`` of a function of one float against Python and
    central differences."""
    want = fn(x)
    d = central_differences(fn, x)
    value, tangent = astad.jvp(fn, (x,), (1.0,))
    assert value == pytest.approx(want, rel=1e-12)
    assert tangent == pytest.approx(d, rel=rtol, abs=atol)
    value, pullback = astad.reverse(fn)(x)
    assert value == pytest.approx(want, rel=1e-12)
    assert pullback(1.0)[0] == pytest.approx(d, rel=rtol, abs=atol)
    assert astad.grad(fn)(x) == pytest.approx(d, rel=rtol, abs=atol)


# ------------------------------------------------------------------ 1. `return` in a `while` loop whose
# condition holds at its start
# astad took `k = 0; while k < 10:` for `while True:` (its condition, known when transforming, holds
# before the first iteration), so that the loop could end only by its `return`: the `return` after the
# loop was lost, and where the loop ran to its end the value and every derivative were 0.0.

def while_counter_return(x):
    k = 0
    while k < 10:
        x = x * 1.1 + 0.1
        if x > 3.0:
            return x * x
        k += 1
    return x


def while_counter_first_return(x):
    k = 0
    while k < 4:
        k = k + 1
        x = np.sin(x) + x
        if x > 2.5:
            return x * 3.0
    return x - 1.0


def while_true_return(x):  # left only by its `return`: the same path as before
    k = 0
    while True:
        x = x * 1.5
        k += 1
        if x > 2.0 or k > 20:
            return x * k


@SETTINGS
@given(st.floats(0.05, 1.5))
def test_return_in_while_loop_with_a_known_first_condition(x):
    for fn in (while_counter_return, while_counter_first_return, while_true_return):
        check_scalar_function(fn, x)
    h = astad.grad(astad.grad(while_counter_return))(x)
    assert h == pytest.approx(central_differences(astad.grad(while_counter_return), x), rel=1e-5, abs=1e-6)


def test_return_in_while_loop_runs_to_its_end():
    assert while_counter_return(0.5) < 3.0  # the loop ends without returning
    check_scalar_function(while_counter_return, 0.5)
    check_scalar_function(while_counter_first_return, 0.1)


# ------------------------------------------------------------------ 2. an `@astad.reverse` / `@astad.forward`
# function called inside a differentiated function
# Python's call gives the pair (value, pullback) (or (value, pushforward)); astad took the call for a call
# of the undecorated function, so `helper(x)[0]` was the value's first element, not the value (wrong
# value and derivatives), and `v, pb = two(x)` of a function of two outputs bound its outputs.

@astad.reverse
def rev_helper(x):
    return np.sin(x) * x


@astad.forward
def fwd_helper(x):
    return np.tanh(x) * x


@astad.reverse
def two_outputs(x):
    return x * 2.0, np.sin(x)


def indexes_rev_helper(x):
    return np.sum(rev_helper(x)[0] * x)


def indexes_fwd_helper(x):
    return np.sum(fwd_helper(x * 2.0)[0])


def unpacks_helper(x):
    v, _ = rev_helper(x)
    (a, b), _ = two_outputs(v)
    return np.sum(a * b)


def unpacks_two_outputs(x):
    a, b = two_outputs(x)  # Python: a is the pair of outputs, b the pullback
    return np.sum(a[0] * b)


def calls_the_pullback(x):
    v, pb = rev_helper(x)
    return np.sum(pb(v)[0])


def uses_the_pair_as_its_value(x):
    return np.sum(fwd_helper(x))


X = np.array([0.3, -1.2, 0.7, 2.0])


@pytest.mark.parametrize("fn", [indexes_rev_helper, indexes_fwd_helper, unpacks_helper])
def test_a_decorated_helper_gives_value_and_derivative_as_in_python(fn):
    want = central_differences(fn, X)
    value, tangent = astad.jvp(fn, (X,), (np.ones(4),))
    assert value == pytest.approx(fn(X), rel=1e-12)
    assert tangent == pytest.approx(np.sum(want), rel=1e-6)
    np.testing.assert_allclose(astad.grad(fn)(X), want, rtol=1e-6, atol=1e-8)
    h = astad.hessian(fn)(X)
    np.testing.assert_allclose(h, np.stack([central_differences(lambda x: astad.grad(fn)(x)[i], X)
                                            for i in range(4)]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn, words", [
    (unpacks_two_outputs, "the pullback that `two_outputs(...)` returns"),
    (calls_the_pullback, "the pullback that `rev_helper(...)` returns"),
    (uses_the_pair_as_its_value, "returns a pair (value, pushforward)"),
])
def test_a_decorated_helper_s_derivative_inside_the_code_is_refused(fn, words):
    for transform in (lambda f: astad.grad(f)(X), lambda f: astad.jvp(f, (X,), (X,))):
        with pytest.raises(astad.UnsupportedFunctionError, match=re.escape(words)) as info:
            transform(fn)
        assert info.value.loc is not None and info.value.loc.line > 0 and "[0]" in info.value.hint


# ------------------------------------------------------------------ 3. chained assignment `a = b = e`
# The first name took over the binding of the temporary computing `e`; the second was left holding the
# temporary, bound nowhere (InternalError: structural pass: not linear ..., unbound ['t1']).

def chained(x):
    a = b = np.sin(x) * x
    a = a * 2.0
    return np.sum(a * b)


def chained_three_and_tuples(x):
    p = q = r = x * 2.0
    (s, t) = u = (x * 3.0, q)
    return np.sum(p * q * r) + np.sum(s * u[1]) + np.sum(t * u[0])


def chained_in_a_loop(x):
    s = t = 0.5
    for i in range(3):
        s = t = s * x + t * 0.5
    return s * t


def chained_arrays_updated(x):
    a = b = np.zeros(3)
    a[0] = x[0]  # Python: b is a too
    return np.sum(b * x)


@SETTINGS
@given(st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3))
def test_chained_assignment(xs):
    x = np.array(xs)
    for fn in (chained, chained_three_and_tuples):
        want = central_differences(fn, x)
        np.testing.assert_allclose(astad.grad(fn)(x), want, rtol=1e-6, atol=1e-8)
        value, tangent = astad.jvp(fn, (x,), (np.ones(3),))
        assert value == pytest.approx(fn(x), rel=1e-12)
        assert tangent == pytest.approx(np.sum(want), rel=1e-6, abs=1e-8)
    check_scalar_function(chained_in_a_loop, float(x[0]))


def test_chained_assignment_of_an_array_updated_through_one_name_is_refused():
    for transform in (lambda f: astad.grad(f)(X[:3]), lambda f: astad.jvp(f, (X[:3],), (X[:3],))):
        with pytest.raises(astad.UnsupportedSyntaxError, match="`b` shares its memory"):
            transform(chained_arrays_updated)


# ------------------------------------------------------------------ 4. `np.concatenate(xs, axis=None)`
# numpy flattens the arrays first; astad joined them along axis 0: the type was wrong ((4, 3) for two
# (2, 3) arrays, not (12,)), the pullback crashed on its shapes or, for arrays of one row, broadcast
# its pieces silently into a wrong gradient.  Forward mode ran numpy's own call and was right.

def concatenate_flat(x):
    return np.sum(np.concatenate([x, x ** 2], axis=None) ** 2 * np.arange(2.0 * x.size))


def concatenate_flat_mixed(x):
    return np.sum(np.concatenate([x[0], np.sin(x), x[0, 0]], axis=None) ** 3 * np.arange(1.0 + x.shape[-1] + x.size))


def concatenate_flat_list(x, n):
    acc = []
    for i in range(n):
        acc.append(x[0] * (i + 1.0))
    return np.sum(np.concatenate(acc, axis=None) ** 2)


def concatenate_flat_list_2d(x, n):
    acc = []
    for i in range(n):
        acc.append(x * (i + 1.0))
    flat = np.concatenate(acc, axis=None)
    return np.sum(flat[1:] * flat[:-1])  # (neighbours in numpy's order)


def stack_axis_none(x):
    return np.sum(np.stack([x, x], axis=None))  # numpy: TypeError


@pytest.mark.parametrize("shape", [(2, 3), (1, 3), (3, 1), (4,)])
@pytest.mark.parametrize("fn", [concatenate_flat, concatenate_flat_mixed])
def test_concatenate_with_axis_none_flattens(fn, shape):
    if fn is concatenate_flat_mixed and len(shape) == 1:
        return
    x = np.linspace(-0.8, 1.1, int(np.prod(shape))).reshape(shape)
    want = central_differences(fn, x)
    np.testing.assert_allclose(astad.grad(fn)(x), want, rtol=1e-6, atol=1e-8)
    value, tangent = astad.jvp(fn, (x,), (np.ones(shape),))
    assert value == pytest.approx(fn(x), rel=1e-12) and tangent == pytest.approx(np.sum(want), rel=1e-6)
    h = astad.hessian(fn)(x).reshape(x.size, x.size)
    np.testing.assert_allclose(h, h.T, rtol=1e-9, atol=1e-10)


def test_concatenate_with_axis_none_of_a_list_built_at_run_time():
    x = np.array([[0.3, -0.5, 1.2], [0.8, 0.1, -0.7]])
    for n in (1, 3, np.int64(2)):
        want = central_differences(lambda v: concatenate_flat_list(v, n), x)
        np.testing.assert_allclose(astad.grad(concatenate_flat_list)(x, n), want, rtol=1e-6, atol=1e-8)
    for n in (1, 2):  # (arrays of two dimensions: the list joined along axis 0, then raveled)
        want = central_differences(lambda v: concatenate_flat_list_2d(v, n), x)
        np.testing.assert_allclose(astad.grad(concatenate_flat_list_2d)(x, n), want, rtol=1e-6, atol=1e-8)
    with pytest.raises(TypeError):
        stack_axis_none(x)
    with pytest.raises(astad.AstadTypeError, match="integer axis"):
        astad.grad(stack_axis_none)(x)


# ------------------------------------------------------------------ 5. a function value capturing an array of
# run-time shape, called in a loop
# (found by test_random_programs once it drew chained assignments) The backward loop's accumulator of
# the captured array's cotangent started as the empty copower's zero, which codegen cannot make for a
# shape known only at run time (InternalError: codegen: cannot materialise a zero of type f64[?,3]).

def rows_through_a_lambda(x, k):
    y = np.stack([x * (i + 1.0) for i in range(k)])
    v = np.tanh(y + y)

    def rows(fn, rs):
        return np.stack([fn(r) for r in rs])

    return np.sum(rows(lambda t: t / (y * y + 1.0), v) ** 2)


def lambda_in_nested_loops(x, k):
    s = 0.0
    for j in range(2):
        y = np.stack([x * (i + j + 1.0) for i in range(k)])
        g = lambda t: np.sum(t * y)  # noqa: E731
        for r in np.tanh(y):
            s = s + g(r)
    return s


@pytest.mark.parametrize("k", [1, 3, np.int64(2)])
@pytest.mark.parametrize("fn", [rows_through_a_lambda, lambda_in_nested_loops])
def test_function_capturing_an_array_of_run_time_shape(fn, k):
    x = np.array([0.3, -0.5, 1.2])
    want = central_differences(lambda v: fn(v, k), x)
    np.testing.assert_allclose(astad.grad(fn)(x, k), want, rtol=1e-6, atol=1e-8)
    value, tangent = astad.jvp(fn, (x, k), (np.ones(3), None))
    assert value == pytest.approx(fn(x, k), rel=1e-12) and tangent == pytest.approx(np.sum(want), rel=1e-6)
    h = astad.hessian(fn)(x, k)
    np.testing.assert_allclose(h, np.stack([central_differences(lambda v: astad.grad(fn)(v, k)[i], x)
                                            for i in range(3)]), rtol=1e-5, atol=1e-6)
