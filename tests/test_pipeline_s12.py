"""Session 12: a transformation lets each stage's IR go as soon as the next stage is made
(pipeline.each_stage / last_stage), and the lowerer (which holds the core IR's bindings) with it;
the derivatives it makes are still right (central finite differences, float64), the stages
computed again for display are still those of the generated code, and the garbage collector is
left as it was, also when transformations nest or run on two threads at once."""

import gc
import sys
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest

import astad
from astad import codegen, frontend, key_functions, optimise, pipeline, structural
from astad.ad import reverse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import programs  # noqa: E402


def _straight_line(n):
    return programs.define(programs.straight_line_source(n), f"straight_line_{n}")


def _central_gradient(f, args, i, eps=1e-6):
    x = args[i]
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        hi = f(*args[:i], up, *args[i + 1:])
        lo = f(*args[:i], down, *args[i + 1:])
        g[k] = (hi - lo) / (2 * eps)
    return g


def test_each_stage_is_let_go_when_the_next_is_made(monkeypatch):
    """While the optimiser runs, the core IR (the structural pass's input) and the structural IR
    Function are gone: nothing of the transformation holds them (the lowerer neither)."""
    fn = _straight_line(40)
    args = (np.linspace(-1, 1, 32), np.eye(32) * 0.5)
    made, alive = {}, {}
    make_explicit, macro, optimise_ = structural.make_explicit, reverse.reverse, optimise.optimise

    def recorded_make_explicit(core):
        made["core"] = weakref.ref(core)
        return make_explicit(core)

    def recorded_reverse(linear, active):
        made["structural"] = weakref.ref(linear)
        return macro(linear, active)

    def recorded_optimise(prog, wrt):
        gc.collect()  # (none of them is in a cycle: collected here or not, they are gone)
        alive.update({stage: ref() is not None for stage, ref in made.items()})
        return optimise_(prog, wrt)

    monkeypatch.setattr(pipeline.structural, "make_explicit", recorded_make_explicit)
    monkeypatch.setattr(pipeline.reverse, "reverse", recorded_reverse)
    monkeypatch.setattr(pipeline.optimise, "optimise", recorded_optimise)
    astad.clear_caches()
    d = astad.api.Reverse(fn).derivative(args, frozenset({0, 1}))
    assert alive == {"core": False, "structural": False}
    monkeypatch.undo()
    # the stages computed again (all of them kept, for display) still give the generated code
    stages = d.stages
    assert stages.activity.fn is stages.structural
    prog = stages.optimised
    header = pipeline.header(frontend.parse(fn), d.arg_types, list(d.constants))
    assert not list(key_functions.called(prog))
    assert codegen.generate(prog, optimise.residuals(prog), header, []) == d.source


def test_last_stage_keeps_none_of_the_others():
    made = []

    class Stage:
        pass

    def stages():
        for _ in range(3):
            s = Stage()
            made.append(weakref.ref(s))
            yield s
            del s
            assert sum(r() is not None for r in made) == 1  # (the one yielded last: the caller's)

    last = pipeline.last_stage(stages())
    assert made[-1]() is last and all(r() is None for r in made[:-1])
    assert pipeline.last_stage(iter(())) is None


@pytest.mark.parametrize("n", [7, 40])
def test_straight_line_gradient_against_finite_differences(n):
    fn = _straight_line(n)
    rng = np.random.default_rng(n)
    v, W = rng.standard_normal(32) * 0.5, rng.standard_normal((32, 32)) / np.sqrt(32)
    astad.clear_caches()
    value, pullback = astad.reverse(fn)(v, W)
    assert value == pytest.approx(fn(v, W), rel=1e-12)
    gv, gW = pullback(1.0)
    np.testing.assert_allclose(gv, _central_gradient(fn, (v, W), 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gW, _central_gradient(fn, (v, W), 1), rtol=1e-5, atol=1e-7)


def test_gmm_gradient_against_finite_differences():
    fn, make, argnums = programs.PROGRAMS["gmm"]
    args = make(np.random.default_rng(3))
    wrt = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    astad.clear_caches()
    d = astad.api.Reverse(fn).derivative(args, frozenset(wrt))
    value, residuals = d.forward(*args)
    assert value == pytest.approx(fn(*args), rel=1e-10)
    grads = d.backward(residuals, 1.0)
    for i in wrt:
        fd = _central_gradient(fn, tuple(np.asarray(a, dtype=float) if isinstance(a, np.ndarray) else a
                                         for a in args), i)
        np.testing.assert_allclose(grads[i], fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_left_as_it_was_by_transformations_on_two_threads(enabled):
    """Two transformations at once (each pausing the collector, as the other may have): the
    collector ends as it was before either started; the derivatives are those of one alone."""
    fns = [_straight_line(30), _straight_line(31)]
    args = (np.linspace(-1, 1, 32), np.eye(32) * 0.5)
    astad.clear_caches()
    alone = [astad.api.Reverse(f).derivative(args, frozenset({0})).source for f in fns]
    was = gc.isenabled()
    results, errors = [None, None], []
    barrier = threading.Barrier(2)

    def run(i):
        try:
            barrier.wait()
            results[i] = astad.api.Reverse(fns[i]).derivative(args, frozenset({0})).source
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    try:
        (gc.enable if enabled else gc.disable)()
        astad.clear_caches()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert not errors
    assert results == alone


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_left_as_it_was_by_a_transformation_inside_a_pause(enabled):
    fn = _straight_line(12)
    args = (np.linspace(-1, 1, 32), np.eye(32) * 0.5)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        astad.clear_caches()
        with pipeline.deep.gc_paused():
            astad.api.Reverse(fn).derivative(args, frozenset({0, 1}))
            assert not gc.isenabled()
        assert gc.isenabled() == enabled
        astad.clear_caches()
        astad.api.Reverse(fn).derivative(args, frozenset({0, 1}))
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


# --- the hot look-ups of the activity analysis and the reverse macro read plain dicts (a dict subclass's
# ``d[k]`` calls its ``__getitem__`` through a method look-up): the same answers as the lazy tables had


def test_differentiable_dtypes_answer_as_before_also_for_names_not_seen():
    from astad.ad import activity as act_mod
    from astad.ir.types import DIFFERENTIABLE, DIFFERENTIABLE_DTYPE

    for name in ["float64", "float32", "complex128", "int64", "bool", "uint8", "str96", "float16", "complex64",
                 "datetime64", "object"]:
        for lookup in (act_mod._diff, reverse._diff):
            got = lookup(name) or act_mod.DTYPE_DIFF[name]
            assert bool(got) == name.startswith(("float", "complex")), name
        assert DIFFERENTIABLE[name] == DIFFERENTIABLE_DTYPE[name] == name.startswith(("float", "complex"))


def test_primitive_tables_follow_the_rule_table_as_it_grows(monkeypatch):
    import dataclasses

    from astad import rules
    from astad.ad import activity as act_mod

    act_mod._flows_of_table()
    reverse._vjps_of_table()
    assert set(act_mod._FLOWS) == set(rules.TABLE) == set(reverse._VJPS)
    assert all(act_mod._FLOWS[op] == (p.kind not in act_mod._NO_DERIVATIVE) for op, p in rules.TABLE.items())
    assert all(reverse._VJPS[op] is p.vjp for op, p in rules.TABLE.items())
    # a primitive registered later (the table grew): known at the next analysis and macro
    extra = dataclasses.replace(rules.TABLE["sin"], name="sin_registered_later_s12")
    monkeypatch.setitem(rules.TABLE, extra.name, extra)
    fn = _straight_line(5)
    astad.clear_caches()
    astad.api.Reverse(fn).derivative((np.ones(32), np.eye(32)), frozenset({0}))
    assert act_mod._FLOWS[extra.name] is True and reverse._VJPS[extra.name] is extra.vjp


def test_every_construct_has_its_rule_or_an_internal_error():
    from typing import get_args

    from astad.errors import InternalError
    from astad.ir import Comp

    assert set(reverse._RULES) == set(get_args(Comp))
    for cls, rule in reverse._RULES.items():
        assert rule is getattr(reverse._Macro, "rule_" + cls.__name__, reverse._no_rule)
    with pytest.raises(InternalError, match="no rule for"):
        reverse._no_rule(None, None, object())
