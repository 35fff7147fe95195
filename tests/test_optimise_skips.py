"""Where ``optimise_passes`` leaves out a ``dce`` (the program it has is ``dce``'s
output already: after ``outer_sums`` in a block without nested blocks, after
``absorbed`` when it says it left nothing unread), the program must be ``dce``'s
fixpoint: ``dce`` of it is the same program.  Checked at the end of the passes
(``finish`` is handed the program): on random straight-line programs and
random programs with branches and loops, and on the bench programs the skips
were made for.  A missed ``dce`` would not change a derivative, only leave dead
code in the generated code: no other test would see it.

Also the facts passes remember on the blocks they make, so that the passes after
them need not walk those blocks (``outer_sums``: what its block's bindings read,
for ``use_counts``; ``dce``: the names of its blocks, for ``Namer.of``): they
are what a walk of the block finds."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings

import astad
import astad.optimise as optimise
from astad.optimise.dce import dce
import test_random_control_flow as random_control_flow
import test_random_programs as random_programs
from conftest import fuzz_examples, load_program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))


def _same(a, b):
    return a.forward.pretty() == b.forward.pretty() and a.backward.pretty() == b.backward.pretty()


@pytest.fixture
def checked(monkeypatch):
    """``finish`` asserts that the program it is handed is ``dce``'s fixpoint; the list of checks."""
    seen = []
    finish = optimise.finish

    def checking(prog):
        again = dce(prog)
        seen.append(_same(again, prog))
        assert seen[-1], f"dce left out where it removes something:\n{prog.pretty()}"
        return finish(prog)

    monkeypatch.setattr(optimise, "finish", checking)
    astad.clear_caches()
    yield seen
    astad.clear_caches()


@pytest.mark.parametrize("name", ["straight_line_500", "lstm", "tree", "gmm", "rk4", "mlp"])
def test_bench_programs_end_at_dce_fixpoint(checked, name):
    import programs

    fn, make, argnums = programs.PROGRAMS[name]
    args = make(np.random.default_rng(0))
    astad.api.Reverse(fn).derivative(args, frozenset((argnums,) if isinstance(argnums, int) else argnums))
    assert checked and all(checked)


def _ends_at_dce_fixpoint(fn, args):
    """Transform ``fn`` at ``args``; whether every program ``finish`` was handed was ``dce``'s fixpoint."""
    finish, seen = optimise.finish, []

    def checking(prog):
        seen.append(_same(dce(prog), prog))
        assert seen[-1], prog.pretty()
        return finish(prog)

    optimise.finish = checking  # (not monkeypatch: hypothesis runs many examples in one test)
    try:
        astad.clear_caches()
        astad.reverse(fn).transform(*args)
    finally:
        optimise.finish = finish
    return bool(seen) and all(seen)


@settings(max_examples=fuzz_examples(12, long=30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_random_programs_end_at_dce_fixpoint(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("skips"), "skips").f
    assert _ends_at_dce_fixpoint(fn, random_programs._arguments(params, seed))


@settings(max_examples=fuzz_examples(8, long=20), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(random_control_flow.programs())
def test_random_control_flow_ends_at_dce_fixpoint(tmp_path_factory, program):
    source, _, params, dynamic, seed = program
    note(source)
    args = random_programs._arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])
    fn = load_program(source, tmp_path_factory.mktemp("skips"), "skips_cf").f
    try:
        assert _ends_at_dce_fixpoint(fn, args)
    except astad.AstadError:
        assume(False)  # (refused: nothing to check)


@pytest.mark.parametrize("name", ["straight_line_500", "tree"])
def test_outer_sums_remembers_what_its_block_reads(monkeypatch, name):
    """``outer_sums`` remembers its new block's reads (from its input's) for ``use_counts``:
    they are what a count of the new block finds."""
    import programs
    from astad.ir import walk

    outer_sums, checked = optimise.outer_sums, []

    def checking(block, namer):
        out = outer_sums(block, namer)
        known = out.__dict__.get("_use_counts")
        if out is not block and known is not None:
            checked.append(dict(known) == dict(walk._nested_use_counts(out)))
        return out

    monkeypatch.setattr(optimise, "outer_sums", checking)
    fn, make, argnums = programs.PROGRAMS[name]
    astad.clear_caches()
    astad.api.Reverse(fn).derivative(make(np.random.default_rng(0)),
                                      frozenset((argnums,) if isinstance(argnums, int) else argnums))
    assert checked and all(checked)


@pytest.mark.parametrize("name", ["straight_line_500", "tree", "lstm"])
def test_dce_counts_what_its_block_reads(monkeypatch, name):
    """``dce`` asked to count (``count_reads``, where ``outer_sums`` comes after it) remembers its
    backward block's reads for ``use_counts``: they are what a count of the block finds."""
    import programs
    from astad.ir import Block, walk

    dce_before, checked = optimise.dce, []

    def checking(prog, **kwargs):
        out = dce_before(prog, **kwargs)
        known = out.backward.__dict__.get("_use_counts")
        if kwargs.get("count_reads") and known is not None:
            checked.append(dict(known) == dict(walk._nested_use_counts(Block(out.backward.binds,
                                                                             out.backward.result))))
        return out

    monkeypatch.setattr(optimise, "dce", checking)
    fn, make, argnums = programs.PROGRAMS[name]
    astad.clear_caches()
    astad.api.Reverse(fn).derivative(make(np.random.default_rng(0)),
                                      frozenset((argnums,) if isinstance(argnums, int) else argnums))
    assert all(checked)
    if name != "lstm":  # (the programs with an outer product: the count is asked for)
        assert checked


def _check_dce_names(monkeypatch):
    """``dce`` wrapped: the names it remembers on a block are what ``names.program_names`` finds."""
    from astad import names
    from astad.ir import Block

    dce_before, checked = optimise.dce, []

    def checking(prog, **kwargs):
        out = dce_before(prog, **kwargs)
        for block in (out.forward, out.backward):
            known = block.__dict__.get("_program_names")
            if known is not None:
                checked.append(known == names._block_names(Block(block.binds, block.result)))
        return out

    monkeypatch.setattr(optimise, "dce", checking)
    return checked


@pytest.mark.parametrize("name", ["straight_line_500", "lstm", "gmm", "rk4"])
def test_dce_remembers_the_names_of_its_blocks(monkeypatch, name):
    """``dce`` remembers the names of the blocks it keeps (so that ``Namer.of`` walks them
    no more): they are the names a walk of the block finds."""
    import programs

    checked = _check_dce_names(monkeypatch)
    fn, make, argnums = programs.PROGRAMS[name]
    astad.clear_caches()
    astad.api.Reverse(fn).derivative(make(np.random.default_rng(0)),
                                      frozenset((argnums,) if isinstance(argnums, int) else argnums))
    assert checked and all(checked)


def test_dce_names_of_named_constants(monkeypatch, tmp_path):
    """A module constant the program reads by name is one of its names."""
    source = ("import numpy as np\nSCALE = 0.25\nOFFSET = np.array([1.0, 2.0, 3.0])\n\n"
              "def f(x):\n    y = np.sin(x) * SCALE + OFFSET\n    z = y * y + OFFSET\n    return np.sum(z * SCALE)\n")
    checked = _check_dce_names(monkeypatch)
    fn = load_program(source, tmp_path, "named").f
    astad.clear_caches()
    astad.grad(fn)(np.array([0.1, 0.2, 0.3]))
    assert checked and all(checked)


def _check_fold_named(monkeypatch):
    """``simplify._fold`` wrapped: where it names the cotangents in its own walk (``named``), the block is
    ``name_cotangents`` of the plain fold; where it does not, of a block without copies or nested blocks
    (``fold_program`` names nothing there), ``name_cotangents`` leaves the fold's output as it is; the list of
    checks (None where the walk could not tell)."""
    from astad.ir import kinds
    from astad.optimise import simplify

    fold_before, checked = simplify._fold, []

    def checking(block, *args, **kwargs):
        out = fold_before(block, *args, **kwargs)
        if kwargs.get("named"):
            plain = simplify.name_cotangents(fold_before(block, env=kwargs.get("env")))
            checked.append(None if out is None else out.pretty() == plain.pretty())
        elif kinds(block).isdisjoint({"Copy", "If", "Loop", "LoopBack", "Lam"}):
            checked.append(simplify.name_cotangents(out).pretty() == out.pretty())
        return out

    monkeypatch.setattr(simplify, "_fold", checking)
    # (the fold's own walk checked: where a block needs only renaming, ``_renamed_only`` takes it without one,
    # checked against the fold in test_speed_s14_opt1)
    monkeypatch.setattr(simplify, "RENAMES_ONLY", False)
    return checked


@pytest.mark.parametrize("name", ["straight_line_500", "tree", "mlp"])
def test_fold_names_cotangents_in_its_walk(monkeypatch, name):
    """``fold_program`` names the cotangents of a backward block without nested blocks in the
    fold's own walk: the block ``name_cotangents`` makes of the fold's."""
    import programs

    checked = _check_fold_named(monkeypatch)
    fn, make, argnums = programs.PROGRAMS[name]
    astad.clear_caches()
    astad.api.Reverse(fn).derivative(make(np.random.default_rng(0)),
                                      frozenset((argnums,) if isinstance(argnums, int) else argnums))
    assert checked and all(c is True for c in checked)


@settings(max_examples=fuzz_examples(12, long=30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_random_programs_fold_names_cotangents_in_its_walk(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("named"), "named").f
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = _check_fold_named(monkeypatch)
        astad.clear_caches()
        astad.reverse(fn).transform(*random_programs._arguments(params, seed))
    assert all(c is not False for c in checked)


def test_fold_named_where_a_named_temporary_is_read_again():
    """A temporary a copy names (``let x_ct = t1``) read after that copy: ``name_cotangents`` keeps it
    (read twice), which the walk learns too late; ``fold_named`` folds, then names."""
    from astad.ir import Bind, Block, Copy, Num, Prim, Var
    from astad.optimise.simplify import _fold, fold, fold_named, name_cotangents

    f = Num((3,), "float64")
    a, c, t1, x_ct, y, t2, z_ct = (Var(n, f) for n in ("a", "c", "t1", "x_ct", "y", "t2", "z_ct"))
    block = Block((Bind((t1,), Prim("mul", (a, c))), Bind((x_ct,), Copy(t1)), Bind((y,), Prim("mul", (t1, x_ct))),
                   Bind((t2,), Prim("sin", (y,))), Bind((z_ct,), Copy(t2))), z_ct)
    assert _fold(block, named=True) is None
    expected = name_cotangents(fold(block))
    assert fold_named(block).pretty() == expected.pretty()
    assert "let t1 = mul(a, c)" in expected.pretty() and "let z_ct = sin(y)" in expected.pretty()
