"""What the lowering keeps while it runs (transform time, issue 12 item 5) does
not change what it makes: a lowering with its caches (each node's position,
the value of a global name or a module's attribute once read, the static keys
of tuples) gives the same core IR, bindings' positions, types, constants and
dependencies as one that looks everything up every time.  The programs: the
benchmarks, and small ones for what the caches could get wrong (a recursion
lowered again as loops, whose rewritten nodes then point elsewhere; a name that
is a global in one function and a variable in another; module constants; loops
lowered again until their carried types settle)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import astad
from astad import frontend
from astad.frontend import abstract
from astad.ir.nodes import nested_blocks

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import programs  # noqa: E402

K = 2.5
W = np.array([1.0, -2.0, 0.5])


class _Forgetful(dict):
    """A cache that keeps nothing."""

    def __setitem__(self, key, value):
        pass


class _Uncached(frontend.Lowerer):
    """The lowering without its caches: every position, global and key looked up each time."""

    def __init__(self, parsed):
        super().__init__(parsed)
        self._locs, self._globals, self._attributes, self._static_keys = (
            _Forgetful(), _Forgetful(), _Forgetful(), _Forgetful())


def _dump(block, out, indent=""):
    for b in block.binds:
        loc = (b.loc.file, b.loc.line, b.loc.col, b.loc.text) if b.loc is not None else None
        out.append((indent, str(b), tuple((t.name, t.type) for t in b.targets), loc))
        for attr in ("carried", "init", "bounds"):
            if hasattr(b.rhs, attr):
                out.append((indent, attr, tuple((getattr(a, "name", None), a.type) for a in getattr(b.rhs, attr))))
        for nested in nested_blocks(b.rhs):
            _dump(nested, out, indent + "  ")
    out.append((indent, "in", str(block.result), block.result.type))
    return out


def _lowered(cls, fn, args):
    astad.clear_caches(disk=False)  # (a fresh parse: a recursion lowered as loops changes the parsed function)
    lowerer = cls(frontend.parse(fn))
    try:
        f = lowerer.lower_function([abstract(a, "x") for a in args])
    except astad.AstadError as e:
        return ("refused", type(e).__name__, str(e))
    return (_dump(f.body, [str(p) + ":" + str(p.type) for p in f.params]), sorted(lowerer.constants),
            [(path, id(obj)) for path, obj in lowerer.deps], lowerer.restores)


def halving(x, n):
    if n <= 0:
        return x
    y = x * 0.5
    return np.sin(halving(y, n - 1)) + y


def uses_k(x):
    return x * K + np.sum(W * x)


def shadows(x):
    K = x * 2.0  # a variable named like the global the callee reads
    return uses_k(K) + K[0] + np.pi


def loops(x, n):
    total = 0.0
    acc = []
    for i in range(n):
        y = np.tanh(x * W[i % 3]) + K
        acc.append(y)
        total = total + np.sum(y) * np.e
        if total > 10.0:
            break
    return total + np.sum(np.stack(acc)) + sum([np.cos(a[0]) for a in acc])


def tree_sum(t, w):
    if isinstance(t, tuple):
        return np.tanh(w * tree_sum(t[0], w) + tree_sum(t[1], w))
    return t


X = np.array([0.3, -0.7, 1.1])
SMALL = [
    (halving, (X, np.int64(4))),
    (shadows, (X,)),
    (loops, (X, 5)),
    (loops, (X, np.int64(5))),
    (tree_sum, (((X, X * 2.0), (X, (X, X))), X)),
]


@pytest.mark.parametrize("fn,args", SMALL, ids=[f"{f.__name__}{i}" for i, (f, _) in enumerate(SMALL)])
def test_caches_change_nothing(fn, args):
    assert _lowered(frontend.Lowerer, fn, args) == _lowered(_Uncached, fn, args)


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_caches_change_nothing_in_the_benchmarks(name):
    fn, make, _ = programs.PROGRAMS[name]
    args = make(np.random.default_rng(0))
    assert _lowered(frontend.Lowerer, fn, args) == _lowered(_Uncached, fn, args)
