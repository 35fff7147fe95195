"""Python powers that are complex numbers, and numpy's movers of Python numbers.

In Python a negative float (or int) to a non-integer float power is a complex
number; astad does not differentiate complex numbers, so such a power is
refused with astad's error at the user's line: when transforming where both
operands are known (``(-8.0) ** (1 / 3)``), else where it runs (the generated
``type(t) is complex and complex_power(...)``), in reverse and forward mode
and on the scalar fast paths (astad.scalar_grad, astad.fused).  A numpy
float's power is nan there, as numpy's, and is not tested.  Elsewhere the
value is the plain call's (value and type) and the derivatives match central
finite differences and each other (<u, Jv> = <J^T u, v>).

``np.copy`` of a number and ``np.transpose``, ``np.moveaxis`` of a Python
number are numpy's 0-d arrays, which astad does not type: refused.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from astad.errors import AstadTypeError

# --------------------------------------------------------------------------- programs


def sqrt_real(x):
    return ((x - 1.0) ** 0.5).real


def cube_root_const(x):
    return x * (-8.0) ** (1 / 3)


def three_halves(x):
    return (x - 1) ** 1.5


def power(x, y):
    return x ** y


def builtin_pow(x, y):
    return pow(x - 1.0, y) * x


def augmented(x):
    s = x - 1.0
    s **= 0.25
    return s + x


def int_base(x, n):
    return x * (n - 5) ** 0.5


def looped(x):
    s = x
    for _ in range(3):
        s = (s - 1.0) ** 1.5
    return s


def real_ones(x, y):
    return x ** 2.0 + 2.0 ** x + np.float64(x - 1.0) ** 0.5 + x ** 3 + y * abs(x) ** 0.5


NEG = -2.0


def named_constant(x):
    return x * NEG ** 0.5


# --------------------------------------------------------------------------- oracles


def _fd(f, args, k, h=1e-6):
    up, down = list(args), list(args)
    up[k] += h
    down[k] -= h
    return (f(*up) - f(*down)) / (2 * h)


def _refused_here(excinfo, f):
    """astad's error, at the user's line: file:line:col, the line quoted, a caret, what to write instead."""
    text = str(excinfo.value)
    assert excinfo.type is AstadTypeError
    assert __file__ in text and "complex number" in text and "supported instead" in text
    line = int(text.split(__file__ + ":")[1].split(":")[0])
    assert f.__code__.co_firstlineno <= line <= f.__code__.co_firstlineno + 6
    assert "**" in text.splitlines()[1] or "pow(" in text.splitlines()[1]
    assert text.splitlines()[2].strip() == "^"


def _all_modes(f, args):
    """Every way of asking: grad (the scalar fast paths), value_and_grad of all, vjp, jvp, forward, reverse."""
    floats = tuple(i for i, a in enumerate(args) if type(a) is float)
    yield lambda: astad.grad(f)(*args)
    yield lambda: astad.value_and_grad(f, argnums=floats)(*args)
    yield lambda: astad.vjp(f, *args)
    yield lambda: astad.jvp(f, args, tuple(1.0 if type(a) is float else None for a in args))
    yield lambda: astad.reverse(f)(*args)
    yield lambda: astad.forward(f)(*args)


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize("f, args", [
    (sqrt_real, (0.5,)), (three_halves, (0.5,)), (power, (-2.0, 0.5)), (builtin_pow, (0.5, 0.5)),
    (augmented, (0.5,)), (int_base, (1.5, 3)), (looped, (2.5,)),
])
def test_complex_power_is_refused_where_it_runs(f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(f(*args), complex) or isinstance(f(*args), float) and f is sqrt_real
    for ask in _all_modes(f, args):
        with pytest.raises(AstadTypeError) as excinfo:
            ask()
        _refused_here(excinfo, f)


@pytest.mark.parametrize("f", [cube_root_const, named_constant])
def test_known_negative_base_is_refused_when_transforming(f):
    for ask in _all_modes(f, (2.0,)):
        with pytest.raises(AstadTypeError) as excinfo:
            ask()
        _refused_here(excinfo, f)


# --------------------------------------------------------------------------- real: value, type, derivatives


@pytest.mark.parametrize("f, args", [
    (sqrt_real, (2.5,)), (three_halves, (1.7,)), (power, (2.0, 0.5)), (power, (-2.0, 3.0)), (builtin_pow, (1.5, 0.3)),
    (augmented, (1.5,)), (int_base, (1.5, 7)), (looped, (3.9,)), (real_ones, (1.5, 0.7)),
])
def test_real_power_value_and_derivatives(f, args):
    want = f(*args)
    value, grads = astad.value_and_grad(f, argnums=tuple(i for i, a in enumerate(args) if type(a) is float))(*args)
    assert value == want and type(value) is type(want)
    for k, g in zip((i for i, a in enumerate(args) if type(a) is float), grads):
        fd = _fd(f, args, k)
        if isinstance(fd, complex):  # y of (-2.0) ** y: complex nearby, no real derivative
            assert math.isnan(g)
            continue
        assert math.isclose(g, fd, rel_tol=1e-6, abs_tol=1e-8)
        assert math.isclose(astad.grad(f, argnums=k)(*args), g, rel_tol=1e-12)
        tangents = tuple(1.0 if i == k else None for i in range(len(args)))  # (0.0 for y at x < 0: nan * 0.0)
        v, t = astad.jvp(f, args, tangents)
        assert v == want and type(v) is type(want)
        assert math.isclose(t, g, rel_tol=1e-12, abs_tol=1e-15)  # <1, J e_k> = <J^T 1, e_k>


def test_no_test_where_the_power_is_real():
    """``x ** 2.0``, ``2.0 ** x`` and ``x ** 3`` need no test, nor ``np.float64(x - 1.0) ** 0.5``: a numpy float's
    power is nan there (numpy's).  A value typed a numpy float that may hold a Python number when the code runs
    (``sum(x[mask])`` of no elements is the int 0, an ``if`` joins a Python float and an np.float64:
    test_leftovers_9, test_adversarial_17) says so in its type (``Num.weak``), and its power is tested."""
    astad.grad(real_ones)(1.5, 0.7)
    # abs(x) ** 0.5 (a Python float base) only
    assert astad.reverse(real_ones).source.count("complex_power(") == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, _ = astad.vjp(real_ones, 0.5, 0.7)
        assert np.isnan(value) and np.isnan(real_ones(0.5, 0.7)) and type(value) is type(real_ones(0.5, 0.7))


@settings(max_examples=60, deadline=None)
@given(st.floats(-3.0, 3.0).filter(lambda v: abs(v) > 1e-3),
       st.sampled_from([0.5, 1.5, 2.0, 3.0, -1.0, 1 / 3, 0.25, -0.5, 2.5]))
def test_powers_are_pythons_or_refused(x, y):
    want = power(x, y)
    try:
        value, (gx, gy) = astad.value_and_grad(power, argnums=(0, 1))(x, y)
    except AstadTypeError as e:
        assert isinstance(want, complex), e
        return
    assert not isinstance(want, complex)
    assert value == want and type(value) is type(want)
    assert math.isclose(gx, _fd(power, (x, y), 0), rel_tol=1e-5, abs_tol=1e-6)
    if x > 0:
        assert math.isclose(gy, _fd(power, (x, y), 1), rel_tol=1e-5, abs_tol=1e-6)
    v, t = astad.jvp(power, (x, y), (1.0, None))
    assert v == want and math.isclose(t, gx, rel_tol=1e-12, abs_tol=1e-15)


# --------------------------------------------------------------------------- numpy's movers of Python numbers


def np_copy(x):
    return np.copy(x)


def np_transpose(x):
    return np.transpose(x)


def np_moveaxis(x):
    return np.moveaxis(x, [], [])


@pytest.mark.parametrize("f", [np_copy, np_transpose, np_moveaxis])
def test_zero_d_array_of_a_python_number_is_refused(f):
    assert type(f(0.5)) is np.ndarray and f(0.5).ndim == 0
    with pytest.raises(AstadTypeError, match="0-d array") as excinfo:
        astad.vjp(f, 0.5)
    assert "supported instead" in str(excinfo.value) and __file__ in str(excinfo.value)


@pytest.mark.parametrize("expr", [
    "np.reshape(x, ())", "np.reshape(x, (1,))", "np.atleast_1d(x)", "np.atleast_2d(x)", "np.ravel(x)", "np.squeeze(x)",
    "np.sum(x)", "np.mean(x)", "np.abs(x)", "np.sin(x)", "np.expand_dims(x, 0)", "np.max(x)", "np.cumsum(x)",
    "np.transpose(np.float64(x))", "np.squeeze(x) + 1.0", "np.reshape(x, ()) * x", "np.sum(x, keepdims=True)",
])
def test_numpy_of_a_python_float_has_numpys_type(expr, tmp_path):
    path = tmp_path / "mod_np_of_float.py"
    path.write_text(f"import numpy as np\n\n\ndef f(x):\n    return {expr}\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    f = namespace["f"]
    want = f(0.5)
    value, pullback = astad.vjp(f, 0.5)
    assert type(value) is type(want) and np.shape(value) == np.shape(want)
    assert getattr(value, "dtype", None) == getattr(want, "dtype", None) and np.array_equal(value, want)


def invariant_power(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * c ** 0.5 + x[i] / c
    return s


def test_invariant_power_moves_out_of_the_loop_with_its_test():
    """``c ** 0.5`` in a loop over an array moves before it, its test too: the loop keeps the scalar path."""
    x = np.linspace(0.1, 1.0, 5)
    value, (gx, gc) = astad.value_and_grad(invariant_power, argnums=(0, 1))(x, 2.0)
    assert value == pytest.approx(invariant_power(x, 2.0), rel=1e-14) and type(value) is type(invariant_power(x, 2.0))
    assert math.isclose(gc, _fd(lambda c: invariant_power(x, c), (2.0,), 0), rel_tol=1e-6)
    source = astad.reverse(invariant_power).source
    forward = source.split("def invariant_power_forward")[1].split("for i_2")[0]
    assert "complex_power(" in forward and "x.tolist()" in source
    assert not re.search(r"\bt\d+_\d+_ct\b", source)  # a cotangent named after the temporary, not its copy
    with pytest.raises(AstadTypeError) as excinfo:
        astad.grad(invariant_power, argnums=1)(x, -2.0)
    _refused_here(excinfo, invariant_power)
