"""Everyday code astad refused: ``range(flag)`` with a bool (Python's range takes it: 0 or 1
iterations); clear refusals of a tuple indexed by an int argument (``fs[k](x)``) and of numpy's
in-place functions (``np.put``). Derivatives against central differences in float64 and forward
vs reverse."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward
from test_errors import not_internal


def repeat_if(x, flag):
    s = np.sum(x)
    for _ in range(flag):  # a Python bool: 0 or 1 iterations
        s = s * np.sin(s)
    for i in range(1, True + 2):
        s = s + np.sum(x ** i)
    for _ in range(False):
        s = s * 0.0
    return s


def from_a_comparison(x, n):
    s = np.sum(x * x)
    for _ in range(float(x[0]) > 0.5):  # a bool known only when the function runs
        s = s + np.sum(np.cos(x))
    for _ in range(n > 1):
        s = s * 2.0
    return s


vectors = arrays(np.float64, 3, elements=st.floats(-2, 2))


@settings(max_examples=fuzz_examples(8), deadline=None)
@given(x=vectors, flag=st.booleans(), n=st.integers(0, 3), data=st.data())
def test_range_of_a_bool(x, flag, n, data):
    assume(abs(x[0] - 0.5) > 1e-3)  # (central differences across the step of `float(x[0]) > 0.5`)
    for fn, args in ((repeat_if, (x, flag)), (from_a_comparison, (x, n))):
        check_correct_or_refused(fn, list(args))
        check_forward(fn, args, data)


def pick(x, k):
    fs = (np.sin, np.cos)
    return np.sum(fs[k](x))


def put(x):
    y = x.copy()
    np.put(y, [0], 5.0)
    return np.sum(y * x)


def putmask(x):
    y = x.copy()
    np.putmask(y, x > 0, 0.0)
    return np.sum(y)


def range_of_a_numpy_bool(x):
    s = 0.0
    for _ in range(x[0] > 0):  # np.bool_: Python's range refuses it too
        s = s + np.sum(x)
    return s


@pytest.mark.parametrize("fn, args, words", [
    (pick, (1,), ["fs[k](x)", "an int known only when the function runs", "functools.partial(f, k)",
                  "k == 0 else"]),
    (put, (), ["np.put(y, [0], 5.0)", "np.put changes its first argument in place", "y[idx] = v"]),
    (putmask, (), ["np.putmask changes", "np.where(mask, v, y)"]),
    (range_of_a_numpy_bool, (), ["range() needs integers"]),
])
def test_clear_refusals(fn, args, words):
    with pytest.raises(astad.AstadError) as e:
        astad.grad(fn)(np.arange(3.0), *args)
    not_internal(e.value)
    for w in words:
        assert w in str(e.value)
    assert "^" in str(e.value) and "supported instead" in str(e.value)


def test_a_tuple_index_fixed_by_a_partial_is_a_constant():
    import functools

    def first(k, x):
        return pick(x, k)

    x = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(astad.grad(functools.partial(first, 1))(x), -np.sin(x))
    np.testing.assert_allclose(astad.grad(functools.partial(first, 0))(x), np.cos(x))


def dtype_changes_in_a_for_loop(x):
    s = x.astype(np.float32)
    for _ in range(3):
        s = s * np.float64(2.0)  # float32 * float64 scalar: float64 (numpy 2)
    return np.sum(s)


def dtype_changes_in_a_while_loop(x):
    s = x.astype(np.float32)
    while np.sum(s) < 10.0:
        s = s + x  # float32 + float64 array: float64
    return np.sum(s)


@pytest.mark.parametrize("fn, kind, line, words", [
    (dtype_changes_in_a_for_loop, "for", 2, "f32[3] where an iteration"),
    (dtype_changes_in_a_while_loop, "while", 2, "f64[3] where it ends"),
])
def test_a_type_that_changes_in_a_loop_names_the_loop(fn, kind, line, words):
    import inspect
    with pytest.raises(astad.AstadError) as e:
        astad.grad(fn)(np.arange(1.0, 4.0))
    not_internal(e.value)
    text = str(e.value)
    first = inspect.getsourcelines(fn)[1]
    assert f"the `{kind}` loop at line {first + line}" in text and words in text
    assert "in one branch" not in text and "supported instead: the same shape and dtype on every iteration" in text


def three(x, y, z=1.5):
    return np.sum(np.sin(x * y) * y * z * z)


def _central(fn, args, i, eps=1e-6):
    """d fn / d args[i] (a vector argument) by central differences."""
    out = np.zeros_like(args[i])
    for j in range(args[i].size):
        plus, minus = [np.array(a, dtype=float) for a in args], [np.array(a, dtype=float) for a in args]
        plus[i][j] += eps
        minus[i][j] -= eps
        out[j] = (fn(*plus) - fn(*minus)) / (2 * eps)
    return out


@settings(max_examples=fuzz_examples(4), deadline=None)
@given(x=vectors, y=vectors)
def test_negative_argnums_count_from_the_last_positional_argument(x, y):
    """As JAX (and astad.grad): -1 is the last argument passed by position, defaults and keywords aside."""
    want = _central(lambda a, b: three(a, b), [x, y], 1)
    want_kw = _central(lambda a, b: three(a, b, z=0.5), [x, y], 1)
    for make in (astad.grad, astad.jacfwd, astad.jacrev, astad.jacobian):
        np.testing.assert_allclose(make(three, argnums=-1)(x, y), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(make(three, argnums=-1)(x, y, z=0.5), want_kw, rtol=1e-5, atol=1e-5)
        gx, gy = make(three, argnums=(0, -1))(x, y)
        np.testing.assert_allclose(gy, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(gx, make(three, argnums=0)(x, y))
        # three passed by position: -1 is z
        np.testing.assert_allclose(make(three, argnums=-1)(x, y, 0.5), make(three, argnums=2)(x, y, 0.5))
    h = astad.hessian(three, argnums=-1)
    for _ in range(2):  # one object, called with 2 then 3 positional arguments: -1 is y, then z
        np.testing.assert_allclose(h(x, y), astad.hessian(three, argnums=1)(x, y), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(h(x, y, 0.5), astad.hessian(three, argnums=2)(x, y, 0.5), rtol=1e-10)
    np.testing.assert_allclose(astad.jacfwd(astad.grad(three, argnums=-1), argnums=-1)(x, y),
                               astad.hessian(three, argnums=1)(x, y), rtol=1e-10, atol=1e-10)
    with pytest.raises(astad.AstadTypeError, match="out of range.*count from the last of the 2 passed by position"):
        astad.jacrev(three, argnums=-3)(x, y)
