"""Recursion: self- and mutually recursive functions whose recursion is on
what is known when transforming (an int literal, a shape, the structure of a
nested tuple) are unrolled into straight-line code; a recursion whose depth
depends on a run-time value is refused clearly.  Recursion 200 deep needs no
change of Python's recursion limit."""

import sys

import numpy as np
import pytest

import astad
from conftest import check_grad, check_stages
from test_structured import check


def horner(cs, x):
    if len(cs) == 0:
        return 0.0
    return cs[0] + x * horner(cs[1:], x)


def horner_index(cs, x, i=0):
    if i == cs.shape[0]:
        return 0.0
    return cs[i] + x * horner_index(cs, x, i + 1)


def horner_from_zero(cs, x):
    return horner_index(cs, x)


def _even(x, n):
    if n == 0:
        return x
    return _odd(x * 1.01, n - 1)


def _odd(x, n):
    if n == 0:
        return -x
    return _even(np.cos(x), n - 1)


def mutual(x):
    return _even(x, 7) + _odd(x, 4)


def _iterate(x, n):
    if n == 0:
        return x
    return _iterate(np.sin(x) * 0.9 + 0.1, n - 1)


def deep_200(x):
    return _iterate(x, 200)


def _tree(t, W, b):
    if isinstance(t, tuple):
        left, right = t
        return np.tanh(W @ np.concatenate([_tree(left, W, b), _tree(right, W, b)]) + b)
    return t


def tree_model(tree, W, b):
    return np.sum(_tree(tree, W, b))


def _make_tree(rng, depth):
    if depth == 0:
        return rng.standard_normal(3)
    return (_make_tree(rng, depth - 1), _make_tree(rng, depth - 1))


CS = np.linspace(0.1, 1.0, 30)


@pytest.mark.parametrize("fn, args", [
    (horner, (CS, 0.7)), (horner_from_zero, (CS, -0.4)), (mutual, (0.3,)), (deep_200, (0.4,)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_recursion_is_unrolled(fn, args):
    check_grad(fn, list(args))
    check_stages(fn, args)


def test_horner_is_the_polynomial():
    value, pullback = astad.reverse(horner)(CS, 0.7)
    assert value == pytest.approx(np.polyval(CS[::-1], 0.7))
    assert pullback(1.0)[1] == pytest.approx(np.polyval(np.polyder(CS[::-1]), 0.7))


def test_recursion_200_deep_leaves_the_recursion_limit_alone():
    limit = sys.getrecursionlimit()
    astad.clear_caches(disk=False)
    astad.grad(deep_200)(0.4)
    assert sys.getrecursionlimit() == limit


@pytest.mark.parametrize("depth", [1, 3])
def test_recursion_over_a_tree_of_tuples(depth):
    rng = np.random.default_rng(depth)
    tree = _make_tree(rng, depth)
    check(tree_model, tree, rng.standard_normal((3, 6)) * 0.4, rng.standard_normal(3) * 0.1)


def halve(x):
    if x > 1.0:
        return halve(x / 2.0)
    return x


def test_recursion_on_a_run_time_value_runs_as_loops():
    """Its depth is known only when running: lowered as loops (tests/test_recursion_runtime_depth.py)."""
    for x in (0.6, 3.0, 37.5):
        value, pullback = astad.reverse(halve)(x)
        assert value == halve(x)
        eps = 1e-6
        assert pullback(1.0)[0] == pytest.approx((halve(x + eps) - halve(x - eps)) / (2 * eps), rel=1e-6)


def test_isinstance_is_known_when_transforming():
    import tempfile
    from conftest import load_program
    src = "import numpy as np\n\n\ndef kinds(t, x):\n    n = 0.0\n" + "".join(
        f"    if isinstance({a}):\n        n = n + {2.0 ** k}\n" for k, a in enumerate(
            ["t, tuple", "t[0], np.ndarray", "t[1], float", "x, (list, dict)", "t, list", "x, np.ndarray"])) + \
        "    return n * t[1]\n"
    mod = load_program(src, tempfile.mkdtemp(), "kinds")
    value, _ = astad.reverse(mod.kinds)((np.ones(2), 2.0), [1.0])
    assert value == pytest.approx((1 + 2 + 4 + 8) * 2.0)


def _node(t, W, b):
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([_node(t[0], W, b), _node(t[1], W, b)]) + b)
    return t


def tree_model(W, b, tree):
    return np.sum(_node(tree, W, b) ** 2)


def test_a_weight_used_at_many_nodes_gets_one_matrix_product():
    """The cotangent of W, a sum of one outer product per node, is one product of
    two stacked matrices (not 7 products and 6 sums); checked against finite
    differences."""
    rng = np.random.default_rng(3)
    leaf = lambda: rng.standard_normal(2)  # noqa: E731
    tree = (((leaf(), leaf()), (leaf(), leaf())), ((leaf(), leaf()), (leaf(), leaf())))
    W, b = 0.5 * rng.standard_normal((2, 4)), 0.1 * rng.standard_normal(2)
    check(tree_model, W, b, tree)
    source = astad.reverse(tree_model).transform(W, b, tree).source
    assert "np.outer" not in source and "np.stack([" in source
