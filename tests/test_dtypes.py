"""Dtypes, each reproducer of a bug found by attacking astad with float32, float16, int, bool and
mixed-dtype programs (tests/test_random_dtypes.py draws the space):

- JAX's rule, everywhere: the cotangent of an argument has the argument's dtype, the tangent of a
  value the value's (README: "Tangents have their argument's ... dtype exactly");
- a scalar that is a numpy float32 on one path and a Python float (or a float64) on another has no
  one type, so astad refuses it at its line, with the form to write;
- the primal is numpy's, dtype and bits.

The oracles: central differences in float64 of the same function on float64 arguments (the
"upcast" function: every operation of these is exact at float32's precision or has float64
operands), forward mode's ``<u, J v>`` against reverse mode's ``<J^T u, v>``, numpy's own dtype."""

from __future__ import annotations

import math

import numpy as np
import pytest

import astad
from dtype_oracle import check_ir_types

X32 = np.array([0.5, 1.5, 2.5], np.float32)


def _dtype(v) -> str:
    return "float64" if type(v) is float else np.asarray(v).dtype.name


def _fd(fn, args, i, eps=1e-6):
    """Central differences of ``fn`` in argument ``i``, in float64 (arguments upcast)."""
    up = [np.asarray(a, dtype=np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
    out = np.zeros(np.shape(up[i]))
    for j in np.ndindex(*np.shape(up[i])):
        plus, minus = list(up), list(up)
        plus[i], minus[i] = up[i].copy(), up[i].copy()
        plus[i][j] += eps
        minus[i][j] -= eps
        out[j] = (float(np.sum(fn(*plus))) - float(np.sum(fn(*minus)))) / (2 * eps)
    return out


# --------------------------------------------------------------------------- cotangents of mixed programs


def where_float64(x):
    return np.sum(np.where(x > 1, x, np.float64(0.5)))


def times_float64(x, y):
    return np.sum(x * y)


def float16_times_float32(x, y):
    return np.sum(x * y + y)


def times_int(x, k):
    return np.sum(x * k + x / (k + 1))


def outer_matmul(x):
    return np.sum(np.outer(x, np.ones(3)) @ x)


def numpy_float64_scalar(x):
    return np.sum(np.float64(2.0) * x + 2.0 * x)  # float64 (a numpy scalar is not weak), then float32's sum


def math_of_float16(x):
    return math.tanh(x[0]) * x[1] + np.linalg.norm(x)  # a float64 times a float16: float64


MIXED = [
    (where_float64, (X32,)),
    (times_float64, (X32, X32.astype(np.float64))),
    (float16_times_float32, (X32.astype(np.float16), X32)),
    (times_int, (X32, np.arange(3))),
    (outer_matmul, (X32,)),
    (numpy_float64_scalar, (X32,)),
    (math_of_float16, (X32.astype(np.float16),)),
]


@pytest.mark.parametrize("fn, args", MIXED, ids=lambda v: getattr(v, "__name__", None))
def test_a_cotangent_has_its_arguments_dtype(fn, args):
    """``x32 * y64`` is float64, and the float32 ``x`` gets a float32 cotangent (it got a float64 one)."""
    value, pullback = astad.vjp(fn, *args)
    want = fn(*args)
    assert _dtype(value) == _dtype(want) and value == want
    cts = pullback(1.0)
    for i, (a, ct) in enumerate(zip(args, cts)):
        if a.dtype.kind != "f":
            assert ct is None
            continue
        assert ct.dtype == a.dtype, f"argument {i}: a {ct.dtype} cotangent of a {a.dtype} argument"
        tol = 1e-2 if a.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(ct.astype(np.float64), _fd(fn, args, i), rtol=tol, atol=tol)
    check_ir_types(fn, args)


@pytest.mark.parametrize("fn, args", MIXED, ids=lambda v: getattr(v, "__name__", None))
def test_forward_and_reverse_agree_on_mixed_dtypes(fn, args):
    """``<u, J v>`` of forward mode == ``<J^T u, v>`` of reverse mode, and the tangent has the value's dtype."""
    rng = np.random.default_rng(0)
    tangents = tuple(rng.uniform(-1, 1, a.shape).astype(a.dtype) if a.dtype.kind == "f" else None for a in args)
    value, jv = astad.jvp(fn, args, tangents)
    assert _dtype(jv) == _dtype(value)
    _, pullback = astad.vjp(fn, *args)
    cts = pullback(1.0)
    rhs = sum(float(np.sum(c.astype(np.float64) * t.astype(np.float64))) for c, t in zip(cts, tangents) if t is not None)
    tol = 1e-2 if any(a.dtype == np.float16 for a in args) else 1e-5
    assert abs(float(jv) - rhs) <= tol * (1 + abs(rhs))


# --------------------------------------------------------------------------- forward mode at the value's precision


def sin_scaled(x):
    return math.sin(x[0]) * 1e39  # a Python float: float64, though x is float32


def exp_of_float32(x):
    return math.exp(x[0])


@pytest.mark.parametrize("fn, derivative", [(sin_scaled, math.cos(0.5) * 1e39), (exp_of_float32, math.exp(0.5))])
def test_a_float64_values_tangent_is_computed_in_float64(fn, derivative):
    """The tangent of ``math.sin(x32[0]) * 1e39`` was computed in float32 (cos(x) * t, t float32), so
    it overflowed to inf; ``math.exp``'s lost float64's digits (3e-8 off).  The oracle: the derivative
    written out (x[0] = 0.5 exactly)."""
    _, jv = astad.jvp(fn, (X32,), (np.array([1.0, 0.0, 0.0], np.float32),))
    assert _dtype(jv) == "float64" and np.isfinite(jv)
    np.testing.assert_allclose(jv, derivative, rtol=1e-14)
    np.testing.assert_allclose(jv, _fd(fn, (X32,), 0)[0], rtol=1e-6)


# --------------------------------------------------------------------------- joins: refused, never mistyped


def sum_then_loop(x):
    acc = 0.0
    for i in range(2):
        acc = acc + x[i]
    y = acc * x
    s = 0.0
    for i in range(3):
        s = s + y[i] * 1e30 * 1e10
    return s


def sum_then_loop_float32(x):
    acc = np.float32(0.0)
    for i in range(2):
        acc = acc + x[i]
    y = acc * x
    s = np.float32(0.0)
    for i in range(3):
        s = s + y[i] * 1e30 * 1e10
    return s


def branch_join(x, c):
    y = x[0] if c else 1.0
    return y * 1e30 * 1e10


def branch_join_float32(x, c):
    y = x[0] if c else np.float32(1.0)
    return y * 1e30 * 1e10


def test_a_python_float_carried_with_a_float32_is_refused():
    """``acc = 0.0; for ...: acc = acc + x32[i]`` was typed float64: the second loop then ran on Python
    floats (``y.tolist()``) and gave 2.064e43 where numpy's float32 overflows to inf."""
    with pytest.raises(astad.AstadTypeError, match=r"`acc` is float where an iteration .* f32 where it ends") as e:
        astad.vjp(sum_then_loop, X32)
    assert e.value.loc.line == sum_then_loop.__code__.co_firstlineno + 3
    assert "np.float32(0.0)" in str(e.value)
    with np.errstate(over="ignore"):
        value, pullback = astad.vjp(sum_then_loop_float32, X32)
        want = sum_then_loop_float32(X32)
        assert type(value) is type(want) is np.float32 and value == want == np.inf
        assert pullback(np.float32(1.0))[0].dtype == np.float32


@pytest.mark.parametrize("c", [True, False])
def test_a_python_float_joined_with_a_float32_is_refused(c):
    with pytest.raises(astad.AstadTypeError, match="a Python float on one path and a numpy float32 on the other"):
        astad.vjp(branch_join, X32 * 1e8, c)
    with np.errstate(over="ignore"):
        value, pullback = astad.vjp(branch_join_float32, X32 * 1e8, c)
        want = branch_join_float32(X32 * 1e8, c)
        assert type(value) is type(want) and value == want
        assert pullback(np.float32(1.0))[0].dtype == np.float32
    check_ir_types(branch_join_float32, (X32, c))


def test_a_python_float_joined_with_a_float64_still_works():
    """The everyday loop over float64 (a Python 0.0 and numpy float64s): accepted, as before."""
    def total(x):
        acc = 0.0
        for i in range(3):
            acc = acc + x[i] * x[i]
        return acc

    g = astad.grad(total)(X32.astype(np.float64))
    np.testing.assert_allclose(g, 2 * X32.astype(np.float64))


def py_max(x):
    return max(x[0], 1.0) * x[1]


def test_max_of_a_float32_and_a_python_float_is_refused():
    """``max(x32[0], 1.0)`` is the numpy float32 or the Python float as it is: it was typed float64."""
    with pytest.raises(astad.AstadTypeError, match="max\\(\\) of a numpy float32 and a Python number"):
        astad.vjp(py_max, X32)


# --------------------------------------------------------------------------- zeros of numpy scalars


def branch_on_scalar(x, s, c):
    if c:
        v = x * 2.0
    else:
        v = np.sin(x) * s
    return np.sum(v)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_numpy_scalars_zero_cotangent_has_its_dtype(dtype):
    """The cotangent of ``s`` where the branch taken does not read it was the Python float 0.0."""
    x = X32.astype(dtype)
    _, pullback = astad.vjp(branch_on_scalar, x, dtype(1.5), True)
    ct_x, ct_s, _ = pullback(dtype(1.0))
    assert ct_x.dtype == dtype and np.asarray(ct_s).dtype == dtype and ct_s == 0


# --------------------------------------------------------------------------- Jacobians follow JAX


def test_jacobian_blocks_have_jaxs_dtypes():
    """jacrev's block of an argument has the argument's dtype (a cotangent's); jacfwd's the output's
    (a tangent's); hessian (forward over reverse): its row block the gradient's."""
    y = np.ones(3)
    rev = astad.jacrev(lambda a, b: a * b, argnums=(0, 1))(X32, y)
    fwd = astad.jacfwd(lambda a, b: a * b, argnums=(0, 1))(X32, y)
    assert [j.dtype for j in rev] == [np.float32, np.float64]
    assert [j.dtype for j in fwd] == [np.float64, np.float64]
    np.testing.assert_array_equal(rev[0].astype(np.float64), fwd[0])
    h = astad.hessian(times_float64, argnums=(0, 1))(X32, y)
    assert [[b.dtype for b in row] for row in h] == [[np.float32, np.float32], [np.float64, np.float64]]
    np.testing.assert_array_equal(h[0][1], np.eye(3))


# --------------------------------------------------------------------------- a Python float or a float64, met by a float32


def zero_trip_sum(x64, x32, n):
    acc = 0.0
    for i in range(n):
        acc = acc + x64[i]
    y = acc * x32 + x32  # float32 where the loop ran no iteration (a Python 0.0), else float64
    s = 0.0
    for i in range(3):
        s = s + y[i] * 1e30 * 1e10
    return s


def zero_trip_sum_float64(x64, x32, n):
    acc = np.float64(0.0)
    for i in range(n):
        acc = acc + x64[i]
    y = acc * x32 + x32
    s = 0.0
    for i in range(3):
        s = s + y[i] * 1e30 * 1e10
    return s


def picked_then_float16(x, y16):
    v = max(x[0], 0.25) * 0.5  # the Python 0.25 or the numpy float64, as it is
    return np.sum(y16) + v


def joined_but_float64_only(x, c):
    v = float(x[0]) if c else x[1]
    return v * x + v


@pytest.mark.parametrize("n", [0, 1])
def test_a_python_float_or_float64_met_by_a_float32_is_refused(n):
    """``acc`` is the Python 0.0 when the loop runs no iteration: ``acc * x32`` is then float32, and
    the loop after it ran on Python floats (``y.tolist()``: the IR typed ``y`` float64), 4.8e41 where
    numpy's float32 overflows to inf."""
    x32 = np.array([3.0, 40.0, 5.0], np.float32)
    with pytest.raises(astad.AstadTypeError, match=r"joined at line \d+\) meets a float16 or float32") as e:
        astad.vjp(zero_trip_sum, np.ones(3), x32, n)
    assert e.value.loc.line == zero_trip_sum.__code__.co_firstlineno + 4
    with np.errstate(over="ignore"):
        value, _ = astad.vjp(zero_trip_sum_float64, np.ones(3), x32, n)
        want = zero_trip_sum_float64(np.ones(3), x32, n)
    assert type(value) is type(want) and value == want


def test_max_of_a_float64_and_a_python_float_met_by_a_float16_is_refused():
    with pytest.raises(astad.AstadTypeError, match="meets a float16 or float32"):
        astad.vjp(picked_then_float16, np.array([0.1, 0.2]), np.ones(2, np.float16))


@pytest.mark.parametrize("c", [True, False])
def test_a_python_float_or_float64_among_float64s_is_accepted(c):
    x = np.array([0.5, 1.5, 2.5])
    value, pullback = astad.vjp(joined_but_float64_only, x, c)
    np.testing.assert_array_equal(value, joined_but_float64_only(x, c))
    g = pullback(np.ones(3))[0]
    np.testing.assert_allclose(g, _fd(joined_but_float64_only, (x, c), 0), rtol=1e-6)
    check_ir_types(joined_but_float64_only, (x, c))
