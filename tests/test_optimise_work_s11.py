"""Work the optimiser leaves out (session 11), checked where it is left out:

- ``dce.COUNT_REWRITES``: ``shared_products_cleaned`` finds what the rewrites of ``shared_products`` left
  unread itself (``dce.dce_rewritten``): its output is ``dce``'s of ``shared_products``'s, and what it
  remembers on the backward block (outside reads, names, ops, kinds) is what a walk of a fresh copy finds;
- ``arrays.REMEMBER_NAMES``: ``outer_sums`` remembers the outside reads and names of its block (checked
  against a walk of a fresh copy).
"""

import importlib
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import astad
import astad.optimise as optimise
from astad.ir import Bind, Block, Const, Num, Prim, ReverseProgram, Var, kinds, use_counts
from astad.ir.walk import ops_of, outside_reads
from astad.names import program_names
from astad.optimise import arrays
import test_random_programs as random_programs
from conftest import fuzz_examples, load_program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

dce_module = importlib.import_module("astad.optimise.dce")  # (``astad.optimise.dce`` is the function)
products = importlib.import_module("astad.optimise.products")

import programs  # noqa: E402

NAMES = ["straight_line_500", "lstm", "tree", "gmm", "rk4", "mlp", "newton", "horner_llsq", "logsumexp"]


def _bench(name):
    fn, make, argnums = programs.PROGRAMS[name]
    return fn, make(np.random.default_rng(0)), frozenset((argnums,) if isinstance(argnums, int) else argnums)


def _fresh(block):
    return Block(block.binds, block.result)


def _remembered_as_walked(block):
    """Each of the facts remembered on ``block`` is what a walk of a fresh copy of it finds."""
    memo, fresh = block.__dict__, _fresh(block)
    checks = {"_outside_reads": lambda: outside_reads(fresh), "_program_names": lambda: frozenset(program_names(fresh)),
              "_ops": lambda: ops_of(fresh), "_kinds": lambda: kinds(fresh)}
    return all(memo[key] == walk() for key, walk in checks.items() if key in memo)


def _checking(monkeypatch):
    """``shared_products_cleaned`` and ``outer_sums`` wrapped: the first's output against ``dce`` of
    ``shared_products``'s (on fresh copies: nothing remembered) and its remembered facts against walks;
    the second's remembered facts against walks.  The list of checks (where ``dce_rewritten`` answered)."""
    checked = []
    rewritten_before, outer_before = dce_module.dce_rewritten, arrays.outer_sums

    def rewritten(prog, old, changed, counts, where):
        out = rewritten_before(prog, old, changed, counts, where)
        if out is not None:
            plain = dce_module.dce(ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in,
                                                  _fresh(prog.backward)))
            checked.append(out.backward.binds == plain.backward.binds and out.forward.binds == plain.forward.binds
                           and _remembered_as_walked(out.backward))
        return out

    def outer(block, namer):
        out = outer_before(block, namer)
        checked.append(_remembered_as_walked(out))
        return out

    monkeypatch.setattr(products, "dce_rewritten", rewritten)
    monkeypatch.setattr(optimise, "outer_sums", outer)
    return checked


@pytest.mark.parametrize("name", NAMES)
def test_shared_products_cleaned_is_dce_of_shared_products(name, monkeypatch):
    checked = _checking(monkeypatch)
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert all(checked)
    if name == "straight_line_500":  # (the program it was made for: 100 products made dead, one outer sum)
        assert len(checked) == 2


@pytest.mark.parametrize("name", NAMES)
def test_work_left_out_changes_nothing_in_bench_programs(name, monkeypatch):
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    leaving_out = astad.reverse(fn).derivative(args, wrt).source
    monkeypatch.setattr(dce_module, "COUNT_REWRITES", False)
    monkeypatch.setattr(arrays, "REMEMBER_NAMES", False)
    astad.clear_caches(disk=False)
    assert astad.reverse(fn).derivative(args, wrt).source == leaving_out


@settings(max_examples=fuzz_examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_shared_products_cleaned_of_random_programs(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("work"), "work_s11").f
    args = random_programs._arguments(params, seed)
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = _checking(monkeypatch)
        astad.clear_caches(disk=False)
        leaving_out = astad.reverse(fn).transform(*args).source
    assert all(checked)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(dce_module, "COUNT_REWRITES", False)
        monkeypatch.setattr(arrays, "REMEMBER_NAMES", False)
        astad.clear_caches(disk=False)
        assert astad.reverse(fn).transform(*args).source == leaving_out


F = Num((3,), "float64")


def _program(forward, *backward):
    x, ct = Var("x", F), Var("out_ct", F)
    return ReverseProgram("f", (x,), forward, ct, Block(tuple(backward), backward[-1].targets[0]))


def test_dce_rewritten_removes_what_a_rewrite_left_unread():
    """A rewrite leaving a chain of bindings unread (``p`` read only by ``q``, ``q`` only by the product
    rewritten) and a residual read by nothing else (``b``, also read by the forward block's result: it stays
    there): the chain goes, the residual leaves the outside reads, a residual read now (``c``) enters them."""
    x, ct, a, b, c, p, q, y = (Var(n, F) for n in ("x", "out_ct", "a", "b", "c", "p", "q", "y"))
    forward = Block((Bind((a,), Prim("sin", (x,))), Bind((b,), Prim("cos", (x,))), Bind((c,), Prim("mul", (a, b)))),
                    c)
    before = _program(forward, Bind((p,), Prim("mul", (ct, b))), Bind((q,), Prim("neg", (p,))),
                      Bind((y,), Prim("mul", (q, a))))
    old = dce_module.dce(before)  # (dce's output: every binding live, its facts remembered)
    assert [bd.targets[0].name for bd in old.backward.binds] == ["p", "q", "y"]
    new_y = Bind((y,), Prim("mul", (ct, c)))
    after = ReverseProgram("f", old.params, old.forward, old.ct_in,
                           Block(old.backward.binds[:2] + (new_y,), y))
    out = dce_module.dce_rewritten(after, old.backward, [2], use_counts(old.backward), {})
    assert out is not None
    assert [bd.targets[0].name for bd in out.backward.binds] == ["y"]
    assert out.backward.__dict__["_outside_reads"] == {"out_ct", "c"}
    assert _remembered_as_walked(out.backward)
    plain = dce_module.dce(ReverseProgram("f", old.params, old.forward, old.ct_in, _fresh(after.backward)))
    assert out.backward.binds == plain.backward.binds and out.forward.binds == plain.forward.binds


def test_dce_rewritten_leaves_a_named_constant_to_dce():
    """A binding made again that read a named constant: ``dce_rewritten`` cannot tell the names (None)."""
    x, ct, y = Var("x", F), Var("out_ct", F), Var("y", F)
    k = Const(np.ones(3), F, "K")
    forward = Block((Bind((Var("a", F),), Prim("sin", (x,))),), Var("a", F))
    old = dce_module.dce(_program(forward, Bind((y,), Prim("mul", (ct, k)))))
    after = ReverseProgram("f", old.params, old.forward, old.ct_in, Block((Bind((y,), Prim("neg", (ct,))),), y))
    assert dce_module.dce_rewritten(after, old.backward, [0], use_counts(old.backward), {}) is None
