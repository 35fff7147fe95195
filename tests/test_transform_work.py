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


def _reverse_program(name, monkeypatch):
    """The reverse macro's output for ``name``'s gradient, before the optimiser."""
    from astad import pipeline
    fn, make_inputs, argnums = programs.PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    made = []
    reverse = pipeline.reverse.reverse
    monkeypatch.setattr(pipeline.reverse, "reverse", lambda linear, active: made.append(reverse(linear, active)) or made[-1])
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, frozenset((argnums,) if isinstance(argnums, int) else argnums))
    return made[0]


@pytest.mark.parametrize("name", ["straight_line_500", "mlp", "tree", "gmm"])
def test_the_reverse_macro_makes_no_cotangent_it_drops(name, monkeypatch):
    """The cotangents of literals (``0.2 * b``) and of inactive values (``x`` in ``x @ W``, not
    differentiated) are not computed in the backward block only for dce to remove them."""
    from astad.ir import Prim, read_set
    backward = _reverse_program(name, monkeypatch).backward
    read = read_set(backward)
    assert [b for b in backward.binds if type(b.rhs) is Prim and b.targets[0].name not in read
            and b.targets[0] != backward.result] == []


@pytest.mark.parametrize("name", NAMES + ["straight_line_500", "tree"])
def test_settled_cotangents_change_nothing(name, monkeypatch):
    """The generated code is the same with the VJP rules' bindings left as made (dce removes
    what ``settle`` leaves out, and the names they drew stay drawn)."""
    from astad.ad import reverse
    fn, make_inputs, argnums = programs.PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    wrt = frozenset((argnums,) if isinstance(argnums, int) else argnums)
    astad.clear_caches(disk=False)
    settled = astad.reverse(fn).derivative(args, wrt).source
    monkeypatch.setattr(reverse._Macro, "settle", lambda *a: None)
    astad.clear_caches(disk=False)
    assert astad.reverse(fn).derivative(args, wrt).source == settled


@pytest.mark.parametrize("name", NAMES + ["straight_line_500", "tree"])
def test_cotangents_named_where_made_change_nothing(name, monkeypatch):
    """The generated code is the same where the reverse macro copies each cotangent to its name
    (``let x_ct = t5``, which the optimiser's fold and ``name_cotangents`` then remove) as where it
    names it where it is made (``let x_ct = ...``; a cotangent read elsewhere taken as it is)."""
    from astad.ad import reverse
    fn, make_inputs, argnums = programs.PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    wrt = frozenset((argnums,) if isinstance(argnums, int) else argnums)
    astad.clear_caches(disk=False)
    named = astad.reverse(fn).derivative(args, wrt).source
    monkeypatch.setattr(reverse, "NAME_COTANGENTS", False)
    astad.clear_caches(disk=False)
    assert astad.reverse(fn).derivative(args, wrt).source == named


@pytest.mark.parametrize("name", ["straight_line_500", "mlp", "gmm"])
def test_the_reverse_macro_copies_no_cotangent(name, monkeypatch):
    """In a program without function values, each cotangent of the top block is named where it is made:
    the backward block has no copies for the optimiser to fold away."""
    from astad.ir import Copy
    backward = _reverse_program(name, monkeypatch).backward
    assert [b for b in backward.binds if type(b.rhs) is Copy] == []


@pytest.mark.parametrize("name", NAMES + ["straight_line_500", "tree"])
def test_replayed_rules_change_nothing(name, monkeypatch):
    """The generated code is the same where every VJP rule runs as where an application like an earlier
    one (the same primitive, types and literals) is made from the record of that one (astad.ad.replay)."""
    from astad.ad import replay
    fn, make_inputs, argnums = programs.PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    wrt = frozenset((argnums,) if isinstance(argnums, int) else argnums)
    astad.clear_caches(disk=False)
    replayed = astad.reverse(fn).derivative(args, wrt).source
    monkeypatch.setattr(replay, "REPLAY", False)
    astad.clear_caches(disk=False)
    assert astad.reverse(fn).derivative(args, wrt).source == replayed
