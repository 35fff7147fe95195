"""The reverse macro's shortcuts change nothing it makes, over random programs: VJP rule applications
replayed from the record of an earlier like one (astad.ad.replay) and cotangents named where they are
made (``take``) give the same generated code as every rule run and every cotangent copied to its name
(which the optimiser's fold then removes).  The bench programs are checked in test_transform_work.py."""

import pytest
from hypothesis import HealthCheck, given, note, settings

import astad
from astad.ad import replay, reverse
from conftest import fuzz_examples, load_program
from test_random_programs import _arguments, programs


def _source(fn, args):
    astad.clear_caches(disk=False)
    try:
        return astad.reverse(fn).derivative(args).source
    except astad.AstadError as e:  # refused: the same way both times
        return f"refused: {type(e).__name__}: {e}"


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_replay")


@settings(max_examples=fuzz_examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_replayed_and_named_like_run_and_copied(program_dir, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, program_dir, "replay").f
    args = _arguments(params, seed)
    fast = _source(fn, args)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay, "REPLAY", False)
        mp.setattr(reverse, "NAME_COTANGENTS", False)
        assert _source(fn, args) == fast
