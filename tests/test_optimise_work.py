"""Work the optimiser leaves out, each by an argument written where it is left out: turning
each off must change nothing (the generated code of the bench programs and of random programs
is the same), and what each takes for granted is checked where it is taken:

- ``dce.SKIP_FORWARD``: ``dce`` leaves a forward block without nested blocks as it is where each
  residual the backward block reads no more is read by the forward block itself (it is ``dce``'s
  output for the new residuals too: checked against a walk of a fresh copy);
- ``program_fold.FINAL_AT_ONCE``: the names the fold of a forward block without nested blocks replaced
  are replaced by names it replaced not (each is final);
- ``simplify.DEFER_BINDS``: the fold's named walk makes the binding of a renamed primitive once;
- ``arrays.REMEMBER_KINDS``: ``sink_broadcasts`` remembers its new block's kinds as its input's
  (checked against a walk of a fresh copy);
- ``remat._any_candidate``: what ``_candidates`` of all the block's names would say;
- ``dce.REMEMBER_OPS``: ``dce`` remembers ``ops_of`` and ``kinds`` of a block it made without nested
  blocks from its own walk (checked against a walk of a fresh copy);
- ``cotangent_signs.REMEMBER_READS``: ``absorbed`` remembers the outside reads of a block without
  nested blocks it rewrote (leaving nothing unread) as its input's (checked against a walk of a fresh copy).
"""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import astad
import astad.optimise as optimise
from astad.api_forward import forward_of
from astad.ir import Block, read_names
from astad.optimise import arrays, cotangent_signs, program_fold, remat, simplify
import test_cotangent_signs as cotangent_programs
import test_random_programs as random_programs
from conftest import fuzz_examples, load_program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

dce_module = importlib.import_module("astad.optimise.dce")  # (``astad.optimise.dce`` is the function)

import programs  # noqa: E402

#: the switches of the work left out (module, attribute)
SWITCHES = [(dce_module, "SKIP_FORWARD"), (program_fold, "FINAL_AT_ONCE"), (simplify, "DEFER_BINDS"),
            (arrays, "REMEMBER_KINDS"), (cotangent_signs, "REMEMBER_READS"),
            (dce_module, "REMEMBER_OPS"), (simplify, "REMEMBER_KINDS"),
            (arrays, "REMEMBER_OPS")]

NAMES = ["straight_line_500", "lstm", "tree", "gmm", "rk4", "mlp", "newton", "horner_llsq"]


def _sources(fn, args, wrt):
    """The generated reverse and forward source (forward mode runs the optimiser's passes too)."""
    astad.clear_caches(disk=False)
    return astad.reverse(fn).derivative(args, wrt).source, forward_of(fn).derivative(args, wrt).source


def _bench(name):
    fn, make, argnums = programs.PROGRAMS[name]
    return fn, make(np.random.default_rng(0)), frozenset((argnums,) if isinstance(argnums, int) else argnums)


@pytest.mark.parametrize("name", NAMES)
def test_work_left_out_changes_nothing_in_bench_programs(name, monkeypatch):
    fn, args, wrt = _bench(name)
    leaving_out = _sources(fn, args, wrt)
    for module, attr in SWITCHES:
        monkeypatch.setattr(module, attr, False)
    assert _sources(fn, args, wrt) == leaving_out


@settings(max_examples=fuzz_examples(10, long=25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_work_left_out_changes_nothing_in_random_programs(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("work"), "work").f
    args = random_programs._arguments(params, seed)
    astad.clear_caches(disk=False)
    leaving_out = astad.reverse(fn).transform(*args).source
    with pytest.MonkeyPatch.context() as monkeypatch:
        for module, attr in SWITCHES:
            monkeypatch.setattr(module, attr, False)
        astad.clear_caches(disk=False)
        assert astad.reverse(fn).transform(*args).source == leaving_out


def _checking_dce(monkeypatch):
    """``dce`` wrapped: where it left a forward block as it was (``SKIP_FORWARD``), a walk of a fresh
    copy of it (nothing remembered) for the same residuals removes nothing; the list of checks."""
    dce_before, checked = dce_module.dce, []

    def checking(prog, **kwargs):
        out = dce_before(prog, **kwargs)
        if out.forward is prog.forward and prog.forward.__dict__.get("_dce_needed") is not None:
            fresh = Block(prog.forward.binds, prog.forward.result)
            walked = dce_module._dce_reads(fresh, read_names(Block((), fresh.result)),
                                           set(prog.forward.__dict__["_dce_needed"]))[0]
            checked.append(walked is fresh)
        return out

    monkeypatch.setattr(optimise, "dce", checking)
    return checked


@pytest.mark.parametrize("name", ["straight_line_500", "gmm", "mlp"])
def test_dce_leaves_out_only_forward_blocks_it_would_leave_as_they_are(name, monkeypatch):
    checked = _checking_dce(monkeypatch)
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert all(checked)
    if name == "straight_line_500":  # (the program the skip was made for: after shared_products)
        assert checked


@settings(max_examples=fuzz_examples(10, long=25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_dce_skips_of_random_programs(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("work"), "work_dce").f
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = _checking_dce(monkeypatch)
        astad.clear_caches(disk=False)
        astad.reverse(fn).transform(*random_programs._arguments(params, seed))
    assert all(checked)


def test_forward_fold_renames_are_final(monkeypatch):
    """Where the fold of a forward block without nested blocks takes its renames as final, each is
    (no name replacing another is replaced itself)."""
    block_before, checked = program_fold._fold_forward_block, []

    def checking(forward, residuals, forget=False):
        out, env = block_before(forward, residuals, forget)
        if forget:
            checked.append(all(getattr(a, "name", None) not in env for a in env.values()))
        return out, env

    monkeypatch.setattr(program_fold, "_fold_forward_block", checking)
    monkeypatch.setattr(program_fold, "USE_BEFORE_STRUCTURE", False)  # (else the fold of these is not walked)
    for name in ("straight_line_500", "mlp", "gmm"):
        fn, args, wrt = _bench(name)
        astad.clear_caches(disk=False)
        astad.reverse(fn).derivative(args, wrt)
    assert checked and all(checked)


@pytest.mark.parametrize("name", ["straight_line_500", "mlp", "gmm", "lstm", "rk4"])
def test_remat_any_candidate_is_what_candidates_says(name, monkeypatch):
    any_before, checked = remat._any_candidate, []

    def checking(block):
        found = any_before(block)
        defs = remat._defs(block)
        checked.append(found == bool(remat._candidates(defs, defs.keys())))
        return found

    monkeypatch.setattr(remat, "_any_candidate", checking)
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert all(checked)


def test_remat_any_candidate_of_big_arrays():
    """A big array made by a cheap operation is a candidate (the early return does not hide it)."""
    x = np.linspace(0.0, 1.0, 5000)

    def f(x):
        y = x * x
        return np.sum(np.sin(y) * y)

    blocks = []
    any_before = remat._any_candidate

    def recording(block):
        found = any_before(block)
        blocks.append(found)
        return found

    remat._any_candidate = recording
    try:
        astad.clear_caches(disk=False)
        astad.grad(f)(x)
    finally:
        remat._any_candidate = any_before
    assert blocks and any(blocks)



def _f():
    from astad.ir import Num
    return Num((3,), "float64")


F = _f()


def _vars(*names):
    from astad.ir import Var
    return [Var(n, F) for n in names]


def test_dce_removes_a_residual_only_the_backward_block_read():
    """A forward binding only the backward block read (``b``) goes when the backward block reads
    it no more: the forward block is walked again (the skip's condition fails: ``b`` is not read
    by the forward block).  A residual the forward block reads itself (``a``) may be read no more
    without a walk: the forward block is left as it is."""
    from astad.ir import Bind, Prim, ReverseProgram

    x, ct, a, b, c, g = _vars("x", "out_ct", "a", "b", "c", "g")
    forward = Block((Bind((a,), Prim("sin", (x,))), Bind((b,), Prim("cos", (x,))), Bind((c,), Prim("mul", (a, x)))), c)

    def program(forward, *backward):
        return ReverseProgram("f", (x,), forward, ct, Block(tuple(backward), backward[-1].targets[0]))

    first = dce_module.dce(program(forward, Bind((g,), Prim("mul", (ct, b))), Bind((c,), Prim("mul", (g, a)))))
    assert [bd.targets[0].name for bd in first.forward.binds] == ["a", "b", "c"]
    # the backward block reads neither b nor a any more: b goes, a (read by the forward block) stays
    second = dce_module.dce(program(first.forward, Bind((g,), Prim("mul", (ct, x)))))
    assert [bd.targets[0].name for bd in second.forward.binds] == ["a", "c"]
    # the backward block reads b, not a: the forward block is left as it is
    third = dce_module.dce(program(first.forward, Bind((g,), Prim("mul", (ct, b)))))
    assert third.forward is first.forward
    assert dce_module._dce_reads(Block(forward.binds, c), {"c"}, {"out_ct", "b"})[0].binds == forward.binds


@pytest.mark.parametrize("name", ["straight_line_500", "mlp", "logsumexp", "gmm"])
def test_sink_broadcasts_remembers_the_kinds_of_its_block(name, monkeypatch):
    from astad.ir import walk

    sink_before, checked = optimise.sink_broadcasts, []

    def checking(prog):
        out = sink_before(prog)
        known = out.backward.__dict__.get("_kinds")
        if out is not prog and known is not None:
            checked.append(known == walk._kinds(Block(out.backward.binds, out.backward.result)))
        return out

    monkeypatch.setattr(optimise, "sink_broadcasts", checking)
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert all(checked)
    if name == "straight_line_500":
        assert checked


@settings(max_examples=fuzz_examples(10, long=25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_sink_broadcasts_kinds_of_random_programs(tmp_path_factory, program):
    from astad.ir import walk

    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("work"), "work_sink").f
    sink_before, checked = optimise.sink_broadcasts, []

    def checking(prog):
        out = sink_before(prog)
        known = out.backward.__dict__.get("_kinds")
        if out is not prog and known is not None:
            checked.append(known == walk._kinds(Block(out.backward.binds, out.backward.result)))
        return out

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(optimise, "sink_broadcasts", checking)
        astad.clear_caches(disk=False)
        astad.reverse(fn).transform(*random_programs._arguments(params, seed))
    assert all(checked)


def _checking_absorbed(monkeypatch):
    """``absorbed`` wrapped: where it remembered the outside reads of its new block, a walk of a fresh
    copy (nothing remembered) finds the same; the list of checks."""
    from astad.ir import walk

    absorbed_before, checked = optimise.absorbed, []

    def checking(block, namer):
        out, unread = absorbed_before(block, namer)
        known = out.__dict__.get("_outside_reads")
        if out is not block and known is not None:
            fresh = Block(out.binds, out.result)
            checked.append(known == walk.read_set(fresh) - walk.bound_set(fresh))
        return out, unread

    monkeypatch.setattr(optimise, "absorbed", checking)
    return checked


def _checking_dce_ops(monkeypatch):
    """``dce`` wrapped: where it remembered ``ops_of`` and ``kinds`` of a block it made, walks of a fresh copy
    find the same; the list of checks."""
    from astad.ir import walk

    dce_before, checked = dce_module.dce, []

    def checking(prog, **kwargs):
        out = dce_before(prog, **kwargs)
        for block in (out.backward, out.forward):
            known = block.__dict__.get("_ops")
            if known is not None:
                fresh = Block(block.binds, block.result)
                checked.append(known == walk._ops(fresh) and block.__dict__["_kinds"] == walk._kinds(fresh))
        return out

    monkeypatch.setattr(optimise, "dce", checking)
    return checked


REMEMBERED = {"absorbed outside reads": lambda mp: _checking_absorbed(mp),
              "dce ops and kinds": lambda mp: _checking_dce_ops(mp)}


@pytest.mark.parametrize("name", ["straight_line_500", "mlp", "gmm", "lstm", "tree", "rk4", "logsumexp"])
@pytest.mark.parametrize("fact", list(REMEMBERED))
def test_remembered_facts_of_bench_programs(fact, name, monkeypatch):
    checked = REMEMBERED[fact](monkeypatch)
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert all(checked)
    if name == "straight_line_500":
        assert checked


@pytest.mark.parametrize("fact", list(REMEMBERED))
@settings(max_examples=fuzz_examples(10, long=25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_remembered_facts_of_random_programs(tmp_path_factory, fact, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("work"), "work_facts").f
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = REMEMBERED[fact](monkeypatch)
        astad.clear_caches(disk=False)
        astad.reverse(fn).transform(*random_programs._arguments(params, seed))
    assert all(checked)


@settings(max_examples=fuzz_examples(10, long=25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cotangent_programs._programs())
def test_absorbed_outside_reads_of_programs_of_negations(tmp_path_factory, source):
    """The random programs of ``test_cotangent_signs`` (negations that their readers take, nearly all)."""
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("work"), "work_signs").f
    rng = np.random.default_rng(0)
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = _checking_absorbed(monkeypatch)
        astad.clear_caches(disk=False)
        astad.reverse(fn).transform(rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((3, 3)))
    assert all(checked)
