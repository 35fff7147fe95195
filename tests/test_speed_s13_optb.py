"""Session 13, helper optb: work the optimiser's core passes leave out, each checked against the walk it
replaces (turning it off must change nothing).

- ``program_fold.USE_BEFORE_STRUCTURE``: ``fold_program`` takes the body of the function the structural pass
  made a forward block without nested blocks of (remembered on that block under ``program_fold.BEFORE_STRUCTURE``,
  with the function's names) as the fold of it with ``dup`` and ``drop`` forgotten, where that body is
  of primitives alone, none reading a zero: the structural pass's own renaming undone, not made again
  binding by binding.  Where the pass ended no name with ``drop``, each binding of that body is live
  (``program_fold.ALL_LIVE``): ``dce`` leaves it as it is without a walk, and its names are the function's.
  ``structural.make_explicit`` remembers them; ``_remembering`` notes where the fold takes them.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import importlib

import astad
import astad.optimise as optimise
import astad.structural as structural
from astad.ir import Bind, Block, Drop, Dup, Function, Prim, Var, Zero, read_names
from astad.ir.types import Num
from astad.optimise import program_fold, simplify
from astad.api_forward import forward_of
import test_random_programs as random_programs
from conftest import fuzz_examples, load_program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import programs  # noqa: E402

dce_module = importlib.import_module("astad.optimise.dce")  # (``astad.optimise.dce`` is the function)

NAMES = ["straight_line_500", "lstm", "tree", "gmm", "rk4", "mlp", "newton", "horner_llsq"]


def _remembering(monkeypatch):
    """The list of the forward blocks ``fold_program`` takes the block ``structural.make_explicit`` made
    them of for (it remembers it on its output's body and on ``structural.primal``'s block)."""
    taken = []
    before = program_fold._before_structure

    def noting(forward):
        found = before(forward)
        if found is not None:
            taken.append(forward)
        return found

    monkeypatch.setattr(program_fold, "_before_structure", noting)
    return taken


def _bench(name):
    fn, make, argnums = programs.PROGRAMS[name]
    return fn, make(np.random.default_rng(0)), frozenset((argnums,) if isinstance(argnums, int) else argnums)


def _sources(fn, args, wrt):
    astad.clear_caches(disk=False)
    return astad.reverse(fn).derivative(args, wrt).source, forward_of(fn).derivative(args, wrt).source


@pytest.mark.parametrize("name", NAMES)
def test_block_before_structure_changes_nothing_in_bench_programs(name, monkeypatch):
    fn, args, wrt = _bench(name)
    walked = _sources(fn, args, wrt)
    taken = _remembering(monkeypatch)
    assert _sources(fn, args, wrt) == walked
    if name == "straight_line_500":  # (the program it was made for)
        assert taken
    monkeypatch.setattr(program_fold, "USE_BEFORE_STRUCTURE", False)
    assert _sources(fn, args, wrt) == walked


@settings(max_examples=fuzz_examples(15, long=40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_block_before_structure_changes_nothing_in_random_programs(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("optb"), "optb").f
    args = random_programs._arguments(params, seed)
    astad.clear_caches(disk=False)
    walked = astad.reverse(fn).transform(*args).source
    with pytest.MonkeyPatch.context() as monkeypatch:
        _remembering(monkeypatch)
        astad.clear_caches(disk=False)
        assert astad.reverse(fn).transform(*args).source == walked


_F = Num((3,), "float64")


def _linear(core):
    """The structural pass's output of a function of ``x`` whose body is ``core``, remembering that function."""
    fn = Function("f", (Var("x", _F),), core)
    out = structural.make_explicit(fn).body
    out.__dict__.setdefault(program_fold.BEFORE_STRUCTURE, (core, None))
    return out


def test_block_before_structure_is_the_fold_of_the_forgotten_structure():
    """``x`` read three times, ``a`` twice, ``b`` never (dropped): the block the pass made it of, and each
    copy renamed as what it copies, as the walk finds them."""
    x, a, b, c = Var("x", _F), Var("a", _F), Var("b", _F), Var("c", _F)
    core = Block((Bind((a,), Prim("mul", (x, x))), Bind((b,), Prim("sin", (x,))),
                  Bind((c,), Prim("add", (a, a)))), c)
    linear = _linear(core)
    assert {type(bd.rhs) for bd in linear.binds} >= {Dup, Drop}
    found = program_fold._before_structure(linear)
    assert found is not None and found[0] is core
    walked, env = program_fold._fold_forward_block(Block(linear.binds, linear.result), frozenset(), forget=True)
    assert [str(bd) for bd in walked.binds] == [str(bd) for bd in core.binds] and walked.result == core.result
    assert found[1] == env


@pytest.mark.parametrize("case", ["zero", "or_zeros_like", "dup"])
def test_block_before_structure_not_taken_where_the_fold_would_change_it(case):
    """A primitive reading a zero (the fold makes it zero), an ``or_zeros_like`` (the fold makes it something
    else) or a ``dup`` of the block's own (forgotten, so the block is not the fold's): the walk."""
    x, a, b, c, d, e = (Var(n, _F) for n in "xabcde")
    if case == "zero":
        binds = (Bind((a,), Prim("mul", (x, Zero(_F)))), Bind((e,), Prim("add", (a, a))))
    elif case == "or_zeros_like":
        binds = (Bind((a,), Prim("or_zeros_like", (x, x))), Bind((e,), Prim("add", (a, a))))
    else:  # (x read twice besides: the pass adds a dup of its own, as many bindings as the body's dup)
        binds = (Bind((a, b), Dup(x)), Bind((c,), Prim("add", (a, b))), Bind((d,), Prim("mul", (c, x))),
                 Bind((e,), Prim("mul", (d, x))))
    core = Block(binds, e)
    assert program_fold._before_structure(_linear(core)) is None


def _dce_walked(block, needed):
    """``dce``'s walk of a fresh copy of ``block`` (nothing remembered) keeping ``needed``."""
    fresh = Block(block.binds, block.result)
    return dce_module._dce_reads(fresh, read_names(Block((), fresh.result)), set(needed))[0]


def test_all_live_only_where_nothing_was_dropped():
    """``b`` read by nothing: the structural pass drops it, the body is not taken as all live, and ``dce``
    removes ``b``; with ``b`` read, it is, and the walk of it removes nothing (for any residuals)."""
    x, a, b, c = Var("x", _F), Var("a", _F), Var("b", _F), Var("c", _F)
    dead = Block((Bind((a,), Prim("mul", (x, x))), Bind((b,), Prim("sin", (x,))), Bind((c,), Prim("add", (a, a)))),
                 c)
    core, _ = program_fold._before_structure(_linear(dead))
    assert program_fold.ALL_LIVE not in core.__dict__
    assert [bd.targets[0].name for bd in _dce_walked(core, set()).binds] == ["a", "c"]
    live = Block(dead.binds[:2] + (Bind((c,), Prim("add", (a, b))),), c)
    core, _ = program_fold._before_structure(_linear(live))
    assert core.__dict__.get(program_fold.ALL_LIVE)
    for needed in (set(), {"a"}, {"x", "b"}):
        assert _dce_walked(core, needed).binds == core.binds


def _checking_all_live(monkeypatch):
    """``dce`` wrapped: where it left a forward block taken as all live as it is, a walk of a fresh copy of
    it for the same residuals removes nothing; the list of checks."""
    dce_before, checked = dce_module.dce, []

    def checking(prog, **kwargs):
        out = dce_before(prog, **kwargs)
        if program_fold.ALL_LIVE in prog.forward.__dict__:
            checked.append(out.forward is prog.forward and _dce_walked(
                prog.forward, out.forward.__dict__["_dce_needed"]).binds == prog.forward.binds)
        return out

    monkeypatch.setattr(optimise, "dce", checking)
    return checked


@pytest.mark.parametrize("name", ["straight_line_500", "gmm", "mlp", "thirty_lines"])
def test_dce_leaves_as_they_are_only_forward_blocks_all_live(name, monkeypatch):
    _remembering(monkeypatch)
    checked = _checking_all_live(monkeypatch)
    if name == "thirty_lines":
        fn, make, wrt = programs.thirty_lines, programs.make_thirty_lines_inputs, frozenset((0, 1, 2))
        args = make(np.random.default_rng(0))
    else:
        fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert all(checked)
    if name == "straight_line_500":
        assert checked


@settings(max_examples=fuzz_examples(15, long=40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_dce_all_live_of_random_programs(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("optb"), "optb_live").f
    with pytest.MonkeyPatch.context() as monkeypatch:
        _remembering(monkeypatch)
        checked = _checking_all_live(monkeypatch)
        astad.clear_caches(disk=False)
        astad.reverse(fn).transform(*random_programs._arguments(params, seed))
    assert all(checked)
