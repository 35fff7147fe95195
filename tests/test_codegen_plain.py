"""``Printer.bind_plain`` and ``Printer.plain`` (codegen's short paths for the operations of
``codegen.python._PLAIN`` and short sums, most lines of a long function) print what ``Printer.bind``'s
general path prints: every module generated with them is the module generated without them (``_PLAIN``
empty), for every benchmark program and for random programs with loops, branches and in-place updates."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import astad
from astad import codegen
from astad.codegen import python as codegen_python

import test_random_control_flow as random_control_flow
from conftest import fuzz_examples


def _generated_both_ways(monkeypatch):
    """Each reverse-mode module generated, and the same module generated with no operation in ``_PLAIN``
    (each bound by ``bind``): a list of the pairs, filled as the modules are generated."""
    generate, checked = codegen.generate, []

    def both(*args, **kwargs):
        made = generate(*args, **kwargs)
        with monkeypatch.context() as m:
            m.setattr(codegen_python, "_PLAIN", collections.defaultdict(lambda: None))
            checked.append((made, generate(*args, **kwargs)))
        return made

    monkeypatch.setattr(codegen, "generate", both)
    return checked


def test_plain_prints_as_bind_on_the_benchmark_programs(monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import programs

    checked = _generated_both_ways(monkeypatch)
    astad.clear_caches()
    for name, (fn, make, argnums) in programs.PROGRAMS.items():
        args = make(np.random.default_rng(0))
        astad.api.Reverse(fn).derivative(args, frozenset((argnums,) if isinstance(argnums, int) else argnums))
    assert len(checked) >= len(programs.PROGRAMS)
    for fast, general in checked:
        assert fast == general


@settings(max_examples=fuzz_examples(6, long=15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_control_flow.programs())
def test_plain_prints_as_bind_on_random_programs(tmp_path_factory, program):
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = _generated_both_ways(monkeypatch)
        if not random_control_flow.transformed_or_refused(program, tmp_path_factory.getbasetemp(), "plain"):
            return  # (refused)
    assert checked
    for fast, general in checked:
        assert fast == general
