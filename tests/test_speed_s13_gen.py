"""Session 13's codegen speed-ups keep what codegen decides:

- ``Printer.copied`` (the reads into new memory, which the in-place forms ask about) counts
  :meth:`bind_plain`'s reads only when it is asked for: asked for after a block, it holds what the general
  path (``bind``, counting each read as it is made) holds; replaced, the reads made before are counted in
  the Counter they were made for;
- ``Printer.summed_with`` (the pairs ``x + y``) is found when first asked for where the block has no
  loop: what the walk made at once finds;
- an inlined temporary's Text that ``bind_plain`` makes (its slots set where it is made) prints, as a
  libcst node, as its text;
- and with them all, derivatives of a program written in place are right (central differences).
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import numpy as np
import pytest

import astad
from astad import codegen
from astad.codegen import inplace
from astad.codegen import python as codegen_python
from astad.codegen.loops import taped_and_summed
from astad.codegen.render import text_state
from astad.codegen.render_expr import text as node_text
from astad.codegen.text_expr import Text
from astad.ir import Plus, Prim, Var

from conftest import check_grad

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import programs  # noqa: E402


def _programs_generated(monkeypatch, names):
    """The (program, residuals) codegen was given for the gradients of the bench programs ``names``."""
    generate, seen = codegen.generate, []

    def recording(prog, residuals, *args, **kwargs):
        seen.append((prog, residuals))
        return generate(prog, residuals, *args, **kwargs)

    monkeypatch.setattr(codegen, "generate", recording)
    astad.clear_caches()
    for name in names:
        fn, make, argnums = programs.PROGRAMS[name]
        astad.api.Reverse(fn).derivative(make(np.random.default_rng(0)),
                                         frozenset((argnums,) if isinstance(argnums, int) else argnums))
    monkeypatch.setattr(codegen, "generate", generate)
    assert seen
    return seen


def _printed(block, extra=()):
    """A Printer that printed ``block``'s bindings."""
    p = codegen_python.Printer(block, extra, in_place=True, text_lines=True)
    p.bind_all(block.binds)
    return p


_NAMES = ["straight_line_500", "mlp", "logsumexp", "least_squares", "huber", "newton", "gmm", "lstm", "rk4",
          "horner", "tree", "scalar_loop_1000"]


@pytest.mark.parametrize("min_size", [inplace.MIN_SIZE, 1])  # (1: every array may be written in place)
def test_copied_counts_what_bind_counts(monkeypatch, min_size):
    monkeypatch.setattr(inplace, "MIN_SIZE", min_size)
    for prog, residuals in _programs_generated(monkeypatch, [n for n in _NAMES if n in programs.PROGRAMS]):
        for block, extra in ((prog.forward, residuals), (prog.backward, ())):
            fast = _printed(block, extra)
            with monkeypatch.context() as m:  # (every binding printed by bind: each read counted as it is made)
                m.setattr(codegen_python, "_PLAIN", collections.defaultdict(lambda: None))
                general = _printed(block, extra)
            assert not general.pending_reads
            assert fast.copied == general.copied
            assert not fast.pending_reads  # (counted when asked for)


def test_copied_replaced_counts_the_reads_made_before_in_the_old_counter(monkeypatch):
    (prog, _), *_ = _programs_generated(monkeypatch, ["straight_line_500"])
    p = codegen_python.Printer(prog.backward, in_place=True, text_lines=True)
    p.pending_reads.extend(["a", "a", "b"])
    old, new = p.copied, collections.Counter()
    assert old == {"a": 2, "b": 1}
    p.pending_reads.append("c")  # (made while `old` is the printer's Counter)
    p.copied = new
    assert old == {"a": 2, "b": 1, "c": 1} and p.copied is new and not new and not p.pending_reads
    p.pending_reads.append("d")
    assert p.copied == {"d": 1} and old["d"] == 0


def _pairs(block):
    """x -> y and y -> x for each sum x + y of two variables anywhere in ``block`` (its nested blocks too)."""
    out = {}
    stack = [block]
    while stack:
        blk = stack.pop()
        for b in blk.binds:
            rhs = b.rhs
            if type(rhs) is Plus and len(rhs.items) == 2 and all(type(a) is Var for a in rhs.items):
                x, y = rhs.items
                out[x.name], out[y.name] = y.name, x.name
            for inner in getattr(rhs, "body", None), getattr(rhs, "then", None), getattr(rhs, "orelse", None):
                if inner is not None and hasattr(inner, "binds"):
                    stack.append(inner)
    return out


def test_summed_with_found_when_asked_is_what_the_walk_finds(monkeypatch):
    for prog, residuals in _programs_generated(monkeypatch, [n for n in _NAMES if n in programs.PROGRAMS]):
        for block in (prog.forward, prog.backward):
            p = codegen_python.Printer(block, in_place=True, text_lines=True)
            taped, pairs = set(), {}
            taped_and_summed(block, taped, pairs)
            assert p.summed_with == pairs == _pairs(block)


def test_inlined_texts_print_as_their_nodes(monkeypatch):
    (prog, _), *_ = _programs_generated(monkeypatch, ["straight_line_500"])
    block = prog.backward
    state, checked = text_state(), 0
    for k in range(1, 200):
        target = block.binds[k - 1].targets[0].name
        p = codegen_python.Printer(block, in_place=True, text_lines=True)
        p.bind_all(block.binds[:k])
        value = p.inlined.get(target)
        if type(value) is Text and type(block.binds[k - 1].rhs) is Prim:
            assert node_text(value.node(), state) == value.text
            checked += 1
    assert checked > 20


def _in_place(x, y):
    a = np.sin(x) * y + x
    b = a * a - np.cos(y)
    c = b / (1.0 + a * a)
    d = c * x + b * y
    e = np.tanh(d) + a * c
    return np.sum(e * e + d)


def test_gradient_of_code_written_in_place(monkeypatch):
    monkeypatch.setattr(inplace, "MIN_SIZE", 1)
    astad.clear_caches()
    rng = np.random.default_rng(3)
    check_grad(_in_place, (rng.standard_normal(5), rng.standard_normal(5)))
    astad.clear_caches()
