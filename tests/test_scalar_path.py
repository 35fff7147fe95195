"""The scalar fast path (astad/optimise/scalars.py, astad/codegen/loops.py):
loops over float64 vectors run on Python floats and ``math``; the results
agree with the IR interpreter (the array path: numpy scalars, numpy
functions) to 1e-14, with central finite differences, and where Python
floats would raise (log of 0, sin of inf, division by zero, overflow) the
loop runs again on numpy scalars and gives numpy's inf/nan."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from astad.ir import interp

# --------------------------------------------------------------------------- programs


def scalar_loop(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * y[i] + 0.5 * x[i] * x[i]
    return s


def huber(pred, target, delta):
    r = pred - target
    total = 0.0
    for i in range(r.shape[0]):
        a = r[i]
        if a < -delta:
            total = total + delta * (-a - 0.5 * delta)
        elif a > delta:
            total = total + delta * (a - 0.5 * delta)
        else:
            total = total + 0.5 * a * a
    return total / r.shape[0]


def newton(a):
    x = a
    step = 1.0
    it = 0
    while np.abs(step) > 1e-12 and it < 50:
        step = (x * x * x - a) / (3.0 * x * x)
        x = x - step
        it = it + 1
    return x


def raising(x):
    # every line raises on some Python float where numpy warns
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.log(x[i]) + np.sqrt(x[i]) + 1.0 / x[i] + np.exp(x[i]) + np.cos(x[i]) + x[i] ** 2
    return s


def mixed(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.tanh(x[i] * w) * np.exp(-x[i]) - np.abs(x[i] + 10.0) / (1.0 + x[i] * x[i])  # (no kink for FD)
    return s


PROGRAMS = [(scalar_loop, 2), (huber, 2), (mixed, 1)]


def _ir(f, args):
    d = astad.reverse(f).transform(*args)
    return d, d.stages.optimised


def _fd(f, args, k, h=1e-6):
    x = np.array(args[k], dtype=float)
    g = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += h
        down[j] -= h
        a, b = list(args), list(args)
        a[k], b[k] = up if x.shape else float(up), down if x.shape else float(down)
        g[j] = (f(*a) - f(*b)) / (2 * h)
    return g


def _close(got, want, rtol=1e-14, atol=1e-13):
    """Equal, or 1e-14 apart relatively (``math.exp`` may differ from ``np.exp`` in the last bit;
    ``atol``: a sum of such terms that cancels to near zero)."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    near = np.abs(got - want) <= rtol * np.abs(want) + atol
    assert np.all(same | near), (got, want)


# --------------------------------------------------------------------------- what the code looks like


def test_scalar_loop_reads_lists_and_math():
    rev, _ = _ir(scalar_loop, (np.ones(5), np.ones(5)))
    src = rev.source
    assert "x_list, y_list = x.tolist(), y.tolist()" in src
    assert "math.sin(t12)" in src and "math.cos(t12)" in src
    assert "x_2_ct_sum = [0.0] * 5" in src and "np.array(x_2_ct_sum)" in src
    assert "x_2_ct_sum[i_2] += " in src
    assert ".append((" not in src  # one tape list per recorded variable, no tuples
    assert "zip(reversed(range(5)), reversed(t12_tape)" in src  # the index of a known range: no tape
    fast_backward = src.split("def scalar_loop_backward")[1].split("except")[0]
    assert "t27_1" not in fast_backward  # no copy chains of the accumulator


def test_huber_needs_no_guard_and_newton_uses_abs():
    rev, _ = _ir(huber, (np.ones(4), np.zeros(4), 1.0))
    assert "r.tolist()" in rev.source and "try:" not in rev.source  # nothing in it can raise on floats
    rev, _ = _ir(newton, (7.3,))
    code = "\n".join(line for line in rev.source.splitlines() if not line.strip().startswith("#"))
    assert "abs(step_2) > 1e-12" in code and "np.abs(" not in code  # (the test before the loop too)
    assert "t7_tape" not in rev.source  # x * x is computed again, not recorded


# --------------------------------------------------------------------------- against the interpreter and FD


vectors = st.integers(1, 6).flatmap(lambda n: st.tuples(
    *[st.lists(st.floats(-3, 3, allow_nan=False), min_size=n, max_size=n) for _ in range(2)]))


@settings(max_examples=8, deadline=None)
@given(vectors, st.floats(0.1, 2.0))
def test_matches_interpreter_and_fd(xy, w):
    x, y = np.array(xy[0]), np.array(xy[1])
    for f, args in [(scalar_loop, (x, y)), (huber, (x, y, w)), (mixed, (x, w))]:
        rev, prog = _ir(f, args)
        value, grads = astad.value_and_grad(f, argnums=tuple(range(len(args))))(*args)
        want_value, want = interp.run_reverse(prog, [a.copy() if isinstance(a, np.ndarray) else a for a in args], 1.0)
        _close(value, want_value)
        for g, wg in zip(grads, want):
            _close(g, wg)
        for k in range(len(args)):
            np.testing.assert_allclose(grads[k], _fd(f, args, k), rtol=1e-5, atol=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.floats(0.5, 50.0))
def test_newton(a):
    value, g = astad.value_and_grad(newton)(a)
    assert type(value) is float and abs(value - a ** (1 / 3)) < 1e-9
    _, prog = _ir(newton, (a,))
    want_value, (want,) = interp.run_reverse(prog, [a], 1.0)
    _close(value, want_value)
    _close(g, want)
    np.testing.assert_allclose(g, 1 / (3 * a ** (2 / 3)), rtol=1e-9)


# --------------------------------------------------------------------------- where Python floats raise


SPECIAL = [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1000.0, 1e200, -1e200, 2.0]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from(SPECIAL) | st.floats(-5, 5), min_size=1, max_size=5))
def test_raising_values_give_numpys_answer(values):
    x = np.array(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, g = astad.value_and_grad(raising)(x)
        _, prog = _ir(raising, (x,))
        want_value, (want,) = interp.run_reverse(prog, [x.copy()], 1.0)
        _close(value, want_value)
        _close(g, want)


def test_fallback_source_and_finite_case():
    x = np.array([0.5, 1.5, 2.5])
    rev, _ = _ir(raising, (x,))
    assert "except (ArithmeticError, ValueError):" in rev.source
    assert "math.log(" in rev.source and "np.log(" in rev.source  # fast loop, then the array path's
    g = astad.grad(raising)(x)
    np.testing.assert_allclose(g, _fd(raising, (x,), 0), rtol=1e-6)


def test_zero_iterations():
    value, (gx, gy) = astad.value_and_grad(scalar_loop, argnums=(0, 1))(np.zeros(0), np.zeros(0))
    assert value == 0.0 and gx.shape == (0,) and gy.shape == (0,)


# --------------------------------------------------------------------------- what keeps the array path


def _sum_sin(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i])
    return s


@pytest.mark.parametrize("x", [np.linspace(0.1, 1.0, 4).astype(np.float32), np.arange(4),
                               np.linspace(0.1, 1.0, 4).astype(complex)], ids=["float32", "int", "complex"])
def test_other_dtypes_keep_numpy_scalars(x):
    rev = astad.reverse(_sum_sin)
    if x.dtype.kind == "c":  # refused, with astad's own error
        with pytest.raises(astad.errors.AstadError):
            rev(x)
        return
    if x.dtype.kind == "i":  # not differentiable: a function of it and a float
        def f(w, k):
            s = 0.0
            for i in range(k.shape[0]):
                s = s + np.sin(w * k[i])
            return s

        rev = astad.reverse(f)
        value, _ = rev(0.5, x)
        assert "k.tolist()" not in rev.source
        assert value == f(0.5, x)
        return
    # a float32 sum started at a Python 0.0 is a Python float before the first iteration and a
    # float32 after it: no one type (numpy computes with each at its own precision), so it is refused
    with pytest.raises(astad.errors.AstadTypeError, match=r"np\.float32\(0\.0\)"):
        rev(x)
    rev = astad.reverse(_sum_sin_float32)
    value, _ = rev(x)
    assert "tolist" not in rev.source and "math." not in rev.source
    assert value == _sum_sin_float32(x) and type(value) is type(_sum_sin_float32(x))


def _sum_sin_float32(x):
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s = s + np.sin(x[i])
    return s


def test_rows_of_a_matrix_are_not_lists():
    def f(m):
        s = 0.0
        for i in range(m.shape[0]):
            s = s + np.sum(np.sin(m[i]))
        return s

    m = np.arange(6.0).reshape(3, 2)
    rev = astad.reverse(f)
    rev(m)
    assert "tolist" not in rev.source
    np.testing.assert_allclose(astad.grad(f)(m), np.cos(m), rtol=1e-14)


def test_written_vector_is_not_a_list():
    def f(x):
        y = x * 1.0
        s = 0.0
        for i in range(1, y.shape[0]):
            y[i] = y[i - 1] * 0.5 + np.sin(y[i])
            s = s + y[i]
        return s

    x = np.array([0.3, 0.7, 1.1, -0.4])
    rev = astad.reverse(f)
    rev(x)
    assert "y.tolist()" not in rev.source and "y_2.tolist()" not in rev.source
    np.testing.assert_allclose(astad.grad(f)(x), _fd(f, (x,), 0), rtol=1e-6)


def test_print_in_the_loop_prints_once(capsys):
    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            print("i", i)
            s = s + np.log(x[i])
        return s

    astad.grad(f)(np.array([0.0, 1.0]))
    assert capsys.readouterr().out.count("i 0") == 1


# --------------------------------------------------------------------------- higher order


def test_second_derivative_of_a_scalar_loop():
    c = np.array([0.3, -1.2, 0.8, 2.0])

    def f(a):
        s = 0.0
        for i in range(c.shape[0]):
            s = s + np.sin(a * c[i]) * c[i]
        return s

    for a in (0.4, -1.3):
        d2 = astad.grad(astad.grad(f))(a)
        np.testing.assert_allclose(d2, -np.sum(np.sin(a * c) * c ** 3), rtol=1e-12)


def test_slices_of_a_listed_vector_stay_arrays():
    def f(x):
        s = 0.0
        for i in range(x.shape[0] - 1):
            s = s + np.sin(x[i]) * np.sum(x[i:i + 2])
        return s

    x = np.array([0.3, -0.7, 1.1, 0.4])
    rev = astad.reverse(f)
    rev(x)
    assert "x_list[i_2:" not in rev.source  # (a slice's cotangent is not a list's element: the array path here)
    value, g = astad.value_and_grad(f)(x)
    _close(value, f(x))
    np.testing.assert_allclose(g, _fd(f, (x,), 0), rtol=1e-6)


def test_huber_records_only_what_it_cannot_compute_again():
    rev, _ = _ir(huber, (np.ones(4), np.zeros(4), 1.0))
    forward = rev.source.split("def huber_forward")[1].split("def huber_backward")[0]
    # a, a < -delta and the two branches' -a - 0.5 * delta, a - 0.5 * delta; not 0.5 * a nor a > delta
    assert forward.count(".append(") == 4 and forward.count(" = None") == 2


def branchy(x):
    s = 0.0
    for i in range(x.shape[0]):
        a = x[i]
        if a > 0.0:
            u = np.sin(a)
            v = u * a
            s = s + v * v + np.log(a) / a
        else:
            w = a * 2.0
            s = s + w * w * a
    return s


def branchy_tanh(x):
    s = 0.0
    for i in range(x.shape[0]):
        a = x[i]
        if a > 0.0:
            u = np.tanh(a)
            v = u * a
            s = s + v * v
        else:
            s = s + a * a
    return s


def test_value_recorded_in_a_branch_read_by_another():
    # fast path, unguarded: v = u * a is recorded (u may be None when computed again), a > 0.0 is not
    x = np.array([0.5, -1.0, 2.0, -0.25])
    d, prog = _ir(branchy_tanh, (x,))
    assert "x_list" in d.source and "v_2_tape" in d.source and "try:" not in d.source
    value, g = astad.value_and_grad(branchy_tanh)(x)
    want_value, (want,) = interp.run_reverse(prog, [x.copy()], 1.0)
    _close(value, want_value)
    _close(g, want)
    np.testing.assert_allclose(g, _fd(branchy_tanh, (x,), 0), rtol=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1e-320, np.inf, -2.0, 0.5]) | st.floats(-3, 3), min_size=1, max_size=6))
def test_values_recorded_in_branches(values):
    # u is recorded in one branch only (None in the other): v = u * a is recorded, not computed again
    # from it; the loop is guarded (log, /) and records floats in branches: it keeps the array path
    x = np.array(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, g = astad.value_and_grad(branchy)(x)
        _, prog = _ir(branchy, (x,))
        want_value, (want,) = interp.run_reverse(prog, [x.copy()], 1.0)
    _close(value, want_value)
    _close(g, want)


def test_counts_of_comparisons_stay_numpy():
    def f(x):
        s = 0.0
        n = 0
        for i in range(x.shape[0]):
            n = n + (x[i] > 0.0)
            s = s + np.sin(x[i])
        return s / n

    x = np.array([-1.0, -2.0])
    rev = astad.reverse(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, _ = rev(x)  # 0 positives: numpy's -inf, not a ZeroDivisionError
    assert "tolist" not in rev.source
    assert value == f(x)
