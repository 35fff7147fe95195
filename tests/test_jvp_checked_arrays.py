"""``astad.jvp`` of arrays on its fast path: after a call, the generated JVP compiled with checks
of that call's kinds at its top (astad.guards.guard_jvp, printed by astad.kind_checks) answers the
next call of the same kinds without a key.  A later call of other kinds (float32 for float64,
another shape, an ndarray subclass, a list, a tangent of the wrong shape or dtype, a tangent given
or not), or after a global, an inlined function's defaults or the function's code changed, must
not run that code: every tangent here is checked against central finite differences in float64,
every refusal is the one the slow path gives (naming the parameter)."""

from __future__ import annotations

import pickle
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from astad import api_forward
from astad.errors import AstadError, AstadTypeError

SCALE = 1.5


def helper(v, k=2.0):
    return v * k


def loss(x, w):
    return np.sum(np.sin(x) * helper(w)) * SCALE / x.shape[0]


def other(x, w):
    return np.sum(np.tanh(x * w))


class Sub(np.ndarray):
    pass


def fd(fn, args, tangents, eps=1e-6):
    """The central difference in float64 (at the float64 values of float32 arguments)."""
    args = [np.asarray(a, dtype=np.float64) for a in args]
    plus = [a if t is None else a + eps * np.asarray(t, dtype=np.float64) for a, t in zip(args, tangents)]
    minus = [a if t is None else a - eps * np.asarray(t, dtype=np.float64) for a, t in zip(args, tangents)]
    return (fn(*plus) - fn(*minus)) / (2 * eps)


def check(fn, args, tangents):
    value, tangent = astad.jvp(fn, args, tangents)
    f32 = any(getattr(a, "dtype", None) == np.float32 for a in args)
    rel = 1e-4 if f32 else 1e-9
    assert value == pytest.approx(fn(*args), rel=rel)
    assert tangent == pytest.approx(fd(fn, args, tangents), rel=1e-4 if f32 else 1e-6, abs=1e-7)


@pytest.fixture
def keys(monkeypatch):
    """The number of calls that were keyed (the fast path keys none)."""
    count = [0]
    original = api_forward.fast_key

    def counted(*a):
        count[0] += 1
        return original(*a)

    monkeypatch.setattr(api_forward, "fast_key", counted)
    return count


def _args(rng, kind):
    """Arguments and tangents of a kind, and what the call must raise (None: a JVP to check)."""
    shape, dtype = {"f64_3": ((3,), np.float64), "f64_4": ((4,), np.float64), "f64_2x3": ((2, 3), np.float64),
                    "f32_3": ((3,), np.float32)}.get(kind, ((3,), np.float64))
    x, w = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape[-1:]).astype(dtype)
    tx, tw = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape[-1:]).astype(dtype)
    if kind == "unpickled":  # (dtype: an object of its own, of the same kind)
        return pickle.loads(pickle.dumps((x, w))), pickle.loads(pickle.dumps((tx, tw))), None
    if kind == "big_endian":  # (the dtype.num of float64, in the other byte order; the tangent's is native)
        return (x.astype(x.dtype.newbyteorder()), w), (tx, tw), None
    if kind == "x_only":
        return (x, w), (tx, None), None
    if kind == "w_only":
        return (x, w), (None, tw), None
    if kind == "subclass":
        return (x.view(Sub), w), (tx, tw), "`x`"
    if kind == "list":
        return (list(x), w), (list(tx), tw), "list"
    if kind == "tangent_shape":
        return (x, w), (tx, rng.standard_normal(4)), "`w`"
    if kind == "tangent_dtype":
        return (x, w), (tx.astype(np.float32), tw), "`x`"
    return (x, w), (tx, tw), None


KINDS = ["f64_3", "f64_4", "f64_2x3", "f32_3", "unpickled", "big_endian", "x_only", "w_only", "subclass", "list",
         "tangent_shape", "tangent_dtype"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(KINDS), min_size=2, max_size=10), st.integers(0, 2**16))
def test_calls_of_changing_kinds_agree_with_fd(calls, seed):
    rng = np.random.default_rng(seed)
    for kind in calls:
        for _ in range(2):  # the second of the same kinds: through the checked code
            args, tangents, refused = _args(rng, kind)
            if refused is None:
                check(loss, args, tangents)
            else:
                with pytest.raises(AstadTypeError, match=refused):
                    astad.jvp(loss, args, tangents)


def test_the_second_call_of_the_same_kinds_is_not_keyed(keys):
    rng = np.random.default_rng(0)
    args, tangents, _ = _args(rng, "f64_3")
    check(loss, args, tangents)
    check(loss, args, tangents)
    before = keys[0]
    for _ in range(3):
        args, tangents, _ = _args(rng, "f64_3")  # new arrays of the same kinds
        check(loss, args, tangents)
    assert keys[0] == before
    f32, t32, _ = _args(rng, "f32_3")
    check(loss, f32, t32)  # other kinds: keyed, then checked code of their own
    check(loss, f32, t32)
    before = keys[0]
    check(loss, f32, t32)
    assert keys[0] == before


def test_calls_of_another_function_between(keys):
    """Each function's latest checked code is tried after the other's (no key), and each is right."""
    rng = np.random.default_rng(1)
    for _ in range(2):
        for fn in (loss, other):
            check(fn, *_args(rng, "f64_3")[:2])
    before = keys[0]
    for _ in range(3):
        for fn in (loss, other):
            check(fn, *_args(rng, "f64_3")[:2])
    assert keys[0] == before


def test_a_shape_changed_in_place_misses_the_checks():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(4), rng.standard_normal(2)
    tx, tw = rng.standard_normal(4), rng.standard_normal(2)
    for _ in range(3):
        with pytest.raises(AstadError):  # (4,) * (2,) does not broadcast
            astad.jvp(loss, (x, w), (tx, tw))
    x.shape, tx.shape = (2, 2), (2, 2)
    for _ in range(3):
        check(loss, (x, w), (tx, tw))  # divided by 2, not 4
    x.shape, tx.shape = (4,), (4,)
    w4, tw4 = rng.standard_normal(4), rng.standard_normal(4)
    for _ in range(2):
        check(loss, (x, w4), (tx, tw4))


def test_a_global_and_an_inlined_default_changed_are_seen():
    global SCALE
    rng = np.random.default_rng(3)
    args, tangents, _ = _args(rng, "f64_3")
    for _ in range(3):
        check(loss, args, tangents)
    old, defaults = SCALE, helper.__defaults__
    try:
        SCALE = -3.0
        for _ in range(3):
            check(loss, args, tangents)
        helper.__defaults__ = (0.25,)
        for _ in range(3):
            check(loss, args, tangents)
    finally:
        SCALE, helper.__defaults__ = old, defaults
    check(loss, args, tangents)


def first(x):
    return np.sum(x * x)


def second(x):
    return np.sum(np.sin(x))


def test_code_replaced_is_seen():
    fn = types.FunctionType(first.__code__, globals(), "first")
    x, tx = np.linspace(0.1, 1.0, 5), np.ones(5)
    for _ in range(3):
        check(fn, (x,), (tx,))
    fn.__code__ = second.__code__
    for _ in range(3):
        check(fn, (x,), (tx,))
        assert astad.jvp(fn, (x,), (tx,))[0] == pytest.approx(second(x))


def ident(x):
    return x


def view(x):
    return x[1:]


@pytest.mark.parametrize("fn", [ident, view])
def test_the_tangent_owns_its_memory(fn):
    x, tx = np.arange(4.0), np.ones(4)
    for _ in range(3):
        value, tangent = astad.jvp(fn, (x, ), (tx,))
        assert not np.shares_memory(tangent, tx) and not np.shares_memory(tangent, x)
        np.testing.assert_array_equal(tangent, fn(tx))
    tangent[...] = 7.0  # the caller's: the next call's tangent is still right
    np.testing.assert_array_equal(astad.jvp(fn, (x,), (tx,))[1], fn(tx))
    np.testing.assert_array_equal(tx, np.ones(4))


def test_the_printed_check_of_an_array():
    """Only an exact ndarray of the shape and dtype (numpy's own dtype object, or one equal to it)."""
    from astad import kind_checks

    x = np.zeros((2, 3))
    check = kind_checks.compiled({"args": [api_forward._leaf_key(x)]}, api_forward._PLAIN, (), "<test>")
    assert check((x,)) and check((np.ones((2, 3)),)) and check((pickle.loads(pickle.dumps(x)),))
    for other in (x.astype(np.float32), x.reshape(3, 2), x.reshape(6), x.view(Sub), x.tolist(),
                  x.astype(x.dtype.newbyteorder()), np.zeros((2, 3), np.int64)):
        assert not check((other,))
    assert not check(()) and not check((x, x))
    i = np.zeros(2, np.int64)
    check = kind_checks.compiled({"args": [api_forward._leaf_key(i)]}, api_forward._PLAIN, (), "<test>")
    assert check((np.ones(2, np.int64),)) and check((pickle.loads(pickle.dumps(i)),))
    for other in (np.zeros(2, np.longlong), np.zeros(2, np.intc), i.astype(i.dtype.newbyteorder())):
        assert check((other,)) == (api_forward._leaf_key(other) == api_forward._leaf_key(i) and other.dtype.isnative)


G = np.array([0.5, -1.0, 2.0])


def with_global(x):
    return np.sum(np.sin(x) * G)


def test_a_global_array_changed_in_place_is_read_as_it_is_now():
    x, tx = np.array([0.1, 0.2, 0.3]), np.array([1.0, -0.5, 0.25])
    old = G.copy()
    try:
        for scale in (1.0, 1.0, -2.0, -2.0, 3.0):
            G[...] = old * scale
            check(with_global, (x,), (tx,))
    finally:
        G[...] = old


def pair_out(x, w):
    return x * w, (w[0] * x, np.sum(x))


def test_a_tuple_of_arrays_returned_owns_its_memory():
    x, w = np.arange(3.0), np.array([2.0, 3.0, 4.0])
    tx, tw = np.ones(3), np.zeros(3)
    for _ in range(3):
        value, (t0, (t1, t2)) = astad.jvp(pair_out, (x, w), (tx, tw))
        np.testing.assert_allclose(t0, fd(lambda a, b: pair_out(a, b)[0], (x, w), (tx, tw)))
        np.testing.assert_allclose(t1, fd(lambda a, b: pair_out(a, b)[1][0], (x, w), (tx, tw)))
        assert t2 == pytest.approx(3.0)
        for t in (t0, t1):
            assert not any(np.shares_memory(t, a) for a in (x, w, tx, tw))
        assert not np.shares_memory(t0, t1)


def shadowing(type, len):
    return type * len + type


def shadowing_arrays(type, ndarray):
    return np.sum(type * ndarray) + np.sum(type)


def test_parameters_named_as_the_checks_builtins():
    """The checks name ``type``, ``len`` and ``ndarray`` by names of their own (a parameter of the
    generated code, the user's, may be called so: once it was read as the builtin's and failed)."""
    for _ in range(3):
        check(shadowing, (2.0, 3.0), (1.0, 0.5))
        assert astad.grad(shadowing, (0, 1))(2.0, 3.0) == pytest.approx((4.0, 2.0))
    x, y = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    for _ in range(3):
        check(shadowing_arrays, (x, y), (np.ones(2), np.array([0.5, 0.25])))
