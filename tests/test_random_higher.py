"""Second derivatives of random programs (the generators of test_random_programs and
test_random_control_flow, loops included), against independent oracles:

- ``grad(grad(g))`` of a random real scalar program of a float ``x`` equals
  central finite differences of the gradient ``astad.grad(g)`` (reverse mode,
  itself checked against finite differences by the first-order tests);
- ``hessian(g)`` of a random scalar program of an array ``x`` is symmetric and
  equals central finite differences of the gradient, column by column; ``hvp``
  along a drawn ``v`` is ``H v``;
- ``jacfwd(f) == jacrev(f)`` for random (vector- or tuple-valued) programs,
  with respect to every float argument, to 1e-10 relative.

Control-flow programs are evaluated only at points where no comparison of reals
is within ``MARGIN`` of its boundary (the instrumented variant), as in
test_random_control_flow.  ``ASTAD_FUZZ_EXAMPLES=N`` runs N examples per test."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st

import astad
import test_random_control_flow as cf
import test_random_programs as sl
from conftest import fuzz_examples, load_program
from forward_oracle import _real_like

EPS = 1e-6
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                       HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_higher")


def _straight(program_dir, program):
    source, params, seed = program
    note(source)
    args = sl._arguments(params, seed)
    note(f"args = {args!r}")
    return load_program(source, program_dir, "higher").f, args


def _control_flow(program_dir, program):
    """The program and its arguments, at a point away from every branch boundary."""
    source, instrumented, params, dynamic, seed = program
    note(source)
    args = sl._arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])
    note(f"args = {args!r}")
    margins = load_program(instrumented, program_dir, "higher_margins")
    margins.f(*args)
    assume(min(margins._MARGINS, default=math.inf) > cf.MARGIN)
    return load_program(source, program_dir, "higher_cf").f, args


def _with(args, i, x):
    out = list(args)
    out[i] = x
    return out


def _fd_of_gradient(fn, args, eps=EPS):
    """d/dx (astad.grad(fn))(x, ...) by central differences, x = args[0]: shape x.shape + x.shape,
    the last axes the direction of the difference."""
    grad = astad.grad(fn)
    x = args[0]
    if isinstance(x, float):
        return (grad(*_with(args, 0, x + eps)) - grad(*_with(args, 0, x - eps))) / (2 * eps)
    out = np.zeros(np.shape(x) + np.shape(x))
    for idx in np.ndindex(*np.shape(x)):
        plus, minus = np.array(x, dtype=float), np.array(x, dtype=float)
        plus[idx] += eps
        minus[idx] -= eps
        out[(...,) + idx] = (grad(*_with(args, 0, plus)) - grad(*_with(args, 0, minus))) / (2 * eps)
    return out


# ---------------------------------------------------------------- grad(grad(g))

def check_grad_grad(fn, args):
    """grad(grad(fn)) at args (x = args[0] a float) equals FD of the reverse-mode gradient."""
    got = astad.grad(astad.grad(fn))(*args)
    assert np.ndim(got) == 0, f"grad(grad(g)) of a float gives {got!r}"
    event("grad(grad(g)) != 0" if got != 0 else "grad(grad(g)) == 0")
    np.testing.assert_allclose(got, _fd_of_gradient(fn, args), rtol=1e-5, atol=1e-5)


@settings(max_examples=fuzz_examples(8), **_SETTINGS)
@given(sl.programs(first=["f"], scalar=True))
def test_random_grad_grad(program_dir, program):
    check_grad_grad(*_straight(program_dir, program))


@settings(max_examples=fuzz_examples(8), **_SETTINGS)
@given(cf.programs(first=["f"], scalar=True))
def test_random_grad_grad_loops(program_dir, program):
    check_grad_grad(*_control_flow(program_dir, program))


# ---------------------------------------------------------------- hessian

VECTOR_SHAPES = [(3,), (4,), (2, 3)]


def check_hessian(fn, args, v):
    """hessian(fn) at args (x = args[0] an array) is symmetric and equals FD of the gradient;
    hvp along ``v`` is H v."""
    x = args[0]
    h = np.asarray(astad.hessian(fn)(*args))
    assert h.shape == x.shape + x.shape, f"hessian shape {h.shape} for x of shape {x.shape}"
    n = x.size
    event("hessian != 0" if np.any(h) else "hessian == 0")
    square = h.reshape(n, n)
    scale = max(1.0, float(np.max(np.abs(square))))
    np.testing.assert_allclose(square, square.T, rtol=0, atol=1e-10 * scale, err_msg="hessian not symmetric")
    np.testing.assert_allclose(h, _fd_of_gradient(fn, args), rtol=1e-5, atol=1e-5, err_msg="hessian vs FD")
    tangents = (v,) + (None,) * (len(args) - 1)
    hv = astad.hvp(fn, tuple(args), tangents)  # one entry per argument: H v, then None
    assert isinstance(hv, tuple) and len(hv) == len(args) and all(h is None for h in hv[1:]), hv
    hv = hv[0]
    np.testing.assert_allclose(np.reshape(hv, n), square @ v.reshape(n), rtol=1e-9,
                               atol=1e-10 * scale * max(1.0, float(np.max(np.abs(v)))), err_msg="hvp vs H v")


@settings(max_examples=fuzz_examples(4), **_SETTINGS)
@given(sl.programs(first=VECTOR_SHAPES, scalar=True), st.data())
def test_random_hessian(program_dir, program, data):
    fn, args = _straight(program_dir, program)
    check_hessian(fn, args, data.draw(_real_like(args[0]), label="v"))


@settings(max_examples=fuzz_examples(5), **_SETTINGS)
@given(cf.programs(first=VECTOR_SHAPES, scalar=True), st.data())
def test_random_hessian_loops(program_dir, program, data):
    fn, args = _control_flow(program_dir, program)
    check_hessian(fn, args, data.draw(_real_like(args[0]), label="v"))


# ---------------------------------------------------------------- jacfwd == jacrev

def _leaves(tree):
    if isinstance(tree, dict):
        return [x for k in tree for x in _leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [x for v in tree for x in _leaves(v)]
    return [tree]


def check_jacobians(fn, args):
    """jacfwd(fn) == jacrev(fn) with respect to every float argument (None where both are None)."""
    nums = tuple(i for i, a in enumerate(args) if isinstance(a, float) or
                 (isinstance(a, np.ndarray) and a.dtype.kind == "f"))
    assume(nums)
    forward = astad.jacfwd(fn, argnums=nums)(*args)
    reverse = astad.jacrev(fn, argnums=nums)(*args)
    fl, rl = _leaves(forward), _leaves(reverse)
    assert len(fl) == len(rl), f"jacfwd {forward!r}\njacrev {reverse!r}"
    for k, (a, b) in enumerate(zip(fl, rl)):
        if a is None or b is None:
            assert a is None and b is None, f"leaf {k}: jacfwd {a!r}, jacrev {b!r}"
            continue
        assert np.shape(a) == np.shape(b), f"leaf {k}: shapes {np.shape(a)} (jacfwd), {np.shape(b)} (jacrev)"
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * scale, err_msg=f"leaf {k}")


@settings(max_examples=fuzz_examples(10), **_SETTINGS)
@given(sl.programs())
def test_random_jacfwd_jacrev(program_dir, program):
    check_jacobians(*_straight(program_dir, program))


@settings(max_examples=fuzz_examples(8), **_SETTINGS)
@given(cf.programs())
def test_random_jacfwd_jacrev_loops(program_dir, program):
    check_jacobians(*_control_flow(program_dir, program))
