"""The frontend's shortcuts (session 11's speed work) answer as the full ways do.

- :class:`astad.positions.Starts` is keyed by the node's ``id``: every node keyed must be a
  node of the tree read (alive while the tree is), else a node made later could take a dead
  one's id and its start;
- ``keep_unread_raising`` and ``check_weak_joins`` skip their walks on primitives alone where
  nothing may raise / nothing is a pick or a call: where something may raise, the walk runs
  and Python's exception is kept (checked against Python running the function).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import astad
from astad import deep
from astad.frontend import from_ast

SOURCES = [
    "def f(a):\n    if a: x = 1\n    else: x = 2\n    return x\n",
    "def f(a):\n    while a: a = a - 1; b = 2\n    for i in range(3): a = a + i\n    return a\n",
    "def f(a):\n    def g(y): return y\n    if a:\n        return g(a)\n    return (a, [a for a in (1, 2) if a])\n",
]


@pytest.mark.parametrize("source", SOURCES)
def test_every_start_is_of_a_node_of_the_tree(source):
    made, starts, _ = from_ast.read(source, "f")
    ids = {id(n) for n in deep.walk(made)}
    assert set(starts) <= ids
    assert len(starts) > 5


def _unread_log(x):
    y = math.log(x)  # nothing reads it: Python raises here for x <= 0 all the same
    return x * 2.0


def _unread_division(x, d):
    q = x / d  # a Python float divided by 0: ZeroDivisionError, though nothing reads q
    return x + 1.0


def _straight(x):
    a = np.sin(x) * 0.5
    b = np.tanh(a + 0.3 * x)
    return np.sum(a * b)


def test_an_unread_raising_value_still_raises():
    grad = astad.grad(_unread_log)
    assert grad(2.0) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        _unread_log(-1.0)
    with pytest.raises(ValueError):
        grad(-1.0)
    grad2 = astad.grad(_unread_division)
    assert grad2(3.0, 2.0) == pytest.approx(1.0)
    with pytest.raises(ZeroDivisionError):
        grad2(3.0, 0.0)


def test_straight_line_gradient_against_finite_differences():
    x = np.linspace(-1.0, 1.0, 7)
    g = astad.grad(_straight)(x)
    eps = 1e-6
    fd = np.array([(_straight(x + eps * e) - _straight(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def _dims_unread(x):
    s = x.shape  # a tuple of two dimensions nothing reads: dead temporaries the lowering drops
    y = np.sin(x) * 2.0
    return np.sum(y)


def _all_read(x, W):
    a = np.tanh(W @ x + 0.3)
    b = a * np.exp(-x * x)
    return np.sum(a - 0.2 * b / (1.0 + a * a))


@pytest.mark.parametrize("fn, make", [(_dims_unread, lambda: (np.ones((3, 4)),)),
                                      (_all_read, lambda: (np.ones(4), np.eye(4))),
                                      (_straight, lambda: (np.ones(5),))])
def test_drop_dead_shortcut_is_the_walk(fn, make, monkeypatch):
    """drop_dead_temporaries' shortcut (primitives alone, no temporary unread) gives the walk's
    block and names; where a temporary is dead the walk runs and drops it."""
    from astad import api, frontend
    from astad.frontend import lowerer
    from astad.frontend.parse import parse

    astad.clear_caches()
    types = list(api.Reverse(fn)._types(make()))
    core = frontend.Lowerer(parse(fn)).lower_function(types)
    fast_names: set[str] = set()
    fast = lowerer._drop_dead(core.body, fast_names)
    monkeypatch.setattr(lowerer, "_none_dead", lambda *a: False)
    walk_names: set[str] = set()
    walk = lowerer._drop_dead(core.body, walk_names)
    assert fast_names == walk_names
    assert fast.binds == walk.binds and fast.result == walk.result
    assert (fast is core.body) == (fn is not _dims_unread)
