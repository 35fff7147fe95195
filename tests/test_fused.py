"""The fused value-and-gradient function (astad/fused.py): the generated forward
and backward bodies joined in one function at output cotangent 1.0, which
``grad``/``value_and_grad`` call for scalar arguments of types seen before.

Oracles: the two generated functions called one after the other (the fused
function must give the same numbers to the last bit: the same statements in
the same order) on random programs of the straight-line and control-flow
generators, and central finite differences for the gradient through the
fast path.  Names that look like the ones fusion adds (``fused_value``,
``out_ct``, ``residuals``) make it decline or rename, never read a wrong
variable."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings

import astad
import test_random_control_flow as cf
import test_random_programs as sl
from astad import fused
from conftest import fuzz_examples, load_program
from test_random_higher import _control_flow

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                       HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fused")


def _same_bits(got, want, what):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            _same_bits(g, w, f"{what}[{i}]")
        return
    if want is None:
        assert got is None, what
        return
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=what)


def check_fused(fn, args):
    """Fused (when fusion takes the program) gives the two functions' numbers exactly."""
    d = astad.reverse(fn).transform(*args)
    run = fused.of(d)
    if run is None:
        return False
    copies = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    value, residuals = d.forward(*copies)
    want = d.backward(residuals, 1.0)
    copies2 = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    got_value, got = run(*copies2)
    _same_bits(got_value, value, "value")
    _same_bits(got, want, "cotangents")
    for a, b in zip(copies, copies2):  # the same effects on the arguments, if any
        _same_bits(b, a, "argument after the call")
    return True


@settings(max_examples=fuzz_examples(10, long=25), **_SETTINGS)
@given(sl.programs(scalar=True))
def test_fused_equals_forward_then_backward_on_random_programs(program_dir, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, program_dir, "fused").f
    event("fused" if check_fused(fn, sl._arguments(params, seed)) else "declined")


@settings(max_examples=fuzz_examples(6, long=15), **_SETTINGS)
@given(cf.programs(scalar=True))
def test_fused_equals_forward_then_backward_on_random_loops(program_dir, program):
    event("fused" if check_fused(*_control_flow(program_dir, program)) else "declined")


def tiny(x, y):
    return (x * y + 1.0) / (x - 2.0 * y)


def looped(x, n):
    s = 0.0
    i = 0
    while i < n:
        if s > 1.0:
            s = s - x * 0.25
        else:
            s = s + np.sin(x * s + 0.5)
        i = i + 1
    return s


def names_like_ours(fused_value, out_ct, residuals):
    fused_tiny_value_and_grad = fused_value * out_ct
    value = fused_tiny_value_and_grad - residuals * fused_value
    return value * value


def _fd(f, args, i, eps=1e-6):
    hi, lo = list(args), list(args)
    hi[i] += eps
    lo[i] -= eps
    return (f(*hi) - f(*lo)) / (2 * eps)


@pytest.mark.parametrize("f, args, nums", [
    (tiny, (0.7, 1.9), (0, 1)),
    (looped, (0.3, 12), 0),
    (names_like_ours, (0.4, -1.3, 2.2), (0, 1, 2)),
])
def test_gradient_of_floats_through_the_fused_fast_path(f, args, nums):
    vg = astad.value_and_grad(f, argnums=nums)
    first = vg(*args)
    again = vg(*args)  # from the table of scalar calls
    (entry,) = vg._table.values()
    assert entry[0].__name__.startswith(("fused_", f"{f.__name__}_jvp")), "fusion declined"
    _same_bits(again, first, "fast path vs first call")
    value, grads = again
    assert value == f(*args)
    nums_t = nums if isinstance(nums, tuple) else (nums,)
    grads_t = grads if isinstance(nums, tuple) else (grads,)
    for i, g in zip(nums_t, grads_t):
        np.testing.assert_allclose(g, _fd(f, args, i), rtol=1e-7, atol=1e-9)


def test_fusion_keeps_the_generated_statements_in_order():
    d = astad.reverse(tiny).transform(1.0, 3.0)
    run = fused.of(d)
    assert run is not None and run.__name__ == "fused_tiny_forward_value_and_grad"
    assert fused.of(d) is run  # made once per derivative
    value, cts = run(0.5, 2.5)
    v, r = d.forward(0.5, 2.5)
    assert (value, cts) == (v, d.backward(r, 1.0))


def test_structured_arguments_keep_the_two_functions():
    def f(p):
        return p["a"] * p["b"]

    d = astad.reverse(f).transform({"a": 1.0, "b": 2.0})
    assert fused.of(d) is None
    assert astad.grad(f)({"a": 1.5, "b": 2.0}) == {"a": 2.0, "b": 1.5}
