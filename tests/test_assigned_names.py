"""syntax.assigned_names takes a nested loop's body's names from its own (remembered) answer, not
walking it again: the same names in the same order as a walk of every node (the definition)."""

from __future__ import annotations

import libcst as cst
import pytest

from astad import deep
from astad.frontend import syntax

SOURCES = [
    """
for i in range(3):
    a = 1
    for j in range(2):
        b = a
        c[j] = b
        while b:
            d = b
            b -= 1
        else:
            e = 2
        xs.append(d)
    f = b
    np.put_along_axis(g, ix, v, axis=0)
""",
    """
while n:
    for k in ks:
        h = k
        def inner(q):
            r = q
            return r
        ys = [t for t in h]
        lam = lambda s: s
    else:
        m = 1
    for (p, q2) in zip(a, b):
        n: int = p
    z = p
""",
]


def _walked(node):
    """The names assigned in ``node``, every node walked (the definition assigned_names keeps)."""
    names = {}

    def add(target):
        if isinstance(target, cst.Name):
            names.setdefault(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                add(el.value)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            add(target.value)

    todo = [node]
    while todo:
        n = todo.pop()
        cls = type(n)
        if cls in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For):
            add(n.target)
        elif cls is cst.Call and syntax.is_append(n):
            add(n.func.value)
        elif cls is cst.Call and syntax._puts_along_axis(n):
            add(n.args[0].value)
        elif cls is cst.FunctionDef:
            add(n.name)
            continue
        elif cls is cst.Lambda or cls is cst.CompFor:
            continue
        todo.extend(reversed(deep.children(n)))
    return tuple(names)


@pytest.mark.parametrize("source", SOURCES)
def test_same_names_as_a_walk_of_every_node(source):
    module = cst.parse_module(source)
    loops = [n for n in deep.walk(module) if isinstance(n, (cst.For, cst.While))]
    assert len(loops) >= 3
    for inner_first in (False, True):
        syntax.assigned_names.cache_clear()
        for loop in (reversed(loops) if inner_first else loops):
            assert syntax.assigned_names(loop.body) == _walked(loop.body)
    assert syntax.assigned_names(module) == _walked(module)
