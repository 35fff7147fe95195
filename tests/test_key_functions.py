"""A recursion's calls made functions of their own in reverse mode (astad/frontend/replay.py
``as_function``, astad/ad/calls.py, astad/key_functions.py): the generated code calls one pair
of functions per static key (``node_1_forward``, ``node_1_backward``) instead of inlining every
call.  Derivatives against central finite differences (every float leaf of every argument, the
tree's leaves too), forward against reverse, Hessians; the stages' IR interpreted against the
generated code; trees of several shapes and depths, calls at many sites, helpers called twice,
closures, in-place updates after such a call.  Most tests lower ``MIN_BINDS`` so that the small
trees here make functions (``small_functions``); one keeps the default."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import astad
from astad.frontend import replay
from conftest import Refused, central_differences, check_correct_or_refused, fuzz_examples

K = 2  # leaves are K-vectors


@pytest.fixture
def small_functions(monkeypatch):
    """Every qualifying call a function, however small its body."""
    monkeypatch.setattr(replay, "MIN_BINDS", 1)
    astad.clear_caches(disk=False)
    yield
    astad.clear_caches(disk=False)


def node(t, W, b):
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([node(t[0], W, b), node(t[1], W, b)]) + b)
    return t


def loss(W, b, tree):
    return np.sum(node(tree, W, b) ** 2)


def helper(x, W):
    return np.sin(W @ x)


def node_with_helper(t, W):
    """A helper called twice with the same types in each node."""
    if isinstance(t, tuple):
        a, c = node_with_helper(t[0], W), node_with_helper(t[1], W)
        return helper(np.concatenate([a, c]), W) * helper(np.concatenate([c, a]), W)
    return t


def helper_loss(W, tree):
    return np.sum(node_with_helper(tree, W))


def scalar_node(t, w):
    """A 0-d numpy result at each node."""
    if isinstance(t, tuple):
        return np.tanh(w * scalar_node(t[0], w) + scalar_node(t[1], w) * w[0])
    return np.sum(t * w)


def scalar_loss(w, tree):
    return scalar_node(tree, w) ** 2


def many_sites(W, b, t1, t2, t3):
    """The recursion called at many places on trees of the same shape, and of another."""
    y = node(t1, W, b) + node(t2, W, b) * node(t1, W, b)
    return np.sum(y * node(t3, W, b)) + np.sum(node((t1, t2), W, b))


def update_after(W, b, tree):
    """In-place updates of what such a call returned."""
    h = node(tree, W, b)
    h *= 2.0
    h[0] = h[1] * 3.0
    g = node(tree[0], W, b)
    g += h
    return np.sum(g * h)


def closure_loss(W, b, tree):
    """The recursion reads W and b from the enclosing function (a closure)."""
    def rec(t):
        if isinstance(t, tuple):
            return np.tanh(W @ np.concatenate([rec(t[0]), rec(t[1])]) + b)
        return t
    return np.sum(rec(tree) ** 2)


def _leaf(rng):
    return rng.standard_normal(K)


def balanced(rng, depth):
    return _leaf(rng) if depth == 0 else (balanced(rng, depth - 1), balanced(rng, depth - 1))


def unequal(rng):
    """Subtrees of unequal depths: ((l, (l, l)), (((l, l), l), l))."""
    return ((_leaf(rng), (_leaf(rng), _leaf(rng))), (((_leaf(rng), _leaf(rng)), _leaf(rng)), _leaf(rng)))


def _weights(rng):
    return 0.5 * rng.standard_normal((K, 2 * K)), 0.1 * rng.standard_normal(K)


def _check(fn, args):
    """Value, arguments after the call, cotangents of every float leaf (central differences) and
    every stage's IR interpreted (tests/conftest.py); a refusal fails."""
    check_correct_or_refused(fn, args)


def _source(fn, *args):
    return astad.reverse(fn).transform(*args).source


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_balanced_trees(small_functions, depth):
    rng = np.random.default_rng(depth)
    W, b = _weights(rng)
    tree = balanced(rng, depth)
    _check(loss, [W, b, tree])
    if depth >= 2:
        source = _source(loss, W, b, tree)
        assert "node_1_forward(" in source and "node_1_backward(" in source


def test_unequal_depths(small_functions):
    rng = np.random.default_rng(7)
    W, b = _weights(rng)
    tree = unequal(rng)
    _check(loss, [W, b, tree])


def test_only_some_arguments_active(small_functions):
    """The leaves inactive (grad in W and b only): the functions' backward computes no leaf cotangent."""
    rng = np.random.default_rng(8)
    W, b = _weights(rng)
    tree = balanced(rng, 3)
    gW, gb = astad.grad(loss, argnums=(0, 1))(W, b, tree)
    np.testing.assert_allclose(gW, central_differences(lambda w: loss(w, b, tree), W), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, central_differences(lambda v: loss(W, v, tree), b), rtol=1e-6, atol=1e-8)
    # the same functions with the leaves active too: another variant of each
    _check(loss, [W, b, tree])


def test_calls_at_many_sites(small_functions):
    rng = np.random.default_rng(9)
    W, b = _weights(rng)
    t1, t2, t3 = balanced(rng, 2), balanced(rng, 2), balanced(rng, 2)
    _check(many_sites, [W, b, t1, t2, t3])


def test_helper_called_twice(small_functions):
    rng = np.random.default_rng(10)
    W = 0.5 * rng.standard_normal((K, 2 * K))
    tree = unequal(rng)
    _check(helper_loss, [W, tree])


def test_scalar_results(small_functions):
    rng = np.random.default_rng(11)
    w = rng.standard_normal(K)
    tree = balanced(rng, 3)
    _check(scalar_loss, [w, tree])


def test_in_place_updates_after_a_call(small_functions):
    rng = np.random.default_rng(12)
    W, b = _weights(rng)
    tree = balanced(rng, 3)
    _check(update_after, [W, b, tree])


def test_closures(small_functions):
    rng = np.random.default_rng(13)
    W, b = _weights(rng)
    tree = unequal(rng)
    try:
        _check(closure_loss, [W, b, tree])
    except Refused:  # correct or refused
        pass


def test_forward_against_reverse_and_hessian(small_functions):
    """jvp against the pullback (<J v, u> = <v, J^T u>, every argument the tree's leaves too), and the
    Hessian in b against central differences of the gradient."""
    rng = np.random.default_rng(14)
    W, b = _weights(rng)
    tree = unequal(rng)
    tangents = (rng.standard_normal(W.shape), rng.standard_normal(b.shape),
                _map_leaves(lambda x: rng.standard_normal(x.shape), tree))
    value, jv = astad.jvp(loss, (W, b, tree), tangents)
    assert value == pytest.approx(loss(W, b, tree), rel=1e-12)
    _, pullback = astad.reverse(loss)(W, b, tree)
    cts = pullback(1.0)
    want = sum(np.sum(c * t) for c, t in zip(_leaf_list(cts), _leaf_list(tangents)))
    assert jv == pytest.approx(want, rel=1e-8, abs=1e-12)
    hess = astad.hessian(loss, argnums=1)(W, b, tree)
    grad_b = astad.grad(loss, argnums=1)
    want_h = np.array([central_differences(lambda c: grad_b(W, c, tree)[i], b) for i in range(K)])
    np.testing.assert_allclose(hess, want_h, rtol=1e-5, atol=1e-6)


def _map_leaves(f, t):
    return tuple(_map_leaves(f, x) for x in t) if isinstance(t, tuple) else f(t)


def _leaf_list(t):
    return [y for x in t for y in _leaf_list(x)] if isinstance(t, tuple) else [t]


def test_generated_twice_the_same(small_functions):
    rng = np.random.default_rng(15)
    W, b = _weights(rng)
    tree = unequal(rng)
    first = _source(loss, W, b, tree)
    astad.clear_caches(disk=False)
    assert _source(loss, W, b, tree) == first


def test_default_size_deep_tree():
    """With the default MIN_BINDS: a tree of depth 7 has functions for its larger subtrees only."""
    astad.clear_caches(disk=False)
    rng = np.random.default_rng(16)
    W, b = _weights(rng)
    tree = balanced(rng, 7)
    source = _source(loss, W, b, tree)
    assert "node_1_forward(" in source
    gW, gb = astad.grad(loss, argnums=(0, 1))(W, b, tree)
    np.testing.assert_allclose(gb, central_differences(lambda v: loss(W, v, tree), b), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gW, central_differences(lambda w: loss(w, b, tree), W), rtol=1e-6, atol=1e-8)


def in_loop_and_branch(W, b, tree):
    """Calls inside a loop's body (their residuals on its tape) and inside a branch decided when running."""
    acc = np.zeros(K)
    for i in range(3):
        acc = acc + node(tree, W * (i + 1.0), b)
    if acc[0] > 0.0:
        acc = acc * node(tree, W, b)
    else:
        acc = acc - node(tree, W, b * 2.0)
    return np.sum(acc ** 2)


@pytest.mark.parametrize("seed", [17, 18])
def test_calls_in_loops_and_branches(small_functions, seed):
    rng = np.random.default_rng(seed)
    W, b = _weights(rng)
    tree = balanced(rng, 3)
    _check(in_loop_and_branch, [W, b, tree])
    assert "node_1_backward(" in _source(in_loop_and_branch, W, b, tree)


def gated_node(t, W, b):
    """A gate between the children (their product, a sign read when running) and a leaf transformed."""
    if isinstance(t, tuple):
        left, right = gated_node(t[0], W, b), gated_node(t[1], W, b)
        h = W @ np.concatenate([left * right, left - right]) + b
        return np.where(h > 0.0, h, 0.1 * h) + np.exp(-left * left)
    return np.sin(t) * b


def gated_loss(W, b, tree):
    out = gated_node(tree, W, b)
    return np.sum(out * gated_node(tree, W, b * 0.5))


SHAPES = st.recursive(st.just(0), lambda kids: st.tuples(kids, kids), max_leaves=12)


def _shaped(rng, shape):
    return _leaf(rng) if shape == 0 else tuple(_shaped(rng, s) for s in shape)


@settings(max_examples=fuzz_examples(6, long=15), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(SHAPES, st.sampled_from([1, 3, 8, 32]), st.sampled_from(["loss", "gated_loss", "helper_loss"]),
       st.integers(0, 2 ** 16))
def test_random_trees(monkeypatch, shape, min_binds, program, seed):
    """Trees of random shapes, node bodies and sizes from which a call is a function."""
    monkeypatch.setattr(replay, "MIN_BINDS", min_binds)
    astad.clear_caches(disk=False)
    rng = np.random.default_rng(seed)
    W, b = _weights(rng)
    tree = _shaped(rng, shape)
    args = [W, tree] if program == "helper_loss" else [W, b, tree]
    _check(globals()[program], args)


def fib(x, n):
    """A recursion on a known int: the calls of each n repeat at many places (not a tree of tuples)."""
    if n <= 1:
        return x * 1.5
    return np.sin(fib(x, n - 1)) * fib(x, n - 2) + x


def fib_loss(x):
    return np.sum(fib(x, 9))


@pytest.mark.parametrize("min_binds", [1, 32])
def test_recursion_on_an_int(monkeypatch, min_binds):
    monkeypatch.setattr(replay, "MIN_BINDS", min_binds)
    astad.clear_caches(disk=False)
    x = np.random.default_rng(19).standard_normal(3) * 0.5
    _check(fib_loss, [x])
    assert "fib_1_backward(" in _source(fib_loss, x)


def set_after(W, b, tree):
    """An element of a call's result set, the result then read again: the residuals the called
    function keeps (its tanh's value) must not see the update."""
    h = node(tree, W, b)
    h[0] = 5.0
    g = node(tree[1], W, b)
    g[1] = g[0] * h[1]
    return np.sum(h * np.tanh(h)) + np.sum(g * g)


def test_an_update_after_a_call_leaves_its_residuals(small_functions):
    rng = np.random.default_rng(20)
    W, b = _weights(rng)
    tree = balanced(rng, 3)
    _check(set_after, [W, b, tree])
    _, pullback = astad.reverse(set_after)(W, b, tree)
    first = pullback(1.0)
    second = pullback(1.0)
    for x, y in zip(_leaf_list(first), _leaf_list(second)):
        np.testing.assert_array_equal(x, y)
