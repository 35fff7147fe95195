"""In-place printing (astad/codegen/inplace.py) and rematerialisation
(astad/optimise/remat.py) never change a derivative and never write into memory
someone else can see.

The size thresholds are lowered to 1 element here, so that small arrays take
the in-place and recomputed forms too.  For every fusion, a program where it
applies and adversarial ones where the buffer it would write into is an
argument, a view of one, a residual the backward pass reads, a value the
program returns or a value read later.  Each is checked: the value and the
cotangents equal the IR interpreter's on the unoptimised reverse program
(``ad`` stage: no fusion, no recomputation), the cotangents agree with central
finite differences, the arguments are unchanged afterwards, and calling the
pullback twice gives the same cotangents (the residuals were not consumed).
The random program generators run under the lowered thresholds too."""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import astad
from astad.codegen import inplace
from astad.ir import Loop, interp
from astad.optimise import remat
from conftest import check_grad, fuzz_examples, load_program
import test_random_control_flow as cf
import test_random_programs as rp


@pytest.fixture
def small(monkeypatch):
    """Every array counts as large: the in-place and recomputed forms are taken everywhere."""
    astad.clear_caches(disk=False)
    monkeypatch.setattr(inplace, "MIN_SIZE", 1)
    monkeypatch.setattr(remat, "MIN_SIZE", 1)
    yield
    astad.clear_caches(disk=False)


def _fd(fn, args, i, direction, u, eps=1e-6):
    def at(t):
        shifted = list(copy.deepcopy(args))
        shifted[i] = shifted[i] + t * direction
        return float(np.sum(u * fn(*shifted)))

    return (at(eps) - at(-eps)) / (2 * eps)


def check(fn, args, wrt=None, seed=0):
    """See the module's docstring; returns the generated source."""
    rng = np.random.default_rng(seed)
    saved = copy.deepcopy(args)
    obj = astad.reverse(fn)
    d = obj.transform(*args)
    value, pullback = obj(*args)
    want = fn(*copy.deepcopy(args))
    np.testing.assert_allclose(value, want, rtol=1e-13, atol=1e-15)
    u = rng.standard_normal(np.shape(want)) if np.ndim(want) else float(rng.standard_normal())
    cts = pullback(u)
    for a, s in zip(args, saved):
        np.testing.assert_array_equal(a, s)  # nothing the caller passed was changed
    again = pullback(u)
    for c, c2 in zip(cts, again):
        if c is not None:
            np.testing.assert_array_equal(c, c2)  # the residuals are intact
    ad_value, ad_cts = interp.run_reverse(d.stages.ad, copy.deepcopy(args), u)
    np.testing.assert_allclose(value, ad_value, rtol=1e-13, atol=1e-15)
    for c, want_c in zip(cts, ad_cts):
        if want_c is not None:
            np.testing.assert_allclose(c, want_c, rtol=1e-12, atol=1e-14)
    for i, a in enumerate(args):
        if wrt is not None and i not in wrt or not isinstance(a, np.ndarray) or a.dtype.kind != "f":
            continue
        direction = rng.standard_normal(np.shape(a))
        np.testing.assert_allclose(np.sum(cts[i] * direction), _fd(fn, args, i, direction, u), rtol=1e-5, atol=1e-6)
    return d.source


# ---------------------------------------------------------------- programs where a fusion applies

def unary_into_temp(x):
    return np.sum(np.exp(x - np.max(x)))


def binary_into_temp(x, y):
    return np.sum(np.maximum(x * 2.0, y) * y)


def masks_or(x, y):
    return np.max(x) + np.sum(x * y)


def doubled(x, y):
    z = x * y
    return np.sum(z * z)


def recomputed_in_loop(x, w):
    total = 0.0
    for j in range(w.shape[0]):
        z = (x - w[j]) * np.exp(-w[j])
        total = total + np.sum(np.tanh(z))
    return total


def test_fusions_apply_and_agree(small):
    x = np.random.default_rng(1).standard_normal((5, 3))
    y = np.random.default_rng(2).standard_normal((5, 3))
    src = check(unary_into_temp, (x,))
    assert re.search(r"np\.exp\((\w+), out=\1\)", src)
    src = check(binary_into_temp, (x, y))
    assert "np.maximum(" in src and "out=" in src
    src = check(masks_or, (x, y))
    assert "add_where(" in src and "|=" in src
    check(doubled, (x, y))
    w = np.random.default_rng(3).standard_normal((4, 3))
    src = check(recomputed_in_loop, (x, w))
    assert "x - w[j" in src[src.index("_backward("):]  # z recomputed in the backward pass...
    loops = [b.rhs for b in astad.reverse(recomputed_in_loop).transform(x, w).stages.optimised.forward.binds
             if isinstance(b.rhs, Loop)]
    assert loops and not any(v.name.startswith("z") for v in loops[0].save)  # ...not kept on the tape


# ---------------------------------------------------------------- adversarial: the buffer is someone else's

def exp_of_argument(x):
    return np.sum(np.exp(x) * 2.0)


def exp_of_views(x):
    return np.sum(np.exp(x[1:]) + np.tanh(x.T).T[1:] + np.sin(np.reshape(x, (-1,)))[3:].reshape(-1, x.shape[1]))


def read_later(x):
    t = x * 2.0
    y = np.exp(t)
    return np.sum(y * t)


def residual_buffer(x):
    t = x * 2.0
    return np.sum(np.sin(t))  # t is read by the backward pass (cos(t)): not written by sin


def returned_buffer(x):
    t = x * 3.0
    u = np.exp(t)
    return t + u  # t returned (summed into the result): never overwritten before


def max_of_argument(x, y):
    return np.sum(np.maximum(x, y))


def sum_with_broadcast_cotangent(x):
    return np.max(x) + np.sum(x)  # the other cotangent is a read-only broadcast: no add_where into it


def mask_of_arguments(x, m):
    b = x > 0.0
    return np.sum(np.where(b | m, x, 0.0)) + np.max(x)


def view_then_sum(x):
    t = x * 2.0
    v = t[1:]
    w = np.exp(t)  # t may not be written: the view v is read after
    return np.sum(w) + np.sum(v * v)


def recompute_reads_updated(x):
    a = x * 2.0
    t = a * x  # a residual recomputed from a and x in the backward pass...
    a[0] = 0.0  # ...so this update may not happen in place
    return np.sum(np.sin(t)) + np.sum(a * a)


def recompute_carried(x, n):
    y = x
    total = 0.0
    for i in range(n):
        z = y * 2.0  # z on the tape or recomputed from y: y changes every iteration
        y = np.sin(z)
        total = total + np.sum(z * y)
    return total


def summed_twice(x, y):
    # y's cotangent is a + b + a: `a` may not be written before its second read
    return np.sum(y.reshape(1, -1) * x) + np.tanh(y @ y)


ADVERSARIAL = [
    (exp_of_argument, lambda r: (r.standard_normal((4, 3)),)),
    (exp_of_views, lambda r: (r.standard_normal((4, 3)),)),
    (read_later, lambda r: (r.standard_normal((4, 3)),)),
    (residual_buffer, lambda r: (r.standard_normal((4, 3)),)),
    (returned_buffer, lambda r: (r.standard_normal((4, 3)),)),
    (max_of_argument, lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3)))),
    (sum_with_broadcast_cotangent, lambda r: (r.standard_normal((4, 3)),)),
    (mask_of_arguments, lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3)) > 0)),
    (view_then_sum, lambda r: (r.standard_normal((4, 3)),)),
    (recompute_reads_updated, lambda r: (r.standard_normal((4, 3)),)),
    (recompute_carried, lambda r: (r.standard_normal((4, 3)), 3)),
    (summed_twice, lambda r: (r.standard_normal(), r.standard_normal(3))),
]


@pytest.mark.parametrize("fn, make", ADVERSARIAL, ids=[f.__name__ for f, _ in ADVERSARIAL])
def test_adversarial(small, fn, make):
    args = make(np.random.default_rng(7))
    src = check(fn, args)
    for name in ("x", "y", "m"):  # an argument is never an output buffer
        assert f"out={name})" not in src and f"\n    {name} *=" not in src and f"\n    {name} +=" not in src


def test_returned_value_kept(small):
    x = np.random.default_rng(4).standard_normal(6)
    value, _ = astad.reverse(returned_buffer)(x)
    np.testing.assert_array_equal(value, returned_buffer(x))


def test_add_where_is_the_product_where_share_is_not_finite():
    from astad.primitives import add_where
    for share in (np.array([2.5]), np.array([np.inf]), np.array([np.nan]), np.array([-np.inf])):
        acc = np.array([1.0, -2.0, 3.0])
        mask = np.array([True, False, True])
        with np.errstate(invalid="ignore"):
            want = acc + mask * share
            add_where(acc, mask, share)
        np.testing.assert_array_equal(acc, want)


def test_fused_ufuncs_print_as_numpy_calls():
    """Every operation the fusion knows prints as the numpy ufunc it is written into (else it is not fused)."""
    fused = [op for op in inplace.UNARY if inplace._prints_as(op, f"np.{op}", 1)]
    assert {"exp", "log", "sin", "cos", "tanh", "sqrt"} <= set(fused)
    for op in fused:
        assert isinstance(getattr(np, inplace.UNARY[op]), np.ufunc)
    for op, ufunc in inplace.BINARY.items():
        assert isinstance(getattr(np, ufunc), np.ufunc)


# ---------------------------------------------------------------- shapes

def mixed(x, y):
    a = np.exp(x * 0.5)
    b = np.maximum(a, y * y)
    m = (x > 0.0) | (y > 0.0)
    c = np.where(m, b, -b)
    return np.max(c) + np.sum(np.tanh(c) * (x - y))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 2 ** 16))
def test_shapes(shape, seed):
    astad.clear_caches(disk=False)
    old = inplace.MIN_SIZE, remat.MIN_SIZE
    inplace.MIN_SIZE = remat.MIN_SIZE = 1
    try:
        rng = np.random.default_rng(seed)
        note(f"shape {shape}")
        check(mixed, (rng.standard_normal(shape), rng.standard_normal(shape)), seed=seed)
    finally:
        inplace.MIN_SIZE, remat.MIN_SIZE = old
        astad.clear_caches(disk=False)


# ---------------------------------------------------------------- the random program generators, lowered thresholds

@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("inplace_random")


def _lowered(body):
    astad.clear_caches(disk=False)
    old = inplace.MIN_SIZE, remat.MIN_SIZE
    inplace.MIN_SIZE = remat.MIN_SIZE = 1
    try:
        body()
    finally:
        inplace.MIN_SIZE, remat.MIN_SIZE = old
        astad.clear_caches(disk=False)


@settings(max_examples=fuzz_examples(6, long=15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_programs_lowered(program_dir, data):
    source, params, seed = data.draw(rp.programs())
    note(source)

    def body():
        fn = load_program(source, program_dir, "inplace_random").f
        args = rp._arguments(params, seed)
        check_grad(fn, args, seed=seed % 1000)
        rp.check_stages(fn, args, seed)

    _lowered(body)


@settings(max_examples=fuzz_examples(4, long=10), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(st.data())
def test_random_control_flow_lowered(program_dir, data):
    source, instrumented, params, dynamic, seed = data.draw(cf.programs())
    note(source)
    args = cf._arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])
    margins = load_program(instrumented, program_dir, "margins")
    margins.f(*args)
    assume(min(margins._MARGINS, default=math.inf) > cf.MARGIN)

    def body():
        fn = load_program(source, program_dir, "inplace_cf").f
        check_grad(fn, args, seed=seed % 1000)
        cf.check_stages(fn, args, seed)

    _lowered(body)


# ---------------------------------------------------------------- second order: the recomputed values renamed

@pytest.mark.parametrize("fn", [recomputed_in_loop, mixed, doubled], ids=lambda f: f.__name__)
def test_second_order(small, fn):
    """Reverse over reverse and forward over reverse read the forward and backward passes as one
    function again: a recomputed value is a new name, and H u agrees with differences of the gradient."""
    rng = np.random.default_rng(5)
    x, y, u = (rng.standard_normal((4, 3)) for _ in range(3))
    grad = astad.grad(lambda x: fn(x, y))
    (hu,) = astad.hvp(lambda x: fn(x, y), (x,), (u,))
    _, pullback = astad.vjp(grad, x)
    (hu_rr,) = pullback(u)
    eps = 1e-6
    fd = (grad(x + eps * u) - grad(x - eps * u)) / (2 * eps)
    np.testing.assert_allclose(hu, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hu_rr, hu, rtol=1e-10, atol=1e-12)
