"""Session 14 (opt1): work the optimiser's fold, cse and dce leave out, each behind a switch tests turn off.

- ``simplify.RENAMES_ONLY``: of a backward block of primitives, sums and tuples where the fold only renames,
  ``_renamed_only`` makes the fold's output from one comprehension (checked against the fold itself, on the
  bench programs and on random programs, and at its edges: zeros, sums of one item, empty tuples).
- ``simplify.REMEMBER_READS``: ``fold_program``'s ``_before_structure`` remembers the reads (``use_counts``) of
  the forward block it takes, counted from the atoms it looks at for zeros (codegen takes them: checked against a
  walk of a fresh copy, here and in test_speed_s13_cnt), and its ``ops_of`` (``shared_products`` asks).
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import astad
from astad.ir import Bind, Block, Const, MakeTuple, Plus, Prim, TupleT, Var, Zero, kinds
from astad.ir.types import Num
from astad.optimise import simplify
import test_random_programs as random_programs
from conftest import fuzz_examples, load_program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import programs  # noqa: E402

NAMES = ["straight_line_500", "lstm", "tree", "gmm", "rk4", "mlp", "newton", "horner_llsq"]
SWITCHES = [(simplify, "RENAMES_ONLY"), (simplify, "REMEMBER_READS")]


def _bench(name):
    fn, make, argnums = programs.PROGRAMS[name]
    return fn, make(np.random.default_rng(0)), frozenset((argnums,) if isinstance(argnums, int) else argnums)


def _checking_renames(monkeypatch):
    """``simplify._renamed_only`` wrapped: where it gives a block, that block is the fold's (pretty and kinds);
    the list of checks (None where it declined)."""
    before, checked = simplify._renamed_only, []

    def checking(block, env):
        out = before(block, env)
        if out is None:
            checked.append(None)
            return None
        fresh = Block(block.binds, block.result)  # (nothing remembered: the fold walks it)
        if "_kinds" in block.__dict__:
            fresh.__dict__["_kinds"] = block.__dict__["_kinds"]
        folded = simplify.fold(fresh, env=env)
        checked.append(out.pretty() == folded.pretty() and out.result == folded.result
                       and [b.rhs for b in out.binds] == [b.rhs for b in folded.binds]
                       and kinds(out) == kinds(Block(folded.binds, folded.result)))
        return out

    monkeypatch.setattr(simplify, "_renamed_only", checking)
    return checked


@pytest.mark.parametrize("name", NAMES)
def test_left_out_work_changes_no_generated_code(name, monkeypatch):
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    leaving_out = astad.reverse(fn).derivative(args, wrt).source
    for module, attr in SWITCHES:
        monkeypatch.setattr(module, attr, False)
    astad.clear_caches(disk=False)
    assert astad.reverse(fn).derivative(args, wrt).source == leaving_out


def test_renamed_only_is_the_fold_on_straight_line_500(monkeypatch):
    checked = _checking_renames(monkeypatch)
    fn, args, wrt = _bench("straight_line_500")
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert checked == [True]  # (taken, and the fold's output)


@settings(max_examples=fuzz_examples(12, long=30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_renamed_only_is_the_fold_on_random_programs(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("renamed"), "renamed").f
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = _checking_renames(monkeypatch)
        astad.clear_caches(disk=False)
        astad.reverse(fn).transform(*random_programs._arguments(params, seed))
    assert all(c is not False for c in checked)


F = Num((3,), "float64")


def _v(name):
    return Var(name, F)


@pytest.mark.parametrize("rhs, declines", [
    (Prim("mul", (_v("a"), _v("x"))), False),  # (renamed)
    (Prim("mul", (_v("a"), Zero(F))), True),  # (a zero read: the fold makes the product zero)
    (Prim("mul", (_v("a"), _v("z"))), True),  # (a zero put in for z)
    (Plus((_v("a"),)), True),  # (a sum of one item is that item)
    (Plus((_v("a"), _v("x"))), False),
    (MakeTuple(()), True),  # (a tuple of none is a zero)
    (MakeTuple((_v("x"),)), True),  # (kept by the fold, but declined here)
    (Prim("sin", (Const.literal(1.0, Num((), "float64")),)), False),  # (a constant is no zero)
])
def test_renamed_only_at_its_edges(rhs, declines):
    block = Block((Bind((_v("a"),), Prim("sin", (_v("p"),))), Bind((_v("r"),), rhs)), _v("r"))
    env = {"x": _v("y"), "z": Zero(F)}
    out = simplify._renamed_only(block, env)
    if declines:
        assert out is None
    else:
        assert out is not None and out.pretty() == simplify.fold(Block(block.binds, block.result), env=env).pretty()


@pytest.mark.parametrize("name", ["straight_line_500", "mlp"])
def test_before_structure_remembers_the_reads_a_walk_finds(name, monkeypatch):
    from astad.ir import walk
    taken = []
    before = simplify._before_structure

    def noting(forward):
        found = before(forward)
        if found is not None:
            taken.append(found[0])
        return found

    monkeypatch.setattr(simplify, "_before_structure", noting)
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert taken
    for core in taken:
        known = core.__dict__["_use_counts"]
        assert dict(known) == dict(walk._nested_use_counts(Block(core.binds, core.result)))
        assert core.__dict__["_ops"] == walk._ops(Block(core.binds, core.result))
