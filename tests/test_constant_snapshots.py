"""A pullback is the derivative at the values the forward call used, whatever the code read them
from: a constant array (module-level, captured by a closure, an attribute of ``self``, a partial's
bound argument, a default of the function or of a function it calls, an element of a default list,
a view of a module-level array, a 0-d array) changed between the forward call and the pullback (in
place, by slice assignment, or by rebinding the name) does not change the pullback.  The oracle is
central finite differences in float64 at the values the forward call saw, computed before the call;
the next call differentiates the function as it is after the change.  Higher order (``vjp`` of
``grad``) keeps its values too; forward mode's pushforward refuses to run after such a change (or, for
a parameter's default, which it copied, gives the tangent at the call's values)."""

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import astad
from astad import fresh
from astad.errors import AstadError
from conftest import central_differences, load_program

SOURCE = '''
import functools
import numpy as np

A = np.array([0.5, -1.0, 2.0])
T = np.array([[0.3, 0.1, -0.2], [1.5, -0.5, 0.25]])
Z = np.array(0.7)
P = np.array([1.0, 0.25, -0.75])


def body(w, x):
    return np.sum(w * np.sin(x) * x) + np.sum(np.tanh(w * x)) + np.sum(w * w * x)


def f_global(x):
    return np.sum(A * np.sin(x) * x) + np.sum(np.tanh(A * x)) + np.sum(A * A * x)


def f_view(x):
    w = T[1]
    return np.sum(w * np.sin(x) * x) + np.sum(np.tanh(w * x)) + np.sum(w * w * x)


def f_zero_d(x):
    return np.sum(Z * np.sin(x) * x) + np.sum(np.tanh(Z * x)) + np.sum(Z * Z * x)


def make_closure():
    C = np.array([-0.5, 0.75, 1.25])

    def f_closure(x):
        return np.sum(C * np.sin(x) * x) + np.sum(np.tanh(C * x)) + np.sum(C * C * x)
    return f_closure


class Model:
    def __init__(self):
        self.w = np.array([0.2, 1.1, -0.4])

    def loss(self, x):
        return np.sum(self.w * np.sin(x) * x) + np.sum(np.tanh(self.w * x)) + np.sum(self.w * self.w * x)


def with_weights(w, x):
    return np.sum(w * np.sin(x) * x) + np.sum(np.tanh(w * x)) + np.sum(w * w * x)


def helper(x, w=np.array([0.9, -0.3, 0.6])):
    return w * np.sin(x) * x + np.tanh(w * x) + w * w * x


def f_helper_default(x):
    return np.sum(helper(x))


def f_default(x, w=np.array([-1.2, 0.4, 0.8])):
    return np.sum(w * np.sin(x) * x) + np.sum(np.tanh(w * x)) + np.sum(w * w * x)


def f_default_list(x, ws=[np.array([0.3, -0.9, 1.4])]):
    w = ws[0]
    return np.sum(w * np.sin(x) * x) + np.sum(np.tanh(w * x)) + np.sum(w * w * x)
'''


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_program(SOURCE, tmp_path_factory.mktemp("constant_snapshots"), "snapshots")


class Source:
    """Where a function reads its constant array: ``fn`` reads ``get()``; ``rebind(new)`` makes the
    name (cell, attribute, default) hold another array, ``None`` where there is no name to rebind."""

    def __init__(self, fn, get, rebind=None):
        self.fn, self.get, self.rebind = fn, get, rebind


def sources(mod):
    closure = mod.make_closure()
    model = mod.Model()
    partial = functools.partial(mod.with_weights, mod.P)

    def setter(obj, name):
        return lambda new: setattr(obj, name, new)

    def cell(new):
        closure.__closure__[0].cell_contents = new

    def default(fn):
        return lambda new: setattr(fn, "__defaults__", (new,))

    return {
        "global": Source(mod.f_global, lambda: mod.A, setter(mod, "A")),
        "view": Source(mod.f_view, lambda: mod.T),  # the array a residual view T[1] shares
        "zero_d": Source(mod.f_zero_d, lambda: mod.Z, setter(mod, "Z")),
        "closure": Source(closure, lambda: closure.__closure__[0].cell_contents, cell),
        "self": Source(model.loss, lambda: model.w, setter(model, "w")),
        "partial": Source(partial, lambda: partial.args[0]),  # (a partial's arguments cannot be rebound)
        "helper_default": Source(mod.f_helper_default, lambda: mod.helper.__defaults__[0], default(mod.helper)),
        "default": Source(mod.f_default, lambda: mod.f_default.__defaults__[0], default(mod.f_default)),
        "default_list": Source(mod.f_default_list, lambda: mod.f_default_list.__defaults__[0][0],
                               lambda new: mod.f_default_list.__defaults__[0].__setitem__(0, new)),
    }


def change(src, how, values):
    """Change the array ``src`` reads: ``how`` is in place (``*=``, ``[...] =``), a slice assignment
    (``[1:] =``) or a rebinding of the name to a new array; returns the undo."""
    arr = src.get()
    old = arr.copy()
    if how == "rebind" and src.rebind is not None:
        src.rebind(np.asarray(values, dtype=float)[:arr.size].reshape(arr.shape))
        return lambda: src.rebind(arr)
    if how == "multiply":
        arr *= 3.0
    elif how == "slice" and arr.ndim:
        arr[1:] = np.asarray(values, dtype=float).reshape(-1)[:arr[1:].size].reshape(arr[1:].shape)
    else:
        arr[...] = np.asarray(values, dtype=float).reshape(-1)[:arr.size].reshape(arr.shape)

    def undo():
        arr[...] = old
    return undo


NAMES = ["global", "view", "zero_d", "closure", "self", "partial", "helper_default", "default", "default_list"]
HOWS = ["multiply", "fill", "slice", "rebind"]
values = st.lists(st.floats(-2.0, 2.0, allow_nan=False).filter(lambda v: abs(v) > 0.1), min_size=6, max_size=6)
points = st.lists(st.floats(-1.5, 1.5, allow_nan=False), min_size=3, max_size=3).map(np.array)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(NAMES), st.sampled_from(HOWS), values, points)
def test_pullback_is_the_derivative_at_the_forward_values(mod, name, how, new, x):
    src = sources(mod)[name]
    fn = src.fn
    want = central_differences(lambda v: fn(v), x)  # at the values the forward call will see
    value, pullback = astad.reverse(fn)(x)
    undo = change(src, how, new)
    try:
        (got,) = pullback(1.0)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{name}, changed by {how}")
        np.testing.assert_array_equal(pullback(1.0)[0], got)  # and again: the pullback keeps its values
        # the next call differentiates the function as it is now
        value2, pullback2 = astad.reverse(fn)(x)
        assert value2 == pytest.approx(fn(x), rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(pullback2(1.0)[0], central_differences(lambda v: fn(v), x), rtol=1e-6,
                                   atol=1e-6, err_msg=f"{name} after the change")
    finally:
        undo()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(NAMES), st.sampled_from(HOWS), values, points, points)
def test_modes_agree_and_keep_their_values(mod, name, how, new, x, v):
    """grad, value_and_grad, vjp's pullback and jvp agree (<grad, v> = jvp's tangent); the pullback of
    vjp and of vjp of grad (reverse over reverse, against hvp: forward over reverse) after a change
    give what they gave before it; forward mode's pushforward refuses to run after the change (of a
    parameter's default, it holds a copy: it gives the tangent at the call's values)."""
    src = sources(mod)[name]
    fn = src.fn
    g = astad.grad(fn)(x)
    value, vg = astad.value_and_grad(fn)(x)
    _, pullback = astad.vjp(fn, x)
    _, tangent = astad.jvp(fn, (x,), (v,))
    np.testing.assert_allclose(vg, g, rtol=1e-12, atol=1e-12)
    assert value == pytest.approx(fn(x), rel=1e-12, abs=1e-12)
    assert float(np.dot(g, v)) == pytest.approx(float(tangent), rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(central_differences(lambda t: fn(t), x), g, rtol=1e-6, atol=1e-6)
    hv = astad.hvp(fn, (x,), (v,))[0]
    _, second = astad.vjp(astad.grad(fn), x)
    _, pushforward = astad.forward(fn)(x)
    undo = change(src, how, new)
    try:
        np.testing.assert_allclose(pullback(1.0)[0], g, rtol=1e-12, atol=1e-12, err_msg=f"{name}, {how}")
        np.testing.assert_allclose(second(v)[0], hv, rtol=1e-9, atol=1e-9, err_msg=f"{name}, {how}: vjp of grad")
        try:  # correct or refused: a global changed is refused, a parameter's default was copied at the call
            pushed = pushforward(v)
        except AstadError as e:
            assert "changed between the call and the pushforward" in str(e)
        else:
            assert name in ("default", "default_list"), f"{name}: a pushforward after a change is not refused"
            assert float(pushed) == pytest.approx(float(np.dot(g, v)), rel=1e-9, abs=1e-9)
    finally:
        undo()


def test_generated_code_takes_the_array_from_the_residuals(tmp_path):
    """The backward function unpacks the array from its residuals, by the user's name; a number
    (a float, a numpy scalar) is read as a global, as before; a read-only array is copied too (the
    array owning its memory may be made writeable again and changed)."""
    mod = load_program("import numpy as np\n"
                       "R = np.array([0.5, 1.5, -1.0])\nR.flags.writeable = False\n"
                       "K = 2.5\nS = np.float64(1.5)\n"
                       "def f(x):\n    return np.sum(R * x * x) * K * S\n", tmp_path, "readonly")
    x = np.array([0.1, -0.2, 0.3])
    _, pullback = astad.reverse(mod.f)(x)
    source = astad.reverse(mod.f).source
    forward, backward = source.split("def f_backward")
    assert forward.rstrip().endswith(", (x, R, t1)")
    assert "    x, R, t1 = residuals\n" in backward
    assert " * S\n" in backward and " * K\n" in backward  # numbers: globals, never residuals
    want = 2 * mod.R * x * 2.5 * 1.5
    assert pullback._residuals[1] is not mod.R
    mod.R.flags.writeable = True
    mod.R[...] = 9.0
    np.testing.assert_allclose(pullback(1.0)[0], want, rtol=1e-12)


def test_which_constant_arrays_could_change():
    a = np.arange(4.0)
    ro = np.arange(4.0)
    ro.flags.writeable = False
    view = a[1:]
    view.flags.writeable = False  # read-only, but its base is not
    assert fresh.changeable_owners([a]) == {id(a)}
    assert fresh.changeable_owners([ro]) == {id(ro)}  # (ro.flags.writeable = True is allowed)
    assert fresh.changeable_owners([view]) == {id(a)}
    immutable = np.frombuffer(b"\x00" * 32)  # bytes' memory: nothing changes it
    assert fresh.changeable_owners([immutable, immutable[1:]]) == set()
    shared = bytearray(32)  # read-only, but the bytearray is not
    ro_view = np.frombuffer(shared)
    ro_view.flags.writeable = False
    assert fresh.changeable_owners([ro_view]) == fresh.owners(ro_view) != set()


def test_a_recursion_copies_a_constant_once(tmp_path):
    """A recursion's generated functions each return the array in their residuals: one copy per call."""
    mod = load_program('''
import numpy as np
W = np.array([[0.5, -0.2], [0.1, 0.3]])


def node(t):
    if isinstance(t, tuple):
        return np.tanh(W @ (node(t[0]) + node(t[1])))
    return t


def loss(t):
    return np.sum(node(t) ** 2)
''', tmp_path, "tree")
    rng = np.random.default_rng(0)

    def tree(d):
        return rng.normal(size=2) if d == 0 else (tree(d - 1), tree(d - 1))

    t = tree(5)
    want = astad.grad(mod.loss)(t)
    _, pullback = astad.reverse(mod.loss)(t)
    mod.W[...] = 9.0
    got = pullback(1.0)[0]
    flat = lambda s: [s] if not isinstance(s, tuple) else [v for p in s for v in flat(p)]  # noqa: E731
    for a, b in zip(flat(got), flat(want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    copies = {id(r) for r in _arrays(pullback._residuals) if r.shape == (2, 2)}
    assert len(copies) == 1 and all(r is not mod.W for r in _arrays(pullback._residuals))


def _arrays(value):
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    return []


NAMED_LIKE_GENERATED = '''
import numpy as onp
np = onp.array([0.5, -1.0, 2.0])
residuals = onp.array([0.1, 0.2, 0.3])
out_ct = onp.array([1.1, 0.9, -0.7])
t1 = onp.array([0.3, 0.6, 0.9])
x_ct = onp.array([-0.4, 0.8, 0.2])
sum_to_shape = onp.array([0.25, -0.5, 1.5])
f_backward = onp.array([0.6, 0.4, -0.3])


def rec(x, n):
    if n == 0:
        return x * np * residuals
    return onp.sin(rec(x, n - 1) * out_ct + t1)


def f(x):
    return onp.sum(rec(x, 2) * x_ct) + onp.sum(sum_to_shape * f_backward * x * x)
'''


def test_constants_named_like_generated_names(tmp_path):
    """Module-level arrays named like numpy (another module is numpy here), the residuals, the output
    cotangent, a temporary, a cotangent, a helper, a generated function: the backward unpacks them
    by names of their own, and reads the forward's values after they change."""
    mod = load_program(NAMED_LIKE_GENERATED, tmp_path, "named_like")
    x = np.array([0.3, -0.4, 1.1])
    want = central_differences(mod.f, x)
    _, pullback = astad.reverse(mod.f)(x)
    for name in ("np", "residuals", "out_ct", "t1", "x_ct", "sum_to_shape", "f_backward"):
        getattr(mod, name)[...] = 5.0
    np.testing.assert_allclose(pullback(1.0)[0], want, rtol=1e-6, atol=1e-9)


def test_a_read_only_memmap_changed_through_another(tmp_path):
    """A read-only memmap's file written through a second, writeable memmap of it: copied."""
    path = tmp_path / "w.dat"
    np.array([0.5, -1.0, 2.0]).tofile(path)
    mod = load_program(f"import numpy as np\nM = np.memmap({str(path)!r}, dtype=np.float64, mode='r')\n"
                       "def f(x):\n    return np.sum(M * np.sin(x) * x)\n", tmp_path, "memmap")
    x = np.array([0.3, -0.4, 1.1])
    want = central_differences(mod.f, x)
    _, pullback = astad.reverse(mod.f)(x)
    writer = np.memmap(path, dtype=np.float64, mode="r+")
    writer[...] = 7.0
    writer.flush()
    assert np.all(mod.M == 7.0)
    np.testing.assert_allclose(pullback(1.0)[0], want, rtol=1e-6, atol=1e-9)


def test_a_constant_only_the_forward_reads_is_no_residual(tmp_path):
    mod = load_program("import numpy as np\nA = np.array([0.5, -1.0, 2.0])\n"
                       "def f(x):\n    return np.sum(np.sin(x)) * np.sum(A) + np.sum(A * A)\n", tmp_path, "fwd_only")
    x = np.array([0.3, -0.4, 1.1])
    _, pullback = astad.reverse(mod.f)(x)
    assert all(r is not mod.A and (not isinstance(r, np.ndarray) or r.shape != (3,) or not np.array_equal(r, mod.A))
               for r in pullback._residuals)
    backward = astad.reverse(mod.f).source.split("def f_backward")[1]
    code = [line for line in backward.splitlines()[2:] if not line.lstrip().startswith("#")]
    assert code[0] == "    x, t3 = residuals" and not any("A" in line for line in code)


def test_second_order_after_a_change(mod):
    """hessian and jacrev/jacfwd of grad read the global as it is at each call; vjp of grad keeps its values."""
    x = np.array([0.3, -0.4, 1.1])
    g = astad.grad(mod.f_global)
    old = mod.A.copy()
    try:
        for step in range(2):
            want = np.array([(g(x + 1e-5 * e) - g(x - 1e-5 * e)) / 2e-5 for e in np.eye(3)])
            for h in (astad.hessian(mod.f_global), astad.jacrev(g), astad.jacfwd(g)):
                np.testing.assert_allclose(h(x), want, rtol=1e-6, atol=1e-8)
            _, pullback = astad.vjp(g, x)
            mod.A[...] = [1.5, 0.25, -0.75]
            u = np.array([1.0, -2.0, 0.5])
            np.testing.assert_allclose(pullback(u)[0], want.T @ u, rtol=1e-6, atol=1e-8)
    finally:
        mod.A[...] = old
