"""Adversarial cases against forward mode and higher-order derivatives (fifth round): ``astad.jvp``
and its checked fast paths with arguments and tangents of changing kinds, pushforwards, Jacobians,
Hessians, derivatives of derivatives.  Every tangent is checked against central finite differences
in float64 (or forward against reverse mode, ``<u, J v> == <J^T u, v>``), never against astad's own
output."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from astad.errors import AstadError
from conftest import fuzz_examples, load_program


def sin_times(x, y):
    return np.sin(x) * y


def pair_sum(p, z):
    return np.sin(p[0]) * z + p[1] * z


def fd(fn, args, tangents, eps=1e-6):
    """The central difference in float64 along ``tangents`` (None: held constant)."""
    plus = [a if t is None else np.float64(a) + eps * np.asarray(t, np.float64) for a, t in zip(args, tangents)]
    minus = [a if t is None else np.float64(a) - eps * np.asarray(t, np.float64) for a, t in zip(args, tangents)]
    return (np.asarray(fn(*plus), np.float64) - np.asarray(fn(*minus), np.float64)) / (2 * eps)


# ------------------------------------------------------------------ 1. a Python-float tangent is weak

SCALARS = {"np.float64": np.float64, "0-d float64 array": lambda v: np.array(v, np.float64)}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(SCALARS)), st.sampled_from([np.float16, np.float32]), st.floats(0.1, 3.0),
       st.floats(-2.0, 2.0), st.integers(1, 3))
def test_a_python_float_tangent_of_a_numpy_scalar_keeps_its_precision(kind, low, y, ty, calls):
    """``jvp(f, (x32, np.float64(y)), (None, 0.3))``: the value is float64 (a numpy scalar is not weak), so
    is its derivative; the tangent 0.3, a Python float, was weak in ``sin(x32) * 0.3`` and the tangent came
    out float32 (float16: wrong in the third digit), on every call, checked or not."""
    x = np.array([0.5, 1.3, -2.1], low)
    y = SCALARS[kind](y)
    for _ in range(calls):
        value, tangent = astad.jvp(sin_times, (x, y), (None, ty))
        assert value.dtype == np.float64
        assert tangent.dtype == np.float64
        np.testing.assert_allclose(tangent, np.sin(x).astype(np.float64) * ty, rtol=1e-12, atol=1e-300)
    _, push = astad.forward(sin_times)(x, y)
    assert push(None, ty).dtype == np.float64
    # in a structure: the leaf of a numpy scalar too
    p = (np.float64(y), np.float64(0.5))
    z = np.array([1.0, 2.0], low)
    for _ in range(calls):
        _, tangent = astad.jvp(pair_sum, (p, z), ((ty, 0.25), None))
        assert tangent.dtype == np.float64
        want = np.cos(np.float64(y)) * ty * z.astype(np.float64) + 0.25 * z.astype(np.float64)
        np.testing.assert_allclose(tangent, want, rtol=1e-12)


# ------------------------------------------------------------------ 2. None for a discrete leaf of a structure

def dict_params(p, x):
    return np.sum(np.tanh(x * p["w"]) + p["b"] * p["n"])


def nested_params(t, x):
    a, (b, c) = t
    return a * x + b * c * x[0]


@pytest.mark.parametrize("calls", [1, 3])
def test_none_for_a_discrete_leaf_of_a_structured_tangent(calls):
    """A structured tangent with None at an int leaf was refused with "must be None" (it was None):
    it is that leaf's tangent, as 0 is."""
    x = np.array([0.3, -1.2, 2.0])
    p = {"w": np.array([1.0, 0.5, -0.5]), "b": 0.3, "n": 2}
    for n_tangent in (None, 0, None):
        tp = {"w": np.array([1.0, -1.0, 2.0]), "b": 0.7, "n": n_tangent}
        for _ in range(calls):
            _, tangent = astad.jvp(dict_params, (p, x), (tp, None))
            want = fd(lambda w, b: dict_params({"w": w, "b": b, "n": 2}, x), (p["w"], p["b"]), (tp["w"], tp["b"]))
            assert tangent == pytest.approx(want, rel=1e-6)
    t = (0.5, (x, 2))
    for _ in range(calls):
        _, tangent = astad.jvp(nested_params, (t, x), ((1.0, (x, None)), x))
        want = fd(lambda a, b, z: nested_params((a, (b, 2)), z), (0.5, x, x), (1.0, x, x))
        np.testing.assert_allclose(tangent, want, rtol=1e-6)
    with pytest.raises(AstadError, match="must be a float"):  # (a float leaf takes a tangent: None is refused)
        astad.jvp(nested_params, (t, x), ((None, (x, None)), x))


# ------------------------------------------------------------------ 3. a tangent has its value's dtype

OFFSET = np.float64(0.0)


def accumulated(x, y):
    s = np.float64(0.0)
    for i in range(x.shape[0]):
        s = s + x[i]
    return s * y[0]


def offset_then_scaled(x, y):
    s = x + OFFSET
    return np.sum(s * y)


def joined(x, y):
    s = np.float64(0.0)
    if y[0] > -10.0:
        s = s + x[0]
    for i in range(1, x.shape[0]):
        s = s + x[i]
    return s * y[0]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([accumulated, offset_then_scaled, joined]), st.sampled_from([np.float16, np.float32]),
       st.integers(1, 400), st.integers(0, 2**16))
def test_a_tangent_is_computed_at_its_values_precision(fn, low, n, seed):
    """``s = np.float64(0.0); s = s + x16[i]``: the value is float64; its tangent started as a literal 0.0
    (weak: the tangent was float16, and 3000 halves summed to 1024 instead of 1500), and ``x16 +
    np.float64(c)`` had the tangent ``x16_t`` (float16) where the value is float64.  Each JVP is linear in
    ``t`` and computed in float64 exactly as below; it agrees with reverse mode's gradient."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 3.0, n).astype(low)
    y = rng.uniform(0.1, 1.0, n).astype(low)
    t = rng.uniform(-1.0, 1.0, n).astype(low)
    t64, y64 = t.astype(np.float64), y.astype(np.float64)
    exact = np.sum(t64 * y64) if fn is offset_then_scaled else np.sum(t64) * y64[0]
    for _ in range(2):
        value, tangent = astad.jvp(fn, (x, y), (t, None))
        assert np.asarray(value).dtype == np.float64 and np.asarray(tangent).dtype == np.float64
        assert tangent == pytest.approx(exact, rel=1e-12, abs=1e-12)
    _, push = astad.forward(fn)(x, y)
    assert push(t, None) == pytest.approx(exact, rel=1e-12, abs=1e-12)
    grad = astad.grad(fn)(x, y)  # (float16: the gradient itself is rounded to the argument's dtype)
    assert np.sum(grad.astype(np.float64) * t.astype(np.float64)) == pytest.approx(exact, rel=2e-3, abs=1e-3)


# a small generator of programs mixing low-precision arguments with float64 constants (numpy scalars,
# 0-d and 1-d arrays: none is weak), straight-line or summed in a loop: every tangent has at least its
# value's precision and agrees with reverse mode

_LOW_TERMS = ["x", "y", "x * y", "np.sin(x)", "x * 0.5", "x + C", "x * c", "y - c", "x + z"]


@st.composite
def mixed_precision_programs(draw):
    lines = ["import numpy as np", "C = np.linspace(0.5, 1.5, 5)", "c = np.float64(1.25)", "z = np.array(0.75)",
             "", "", "def f(x, y):"]
    names = ["x", "y"]
    for k in range(draw(st.integers(1, 4))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(_LOW_TERMS)).replace("x", "X").replace("y", "Y")
        b = b.replace("X", draw(st.sampled_from(names))).replace("Y", draw(st.sampled_from(names)))
        op = draw(st.sampled_from(["+", "*", "-"]))
        lines.append(f"    v{k} = {a} {op} {b}")
        names.append(f"v{k}")
    if draw(st.booleans()):
        start = draw(st.sampled_from(["np.float64(0.0)", "np.zeros(())", "c * 0.0"]))
        lines += [f"    s = {start}", "    for i in range(x.shape[0]):", f"        s = s + {names[-1]}[i] * x[i]",
                  "    return s"]
    else:
        lines.append(f"    return np.sum({names[-1]} * {draw(st.sampled_from(names))})")
    return "\n".join(lines) + "\n"


@settings(max_examples=fuzz_examples(16, long=40), deadline=None)
@given(mixed_precision_programs(), st.sampled_from([np.float16, np.float32]), st.integers(0, 2**16))
def test_random_mixed_precision_programs(tmp_path_factory, source, low, seed):
    f = load_program(source, tmp_path_factory.mktemp("mixed"), "mixed").f
    rng = np.random.default_rng(seed)
    x, y = (rng.uniform(0.5, 1.5, 5).astype(low) for _ in range(2))
    tx, ty = (rng.uniform(-1.0, 1.0, 5).astype(low) for _ in range(2))
    value = f(x, y)
    got, tangent = astad.jvp(f, (x, y), (tx, ty))
    assert np.asarray(got).dtype == np.asarray(value).dtype
    assert np.asarray(tangent).dtype.itemsize >= np.asarray(value).dtype.itemsize, source
    gx, gy = astad.grad(f, argnums=(0, 1))(x, y)
    by_reverse = np.sum(gx.astype(np.float64) * tx) + np.sum(gy.astype(np.float64) * ty)
    scale = np.sum(np.abs(gx.astype(np.float64) * tx)) + np.sum(np.abs(gy.astype(np.float64) * ty)) + 1e-3
    assert abs(float(tangent) - by_reverse) <= (1e-2 if low == np.float16 else 1e-5) * scale, source


# ------------------------------------------------------------------ 4. astad called inside the code it differentiates

INSIDE = '''\
import numpy as np
import astad
from astad import grad, jvp, hessian
import astad.api_higher as higher


def h(x):
    return np.sum(np.sin(x) * x)


def by_name(x):
    return np.sum(grad(h)(x) * x)


def by_jvp(x):
    return jvp(h, (x,), (x,))[1]


def by_hessian(x):
    return np.sum(hessian(h)(x))


def by_module(x):
    return np.sum(astad.grad(h)(x) * x)


def by_submodule(x):
    return np.sum(higher.grad(h)(x))
'''


@pytest.mark.parametrize("name", ["by_name", "by_jvp", "by_hessian", "by_module", "by_submodule"])
@pytest.mark.parametrize("how", ["jvp", "grad", "value_and_grad", "hessian"])
def test_astad_called_inside_is_refused_at_the_users_line(tmp_path, name, how):
    """``from astad import grad`` and ``grad(h)(x)`` in the code: astad read its own source (api_higher.py)
    and refused at one of its own lines (``Derived`` is a type, f-strings ...); now at the user's."""
    mod = load_program(INSIDE, tmp_path, "inside")
    fn, x = getattr(mod, name), np.array([0.3, 0.7])
    run = {"jvp": lambda: astad.jvp(fn, (x,), (x,)), "grad": lambda: astad.grad(fn)(x),
           "value_and_grad": lambda: astad.value_and_grad(fn)(x), "hessian": lambda: astad.hessian(fn)(x)}[how]
    with pytest.raises(AstadError, match="inside a function astad differentiates") as e:
        run()
    assert e.value.loc is not None and e.value.loc.file == mod.__file__
    assert "astad.grad(astad.grad(f))" in str(e.value)


# ------------------------------------------------------------------ 5. grad of a derivative that is not a scalar

def two_vectors(x, y):
    return np.sum(np.sin(x) * y) + np.sum(x ** 2) * np.sum(y)


def of_a_scalar(t):
    return np.array([t, t * t, np.sin(t)])


def scalar_of_two(a, b):
    return np.sin(a) * b ** 2 + a * b


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["jvp", "hvp", "hessian", "jacfwd", "jacrev", "call"]), st.integers(0, 2**16))
def test_grad_of_a_vector_valued_derivative_is_refused_however_it_is_reached(how, seed):
    """``grad(grad(f))`` where ``grad(f)`` is a vector: calling it raised NonScalarOutputError, but
    ``jvp(grad(grad(f)), ...)``, ``hvp(grad(f), ...)`` and ``hessian(grad(f))`` returned the Hessian (and its
    derivative) as if they were a gradient's; likewise ``grad`` of a derivative whose one input gives a vector."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    gg = astad.grad(astad.grad(two_vectors))
    run = {"jvp": lambda: astad.jvp(gg, (x, y), (x, None)),
           "hvp": lambda: astad.hvp(astad.grad(two_vectors), (x, y), (x, None)),
           "hessian": lambda: astad.hessian(astad.grad(two_vectors))(x, y),
           "jacfwd": lambda: astad.jacfwd(gg)(x, y), "jacrev": lambda: astad.jacrev(gg)(x, y),
           "call": lambda: gg(x, y)}[how]
    with pytest.raises(astad.NonScalarOutputError, match=r"grad of grad\(two_vectors\)"):
        run()
    t = float(rng.uniform(-1, 1))
    with pytest.raises(astad.NonScalarOutputError):  # one input element, a vector out: its column is no gradient
        {"jvp": lambda: astad.jvp(astad.grad(astad.jacfwd(of_a_scalar)), (t,), (1.0,)),
         "jacrev": lambda: astad.jacrev(astad.grad(astad.jacfwd(of_a_scalar)))(t)}.get(how, lambda: astad.grad(
             astad.jacfwd(of_a_scalar))(t))()
    # a gradient of a gradient that is a scalar is differentiated: against central differences
    a, b = float(rng.uniform(-1, 1)), float(rng.uniform(0.5, 1.5))
    h = astad.grad(astad.grad(scalar_of_two))
    d3 = astad.jvp(h, (a, b), (1.0, None))[1]
    want = (h(a + 1e-5, b) - h(a - 1e-5, b)) / 2e-5
    assert d3 == pytest.approx(want, rel=1e-5, abs=1e-6)


# ------------------------------------------------------------------ 6. async def

ASYNC = '''\
import numpy as np


async def co(a):
    return np.sin(a) * 2.0


def calls_it(a):
    return co(a)
'''


@pytest.mark.parametrize("name", ["co", "calls_it"])
@pytest.mark.parametrize("how", ["jvp", "forward", "grad", "hessian"])
def test_an_async_def_is_refused(tmp_path, name, how):
    """``co(1.0)`` returns a coroutine; astad read ``async def`` as ``def`` and returned (2 sin 1, 2 cos 1)."""
    fn = getattr(load_program(ASYNC, tmp_path, "async"), name)
    run = {"jvp": lambda: astad.jvp(fn, (1.0,), (1.0,)), "forward": lambda: astad.forward(fn)(1.0),
           "grad": lambda: astad.grad(fn)(1.0), "hessian": lambda: astad.hessian(fn)(1.0)}[how]
    with pytest.raises(astad.UnsupportedSyntaxError, match="`async def` is not supported"):
        run()


def test_an_ordered_dict_tangent_of_an_ordered_dict_argument():
    """An ``OrderedDict`` argument is accepted; a tangent of its very structure (an ``OrderedDict``) was
    refused ("must have the structure ..., got OrderedDict")."""
    from collections import OrderedDict

    x = np.array([0.3, -1.2, 2.0])
    p = OrderedDict(w=np.array([1.0, 0.5, -0.5]), b=0.3, n=2)
    tp = OrderedDict(w=np.array([1.0, -1.0, 2.0]), b=0.7, n=None)
    want = fd(lambda w, b: dict_params({"w": w, "b": b, "n": 2}, x), (p["w"], p["b"]), (tp["w"], tp["b"]))
    for _ in range(2):
        assert astad.jvp(dict_params, (p, x), (tp, None))[1] == pytest.approx(want, rel=1e-6)
    hv = astad.hvp(dict_params, (p, x), (tp, None))[0]
    grad = astad.grad(dict_params)
    plus, minus = (grad({"w": p["w"] + s * tp["w"], "b": p["b"] + s * tp["b"], "n": 2}, x) for s in (1e-5, -1e-5))
    np.testing.assert_allclose(hv["w"], (plus["w"] - minus["w"]) / 2e-5, rtol=1e-5, atol=1e-7)


_Y_KINDS = {"float": float, "np.float64": np.float64, "np.float32": np.float32, "0-d f64": lambda v: np.array(v),
            "0-d f32": lambda v: np.array(v, np.float32)}
_T_KINDS = {"float": float, "like": None, "None": lambda v: None}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(_Y_KINDS)), st.sampled_from(sorted(_T_KINDS)),
                          st.sampled_from([np.float16, np.float32, np.float64])), min_size=2, max_size=12))
def test_calls_of_changing_scalar_kinds_and_tangent_kinds(calls):
    """``sin(x) * y`` with ``y`` a Python float, a numpy scalar or a 0-d array and its tangent a Python
    float, one of ``y``'s own kind or None, called in any order (the cached entries of each kind, the
    conversion of a Python-float tangent, the checked code of the latest kind): the exact tangent
    ``sin(x) * ty`` (``ty`` of ``y``'s dtype), at the value's precision."""
    for y_kind, t_kind, x_dtype in calls:
        x = np.array([0.5, 1.3, -2.1], x_dtype)
        y = _Y_KINDS[y_kind](1.7)
        ty = _Y_KINDS[y_kind](0.3) if t_kind == "like" else _T_KINDS[t_kind](0.3)
        value, tangent = astad.jvp(sin_times, (x, y), (None, ty))
        assert np.asarray(value).dtype == (np.sin(x) * y).dtype
        if ty is None:
            assert not np.any(tangent)
            continue
        assert np.asarray(tangent).dtype == np.asarray(value).dtype
        ty = np.asarray(y).dtype.type(ty)  # (a Python float takes the argument's dtype)
        want = np.sin(x).astype(np.float64) * np.float64(ty)
        rel = {np.float16: 1e-3, np.float32: 1e-6}.get(np.asarray(value).dtype.type, 1e-12)
        np.testing.assert_allclose(np.asarray(tangent, np.float64), want, rtol=rel)
