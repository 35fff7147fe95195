"""The fast call path of scalar arguments (issue 12 point 4): a call of scalar
arguments of types seen before goes straight to the generated code (one table
keyed by the arguments' types, one compiled check of the names the derivative
read).  Everything the slow path detects is detected after the fast path has
been taken: a changed global or captured variable or attribute of ``self``, a
builtin shadowed later, a replaced ``__code__``, a subclass argument, another
numpy scalar type, a bad cotangent or tangent.  Derivatives are checked against
central finite differences of the plain function."""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest

import astad
from astad import api
from conftest import known_to_inspect


def fd(fn, args, i, eps=1e-6):
    """Central finite difference of a scalar function in its scalar argument i."""
    hi, lo = list(args), list(args)
    hi[i] += eps
    lo[i] -= eps
    return (fn(*hi) - fn(*lo)) / (2 * eps)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


@pytest.fixture
def write_module(tmp_path, monkeypatch):
    """Write a module file in tmp_path and import it (a fresh name each time)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made = []

    def write(text):
        name = f"astad_callpath_{len(made)}_{id(made)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
        importlib.invalidate_caches()
        made.append(name)
        return known_to_inspect(importlib.import_module(name))

    yield write
    for name in made:
        sys.modules.pop(name, None)


MODULE = """
import math
import numpy as np

C = 2.0

def f(x, y):
    return np.sin(x) * C + math.cos(y) * x

def twice(v):
    return v * 2.0

def g(x):
    return abs(x) * x
"""


def calls(fn):
    """Each API call of a scalar function of two arguments, as a gradient in the first."""
    grad, vg, rev = astad.grad(fn), astad.value_and_grad(fn), astad.reverse(fn)
    return {
        "grad": lambda x, y: grad(x, y),
        "value_and_grad": lambda x, y: vg(x, y)[1],
        "reverse": lambda x, y: rev(x, y)[1](1.0)[0],
        "jvp": lambda x, y: astad.jvp(fn, (x, y), (1.0, None))[1],
    }


@pytest.mark.parametrize("kind", ["grad", "value_and_grad", "reverse", "jvp"])
def test_a_global_changed_after_fast_calls_is_seen(write_module, kind):
    mod = write_module(MODULE)
    call = calls(mod.f)[kind]
    for _ in range(3):  # the first call fills the table, the others take the fast path
        close(call(0.7, 0.3), fd(mod.f, [0.7, 0.3], 0))
    mod.C = -5.0
    for _ in range(2):
        close(call(0.7, 0.3), fd(mod.f, [0.7, 0.3], 0))
    mod.math = np  # another module under the same name: np.cos is math.cos's twin, the code reads it again
    close(call(0.7, 0.3), fd(mod.f, [0.7, 0.3], 0))


@pytest.mark.parametrize("kind", ["grad", "reverse", "jvp"])
def test_a_builtin_shadowed_after_fast_calls_is_seen(write_module, kind):
    mod = write_module(MODULE)
    call = {"grad": lambda x: astad.grad(mod.g)(x), "reverse": lambda x: astad.reverse(mod.g)(x)[1](1.0)[0],
            "jvp": lambda x: astad.jvp(mod.g, (x,), (1.0,))[1]}[kind]
    for _ in range(3):
        close(call(-1.5), fd(mod.g, [-1.5], 0))
    mod.abs = mod.twice  # Python now calls twice: g(x) = 2x * x
    close(call(-1.5), 4.0 * -1.5)
    del mod.abs
    close(call(-1.5), fd(mod.g, [-1.5], 0))


def test_a_captured_variable_and_an_attribute_of_self_changed_after_fast_calls_are_seen():
    scale = 3.0

    def h(x):
        return scale * x * x

    g = astad.grad(h)
    for _ in range(3):
        close(g(1.5), 2 * scale * 1.5)
    scale = -1.0  # noqa: F841 (read by h)
    close(g(1.5), -3.0)

    class Model:
        def __init__(self):
            self.w = 2.0

        def loss(self, x):
            return self.w * x * x

    m = Model()
    gm = astad.grad(m.loss)
    for _ in range(3):
        close(gm(1.5), 6.0)
    m.w = 5.0
    close(gm(1.5), 15.0)


@pytest.mark.parametrize("kind", ["grad", "reverse", "jvp"])
def test_a_code_replaced_after_fast_calls_is_refused(write_module, kind):
    mod = write_module(MODULE)
    call = {"grad": astad.grad(mod.g), "reverse": astad.reverse(mod.g),
            "jvp": lambda x: astad.jvp(mod.g, (x,), (1.0,))}[kind]
    for _ in range(3):
        call(1.5)
    mod.g.__code__ = mod.twice.__code__
    if kind == "jvp":  # astad.jvp reads the function again: the new code
        close(call(1.5)[1], 2.0)
        return
    with pytest.raises(astad.SourceUnavailableError):
        call(1.5)


class MyFloat(float):
    def __mul__(self, other):
        return 0.0


def sq(x):
    return x * x


def test_subclasses_and_other_scalar_types_miss_the_fast_path():
    g, rev = astad.grad(sq), astad.reverse(sq)
    for _ in range(3):
        close(g(1.5), 3.0)
        close(rev(1.5)[1](1.0)[0], 3.0)
        close(astad.jvp(sq, (1.5,), (1.0,))[1], 3.0)
    for call in (g, rev, lambda x: astad.jvp(sq, (x,), (1.0,))):
        with pytest.raises(astad.AstadTypeError):
            call(MyFloat(1.5))
    got = g(np.float32(1.5))
    assert type(got) is np.float32 or getattr(got, "dtype", None) == np.float32
    close(got, 3.0)
    with pytest.raises(astad.AstadError):  # an int has no gradient, after floats took the fast path
        g(3)
    with pytest.raises(astad.AstadError):  # nor a bool
        g(True)
    with pytest.raises(astad.AstadTypeError):  # a float32 tangent of a float64 argument
        astad.jvp(sq, (1.5,), (np.float32(1.0),))


def scaled(x, n):
    return x * x * n


def test_discrete_arguments_and_argnums_on_the_fast_path():
    g = astad.grad(scaled)
    for n in (1, 2, 3, 2):
        close(g(1.5, n), fd(scaled, [1.5, n], 0))
    g01 = astad.grad(scaled, argnums=(0,))
    for _ in range(2):
        (gx,) = g01(1.5, 2.0)
        close(gx, 6.0)
    gneg = astad.grad(scaled, argnums=-2)
    for _ in range(2):
        close(gneg(1.5, 2.0), 6.0)
    vg = astad.value_and_grad(scaled, argnums=(0, 1))
    for _ in range(2):
        value, (gx, gn) = vg(1.5, 2.0)
        close(value, 4.5)
        close((gx, gn), (6.0, 2.25))
    with pytest.raises(TypeError):  # a wrong call is Python's TypeError after the fast path too
        g(1.5)
    close(g(1.5, n=2), 6.0)  # keywords take the binding path


def test_pullbacks_and_tangents_are_checked_after_fast_calls():
    rev = astad.reverse(sq)
    for _ in range(3):
        value, pullback = rev(1.5)
        close(pullback(1.0)[0], 3.0)
    with pytest.raises(astad.AstadTypeError):
        pullback(np.ones(2))
    close(pullback(np.float64(2.0))[0], 6.0)
    for _ in range(2):
        close(astad.jvp(scaled, (1.5, 2.0), (1.0, None))[1], 6.0)
    with pytest.raises(astad.AstadTypeError):
        astad.jvp(scaled, (1.5, 2.0), (1.0,))
    with pytest.raises(astad.AstadTypeError):
        astad.jvp(scaled, (1.5, 2.0), (1.0, np.ones(2)))
    value, tangent = astad.jvp(scaled, (1.5, 2), (None, None))
    assert value == 4.5 and tangent == 0.0


def test_the_fast_tables_are_cleared_and_bounded(monkeypatch):
    g = astad.grad(sq)
    g(1.5)
    rev = astad.reverse(sq)
    assert any(rev._tables.values())
    astad.clear_caches(memory=True, disk=False)
    assert not any(rev._tables.values())
    monkeypatch.setattr(astad.config, "memory_cache_size", 2)
    for x in (1.5, np.float32(1.5), np.float64(1.5), np.float16(1.5), 2.5):
        close(g(x), 2 * float(x))
        assert all(len(t) <= 2 for t in rev._tables.values())
    monkeypatch.setattr(astad.config, "memory_cache_size", 0)
    astad.clear_caches(memory=True, disk=False)
    close(g(1.5), 3.0)
    assert not any(rev._tables.values())
    astad.clear_caches(memory=True, disk=False)


def test_the_compiled_check_is_true_only_when_every_check_holds():
    from astad import calling

    space = {"a": 1.0}
    builtins_ = {"b": 2.0}
    checks = ((space, builtins_, "a", 1.0), (space, builtins_, "b", 2.0))
    holds = calling.checker(checks)
    assert holds() and api._checks_hold(checks)
    space["b"] = 2.0  # a global that shadows the builtin: found elsewhere now
    assert not holds()
    del space["b"]
    assert holds()
    space["a"] = 3.0
    assert not holds() and not api._checks_hold(checks)
    del space["a"]
    assert not holds() and not api._checks_hold(checks)
    assert calling.checker(()) is None


def with_default(x, c=2.0, *, k=1.0):
    return c * k * x * x


def test_defaults_assigned_after_calls_are_the_ones_python_uses():
    g, vg = astad.grad(with_default), astad.value_and_grad(with_default)
    for _ in range(2):
        close(g(1.5), fd(with_default, [1.5], 0))
    with_default.__defaults__ = (5.0,)
    with_default.__kwdefaults__ = {"k": 3.0}
    try:
        close(g(1.5), fd(with_default, [1.5], 0))
        value, grad = vg(1.5)
        close(value, with_default(1.5))
        close(astad.reverse(with_default)(1.5)[0], with_default(1.5))
        close(astad.jvp(with_default, (1.5,), (1.0,))[1], fd(with_default, [1.5], 0))
    finally:
        with_default.__defaults__, with_default.__kwdefaults__ = (2.0,), {"k": 1.0}
