"""Items today's adversaries reported (session 9), each fixed or refused with astad's own error.

Oracles: the plain Python call (values, dtypes, types), central differences in float64 (gradients),
forward mode against reverse mode."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import astad
from conftest import central_differences


# ------------------------------------------------------------------ 1. x ** y: an argument held constant (a None
# tangent) contributes nothing, though its partial is nan (d/dy at x < 0) or inf (d/dx at x = 0, y < 1).  Forward
# mode gave 12 + 0 * nan = nan at (-2.0, 3.0) along (1, 0).  (Session 12: a tangent or cotangent that is 0 gives
# 0 * inf = nan there, as at np.sqrt: the zero may be computed, ``(x ** 3) ** (1 / 3)`` at 0 has derivative 1;
# session 9 took every 0 for a term left out, which gave 0 there.  See test_adversary_s12.)

def py_pow(x, y):
    return x ** y


def np_pow(x, y):
    return np.power(x, y)


def _quiet(thunk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return thunk()


@pytest.mark.parametrize("f", [py_pow, np_pow])
@pytest.mark.parametrize("x, y, tangents, want", [
    (-2.0, 3.0, (1.0, None), 12.0),     # d/dy is nan at x < 0: y held constant contributes nothing
    (0.0, 0.5, (None, 1.0), 0.0),       # d/dx is inf at x = 0: x held constant contributes nothing
    (-2.0, 3.0, (1.0, 0.0), np.nan),    # a zero tangent of y meeting its nan partial: 0 * nan (may be computed)
    (0.0, 0.5, (0.0, 1.0), np.nan),     # a zero tangent of x meeting its inf partial: 0 * inf
    (-2.0, 3.0, (0.0, 1.0), np.nan),    # a nonzero tangent of y at x < 0 stays nan (reverse's d/dy)
    (0.0, 0.5, (1.0, 0.0), np.inf),     # a nonzero tangent of x at x = 0, y < 1: reverse's d/dx
    (1.5, 2.0, (0.3, -0.7), None),      # away from the edges: the gradient along the tangents
])
def test_the_tangent_of_a_power_with_a_zero_tangent_is_reverse_modes(f, x, y, tangents, want):
    value, tangent = _quiet(lambda: astad.jvp(f, (x, y), tangents))
    assert value == f(x, y) and type(value) is type(f(x, y))
    gx, gy = _quiet(lambda: astad.grad(f, argnums=(0, 1))(x, y))
    if want is None:
        want = tangents[0] * central_differences(lambda a: f(a, y), x) + tangents[1] * central_differences(
            lambda b: f(x, b), y)
        assert gx * tangents[0] + gy * tangents[1] == pytest.approx(want, rel=1e-7)
    # reverse mode's partials along the tangents (IEEE: 0 * nan is nan), a None tangent leaving its own out
    assert tangent == pytest.approx(want, rel=1e-7, nan_ok=True)
    assert tangent == pytest.approx(sum(g * t for g, t in zip((gx, gy), tangents) if t is not None), rel=1e-12,
                                    nan_ok=True)
    if want == 12.0:  # a central difference in x alone
        assert tangent == pytest.approx(central_differences(lambda a: f(a, y), x), rel=1e-7)


def sum_of_powers(x, y):
    return np.sum(x ** y)


def sum_of_np_powers(x, y):
    return np.sum(np.power(x, y))


def tail_of_powers(x, y):
    return np.sum((x ** y)[1:])


@pytest.mark.parametrize("f", [sum_of_powers, sum_of_np_powers])
def test_arrays_with_zero_tangents_of_one_argument(f):
    x, y = np.array([-2.0, 0.0, 1.5, 0.7]), np.array([3.0, 0.5, 2.0, -0.4])
    gx, gy = _quiet(lambda: astad.grad(f, argnums=(0, 1))(x, y))
    for tx, ty in [(np.ones(4), None), (None, np.ones(4)), (np.array([1.0, 0.0, 0.5, 2.0]),
                                                          np.array([0.0, 1.0, -1.0, 0.0]))]:
        _, tangent = _quiet(lambda: astad.jvp(f, (x, y), (tx, ty)))
        want = sum(np.sum(g * t) for g, t in ((gx, tx), (gy, ty)) if t is not None)  # (IEEE: 0 * nan is nan)
        assert tangent == pytest.approx(want, rel=1e-12, nan_ok=True)
    # entrywise: x[0] < 0 with ty[0] != 0 is nan, as reverse's d/dy there; a zero tangent meeting
    # an inf or nan partial (d/dx at x[1] = 0, d/dy at x[0] < 0) is nan too
    _, t = _quiet(lambda: astad.jvp(lambda a, b: a ** b, (x, y), (None, np.array([1.0, 0.0, 0.0, 1.0]))))
    assert np.isnan(t[0]) and t[1] == 0.0 and t[2] == 0.0 and t[3] == pytest.approx(0.7 ** -0.4 * np.log(0.7))
    _, t = _quiet(lambda: astad.jvp(lambda a, b: a ** b, (x, y), (np.array([1.0, 0.0, 0.0, 1.0]), None)))
    assert t[0] == 12.0 and np.isnan(t[1]) and t[2] == 0.0 and t[3] == pytest.approx(-0.4 * 0.7 ** -1.4)
    _, t = _quiet(lambda: astad.jvp(lambda a, b: a ** b, (x, y), (np.array([1.0, 0.0, 0.0, 1.0]), np.zeros(4))))
    assert np.isnan(t[0]) and np.isnan(t[1]) and t[2] == 0.0 and t[3] == pytest.approx(-0.4 * 0.7 ** -1.4)


def test_a_zero_cotangent_of_a_power_meeting_a_nan_or_inf_partial_is_nan():
    """As at np.sqrt and np.log (README: the zero may be computed); a finite partial gives 0."""
    x, y = np.array([-2.0, 1.2, 1.5]), np.array([3.0, 0.5, 2.0])
    gx, gy = _quiet(lambda: astad.grad(tail_of_powers, argnums=(0, 1))(x, y))
    assert np.isnan(gy[0]) and gy[1:] == pytest.approx(central_differences(lambda b: tail_of_powers(x, b), y)[1:])
    assert gx == pytest.approx(central_differences(lambda a: tail_of_powers(a, y), x))
    x0, y0 = np.array([0.0, 1.2, 1.5]), np.array([0.5, 0.5, 2.0])  # d/dx is inf at 0 (y < 1), its cotangent 0
    gx, gy = _quiet(lambda: astad.grad(tail_of_powers, argnums=(0, 1))(x0, y0))
    assert np.isnan(gx[0]) and gy[0] == 0.0  # d/dy is 0 there (0 ** y is 0 for y > 0)
    gx, gy = _quiet(lambda: astad.grad(tail_of_powers, argnums=(0, 1))(x0, y))  # y = 3: d/dx is 0 at 0, finite
    assert gx[0] == 0.0 and gy[0] == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_tangent_of_a_power_keeps_the_dtype(dtype):
    x, y = np.array([-2.0, 0.5], dtype), np.array([3.0, 1.5], dtype)
    value, tangent = _quiet(lambda: astad.jvp(lambda a, b: a ** b, (x, y), (np.ones(2, dtype), None)))
    assert value.dtype == tangent.dtype == (x ** y).dtype
    assert tangent == pytest.approx([12.0, 1.5 * 0.5 ** 0.5], rel=1e-6)


def power_of_entries(v):
    return v[0] ** v[1] + np.sum(v[2:] ** v[:2])


def test_second_derivatives_of_a_power():
    for v in [np.array([1.3, 2.5, 0.4, 1.1]), np.array([0.7, -0.4, 2.0, 0.3])]:
        h = astad.hessian(power_of_entries)(v)
        want = np.array([central_differences(lambda w: astad.grad(power_of_entries)(w)[i], v, eps=1e-5)
                         for i in range(4)])
        assert h == pytest.approx(want, rel=1e-6, abs=1e-8)
        assert astad.grad(power_of_entries)(v) == pytest.approx(central_differences(power_of_entries, v), rel=1e-7)


# ------------------------------------------------------------------ 2. an element of a vector (``x[-2]``, ``t1[j]``) is
# a numpy scalar, which nothing can change: ``c = x[-2]; c += ...`` rebinds ``c`` and leaves ``x[-2]``'s name as it
# was.  The alias analysis gave it storage of its own, shared by ``c``, and refused the ``+=`` ("another value that
# can still be read shares its memory"): a random control-flow program met it.

def element_then_add(x, c, t1):
    v = x[-2]
    c = v
    c += 0.5 * v
    return c * v + t1[1]


def element_in_a_loop(x, c, t1):
    v = x[-2]
    for j in range(t1.shape[0]):
        c += 0.5 * (np.tanh(np.maximum(v, 2.0)) - c)
        if v > 0.0:
            c = t1[j] if x[0] < -0.4 else v
    return c * x[1]


def element_added_to_itself(x, t1):
    v = x[1]
    w = v
    w += 1.0  # rebinds w: v is still x[1]
    v *= t1[0]
    return v * w + x[1]


@pytest.mark.parametrize("f, args", [
    (element_then_add, (np.array([1.07, -1.15, -0.72]), -0.45, np.array([-0.8, 1.39, -0.36]))),
    (element_in_a_loop, (np.array([1.07, 1.15, -0.72]), -0.45, np.array([-0.8, 1.39, -0.36, 0.42]))),
    (element_in_a_loop, (np.array([-0.7, -1.15, -0.72]), 0.3, np.array([-0.8, 1.39, -0.36, 0.42]))),
])
def test_an_augmented_assignment_to_a_name_bound_to_an_element(f, args):
    want = f(*args)
    value, g = astad.value_and_grad(f, argnums=(0, 1, 2))(*args)
    assert value == want and type(value) is type(want)
    for i, gi in enumerate(g):
        fd = central_differences(lambda a: f(*args[:i], a, *args[i + 1:]), args[i])
        assert gi == pytest.approx(fd, rel=1e-6, abs=1e-8)
    tangents = (np.array([0.3, -1.0, 0.5]), 0.7, np.linspace(-1.0, 1.0, len(args[2])))
    v, t = astad.jvp(f, args, tangents)
    assert v == want
    assert t == pytest.approx(sum(np.sum(gi * ti) for gi, ti in zip(g, tangents)), rel=1e-9)


def test_an_element_updated_after_its_copy():
    x, t1 = np.array([1.5, -0.4, 2.0]), np.array([0.7, 1.1])
    want = element_added_to_itself(x, t1)
    value, g = astad.value_and_grad(element_added_to_itself)(x, t1)
    assert value == want and type(value) is type(want)
    assert g == pytest.approx(central_differences(lambda a: element_added_to_itself(a, t1), x), rel=1e-7)
    assert x.tolist() == [1.5, -0.4, 2.0]


# ------------------------------------------------------------------ 4. sum(x[mask]) of a vector with no element
# selected is the int 0 (Python's sum of nothing), typed np.float64 by astad.  What follows it runs on the int as
# the plain call does (the generated code holds Python's sum); only the test of a complex power looked at the type:
# (s - 2.0) ** y, a Python float's power, complex in Python, gave the complex value and a nan derivative.

def power_of_a_sum_of_none(x, y):
    s = sum(x[x > 5.0])
    return (s - 2.0) ** y


def power_of_a_numpy_sum(x, y):
    s = sum(x[x > 0.5])  # an np.float64: its power of a negative base is nan, as numpy's
    return (s - 8.0) ** y


def others_of_a_sum_of_none(x, y):
    s = sum(x[x > 5.0])
    return y / (s + 1.0) + y * s + s ** 2.0 * y + (s + 1.0) ** y + y * 2 ** s + s // 2.0


def test_a_complex_power_of_a_sum_of_none_is_refused():
    x, y = np.array([1.0, 2.0, 3.0]), 1.5
    assert type(power_of_a_sum_of_none(x, y)) is complex
    with pytest.raises(astad.AstadTypeError, match="negative"):
        astad.value_and_grad(power_of_a_sum_of_none, argnums=(0, 1))(x, y)
    with pytest.raises(astad.AstadTypeError, match="negative"):
        astad.jvp(power_of_a_sum_of_none, (x, y), (np.ones(3), 1.0))
    # a numpy float's power is nan there, as numpy's: no refusal
    want = _quiet(lambda: power_of_a_numpy_sum(x, y))
    value, g = _quiet(lambda: astad.value_and_grad(power_of_a_numpy_sum, argnums=(0, 1))(x, y))
    assert np.isnan(want) and np.isnan(value) and type(value) is type(want)


def test_what_follows_a_sum_of_none_is_the_plain_call():
    x, y = np.array([1.0, 2.0, 3.0]), 1.5
    want = others_of_a_sum_of_none(x, y)
    value, (gx, gy) = astad.value_and_grad(others_of_a_sum_of_none, argnums=(0, 1))(x, y)
    assert value == want and type(value) is type(want)
    assert gy == pytest.approx(central_differences(lambda b: others_of_a_sum_of_none(x, b), y))
    assert np.array_equal(gx, central_differences(lambda a: others_of_a_sum_of_none(a, y), x))
    v, t = astad.jvp(others_of_a_sum_of_none, (x, y), (np.ones(3), 1.0))
    assert v == want and t == pytest.approx(gy)
    assert astad.value_and_grad(lambda a: sum(a[a > 5.0]) + 0.0 * a[0])(x)[0] == 0.0


def power_of_a_join(x, y):
    s = 0.5 if x < 1.0 else np.float64(x)  # a Python float or an np.float64: typed np.float64
    return (s - 2.0) ** y


def test_a_complex_power_of_a_join_of_a_python_float_is_refused():
    assert type(power_of_a_join(0.5, 1.5)) is complex
    with pytest.raises(astad.AstadTypeError, match="negative"):
        astad.value_and_grad(power_of_a_join, argnums=(0, 1))(0.5, 1.5)
    with pytest.raises(astad.AstadTypeError, match="negative"):
        astad.jvp(power_of_a_join, (0.5, 1.5), (1.0, 1.0))
    for x in (1.5, 3.5):  # an np.float64 base: nan below 2 as numpy's, real above
        want = _quiet(lambda: power_of_a_join(x, 1.5))
        value, (gx, gy) = _quiet(lambda: astad.value_and_grad(power_of_a_join, argnums=(0, 1))(x, 1.5))
        assert value == pytest.approx(want, nan_ok=True) and type(value) is type(want)
        if x > 2.0:
            assert gx == pytest.approx(central_differences(lambda a: power_of_a_join(a, 1.5), x))
            assert gy == pytest.approx(central_differences(lambda b: power_of_a_join(x, b), 1.5))


# ------------------------------------------------------------------ 3. a NamedTuple returned (np.linalg's results:
# slogdet, eigh, qr, svd; a NamedTuple argument) came back as a plain tuple: it comes back of its class, as the
# plain call's, in reverse mode's value, vjp's output and jvp's value and tangent.

from typing import NamedTuple  # noqa: E402


class Point(NamedTuple):
    a: float
    b: np.ndarray


def slogdet_of(a):
    return np.linalg.slogdet(a)


def eigh_of(a):
    return np.linalg.eigh(a @ a.T)


def qr_of(a):
    return np.linalg.qr(a)


def svd_of(a):
    return np.linalg.svd(a)


def the_point(p):
    return p


def the_point_in_a_tuple(p, x):
    return (x * 2.0, p), [p]


def _assert_same_structure(got, want):
    assert type(got) is type(want)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same_structure(g, w)


@pytest.mark.parametrize("f", [slogdet_of, eigh_of, qr_of, svd_of])
def test_linalg_results_keep_their_class(f):
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
    want = f(a)
    value, pullback = astad.vjp(f, a)
    _assert_same_structure(value, want)
    assert all(np.allclose(v, w) for v, w in zip(value, want))
    v, t = astad.jvp(f, (a,), (np.ones((3, 3)),))
    _assert_same_structure(v, want)
    assert type(t) is type(want)
    value, _ = astad.reverse(f)(a)
    _assert_same_structure(value, want)


def test_a_named_tuple_argument_returned_keeps_its_class():
    p, x = Point(1.5, np.array([1.0, -2.0])), 0.5
    value, pullback = astad.vjp(the_point, p)
    _assert_same_structure(value, p)
    ct = pullback(Point(1.0, np.array([2.0, 3.0])))
    assert type(ct[0]) is Point and ct[0].a == 1.0 and np.array_equal(ct[0].b, [2.0, 3.0])
    v, t = astad.jvp(the_point, (p,), (Point(0.3, np.array([1.0, 1.0])),))
    _assert_same_structure(v, p)
    _assert_same_structure(t, p)
    want = the_point_in_a_tuple(p, x)
    value, _ = astad.vjp(the_point_in_a_tuple, p, x)
    _assert_same_structure(value, want)


def slogdet_value(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return sign * logabsdet


def test_the_value_and_gradient_through_a_linalg_result():
    a = np.array([[2.0, 0.3], [0.3, 1.5]])
    value, g = astad.value_and_grad(slogdet_value)(a)
    assert value == slogdet_value(a) and type(value) is type(slogdet_value(a))
    assert g == pytest.approx(central_differences(slogdet_value, a), rel=1e-7)


def slogdet_twice(a):
    return np.linalg.slogdet(a * 2.0)


def test_a_named_tuple_output_with_the_disk_cache_on(disk_cache):
    a = np.array([[2.0, 0.3], [0.3, 1.5]])
    for _ in range(2):  # made (its entry not stored: a class is not JSON), then made again after clear_caches
        value, _ = astad.vjp(slogdet_twice, a)
        _assert_same_structure(value, slogdet_twice(a))
        astad.clear_caches()
    assert not any(p.is_file() and "slogdet_twice" in p.name for p in disk_cache.rglob("*"))
