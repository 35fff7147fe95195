"""A derivative keeps no stage's IR (but forward mode's optimised stage, which
higher derivatives differentiate again): each stage is computed again when
first read (astad.pipeline._StageText).  The stages computed again are the ones
the code was made from -- their texts equal those of the stages the
transformation computed, for every benchmark program, reverse and forward,
read after other programs were transformed -- and the transformation leaves the
garbage collector as it found it."""

import gc
import sys
from pathlib import Path

import numpy as np
import pytest

import astad
from astad import codegen, frontend, key_functions, optimise, pipeline
from astad.errors import AstadError, InternalError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import programs  # noqa: E402


def nums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _recording(monkeypatch):
    """The stages each transformation computes, as it computes them."""
    made = []
    each_stage, forward_stages = pipeline.each_stage, pipeline.forward_stages

    def recorded_each_stage(*args, **kwargs):  # (reverse mode's stages, as the transformation makes them)
        found = list(each_stage(*args, **kwargs))
        made.append(pipeline.Stages(*found))
        yield from found

    def recorded_forward_stages(*args, **kwargs):
        found = forward_stages(*args, **kwargs)
        made.append(found)
        return found

    monkeypatch.setattr(pipeline, "each_stage", recorded_each_stage)
    monkeypatch.setattr(pipeline, "forward_stages", recorded_forward_stages)
    return made


def _texts(stages):
    return {stage: stages.text(stage) for stage in stages.NAMES}


@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_stages_computed_again_are_the_ones_transformed(name, monkeypatch):
    fn, make, argnums = programs.PROGRAMS[name]
    args = make(np.random.default_rng(0))
    wrt = frozenset(nums(argnums))
    astad.clear_caches()
    made = _recording(monkeypatch)
    rev = astad.api.Reverse(fn)
    d = rev.derivative(args, wrt)
    fwd = astad.api_forward.Forward(fn).derivative(args, wrt)
    assert len(made) == 2
    kept_reverse, kept_forward = (_texts(s) for s in made)
    monkeypatch.undo()
    # only forward mode's optimised stage is kept
    assert not set(vars(d.stages)) & set(pipeline.STAGES)
    assert set(vars(fwd.stages)) & set(pipeline.FORWARD_STAGES) == {"optimised"}
    # another program transformed in between (the caches it fills must not change the stages)
    other = "tree" if name != "tree" else "lstm"
    f2, make2, argnums2 = programs.PROGRAMS[other]
    astad.api.Reverse(f2).derivative(make2(np.random.default_rng(1)), frozenset(nums(argnums2)))
    assert _texts(d.stages) == kept_reverse
    assert _texts(fwd.stages) == kept_forward
    assert rev.ir("core") == kept_reverse["core"]
    # the optimised stage computed again gives the generated code
    prog = d.stages.optimised
    header = pipeline.header(rev._parsed, d.arg_types, list(d.constants))
    called = [(p, optimise.residuals(p)) for p in
              (key_functions.reverse_of_key(f, m) for f, m in key_functions.called(prog))]  # (tree: its functions)
    assert codegen.generate(prog, optimise.residuals(prog), header, called) == d.source


def test_a_stage_is_computed_once_with_the_others():
    fn, make, argnums = programs.PROGRAMS["lstm"]
    d = astad.api.Reverse(fn).derivative(make(np.random.default_rng(0)), frozenset(nums(argnums)))
    core = d.stages.core
    assert d.stages.core is core and d.stages.activity.fn is d.stages.structural
    assert d.stages.optimised is d.stages.optimised


def test_the_transformation_leaves_the_stages_to_the_collector():
    """The IR of the stages dies when the transformation ends: the objects it leaves
    are a small part of those its stages are (which the collector would walk)."""
    source = programs.straight_line_source(60)
    fn = programs.define(source, "straight_line_60")
    args = (np.ones(32), np.eye(32))
    parsed = frontend.parse(fn)
    types = [frontend.abstract(a, "x") for a in args]
    # (the objects made before, frozen: neither counted nor walked by the collections below; in a
    # test process holding a million objects, three full collections and counts of them all were
    # most of this test's time; what is counted is the objects made from here on, as before)
    gc.freeze()
    try:
        before = len(gc.get_objects())
        d = pipeline.transform(parsed, types, frozenset({0}))
        gc.collect()
        left = len(gc.get_objects()) - before
        for stage in pipeline.STAGES:
            getattr(d.stages, stage)
        gc.collect()
        stages = len(gc.get_objects()) - before - left
    finally:
        gc.unfreeze()
    assert left < stages / 5, (left, stages)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(enabled):
    fn, make, argnums = programs.PROGRAMS["tree"]
    args = make(np.random.default_rng(0))
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        astad.clear_caches()
        d = astad.api.Reverse(fn).derivative(args, frozenset(nums(argnums)))
        assert gc.isenabled() == enabled
        d.stages.core
        assert gc.isenabled() == enabled
        astad.api_forward.Forward(fn).derivative(args, frozenset(nums(argnums))).stages.forward
        assert gc.isenabled() == enabled
        with pytest.raises(ZeroDivisionError):
            with pipeline.deep.gc_paused():
                assert not gc.isenabled()
                with pipeline.deep.gc_paused():  # nested: off for the outer one still
                    pass
                assert not gc.isenabled()
                1 / 0
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_stage_names_and_errors():
    stages = pipeline.Stages(later=lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        stages.core
    with pytest.raises(AttributeError):
        stages.backward
    with pytest.raises(AstadError, match="unknown stage 'backward'"):
        stages.text("backward")
    with pytest.raises(TypeError):
        pipeline.Stages()
    with pytest.raises(TypeError):
        pipeline.Stages(1, 2)
    done = pipeline.Stages(1, 2, 3, 4, 5)
    assert (done.core, done.optimised) == (1, 5)
    with pytest.raises(AttributeError):
        done.forward


def test_an_error_computing_a_stage_again_is_the_transformations(monkeypatch):
    fn, make, argnums = programs.PROGRAMS["lstm"]
    d = astad.api.Reverse(fn).derivative(make(np.random.default_rng(0)), frozenset(nums(argnums)))

    def broken(*args, **kwargs):
        raise KeyError("x")

    monkeypatch.setattr(pipeline.structural, "make_explicit", broken)
    with pytest.raises(InternalError, match="internal error while transforming"):
        d.stages.structural


def test_stages_refused_once_a_name_read_means_another_object(tmp_path, monkeypatch):
    """The stages computed again read the module's names as they are now: where one
    means another object than when the derivative was made, they are refused (they
    would not be the derivative's)."""
    (tmp_path / "scaled_mod.py").write_text("import numpy as np\n\nSCALE = 2.0\n\n\n"
                                            "def scaled(x):\n    return np.sin(x) * SCALE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import scaled_mod

    rev = astad.api.Reverse(scaled_mod.scaled)
    d = rev.derivative((0.5,))
    fwd = astad.api_forward.Forward(scaled_mod.scaled).derivative((0.5,), frozenset({0}))
    old, scaled_mod.SCALE = scaled_mod.SCALE, 3.0
    with pytest.raises(AstadError, match="means another object"):
        d.stages.core
    with pytest.raises(AstadError, match="means another object"):
        fwd.stages.forward
    assert "SCALE" in fwd.stages.text("optimised")  # kept
    scaled_mod.SCALE = old  # the same object again
    assert "SCALE" in d.stages.text("core") and "SCALE" in fwd.stages.text("core")
