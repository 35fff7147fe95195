"""Work the optimiser leaves out (session 12), checked where it is left out:

- ``arrays._kept``: which bindings ``outer_sums`` keeps, found from where the outer products summed were
  and how many bindings the sums before them were replaced by, is what a look at every binding's identity
  finds (the way it was found before), on the bench programs and on random programs;
- ``dce.dce_rewritten`` marks the few bindings it removes instead of asking of every binding: its output
  is ``dce``'s (checked on the bench programs, with ``COUNT_REWRITES`` off as the oracle);
- the derivatives of a program whose weight matrix's cotangent is a sum of outer products (the case
  ``outer_sums`` rewrites, and ``_kept`` serves) agree with central finite differences.
"""

import importlib
import sys
from pathlib import Path
from operator import not_

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import astad
from astad.optimise import arrays
import test_random_programs as random_programs
from conftest import fuzz_examples, load_program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

dce_module = importlib.import_module("astad.optimise.dce")  # (``astad.optimise.dce`` is the function)

import programs  # noqa: E402

NAMES = ["straight_line_500", "mlp", "lstm", "gmm", "rk4", "tree"]


def _bench(name):
    fn, make, argnums = programs.PROGRAMS[name]
    return fn, make(np.random.default_rng(0)), frozenset((argnums,) if isinstance(argnums, int) else argnums)


def _checking_kept(monkeypatch):
    """``arrays._kept`` wrapped: its answer against the identity of every binding; the list of checks."""
    kept_before, checked = arrays._kept, []

    def checking(binds, old, outer_at, outers, summed, sum_at, extra):
        out = kept_before(binds, old, outer_at, outers, summed, sum_at, extra)
        left_out = {id(outers[name]) for name in summed}
        checked.append(out == list(map(not_, map(left_out.__contains__, map(id, binds)))))
        return out

    monkeypatch.setattr(arrays, "_kept", checking)
    return checked


@pytest.mark.parametrize("name", NAMES)
def test_kept_is_what_identities_say_in_bench_programs(name, monkeypatch):
    checked = _checking_kept(monkeypatch)
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    astad.reverse(fn).derivative(args, wrt)
    assert all(checked)
    if name == "straight_line_500":  # (a sum of 100 outer products of the weight matrix)
        assert checked


@settings(max_examples=fuzz_examples(10, long=25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs.programs())
def test_kept_is_what_identities_say_in_random_programs(tmp_path_factory, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("kept"), "kept").f
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = _checking_kept(monkeypatch)
        astad.clear_caches(disk=False)
        astad.reverse(fn).transform(*random_programs._arguments(params, seed))
    assert all(checked)


@pytest.mark.parametrize("name", ["straight_line_500", "gmm", "lstm"])
def test_dce_rewritten_output_is_dces(name, monkeypatch):
    fn, args, wrt = _bench(name)
    astad.clear_caches(disk=False)
    counted = astad.reverse(fn).derivative(args, wrt).source
    monkeypatch.setattr(dce_module, "COUNT_REWRITES", False)
    astad.clear_caches(disk=False)
    assert astad.reverse(fn).derivative(args, wrt).source == counted


SOURCE = '''
import numpy as np

def f(v, W):
    a = np.tanh(W @ v)
    b = np.sin(W @ a) * 0.5 + a
    c = np.tanh(W @ b - 0.3 * a)
    d = W @ c * 0.1 + np.cos(b)
    e = np.tanh(W @ d) + c
    return np.sum(e * d)
'''


def test_outer_sums_program_matches_finite_differences(tmp_path):
    """Five products by ``W``: its cotangent is a sum of five outer products, made one matrix product,
    and the outer products left out (``_kept``); both gradients against central differences in float64."""
    fn = load_program(SOURCE, tmp_path, "outer_sums").f
    rng = np.random.default_rng(3)
    v, W = rng.standard_normal(6), rng.standard_normal((6, 6)) / 3
    astad.clear_caches(disk=False)
    result = astad.reverse(fn).derivative((v, W), frozenset({0, 1}))
    assert "stack" in result.source  # (the sum of outer products was rewritten)
    grads = astad.grad(fn, argnums=(0, 1))(v, W)
    h = 1e-6
    for k, x in enumerate((v, W)):
        fd = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            up, down = [v.copy(), W.copy()], [v.copy(), W.copy()]
            up[k][i] += h
            down[k][i] -= h
            fd[i] = (fn(*up) - fn(*down)) / (2 * h)
        np.testing.assert_allclose(grads[k], fd, rtol=1e-6, atol=1e-8)
