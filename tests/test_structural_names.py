"""The structural pass remembers the names of its output (those of its input and of the copies it
makes: astad.names.remember_names) for the next pass's namer, which then does not walk the program
again; so does the frontend (frontend.drop_dead_temporaries: the names it collects on its walk) for
the structural pass's.  They must be exactly the names a walk finds: a name missing could be handed out twice, a
name too many would change the names of generated code.  With ``names.CHECK_REMEMBERED`` on,
remember_names compares them with a walk; here over the bench programs and random programs with
branches, loops, lists and early exits (test_random_control_flow's generator), in both modes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import astad
from astad import api, names, structural
from astad.api_forward import forward_of
from astad.errors import AstadError, InternalError
from astad.ir import Function
from conftest import fuzz_examples, load_program
from test_random_control_flow import _arguments, programs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import programs as bench  # noqa: E402


@pytest.fixture(autouse=True)
def checked(monkeypatch):
    monkeypatch.setattr(names, "CHECK_REMEMBERED", True)


def _both_modes(fn, args, wrt):
    astad.clear_caches()
    api.Reverse(fn).derivative(args, wrt)
    forward_of(fn).derivative(args, wrt)


@pytest.mark.parametrize("name", sorted(bench.PROGRAMS))
def test_bench_programs(name):
    fn, mk, argnums = bench.PROGRAMS[name]
    args = mk(np.random.default_rng(0))
    _both_modes(fn, args, frozenset((argnums,) if isinstance(argnums, int) else argnums))


def test_remembered_and_read():
    """What the pass remembers is what the next pass's namer starts from."""
    fn, mk, argnums = bench.PROGRAMS["straight_line_500"]
    made = []
    original = structural.remember_names

    def spy(out, found):
        original(out, found)
        made.append(out)

    structural.remember_names = spy
    try:
        _both_modes(fn, mk(np.random.default_rng(0)), frozenset({argnums}) if isinstance(argnums, int) else argnums)
    finally:
        structural.remember_names = original
    assert made
    out = made[0]
    assert names.program_names(out) == names.program_names(Function(out.name, out.params, out.body))


def test_frontend_remembers_its_output_names():
    """The frontend's output (after drop_dead_temporaries) comes with its names, a walk's."""
    from astad import frontend
    fn, mk, argnums = bench.PROGRAMS["straight_line_500"]
    made = []
    original = frontend.drop_dead_temporaries

    def spy(core):
        out = original(core)
        made.append(out)
        return out

    frontend.drop_dead_temporaries = spy
    try:
        _both_modes(fn, mk(np.random.default_rng(0)), frozenset({argnums}) if isinstance(argnums, int) else argnums)
    finally:
        frontend.drop_dead_temporaries = original
    assert made
    for out in made:
        assert "_program_names" in out.__dict__
        assert names.program_names(out) == names.program_names(Function(out.name, out.params, out.body))


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("structural_names")


@settings(max_examples=fuzz_examples(6, long=25), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(programs())
def test_random_control_flow_programs(program_dir, program):
    source, _, params, dynamic, seed = program
    note(source)
    args = _arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])
    fn = load_program(source, program_dir, "structural_names").f
    wrt = frozenset(i for i, a in enumerate(args) if isinstance(a, (float, np.ndarray)))
    try:
        _both_modes(fn, args, wrt)
    except InternalError:
        raise
    except AstadError:  # (refused: not this test's business)
        REFUSED.append(source)
    DONE.append(source)


REFUSED: list[str] = []
DONE: list[str] = []


def test_most_random_programs_were_transformed():
    """(after the test above, in file order) the random programs were transformed, not refused."""
    if DONE:
        assert len(REFUSED) <= len(DONE) // 2, REFUSED[:3]
