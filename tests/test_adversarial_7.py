"""Adversarial tests of the reverse mode's key functions (a recursion over a tree made functions of
its own: astad/frontend/replay.py ``as_function``, astad/key_functions.py): the disk cache, two
programs and two shapes in one process, leaves of every numeric kind, node bodies with in-place
updates, loops, branches on shapes, globals rebound between calls, the pullback called twice or
after the arguments changed, partial activity, threads, every stage displayable, and the higher
derivatives (which inline).  Standard: correct or refused, never a wrong derivative."""

import itertools
import os
import threading

import numpy as np
import pytest

import astad
from astad import cachefiles
from astad.frontend import replay
from conftest import central_differences, check_correct_or_refused
from test_cache import load_module

K = 2
_ids = itertools.count()


@pytest.fixture
def small_functions(monkeypatch):
    monkeypatch.setattr(replay, "MIN_BINDS", 1)
    astad.clear_caches(disk=False)
    yield
    astad.clear_caches(disk=False)


def _entries(d):
    return sorted(p for p in (d / cachefiles.SUBDIR).glob("*.json") if cachefiles.ENTRY.match(p.name))


def balanced(rng, depth, leaf=None):
    leaf = leaf or (lambda: rng.standard_normal(K))
    return leaf() if depth == 0 else (balanced(rng, depth - 1, leaf), balanced(rng, depth - 1, leaf))


def _weights(rng, k=K):
    return 0.5 * rng.standard_normal((k, 2 * k)), 0.1 * rng.standard_normal(k)


def _grad_fd(fn, args, i):
    return central_differences(lambda x: fn(*args[:i], x, *args[i + 1:]), args[i])


# --------------------------------------------------------------------------- programs

SCALE = 1.0


def scaled_node(t, W):
    if isinstance(t, tuple):
        return np.tanh(SCALE * (W @ np.concatenate([scaled_node(t[0], W), scaled_node(t[1], W)])))
    return t


def scaled_loss(W, tree):
    return np.sum(scaled_node(tree, W) ** 2)


def test_global_rebound_between_calls(small_functions):
    """A global the node body reads, rebound between calls: the next derivative reads the new value."""
    global SCALE
    rng = np.random.default_rng(1)
    W, _ = _weights(rng)
    tree = balanced(rng, 3)
    try:
        for s in (1.0, 0.3, -2.0):
            SCALE = s
            g = astad.grad(scaled_loss)(W, tree)
            np.testing.assert_allclose(g, _grad_fd(scaled_loss, [W, tree], 0), rtol=1e-6, atol=1e-8)
            v, pb = astad.reverse(scaled_loss)(W, tree)
            assert v == pytest.approx(scaled_loss(W, tree), rel=1e-12)
    finally:
        SCALE = 1.0


def inplace_node(t, W):
    """In-place updates of fresh arrays, a loop and a branch on a shape inside the node body."""
    if isinstance(t, tuple):
        a = inplace_node(t[0], W)
        c = inplace_node(t[1], W)
        h = np.concatenate([a, c])
        h *= 0.5
        h[0] = h[1] * h[0]
        for i in range(2):
            h = np.sin(h) + 0.1 * i
        if h.shape[0] == 2 * K:
            out = W @ h
        else:
            out = h[:K]
        out += a
        return out
    return t * 1.0


def inplace_loss(W, tree):
    return np.sum(inplace_node(tree, W) ** 2)


def test_in_place_loops_branches_in_body(small_functions):
    rng = np.random.default_rng(2)
    W, _ = _weights(rng)
    check_correct_or_refused(inplace_loss, [W, balanced(rng, 3)])


def view_node(t, W):
    """The node returns a view of the argument at the leaves, and of a fresh array above."""
    if isinstance(t, tuple):
        h = np.concatenate([view_node(t[0], W), view_node(t[1], W)])
        return (W @ h)[:]
    return t[:]


def view_loss(W, tree):
    y = view_node(tree, W)
    return np.sum(y * y)


def test_views_returned(small_functions):
    rng = np.random.default_rng(3)
    W, _ = _weights(rng)
    check_correct_or_refused(view_loss, [W, balanced(rng, 3)])


def mixed_node(t, w):
    if isinstance(t, tuple):
        return np.tanh(w * mixed_node(t[0], w) + mixed_node(t[1], w) * w[0])
    return t * w


def mixed_loss(w, tree):
    return np.sum(mixed_node(tree, w) ** 2)


@pytest.mark.parametrize("kind", ["float", "int", "float64", "zero_d", "mixed"])
def test_leaves_of_every_kind(small_functions, kind):
    rng = np.random.default_rng(4)
    w = rng.standard_normal(K)
    vals = iter(range(100))

    def leaf():
        x = next(vals)
        k = kind if kind != "mixed" else ["float", "int", "float64", "zero_d"][x % 4]
        return {"float": 0.25 * x + 0.1, "int": x % 3 + 1, "float64": np.float64(0.3 * x - 0.2),
                "zero_d": np.array(0.2 * x - 0.5)}[k]
    tree = balanced(rng, 3, leaf)
    check_correct_or_refused(mixed_loss, [w, tree])


def shaped_node(t, W):
    """Nodes whose children hold arrays of different shapes at the same depth."""
    if isinstance(t, tuple):
        a, c = shaped_node(t[0], W), shaped_node(t[1], W)
        return np.tanh(np.sum(a) * W[0] + np.sum(c) * W[1])
    return t


def shaped_loss(W, tree):
    return np.sum(shaped_node(tree, W) ** 2)


def test_leaves_of_different_shapes(small_functions):
    rng = np.random.default_rng(5)
    W = rng.standard_normal((2, 3))
    tree = ((rng.standard_normal(2), rng.standard_normal(4)), (rng.standard_normal(4), rng.standard_normal(2)))
    tree = (tree, (tree[1], tree[0]))
    check_correct_or_refused(shaped_loss, [W, tree])


def node(t, W, b):
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([node(t[0], W, b), node(t[1], W, b)]) + b)
    return t


def loss(W, b, tree):
    return np.sum(node(tree, W, b) ** 2)


def test_two_shapes_same_function(small_functions):
    """The same recursion with leaves of two sizes (two sets of functions), alternately."""
    rng = np.random.default_rng(6)
    for k in (2, 3, 2, 3):
        W, b = _weights(rng, k)
        tree = balanced(rng, 3, lambda: rng.standard_normal(k))
        g = astad.grad(loss, argnums=(0, 1))(W, b, tree)
        np.testing.assert_allclose(g[0], _grad_fd(loss, [W, b, tree], 0), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(g[1], _grad_fd(loss, [W, b, tree], 1), rtol=1e-6, atol=1e-8)


def test_pullback_twice_and_after_mutation(small_functions):
    rng = np.random.default_rng(7)
    W, b = _weights(rng)
    tree = balanced(rng, 3)
    W0, b0 = W.copy(), b.copy()
    leaves0 = [x.copy() for x in _leaves(tree)]
    value, pb = astad.reverse(loss)(W, b, tree)
    first = pb(1.0)
    W *= 3.0
    b[:] = 7.0
    for x in _leaves(tree):
        x[:] = 11.0
    second = pb(1.0)
    W[:], b[:] = W0, b0
    for x, y in zip(_leaves(tree), leaves0):
        x[:] = y
    want = check_grads(W, b, tree)
    for got in (first, second):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-8)


def check_grads(W, b, tree):
    return _grad_fd(loss, [W, b, tree], 0), _grad_fd(loss, [W, b, tree], 1)


def _leaves(t):
    return [y for x in t for y in _leaves(x)] if isinstance(t, tuple) else [t]


def node_out(t, W):
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([node_out(t[0], W), node_out(t[1], W)]))
    return t


def test_returned_value_mutated_before_pullback(small_functions):
    rng = np.random.default_rng(8)
    W, _ = _weights(rng)
    tree = balanced(rng, 3)
    value, pb = astad.reverse(node_out)(tree, W)
    assert "node_out_1_forward(" in astad.reverse(node_out).source
    u = rng.standard_normal(K)
    value_copy = value.copy()
    value[:] = 100.0
    got = pb(u)
    np.testing.assert_allclose(got[1], central_differences(lambda w: float(u @ node_out(tree, w)), W),
                               rtol=1e-6, atol=1e-8)
    assert np.all(np.isfinite(value_copy))


def test_argnums_and_integer_leaves(small_functions):
    rng = np.random.default_rng(9)
    w = rng.standard_normal(K)
    tree = ((1, rng.standard_normal(K)), (rng.standard_normal(K), (2, 3)))
    tree = (tree, tree)
    g = astad.grad(mixed_loss, argnums=0)(w, tree)
    np.testing.assert_allclose(g, central_differences(lambda v: mixed_loss(v, tree), w), rtol=1e-6, atol=1e-8)
    check_correct_or_refused(mixed_loss, [w, tree])


def depth_node(t, w, d):
    """A parameter only the deepest level reads."""
    if isinstance(t, tuple):
        return np.tanh(depth_node(t[0], w, d + 1) * depth_node(t[1], w, d + 1))
    if d >= 3:
        return t * w
    return t


def depth_loss(w, tree):
    return np.sum(depth_node(tree, w, 0))


def test_wrt_read_at_some_depths_only(small_functions):
    rng = np.random.default_rng(10)
    w = rng.standard_normal(K)
    tree = ((balanced(rng, 2), rng.standard_normal(K)), (rng.standard_normal(K), balanced(rng, 1)))
    check_correct_or_refused(depth_loss, [w, tree])


def test_threads(small_functions):
    rng = np.random.default_rng(11)
    cases = []
    for k in (2, 3, 2, 3):
        W, b = _weights(rng, k)
        cases.append((W, b, balanced(rng, 3, lambda: rng.standard_normal(k))))
    wants = [astad.grad(loss, argnums=(0, 1))(*c) for c in cases]
    astad.clear_caches(disk=False)
    errors = []

    def work(i):
        try:
            for _ in range(3):
                got = astad.grad(loss, argnums=(0, 1))(*cases[i])
                for g, w in zip(got, wants[i]):
                    np.testing.assert_allclose(g, w, rtol=1e-12)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_every_stage_displayable(small_functions):
    rng = np.random.default_rng(12)
    W, b = _weights(rng)
    tree = balanced(rng, 3)
    r = astad.reverse(loss)
    r(W, b, tree)
    assert "node_1_forward" in r.source
    for stage in astad.pipeline.STAGES:
        text = r.ir(stage)
        # the functions of their own too (they were not shown before)
        assert ("node_1_backward(" if stage in ("ad", "optimised") else "node_1(W") in text, stage
    g = astad.grad(loss, argnums=(0, 1))
    g(W, b, tree)
    assert "node_1_backward(" in g.ir("optimised")
    r._repr_markdown_()
    r._repr_html_()


def test_higher_derivatives(small_functions):
    rng = np.random.default_rng(13)
    W, b = _weights(rng)
    tree = balanced(rng, 2)
    args = (W, b, tree)
    g = astad.grad(loss, argnums=1)(*args)
    vg = astad.value_and_grad(loss, argnums=1)(*args)
    assert vg[0] == pytest.approx(loss(*args), rel=1e-12)
    np.testing.assert_allclose(vg[1], g, rtol=1e-12)
    h = astad.hessian(loss, argnums=1)(*args)
    want = np.array([central_differences(lambda c: astad.grad(loss, argnums=1)(W, c, tree)[i], b) for i in range(K)])
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-6)
    J1 = astad.jacrev(node, argnums=2)(tree, W, b)
    J2 = astad.jacfwd(node, argnums=2)(tree, W, b)
    np.testing.assert_allclose(J1, J2, rtol=1e-10, atol=1e-12)
    v, pb = astad.vjp(loss, *args)
    np.testing.assert_allclose(pb(1.0)[1], g, rtol=1e-12)


def _source(fn, *args):
    return astad.reverse(fn).transform(*args).source


@pytest.mark.parametrize("fn,args", [
    ("inplace", None), ("mixed", None), ("depth", None), ("scaled", None)])
def test_programs_make_functions(small_functions, fn, args):
    """(The programs above do reach the feature.)"""
    rng = np.random.default_rng(14)
    W, _ = _weights(rng)
    w = rng.standard_normal(K)
    f, a, name = {
        "inplace": (inplace_loss, (W, balanced(rng, 3)), "inplace_node_1"),
        "mixed": (mixed_loss, (w, balanced(rng, 3)), "mixed_node_1"),
        "depth": (depth_loss, (w, balanced(rng, 4)), "depth_node_1"),
        "scaled": (scaled_loss, (W, balanced(rng, 3)), "scaled_node_1"),
    }[fn]
    assert f"{name}_forward(" in _source(f, *a)


# --------------------------------------------------------------------------- the disk cache

TREE_MODULE = """\
    import numpy as np

    A = {a}


    def helper(x):
        return np.sin(x * {h})


    def node(t, W):
        if isinstance(t, tuple):
            return np.tanh(A * (W @ np.concatenate([node(t[0], W), helper(node(t[1], W))])))
        return t


    def loss(W, tree):
        return np.sum(node(tree, W) ** 2)


    def node2(t, W):
        if isinstance(t, tuple):
            return np.cos(W @ np.concatenate([node2(t[0], W), node2(t[1], W)]))
        return t * 2.0


    def loss2(W, tree):
        return np.sum(node2(tree, W) ** 3) + np.sum(node(tree, W))
    """


def _tree_case(seed):
    rng = np.random.default_rng(seed)
    W, _ = _weights(rng)
    return W, balanced(rng, 3)


def test_disk_cache_round_trip_and_edits(small_functions, disk_cache, tmp_path, monkeypatch):
    """Stored, loaded in a "fresh process" (memory caches cleared), right; then the recursive
    function's module edited (a global, a helper's source): the stale entry is not used."""
    W, tree = _tree_case(15)
    name = f"astad_adv7_tree_{os.getpid()}_{next(_ids)}"
    for a, h in ((1.0, 1.0), (1.0, 1.0), (0.5, 1.0), (0.5, 2.0)):
        mod = load_module(tmp_path, TREE_MODULE.format(a=a, h=h), monkeypatch, name)
        astad.clear_caches(memory=True, disk=False)
        for fn in (mod.loss, mod.loss2):
            r = astad.reverse(fn)
            value, pb = r(W, tree)
            assert "_1_forward(" in r.source
            assert value == pytest.approx(fn(W, tree), rel=1e-12)
            np.testing.assert_allclose(pb(1.0)[0], central_differences(lambda w: fn(w, tree), W),
                                       rtol=1e-6, atol=1e-8)
        # another tree shape: other functions of the same names
        W3, _ = _weights(np.random.default_rng(3), 3)
        tree3 = balanced(np.random.default_rng(4), 2, lambda: np.ones(3) * 0.3)
        g = astad.grad(mod.loss)(W3, tree3)
        np.testing.assert_allclose(g, central_differences(lambda w: mod.loss(w, tree3), W3), rtol=1e-6, atol=1e-8)
    assert _entries(disk_cache)


# --------------------------------------------------------------------------- more activity, aliasing

G = np.array([1.0, -0.5])


def global_array_node(t, W):
    if isinstance(t, tuple):
        return np.tanh(G * (W @ np.concatenate([global_array_node(t[0], W), global_array_node(t[1], W)])))
    return t


def global_array_loss(W, tree):
    return np.sum(global_array_node(tree, W) ** 2)


def test_global_array_mutated_in_place_between_calls(small_functions):
    rng = np.random.default_rng(16)
    W, _ = _weights(rng)
    tree = balanced(rng, 3)
    saved = G.copy()
    try:
        for scale in (1.0, -3.0):
            G[:] = saved * scale
            g = astad.grad(global_array_loss)(W, tree)
            np.testing.assert_allclose(g, central_differences(lambda w: global_array_loss(w, tree), W),
                                       rtol=1e-6, atol=1e-8)
    finally:
        G[:] = saved


def two_weights_node(t, W, V):
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([two_weights_node(t[0], W, V), two_weights_node(t[1], W, V)]) * V[0, 0])
    return t


def same_argument_twice(W, tree):
    return np.sum(two_weights_node(tree, W, W) ** 2)


def test_same_argument_at_two_parameters(small_functions):
    rng = np.random.default_rng(17)
    W, _ = _weights(rng)
    W = W[:, :K * 2]
    tree = balanced(rng, 3)
    check_correct_or_refused(same_argument_twice, [W, tree])


def mixed_activity(W, b, tree):
    """The same key called with W active and with a constant W (two variants of one function)."""
    const = np.full((K, 2 * K), 0.25)
    return np.sum(node(tree, W, b) * node(tree, const, b)) + np.sum(node(tree, const, np.zeros(K)))


def test_active_and_inactive_calls_of_one_key(small_functions):
    rng = np.random.default_rng(18)
    W, b = _weights(rng)
    tree = balanced(rng, 3)
    check_correct_or_refused(mixed_activity, [W, b, tree])
    src = _source(mixed_activity, W, b, tree)
    assert "node_1_forward(" in src


def int_node(t, W, n):
    """An integer array argument (inactive) beside the active ones."""
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([int_node(t[0], W, n), int_node(t[1], W, n)]) * n[0])
    return t


def int_loss(W, tree, n):
    return np.sum(int_node(tree, W, n) ** 2)


def test_integer_array_parameter(small_functions):
    rng = np.random.default_rng(19)
    W, _ = _weights(rng)
    tree = balanced(rng, 3)
    check_correct_or_refused(int_loss, [W, tree, np.array([1, 2])])


# --------------------------------------------------------------------------- names


def node_1(W, b, tree):
    """The program named as the recursion's first function would be (``node_1``)."""
    return np.sum(node(tree, W, b) ** 2)


def clash_variant(W, b, tree):
    """Locals named as the second variant's pair would be (``node_1_v2_forward``): astad raised an
    internal error (the generated code's name check) before the variants' names avoided the user's."""
    node_1_v2_forward = np.full((K, 2 * K), 0.25)
    node_1_v2_backward = np.zeros(K)
    return (np.sum(node(tree, W, b) * node(tree, node_1_v2_forward, b))
            + np.sum(node(tree, node_1_v2_forward, node_1_v2_backward)))


def node_1_v2(W, b, tree):
    """The program named as the second variant of ``node_1`` would be: its generated ``node_1_v2_forward``
    replaced the variant's in the module (before the variants' names avoided the program's), and the
    variant's callers called it (a TypeError from the generated code; with equal arities, the wrong function)."""
    const = np.full((K, 2 * K), 0.25)
    return np.sum(node(tree, W, b) * node(tree, const, b)) + np.sum(node(tree, const, np.zeros(K)))


@pytest.mark.parametrize("fn", [node_1, clash_variant, node_1_v2])
def test_generated_names_never_clash_with_the_users(small_functions, fn):
    rng = np.random.default_rng(20)
    W, b = _weights(rng)
    tree = balanced(rng, 3)
    check_correct_or_refused(fn, [W, b, tree])
    src = _source(fn, W, b, tree)
    assert "node_1_forward(" in src or "node_2_forward(" in src


NODE_A = """\
    import numpy as np


    def node(t, W):
        if isinstance(t, tuple):
            return np.tanh(W @ np.concatenate([node(t[0], W), node(t[1], W)]))
        return t
    """

NODE_B = """\
    import numpy as np


    def node(t, W):
        if isinstance(t, tuple):
            return np.sin(W @ np.concatenate([node(t[1], W), node(t[0], W)])) * 2.0
        return t * 0.5
    """

BOTH = """\
    import numpy as np
    from {a} import node as anode
    from {b} import node as bnode


    def both(W, tree):
        return np.sum(anode(tree, W) * bnode(tree, W)) + np.sum(bnode(tree[0], W))
    """


def test_two_recursions_of_one_name(small_functions, tmp_path, monkeypatch):
    """Two different recursions named ``node`` (two modules) in one program: functions of their own
    named apart (node_1 ... node_5), each the right one."""
    monkeypatch.syspath_prepend(str(tmp_path))
    a = load_module(tmp_path, NODE_A, monkeypatch)
    b = load_module(tmp_path, NODE_B, monkeypatch)
    mod = load_module(tmp_path, BOTH.format(a=a.__name__, b=b.__name__), monkeypatch)
    W, tree = _tree_case(21)
    check_correct_or_refused(mod.both, [W, tree])
    src = _source(mod.both, W, tree)
    assert "node_1_forward(" in src and "node_2_forward(" in src
