"""Recursion over trees of nested tuples (balanced, unbalanced, depth 0..6):
gradients, JVPs and Hessian-vector products against central finite
differences; and the transformation's work grows with the number of distinct
subtree types (one per depth for a balanced tree), not with the number of
nodes: a call whose arguments are the same when transforming as an earlier
call's is replayed (astad/frontend/replay.py), not lowered again."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import astad
from astad.frontend import statements

K = 3  # leaves are K-vectors


def node(t, W, b):
    """A dense layer at each inner node (named intermediates, a constant, a leaf passed on unchanged)."""
    if isinstance(t, tuple):
        left = node(t[0], W, b)
        right = node(t[1], W, b)
        h = W @ np.concatenate([left, right]) + b
        return np.tanh(h) + 0.1 * left
    return t


def tree_loss(W, b, tree):
    return np.sum(node(tree, W, b) ** 2)


def pair_node(t, W):
    """A tuple result: the recursion carries (value, count of leaves as a float)."""
    if isinstance(t, tuple):
        (a, na), (c, nc) = pair_node(t[0], W), pair_node(t[1], W)
        return np.sin(W @ (a * nc) + c * na), na + nc
    return t, 1.0


def pair_loss(W, tree):
    v, n = pair_node(tree, W)
    return np.sum(v) / n


def updating_node(t, W):
    """An in-place update in the body: such a call is lowered at each node, never replayed."""
    if isinstance(t, tuple):
        h = W[:, :K] @ updating_node(t[0], W)
        h += W[:, K:] @ updating_node(t[1], W)
        return np.cos(h)
    return t


def updating_loss(W, tree):
    return np.sum(updating_node(tree, W))


# --------------------------------------------------------------------------- trees


def balanced(rng, depth):
    if depth == 0:
        return rng.standard_normal(K)
    return (balanced(rng, depth - 1), balanced(rng, depth - 1))


def comb(rng, depth, left=True):
    """Unbalanced: a spine of ``depth`` inner nodes, each with one leaf."""
    if depth == 0:
        return rng.standard_normal(K)
    sub = comb(rng, depth - 1, left)
    leaf = rng.standard_normal(K)
    return (sub, leaf) if left else (leaf, sub)


def shaped(rng, shape):
    """A tree of the shape ``shape`` (None: a leaf; a pair: an inner node)."""
    if shape is None:
        return rng.standard_normal(K)
    return (shaped(rng, shape[0]), shaped(rng, shape[1]))


def shape_of(tree):
    return None if not isinstance(tree, tuple) else (shape_of(tree[0]), shape_of(tree[1]))


SHAPES = st.recursive(st.none(), lambda sub: st.tuples(sub, sub), max_leaves=24)


def _depth(shape):
    return 0 if shape is None else 1 + max(_depth(shape[0]), _depth(shape[1]))


# --------------------------------------------------------------------------- oracle


def _leaves(x):
    if isinstance(x, tuple):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _rebuild(x, it):
    if isinstance(x, tuple):
        return tuple(_rebuild(item, it) for item in x)
    return next(it)


def flat(args):
    return np.concatenate([np.ravel(np.asarray(a, dtype=float)) for a in _leaves(tuple(args))])


def unflat(args, v):
    out, k = [], 0
    for a in _leaves(tuple(args)):
        n = int(np.size(a))
        out.append(v[k:k + n].reshape(np.shape(a)) if np.ndim(a) else float(v[k]))
        k += n
    return _rebuild(tuple(args), iter(out))


def fd_grad(fn, args, eps=1e-6):
    x = flat(args)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (fn(*unflat(args, x + e)) - fn(*unflat(args, x - e))) / (2 * eps)
    return g


def fd_jvp(fn, args, tangents, eps=1e-6):
    x, v = flat(args), flat(tangents)
    return (np.asarray(fn(*unflat(args, x + eps * v))) - np.asarray(fn(*unflat(args, x - eps * v)))) / (2 * eps)


def params(rng):
    return rng.standard_normal((K, 2 * K)) * 0.4, rng.standard_normal(K) * 0.1


def check(fn, args, seed=0):
    """grad (reverse) and jvp (forward) against central finite differences, and ``<u, J v>`` agrees."""
    rng = np.random.default_rng(seed)
    np.testing.assert_allclose(astad.reverse(fn)(*args)[0], fn(*args), rtol=1e-12)
    grads = astad.grad(fn, argnums=tuple(range(len(args))))(*args)
    np.testing.assert_allclose(flat(grads), fd_grad(fn, args), rtol=1e-5, atol=1e-6)
    tangents = unflat(args, rng.standard_normal(flat(args).size))
    value, tangent = astad.jvp(fn, tuple(args), tuple(tangents))
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    np.testing.assert_allclose(tangent, fd_jvp(fn, args, tangents), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tangent, flat(grads) @ flat(tangents), rtol=1e-9, atol=1e-10)


# --------------------------------------------------------------------------- derivatives


@pytest.mark.parametrize("depth", range(7))
def test_balanced_trees(depth):
    rng = np.random.default_rng(depth)
    check(tree_loss, (*params(rng), balanced(rng, depth)), depth)


@pytest.mark.parametrize("depth, left", [(1, True), (3, False), (5, True), (6, False), (13, True)])
def test_unbalanced_trees(depth, left):
    rng = np.random.default_rng(10 + depth)
    check(tree_loss, (*params(rng), comb(rng, depth, left)), depth)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPES, st.integers(0, 2 ** 16))
def test_trees_of_any_shape(shape, seed):
    rng = np.random.default_rng(seed)
    check(tree_loss, (*params(rng), shaped(rng, shape)), seed)


@pytest.mark.parametrize("depth", [0, 2, 4])
def test_a_tuple_result(depth):
    rng = np.random.default_rng(depth)
    W = params(rng)[0][:, :K]
    check(pair_loss, (W, comb(rng, depth) if depth % 4 else balanced(rng, depth)))


@pytest.mark.parametrize("depth", [1, 3])
def test_an_in_place_update_in_the_body(depth):
    rng = np.random.default_rng(depth)
    check(updating_loss, (params(rng)[0], balanced(rng, depth)))


def test_the_same_leaf_twice():
    """Two subtrees that are the same variable: a key says which arguments are the same variable."""
    rng = np.random.default_rng(3)
    W, b = params(rng)
    x, y = rng.standard_normal(K), rng.standard_normal(K)

    def shared(W, b, x, y):
        return tree_loss(W, b, (((x, y), (x, x)), ((y, x), (x, y))))

    check(shared, (W, b, x, y))


def test_hessian_vector_product():
    """Forward over reverse through the recursion: ``H v`` against finite differences of the gradient."""
    rng = np.random.default_rng(5)
    W, b = params(rng)
    tree = balanced(rng, 3)
    vW, vb = rng.standard_normal(W.shape), rng.standard_normal(b.shape)
    got = astad.hvp(tree_loss, (W, b, tree), (vW, vb, None))
    eps = 1e-5
    g = astad.grad(tree_loss, argnums=(0, 1))
    plus, minus = g(W + eps * vW, b + eps * vb, tree), g(W - eps * vW, b - eps * vb, tree)
    for k in range(2):
        np.testing.assert_allclose(got[k], (plus[k] - minus[k]) / (2 * eps), rtol=1e-5, atol=1e-6)
    assert got[2] is None


# --------------------------------------------------------------------------- work


def bodies_lowered(monkeypatch, fn, args, mode=astad.reverse):
    """How many function bodies the frontend lowers to transform ``fn`` at ``args``."""
    count = [0]
    lower_body = statements.Statements.lower_body

    def counting(self, fd):
        count[0] += 1
        return lower_body(self, fd)

    monkeypatch.setattr(statements.Statements, "lower_body", counting)
    astad.clear_caches(disk=False)
    mode(fn).transform(*args)
    return count[0]


@pytest.mark.parametrize("depth, mode", [(3, astad.reverse), (8, astad.reverse), (8, astad.forward)])
def test_work_grows_with_depth_not_nodes(monkeypatch, depth, mode):
    """A balanced tree of depth d has 2^(d+1) - 1 nodes but d + 1 kinds of subtree: each kind's first
    call is lowered (and recorded), the others replayed; plus the root function; in either mode."""
    rng = np.random.default_rng(0)
    n = bodies_lowered(monkeypatch, tree_loss, (*params(rng), balanced(rng, depth)), mode)
    assert n == depth + 1 + 1


def test_work_of_an_unbalanced_tree(monkeypatch):
    """Each inner node of a comb is a kind of its own, its d + 1 leaves one kind: d + 1 bodies of the
    2d + 1 calls lowered, plus the root function."""
    rng = np.random.default_rng(0)
    n = bodies_lowered(monkeypatch, tree_loss, (*params(rng), comb(rng, 5)))
    assert n == 5 + 1 + 1


def test_an_update_is_lowered_at_every_node(monkeypatch):
    """A body with an in-place update is lowered at each of the 7 inner nodes of a tree of depth 3; the
    8 leaves (no update) once; plus the root function."""
    rng = np.random.default_rng(0)
    n = bodies_lowered(monkeypatch, updating_loss, (params(rng)[0], balanced(rng, 3)))
    assert n == 7 + 1 + 1


# --------------------------------------------------------------------------- replayed calls and memory


def tail(x):
    return x[1:]


def scaled(x):
    y = x * 2.0
    return y, y[:2]


def update_a_replayed_view(a):
    """The second `tail` is replayed: its result is a view of `z`, so `v += 1.0` changes `z` too."""
    y = np.sin(a)
    v1 = tail(y)
    z = np.cos(a)
    v = tail(z)
    v += 1.0
    return np.sum(v1 * v) + np.sum(z * z)


def update_a_replayed_fresh_array(a):
    y, w = scaled(np.sin(a))
    z, u = scaled(np.cos(a))
    u += 1.0  # a view of z, made by the replayed call
    z += a
    return np.sum(y * z) + np.sum(w * u)


def update_an_argument_through_a_replay(a, b):
    p = tail(a)
    q = tail(b)
    return np.sum(p * q)


@pytest.mark.parametrize("fn, n, refused", [
    (update_a_replayed_view, 1, True), (update_a_replayed_fresh_array, 1, True),
    (update_an_argument_through_a_replay, 2, False)], ids=lambda a: getattr(a, "__name__", ""))
def test_a_replayed_call_shares_memory_as_lowered(fn, n, refused):
    """A replayed call's result is a view of what it was given, as a lowered one's: an update of it while
    the base is still read is refused (never a silent copy); values and cotangents are Python's."""
    from conftest import Refused, check_correct_or_refused

    rng = np.random.default_rng(7)
    args = [rng.standard_normal(5) for _ in range(n)]
    if refused:
        with pytest.raises(Refused, match="shares its memory"):
            check_correct_or_refused(fn, args)
    else:
        check_correct_or_refused(fn, args)


def first_times_sum(a, s):
    return s[0] * np.sum(a)


def two_slices(x):
    """``s[0]`` of a slice ``s = a[2:]`` is read as ``a[2]`` (the slice's binding read): the second call,
    whose ``s`` is ``a[1:-1]``, of the same types, must not reuse the first's lowering."""
    return first_times_sum(x, x[2:]) + 2.0 * first_times_sum(x, x[1:-1])


def test_a_call_that_reads_how_its_argument_was_made_is_not_replayed():
    from conftest import check_grad

    x = np.linspace(0.5, 2.0, 6)
    value, _ = check_grad(two_slices, [x])
    assert value == pytest.approx(two_slices(x))
