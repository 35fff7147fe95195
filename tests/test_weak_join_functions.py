"""A value that is a Python float on one path and a numpy float64 on another (``acc = 0.0`` before a
loop over float64 that may run no iteration) stays "either" through Python arithmetic (``acc * 2.0``,
``-acc``: refused where a float32 meets it, astad/frontend/weak_joins.py), but numpy's functions of it
are a numpy float64 on both paths (``np.sin(acc)``, ``np.sqrt(acc)``): a float32 meeting one is no
join.  These were refused.  Oracles: numpy's own value and dtype, bit for bit; central differences of
the float64 program; forward mode's tangent against reverse mode's cotangent."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from dtype_oracle import check_ir_types

X64 = np.array([0.3, -0.7, 1.1])
X32 = np.array([0.5, 1.5, 2.5], np.float32)


def sine_of_sum(x64, x32, n):
    acc = 0.0
    for i in range(n):
        acc = acc + x64[i]
    return np.sin(acc) * x32[0] + np.sum(np.sqrt(acc * acc + 1.0) * x32)


def scaled_sum(x64, x32, n):
    acc = 0.0
    for i in range(n):
        acc = acc + x64[i]
    b = -acc * 2.0
    return b * x32[1]


def _fd(fn, args, i, eps=1e-6):
    up = [np.asarray(a, np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
    out = np.zeros(up[i].shape)
    for j in range(up[i].size):
        plus, minus = list(up), list(up)
        plus[i], minus[i] = up[i].copy(), up[i].copy()
        plus[i][j] += eps
        minus[i][j] -= eps
        out[j] = (fn(*plus) - fn(*minus)) / (2 * eps)
    return out


@pytest.mark.parametrize("n", [0, 2, 3])
def test_a_numpy_function_of_a_python_float_or_float64_meets_a_float32(n):
    args = (X64, X32, n)
    want = sine_of_sum(*args)
    value, pullback = astad.vjp(sine_of_sum, *args)
    assert type(value) is type(want) and value == want
    g64, g32, _ = pullback(want.dtype.type(1.0))
    assert g64.dtype == np.float64 and g32.dtype == np.float32
    np.testing.assert_allclose(g64, _fd(sine_of_sum, args, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g32, _fd(sine_of_sum, args, 1), rtol=2e-3, atol=1e-4)
    u = (np.array([0.2, -0.4, 0.9]), np.array([0.7, 0.1, -0.3], np.float32))
    _, tangent = astad.jvp(sine_of_sum, args, (*u, None))
    assert np.asarray(tangent).dtype == want.dtype
    np.testing.assert_allclose(float(tangent), float(np.dot(g64, u[0]) + np.dot(g32, u[1])), rtol=1e-4)
    check_ir_types(sine_of_sum, args)


def test_python_arithmetic_of_the_join_still_meets_the_float32_refused():
    with pytest.raises(astad.AstadTypeError, match="Python float on one path and a numpy float64") as e:
        astad.vjp(scaled_sum, X64, X32, 2)
    assert e.value.loc.line == scaled_sum.__code__.co_firstlineno + 5


def count_then_scale(x, k):
    j = 0
    for i in range(k.shape[0]):
        j = j + k[i]
    y = (j + 1) * x
    s = 0.0
    for i in range(3):
        s = s + y[i] * 1e30 * 1e10
    return s


def test_a_python_int_joined_with_an_int64_meets_a_float32_refused():
    """``j`` is the Python int 0 where ``k`` is empty (numpy: ``(j + 1) * x32`` is float32, the sum
    overflows to inf) and an int64 otherwise (float64): typed int64, astad gave 4.5e48 where numpy
    gives float32 inf."""
    x = np.array([0.5, 1.5, 2.5], np.float32) * 1e8
    with pytest.raises(astad.AstadTypeError, match="a Python int on one path and a numpy int64") as e:
        astad.vjp(count_then_scale, x, np.arange(0))
    assert e.value.loc.line == count_then_scale.__code__.co_firstlineno + 4
    assert "np.int64(0)" in str(e.value)


def index_and_store(x64, x32, k, n):
    acc = 0.0
    j = 0
    for i in range(n):
        acc = acc + x64[i]
        j = j + k[i]
    y = x32 * 2.0
    y[0] = acc
    return np.sum(y * x32) + x32[j] * x32[1]


@pytest.mark.parametrize("n", [0, 1, 2])
def test_an_index_or_a_store_of_the_join_is_one_dtype_either_way(n):
    """``x32[j]`` and ``y32[0] = acc`` are float32 whether ``j``/``acc`` is a Python number or a numpy
    one: accepted (they were refused as the join meeting a float32)."""
    args = (X64, X32, np.array([1, 0, 1]), n)
    want = index_and_store(*args)
    value, pullback = astad.vjp(index_and_store, *args)
    assert type(value) is type(want) and value == want
    g64, g32, _, _ = pullback(np.float32(1.0))
    assert g64.dtype == np.float64 and g32.dtype == np.float32
    np.testing.assert_allclose(g64, _fd(index_and_store, args, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g32, _fd(index_and_store, args, 1), rtol=2e-3, atol=1e-3)
    check_ir_types(index_and_store, args)


def int32_index(x, k32, c):
    j = 0
    if c:
        j = k32[0]
    return x[j] * 2.0


def test_a_python_int_joined_with_an_int32_is_refused_with_int_in_the_hint():
    with pytest.raises(astad.AstadTypeError, match="numpy int32 on the other") as e:
        astad.vjp(int32_index, X64, np.array([2, 0], np.int32), np.float64(1.0) > 0)
    assert "np.int32(0)" in str(e.value) and "(int(...))" in str(e.value) and "float(...)" not in str(e.value)


def max_of_float_and_int(x, k):
    return max(x[0], k[0]) * x[1]


def test_max_of_a_float64_and_an_int64_is_refused_with_float_of_the_int_in_the_hint():
    """(The hint said np.int64(...) of the other: the float64 converted to an int.)"""
    with pytest.raises(astad.AstadTypeError, match=r"max\(\) of a numpy int64") as e:
        astad.vjp(max_of_float_and_int, X64, np.array([1, 0]))
    assert "float(...) of the int64" in str(e.value) and "np.int64(...)" not in str(e.value)
