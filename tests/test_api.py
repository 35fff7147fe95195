"""The conventions of ``reverse``, ``grad``, ``value_and_grad`` and ``vjp``:
argnums, cotangent types (float for a Python float, None for an int, the
argument's shape and dtype for an array), tuple outputs, and decorated
functions calling each other.  Derivatives are checked against central finite
differences, never against astad's own output."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import astad

# --------------------------------------------------------------------------- programs


def loss(w, b, x, n):
    h = np.tanh(x @ w + b)
    return np.sum(h * h) / n


def scale_sum(x, s):
    return np.sum(np.exp(x * s))


def poly(a, b, c):
    return a * a * b + np.sin(c) * a


def two_outputs(x, s):
    y = np.tanh(x) * s
    return y, np.sum(y * x) + s


def with_int(x, k, s):
    return np.sum(x * k) * s


def kinks(s, t):
    a = np.maximum(s, 0.5) + np.minimum(s, t) * 2.0
    b = np.where(s > 0.0, s, 2.0 * s) * np.clip(t, 0.0, 1.0)
    return a + b + np.abs(s - t)


def elementwise32(x, y):
    return np.sum(np.sqrt(x) + np.exp(x) * np.log(y) + np.sin(x) / y)


def layer32(w, x):
    h = np.tanh(x @ w)
    return np.sum(h * h)


@astad.reverse
def inner(x, s):
    return np.sin(x) * s + x * x


@astad.reverse
def outer(x, y):
    z, _ = inner(x * y, 0.5)  # (value, pullback), as in Python
    return np.sum(np.tanh(z) * y)


def plain_outer(x, y):
    return np.sum(inner(x, 2.0)[0] * inner(y, -1.0)[0])


W = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
B = np.array([0.1, -0.2, 0.3])
XS = np.linspace(0.0, 2.0, 8).reshape(2, 4)

# --------------------------------------------------------------------------- finite differences


def fd_grad(fn, args, i, eps=1e-6):
    """Central finite differences of a scalar ``fn`` in argument ``i`` (float64)."""
    args = list(args)
    a = args[i]

    def at(v):
        shifted = list(args)
        shifted[i] = v
        return float(fn(*shifted))

    if isinstance(a, float):
        return (at(a + eps) - at(a - eps)) / (2 * eps)
    out = np.zeros(np.shape(a))
    for idx in np.ndindex(*np.shape(a)):
        plus, minus = np.array(a, dtype=float), np.array(a, dtype=float)
        plus[idx] += eps
        minus[idx] -= eps
        out[idx] = (at(plus) - at(minus)) / (2 * eps)
    return out


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- argnums


def test_int_argnums_gives_one_gradient():
    g = astad.grad(loss)(W, B, XS, 3)
    assert isinstance(g, np.ndarray) and g.shape == W.shape
    close(g, fd_grad(loss, (W, B, XS, 3), 0))
    g = astad.grad(loss, argnums=2)(W, B, XS, 3)
    assert isinstance(g, np.ndarray) and g.shape == XS.shape
    close(g, fd_grad(loss, (W, B, XS, 3), 2))


def test_tuple_argnums_gives_a_tuple():
    gs = astad.grad(loss, argnums=(0, 1))(W, B, XS, 3)
    assert isinstance(gs, tuple) and len(gs) == 2
    close(gs[0], fd_grad(loss, (W, B, XS, 3), 0))
    close(gs[1], fd_grad(loss, (W, B, XS, 3), 1))
    (g,) = astad.grad(loss, argnums=(1,))(W, B, XS, 3)
    close(g, fd_grad(loss, (W, B, XS, 3), 1))
    # order as requested, repeats allowed
    gs = astad.grad(loss, argnums=[2, 0, 2])(W, B, XS, 3)
    assert len(gs) == 3
    close(gs[0], fd_grad(loss, (W, B, XS, 3), 2))
    close(gs[1], fd_grad(loss, (W, B, XS, 3), 0))
    close(gs[2], gs[0])


def test_negative_argnums():
    args = (0.3, -1.2, 0.8)
    close(astad.grad(poly, argnums=-1)(*args), fd_grad(poly, args, 2))
    close(astad.grad(poly, argnums=-3)(*args), fd_grad(poly, args, 0))
    ga, gc = astad.grad(poly, argnums=(-3, -1))(*args)
    close(ga, fd_grad(poly, args, 0))
    close(gc, fd_grad(poly, args, 2))


def test_value_and_grad():
    args = (np.array([0.1, -0.4, 0.7]), 0.9)
    value, g = astad.value_and_grad(scale_sum)(*args)
    assert value == scale_sum(*args)
    close(g, fd_grad(scale_sum, args, 0))
    value, (gx, gs) = astad.value_and_grad(scale_sum, argnums=(0, 1))(*args)
    assert value == scale_sum(*args)
    close(gx, fd_grad(scale_sum, args, 0))
    close(gs, fd_grad(scale_sum, args, 1))


def test_all_arguments_of_grad():
    args = (0.3, -1.2, 0.8)
    gs = astad.grad(poly, argnums=(0, 1, 2))(*args)
    for i, g in enumerate(gs):
        close(g, fd_grad(poly, args, i))


# --------------------------------------------------------------------------- plain or decorated


def test_plain_and_decorated_functions_alike():
    args = (W, B, XS, 3)
    rev = astad.reverse(loss)
    close(astad.grad(rev)(*args), astad.grad(loss)(*args))
    v1, g1 = astad.value_and_grad(rev, argnums=1)(*args)
    v2, g2 = astad.value_and_grad(loss, argnums=1)(*args)
    assert v1 == v2 == loss(*args)
    close(g1, g2)
    for fn in (loss, rev):
        value, pullback = astad.vjp(fn, *args)
        assert value == loss(*args)
        close(pullback(1.0)[0], fd_grad(loss, args, 0))


def test_reverse_of_reverse():
    rev = astad.reverse(loss)
    assert astad.reverse(rev) is rev
    again = astad.Reverse(rev)  # a new wrapper around the same function
    args = (W, B, XS, 3)
    (v1, p1), (v2, p2) = rev(*args), again(*args)
    assert v1 == v2 == loss(*args)
    for a, b in zip(p1(1.0), p2(1.0)):
        if a is None:
            assert b is None
        else:
            np.testing.assert_array_equal(a, b)
    close(astad.grad(astad.reverse(astad.reverse(loss)))(*args), fd_grad(loss, args, 0))


def test_decorated_function_keeps_name_and_doc():
    assert inner.__name__ == "inner"
    assert outer.__doc__ == outer.__astad_function__.__doc__
    assert "inner" in repr(inner)


def test_decorated_called_from_decorated_is_differentiated_through():
    x = np.array([0.2, -0.5, 1.1])
    y = np.array([0.7, 0.3, -0.9])
    value, pullback = outer(x, y)
    plain = outer.__astad_function__
    np.testing.assert_allclose(value, plain(x, y), rtol=1e-12)
    # compare with the same composition written by hand
    def by_hand(x, y):
        z = np.sin(x * y) * 0.5 + (x * y) * (x * y)
        return np.sum(np.tanh(z) * y)

    np.testing.assert_allclose(value, by_hand(x, y), rtol=1e-12)
    gx, gy = pullback(1.0)
    close(gx, fd_grad(by_hand, (x, y), 0))
    close(gy, fd_grad(by_hand, (x, y), 1))
    gx2, gy2 = astad.grad(outer, argnums=(0, 1))(x, y)
    close(gx2, gx)
    close(gy2, gy)
    # inlined: the generated code calls no wrapper, it computes sin itself
    source = outer.transform(x, y).source
    code = [line for line in source.splitlines() if not line.lstrip().startswith("#")]
    assert any("np.sin(" in line for line in code)
    assert not any("inner(" in line for line in code)
    assert plain.__name__ == "outer"


def test_decorated_helper_used_twice_from_a_plain_function():
    x = np.array([0.2, -0.5])
    y = np.array([1.5, 0.4])

    def by_hand(x, y):
        return np.sum((np.sin(x) * 2.0 + x * x) * (np.sin(y) * -1.0 + y * y))

    value, g = astad.value_and_grad(plain_outer, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(value, by_hand(x, y), rtol=1e-12)
    close(g[0], fd_grad(by_hand, (x, y), 0))
    close(g[1], fd_grad(by_hand, (x, y), 1))


# --------------------------------------------------------------------------- cotangent types


def test_value_equals_the_plain_function():
    args = (W, B, XS, 3)
    value, _ = astad.reverse(loss)(*args)
    assert value == loss(*args)
    assert type(value) is type(loss(*args))


def test_pullback_gives_one_cotangent_per_parameter():
    args = (W, B, XS, 3)
    _, pullback = astad.reverse(loss)(*args)
    cts = pullback(1.0)
    assert isinstance(cts, tuple) and len(cts) == 4
    for i in range(3):
        assert isinstance(cts[i], np.ndarray) and cts[i].shape == args[i].shape
        close(cts[i], fd_grad(loss, args, i))
    assert cts[3] is None  # an int has no cotangent
    # linear in the output cotangent
    for a, b in zip(pullback(-2.5)[:3], cts[:3]):
        close(a, -2.5 * b)


def test_float_argument_gets_a_float_cotangent():
    args = (np.array([0.1, -0.4, 0.7]), 0.9)
    _, pullback = astad.reverse(scale_sum)(*args)
    _, gs = pullback(1.0)
    assert isinstance(gs, float) and not isinstance(gs, np.ndarray) and np.ndim(gs) == 0
    close(gs, fd_grad(scale_sum, args, 1))
    args = (0.3, -1.2, 0.8)
    cts = astad.reverse(poly)(*args)[1](1.0)
    for i, ct in enumerate(cts):
        assert isinstance(ct, float) and not isinstance(ct, np.ndarray)
        close(ct, fd_grad(poly, args, i))
    g = astad.grad(poly)(*args)
    assert isinstance(g, float) and not isinstance(g, np.ndarray)


@pytest.mark.parametrize("args", [(0.7, 0.2), (0.3, 0.9), (-0.4, 0.6)])
def test_float_cotangents_through_kinks_are_floats(args):
    cts = astad.reverse(kinks)(*args)[1](1.0)
    for i, ct in enumerate(cts):
        assert isinstance(ct, float) and not isinstance(ct, np.ndarray), (i, type(ct))
        close(ct, fd_grad(kinks, args, i))


def test_int_arguments_get_none():
    args = (np.array([0.5, 1.5]), 3, 0.25)
    _, pullback = astad.reverse(with_int)(*args)
    gx, gk, gs = pullback(1.0)
    assert gk is None
    close(gx, fd_grad(with_int, args, 0))
    close(gs, fd_grad(with_int, args, 2))
    gx, gs = astad.grad(with_int, argnums=(0, 2))(*args)
    close(gs, fd_grad(with_int, args, 2))


def test_tuple_output_takes_a_tuple_cotangent():
    x = np.array([0.3, -0.6, 1.2])
    s = 0.7
    value, pullback = astad.reverse(two_outputs)(x, s)
    want = two_outputs(x, s)
    assert isinstance(value, tuple) and len(value) == 2
    np.testing.assert_array_equal(value[0], want[0])
    assert value[1] == want[1]
    u = (np.array([1.0, -2.0, 0.5]), 1.5)
    gx, gs = pullback(u)

    def inner_product(x, s):
        y, t = two_outputs(x, s)
        return np.sum(u[0] * y) + u[1] * t

    close(gx, fd_grad(inner_product, (x, s), 0))
    close(gs, fd_grad(inner_product, (x, s), 1))
    # a cotangent for one output only (zero for the other)
    gx0, _ = pullback((np.zeros(3), 1.0))
    close(gx0, fd_grad(lambda x, s: two_outputs(x, s)[1], (x, s), 0))
    # vjp: the same pair
    _, pullback2 = astad.vjp(two_outputs, x, s)
    close(pullback2(u)[0], gx)


def test_float32_stays_float32_through_the_pullback():
    w = np.linspace(-1, 1, 6).reshape(3, 2).astype(np.float32)
    x = np.linspace(0, 1, 12).reshape(4, 3).astype(np.float32)
    value, pullback = astad.reverse(layer32)(w, x)
    assert value.dtype == np.float32
    assert value == layer32(w, x)
    gw, gx = pullback(np.float32(1.0))
    assert gw.dtype == np.float32 and gx.dtype == np.float32
    assert gw.shape == w.shape and gx.shape == x.shape
    want = fd_grad(layer32, (w.astype(np.float64), x.astype(np.float64)), 0)
    np.testing.assert_allclose(gw, want, rtol=1e-3, atol=1e-4)


def test_grad_keeps_float32():
    w = np.linspace(-1, 1, 6).reshape(3, 2).astype(np.float32)
    x = np.linspace(0, 1, 12).reshape(4, 3).astype(np.float32)
    gw, gx = astad.grad(layer32, argnums=(0, 1))(w, x)
    assert gw.dtype == np.float32 and gx.dtype == np.float32
    value, gw2 = astad.value_and_grad(layer32)(w, x)
    assert value.dtype == np.float32 and gw2.dtype == np.float32
    want = fd_grad(layer32, (w.astype(np.float64), x.astype(np.float64)), 0)
    np.testing.assert_allclose(gw, want, rtol=1e-3, atol=1e-4)
    a = np.linspace(0.5, 1.5, 4).astype(np.float32)
    b = np.linspace(1.0, 2.0, 4).astype(np.float32)
    for g in astad.grad(elementwise32, argnums=(0, 1))(a, b):
        assert g.dtype == np.float32


def test_float32_and_float64_are_separate_signatures():
    w = np.linspace(-1, 1, 6).reshape(3, 2)
    x = np.linspace(0, 1, 12).reshape(4, 3)
    rev = astad.reverse(layer32)
    v64, _ = rev(w, x)
    v32, _ = rev(w.astype(np.float32), x.astype(np.float32))
    assert v64.dtype == np.float64 and v32.dtype == np.float32
    assert "f32" in rev.transform(w.astype(np.float32), x.astype(np.float32)).source.splitlines()[0]


@pytest.mark.parametrize("fn, args", [(loss, (W, B, XS, 3)), (poly, (0.3, -1.2, 0.8))])
def test_grad_matches_pullback(fn, args):
    _, pullback = astad.reverse(fn)(*args)
    cts = pullback(1.0)
    for i, a in enumerate(args):
        if isinstance(a, int):
            continue
        close(astad.grad(fn, argnums=i)(*args), cts[i])


def test_the_readme_example_runs_and_shows_its_code():
    """`python examples/mlp.py`, the README's first command: it trains with
    `value_and_grad(..., argnums=...)` and then prints `loss.source` (which once
    raised: only a derivative of every argument counted as "called")."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, str(root / "examples" / "mlp.py")], capture_output=True, text=True,
                          timeout=300, cwd=root, env=dict(os.environ, ASTAD_DISK_CACHE="0",  # (this checkout's astad)
                                                          PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))))
    assert proc.returncode == 0, proc.stderr
    losses = [float(line.split()[-1]) for line in proc.stdout.splitlines() if line.startswith("step")]
    assert len(losses) == 5 and losses[-1] < losses[0] / 5
    assert "def loss_backward(" in proc.stdout


def test_source_after_only_a_restricted_gradient():
    def f(x, y):
        return np.sum(x * y)

    rev = astad.reverse(f)
    astad.grad(rev, argnums=0)(np.ones(2), np.ones(2))
    assert "def f_backward(" in rev.source
