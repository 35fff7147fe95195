"""Work the transformation saves (issue 12 item 5, transform time) without
changing what it makes: libcst's positions computed directly equal those its
MetadataWrapper computes; an inlined recursion notes each global it reads once;
the optimiser's passes skipped for a program without what they rewrite (loops,
lists, one-hot cotangents, outer products, broadcasts) give the same generated code as
running them."""

import importlib
import inspect
import sys
from pathlib import Path

import libcst as cst
import numpy as np
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

import astad
from astad import optimise, positions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import programs  # noqa: E402

SOURCES = [
    "def f(x):\n    return x + 1\n",
    "def f(x):\r\n    y = (x +\r\n         1)\r\n    return y\r\n",  # CRLF line breaks, a line broken in parentheses
    'def f(x):\n    """doc\n    string"""\n    s = """a\nb"""  # comment\n    return x\n',
    "def f(x, *, k=2):\n\tif x:\n\t\treturn [i for i in range(k)]\n\treturn {1: (2, 3)}\n",
    programs.straight_line_source(40),
    inspect.getsource(programs),
]


@pytest.mark.parametrize("source", SOURCES, ids=[f"source{i}" for i in range(len(SOURCES))])
def test_positions_are_libcsts(source):
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert dict(positions.resolve(module, source)) == dict(expected)


def test_an_inlined_recursion_reads_each_global_once():
    W, b, tree = programs.make_tree_inputs(np.random.default_rng(0))
    d = astad.reverse(programs.tree_loss).derivative((W, b, tree), frozenset({0, 1}))
    keys = [(path, id(obj)) for path, obj in d.deps]
    assert len(keys) == len(set(keys))
    # np, isinstance, tuple, tree_node, np.tanh and np.concatenate by their path at each of 9 levels, not per
    # call (511), and np.sum and tree_node's __code__, __defaults__ and __kwdefaults__ once
    assert len(keys) <= 6 * 9 + 4
    assert sum(1 for path, _ in d.deps if path[-1] in ("__code__", "__defaults__", "__kwdefaults__")) == 3


def _everything(block):
    return frozenset({"Loop", "LoopBack", "outer", "broadcast_to", "zeros_like", "scatter"})


NAMES = ["mlp", "logsumexp", "huber", "newton", "gmm", "lstm", "rk4", "closure_map", "horner", "tiny_scalar",
         "scalar_loop_1000", "horner_llsq"]


@pytest.mark.parametrize("name", NAMES)
def test_skipped_passes_change_nothing(name, monkeypatch):
    fn, make_inputs, argnums = programs.PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    wrt = frozenset((argnums,) if isinstance(argnums, int) else argnums)
    astad.clear_caches(disk=False)
    skipping = astad.reverse(fn).derivative(args, wrt).source
    monkeypatch.setattr(optimise, "accumulates", lambda block: True)
    for name in ("astad.optimise", "astad.optimise.hoist", "astad.optimise.lists_in_place", "astad.optimise.dce",
                 "astad.optimise.arrays", "astad.optimise.outputs"):
        monkeypatch.setattr(importlib.import_module(name), "kinds", _everything)
    astad.clear_caches(disk=False)
    assert astad.reverse(fn).derivative(args, wrt).source == skipping
