"""astad.jvp's lookup by the last call's guard (astad/tree_guards.py): arguments that are trees of
tuples are checked by one printed function rather than keyed, hashed and compared.  A call
whose arguments differ from the last one's in any way the key records (a leaf's shape or
dtype, changed in place too; a tuple's length; a list for a tuple; a subclass; a tangent
given or not) must not reuse its derivative: each tangent here is checked against central
finite differences in float64, and the guards themselves against the key."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from astad import api_forward, tree_guards as guards
from astad.errors import AstadTypeError

SCALE = 1.5


def node(t, W, b):
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([node(t[0], W, b), node(t[1], W, b)]) + b)
    return t


def tree_loss(W, b, tree):
    return np.sum(node(tree, W, b)) * SCALE


def pair_loss(p, w):
    x, (y, s) = p
    return np.sum(np.sin(x * w) * y) + s * np.sum(w)


def _tree(rng, depth, n=3):
    return rng.standard_normal(n) if depth == 0 else (_tree(rng, depth - 1, n), _tree(rng, depth - 1, n))


def _shift(v, t, s):
    if isinstance(v, tuple):
        return tuple(_shift(a, b, s) for a, b in zip(v, t))
    return v if t is None else v + s * t


def fd(fn, args, tangents, eps=1e-6):
    plus = [_shift(a, t, eps) if t is not None else a for a, t in zip(args, tangents)]
    minus = [_shift(a, t, -eps) if t is not None else a for a, t in zip(args, tangents)]
    return (fn(*plus) - fn(*minus)) / (2 * eps)


def check(fn, args, tangents):
    value, tangent = astad.jvp(fn, args, tangents)
    assert value == pytest.approx(fn(*args), rel=1e-12)
    assert tangent == pytest.approx(fd(fn, args, tangents), rel=1e-6, abs=1e-8)


def _last(fn):
    return api_forward.forward_of(fn).table(api_forward._GUARDS).get(api_forward._LAST)


def test_a_tree_uses_its_guard_and_agrees_with_fd():
    rng = np.random.default_rng(0)
    W, b, tree = rng.standard_normal((3, 6)) * 0.5, rng.standard_normal(3), _tree(rng, 3)
    tangents = (rng.standard_normal((3, 6)), rng.standard_normal(3), None)
    for _ in range(3):
        check(tree_loss, (W, b, tree), tangents)
    assert _last(tree_loss) is not None  # the third call found its entry by the guard


def scaled_by_rows(p, w):
    x, y = p
    return np.sum(x * x * w) / x.shape[0] + np.sum(y)


def test_a_leaf_changed_in_place_misses_the_guard():
    """The same objects, a leaf of another shape: differentiated as what they are now
    (the code made for the old shape divides by 4, not by 2)."""
    rng = np.random.default_rng(1)
    x, y, w = rng.standard_normal(4), rng.standard_normal(3), 0.7
    p = (x, y)
    tangents = ((rng.standard_normal(4), rng.standard_normal(3)), 0.3)
    for _ in range(3):
        check(scaled_by_rows, (p, w), tangents)
    assert _last(scaled_by_rows) is not None
    x.shape = (2, 2)
    tangents = ((tangents[0][0].reshape(2, 2), tangents[0][1]), 0.3)
    for _ in range(2):
        check(scaled_by_rows, (p, w), tangents)
    x.shape = (4,)
    check(scaled_by_rows, (p, w), ((tangents[0][0].reshape(4), tangents[0][1]), 0.3))


@pytest.mark.parametrize("change", ["dtype", "length", "list", "subclass", "tangent", "scalar type"])
def test_what_the_key_records_misses_the_guard(change):
    rng = np.random.default_rng(2)
    x, y, w = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal(4)
    p = (x, (y, 0.5))
    tangents = ((rng.standard_normal(4), (rng.standard_normal(4), 0.25)), rng.standard_normal(4))
    for _ in range(3):
        check(pair_loss, (p, w), tangents)
    assert _last(pair_loss) is not None
    if change == "dtype":
        p2 = (x.astype(np.float32), (y, 0.5))
        with pytest.raises(AstadTypeError):  # the tangent's dtype is the argument's, checked again
            astad.jvp(pair_loss, (p2, w), tangents)
        t2 = ((tangents[0][0].astype(np.float32), tangents[0][1]), tangents[1])
        value, tangent = astad.jvp(pair_loss, (p2, w), t2)
        assert value == pytest.approx(pair_loss(p2, w), rel=1e-6)
        assert tangent == pytest.approx(fd(pair_loss, (p2, w), t2, eps=1e-3), rel=1e-3)
    elif change == "length":
        with pytest.raises(Exception):
            astad.jvp(pair_loss, ((x, (y, 0.5), y), w), tangents)
    elif change == "list":
        with pytest.raises(Exception):  # a list where the tangent is a tuple: refused, never the tuple's code
            astad.jvp(pair_loss, ([x, (y, 0.5)], w), tangents)
    elif change == "subclass":
        class Sub(np.ndarray):
            pass
        with pytest.raises(AstadTypeError):
            astad.jvp(pair_loss, ((x.view(Sub), (y, 0.5)), w), tangents)
    elif change == "tangent":
        check(pair_loss, (p, w), (tangents[0], None))
        check(pair_loss, (p, w), (None, tangents[1]))
    else:
        check(pair_loss, ((x, (y, np.float64(0.5))), w), tangents)
        check(pair_loss, ((x, (y, 2.0)), w), ((tangents[0][0], (tangents[0][1][0], 1.0)), tangents[1]))
    check(pair_loss, (p, w), tangents)  # and the first kinds again


def test_a_global_changed_is_seen_through_the_guard():
    global SCALE
    rng = np.random.default_rng(3)
    W, b, tree = rng.standard_normal((2, 4)) * 0.5, rng.standard_normal(2), _tree(rng, 2, n=2)
    tangents = (rng.standard_normal((2, 4)), rng.standard_normal(2), None)
    for _ in range(3):
        check(tree_loss, (W, b, tree), tangents)
    old = SCALE
    try:
        SCALE = np.float64(-3.0)  # another object: the derivative read the old one, and is made again
        for _ in range(3):
            check(tree_loss, (W, b, tree), tangents)
    finally:
        SCALE = old
    check(tree_loss, (W, b, tree), tangents)


def test_cleared_caches_forget_the_guard():
    rng = np.random.default_rng(4)
    W, b, tree = rng.standard_normal((2, 4)) * 0.5, rng.standard_normal(2), _tree(rng, 2, n=2)
    tangents = (rng.standard_normal((2, 4)), rng.standard_normal(2), None)
    for _ in range(3):
        check(tree_loss, (W, b, tree), tangents)
    astad.clear_caches(disk=False)
    assert _last(tree_loss) is None
    check(tree_loss, (W, b, tree), tangents)


def _values(rng, depth):
    """A random tree of tuples, arrays of a few shapes and dtypes, and scalars of a few types."""
    kind = rng.integers(0, 6) if depth else rng.integers(1, 6)
    if kind == 0:
        return tuple(_values(rng, depth - 1) for _ in range(rng.integers(0, 4)))
    if kind == 1:
        return rng.standard_normal(tuple(rng.integers(0, 3, size=rng.integers(0, 3))))
    if kind == 2:
        return rng.standard_normal(2).astype(np.float32)
    return [1.0, 2, True, np.float64(1.0), None][rng.integers(0, 5)]


def _copy(v):
    """New objects of the same kinds (a guard compares kinds, never identity)."""
    if isinstance(v, tuple):
        return tuple(_copy(x) for x in v)
    return v.copy() if isinstance(v, np.ndarray) else v


@pytest.mark.parametrize("seed", range(40))
def test_a_guard_passes_exactly_the_values_of_its_key(seed):
    rng = np.random.default_rng(seed)
    a, b = _values(rng, 3), _values(rng, 3)
    for x in (a, b):
        for y in (a, b, _copy(a), _copy(b)):
            guard = guards.guard_of((x, 1.0), (None, None), api_forward._PLAIN)
            kx, ky = api_forward.fast_key((x, 1.0), (None, None)), api_forward.fast_key((y, 1.0), (None, None))
            assert guard is not None
            assert kx is not None and guard((y, 1.0), (None, None)) == (kx == ky)
    assert guards.guard_of(([1.0],), (None, None), api_forward._PLAIN) is None  # a list: no guard
