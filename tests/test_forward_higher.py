"""Derivatives of derivatives: forward mode over reverse mode (Hessian-vector
products through ``vjp_function``), reverse mode over forward mode, and forward
over forward, each checked against central finite differences of a first
derivative computed by the other mode."""

import numpy as np
import pytest

import astad
from astad import frontend, optimise, pipeline, structural
from astad.ir import interp
from astad.optimise import copowers
from astad.ad import reverse
from astad.ad.vjp_function import SplitFunction, vjp_function
from astad.errors import AstadError, InternalError
from astad.ir import Function, LoopBack, Plus, Zero, all_binds, leaf_counts

import test_forward
import test_list_tapes
import test_loops


def _types(args):
    return [frontend.abstract(a, f"argument {i}") for i, a in enumerate(args)]


def hvp_derivative(fn, args):
    """Forward mode over ``fn``'s optimised reverse program: ``jvp(*args, ct, *tangents)``
    gives ``(gradient, H v)`` for a scalar ``fn`` and ``ct = 1``."""
    parsed = frontend.parse(fn)
    types = _types(args)
    stages, _ = pipeline.run_stages(parsed, types)
    vf = vjp_function(stages.optimised)
    leaf_types = [p.type for p in stages.optimised.params]
    n = len(leaf_types)
    assert n == sum(leaf_counts(types))
    return pipeline.forward_of_function(vf, leaf_types + [stages.optimised.ct_in.type], frozenset(range(n)),
                                        parsed.name, {})


def _grad(fn, args):
    return astad.reverse(fn)(*args)[1](1.0)


def _shift(args, v, s):
    return [a if test_forward._discrete(a) else (type(a)(a + s * t) if isinstance(a, float) else a + s * t)
            for a, t in zip(args, v)]


def check_hvp(fn, args, seed=0, eps=1e-5):
    rng = np.random.default_rng(seed)
    d = hvp_derivative(fn, args)
    v = [None if test_forward._discrete(a) else test_forward._random_leaf(rng, a) for a in args]
    tangents = [t for t in v if t is not None]
    grad, hv = d.jvp(*args, 1.0, *tangents)
    for g, want in zip(grad, _grad(fn, args)):
        if want is not None:
            np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
    plus, minus = _grad(fn, _shift(args, v, eps)), _grad(fn, _shift(args, v, -eps))
    for h, p, m, a in zip(hv, plus, minus, args):
        if test_forward._discrete(a):
            continue
        np.testing.assert_allclose(h, (np.asarray(p) - np.asarray(m)) / (2 * eps), rtol=1e-5, atol=1e-6)
    for stage in (d.stages.forward,):  # the interpreter on the forward macro's output agrees
        g2, hv2 = interp.run(stage, *args, 1.0, *tangents)
        for a, b in zip(hv2, hv):
            if b is not None:
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    return d


# ---------------------------------------------------------------- programs

def line(x, y):
    return np.sin(x * y) + x ** 3 * y


def loop(x, w):
    s = 0.0
    for i in range(5):
        s = s + np.tanh(x * w + s)
    return s * x


def while_loop(x, w):
    n = 0
    while n < 4:
        x = np.sin(x * w) + x
        n = n + 1
    return x * x


def branch(x, y):
    if x > 0:
        z = x * y * y
    else:
        z = np.exp(y)
    return z * x


def arrays(W, v):
    h = np.tanh(W @ v)
    return np.sum(h ** 2) + np.mean(np.exp(-W * W)) + np.sum(np.maximum(v, 0.1) ** 3)


def closure(x, y):
    f = lambda a: np.sin(a * x) + y * a
    return f(x) * f(y * 2.0)


def list_loop(x, n):
    hs = [x]
    for i in range(n):
        hs.append(np.sin(hs[-1]) * x)
    return np.stack(hs).sum() ** 2


RNG = np.random.default_rng(7)
PROGRAMS = [
    (line, (0.3, 0.7)), (loop, (0.3, 0.7)), (while_loop, (0.4, 0.9)), (branch, (0.3, 0.7)), (branch, (-0.3, 0.7)),
    (arrays, (RNG.standard_normal((3, 2)), RNG.standard_normal(2))), (closure, (0.3, 0.7)),
    (list_loop, (0.4, 4)), (test_forward.list_from_a_constant, (0.4, 4)), (test_forward.design_example, (0.3, 0.5, 0.7, 1.1)),
]


@pytest.mark.parametrize("fn, args", PROGRAMS, ids=test_forward._id)
def test_hessian_vector_products(fn, args):
    check_hvp(fn, args)


def _scalar_cases():
    out = []
    for fn, args in test_loops.CASES + test_list_tapes.CASES:
        value = fn(*args)
        if np.ndim(value) == 0 and not isinstance(value, tuple):
            out.append((fn, args))
    return out


@pytest.mark.parametrize("fn, args", _scalar_cases(), ids=test_forward._id)
def test_hessian_vector_products_of_loops_and_lists(fn, args):
    check_hvp(fn, args)


def test_the_hessian_is_symmetric():
    W, v = PROGRAMS[5][1]
    args = (W, v)
    d = hvp_derivative(arrays, args)
    n = W.size + v.size
    columns = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        _, (hw, hv) = d.jvp(W, v, 1.0, e[:W.size].reshape(W.shape), e[W.size:])
        columns.append(np.concatenate([np.ravel(hw), hv]))
    H = np.array(columns)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)


def test_forward_over_reverse_keeps_the_two_blocks():
    d = hvp_derivative(loop, (0.3, 0.7))
    assert isinstance(d.stages.forward, SplitFunction)
    assert "_tape.append" in d.source and "reversed(" in d.source  # one tape, recording tangents too
    assert "x_t" in d.source


# ---------------------------------------------------------------- reverse over forward, forward over forward

def _only_core(fn: Function) -> bool:
    return not any(isinstance(b.rhs, (LoopBack, Plus)) or any(isinstance(a, Zero) for a in getattr(b.rhs, "args", ()))
                   for b in all_binds(fn.body))


@pytest.mark.parametrize("fn, args", PROGRAMS[:9], ids=test_forward._id)
def test_reverse_over_forward(fn, args):
    """The forward macro's output is core IR the reverse macro accepts: the gradient
    of ``<tangent>`` in the primal arguments equals FD of the JVP."""
    d = test_forward.derivative(fn, args)
    rng = np.random.default_rng(1)
    v = [None if test_forward._discrete(a) else test_forward._random_leaf(rng, a) for a in args]
    tangents = [t for t in v if t is not None]
    stages = (d.stages.forward,) if fn in (list_loop, test_forward.list_from_a_constant) else (d.stages.forward, d.stages.optimised)  # lists: in place
    for stage in stages:
        assert _only_core(stage)
        prog = optimise.optimise(copowers.remove_functions(reverse.reverse(structural.make_explicit(stage))))
        _, cts = interp.run_reverse(prog, list(args) + tangents, (0.0, 1.0))
        eps = 1e-6
        for i, a in enumerate(args):
            if test_forward._discrete(a):
                continue
            e = [np.zeros_like(np.asarray(x, dtype=float)) if j == i else None for j, x in enumerate(args)]
            fd = np.zeros(np.shape(a))
            for idx in np.ndindex(*np.shape(a)):
                e[i] = np.zeros(np.shape(a))
                e[i][idx] = 1.0
                step = [x if e[j] is None else x + eps * (float(e[j]) if isinstance(x, float) else e[j])
                        for j, x in enumerate(args)]
                back = [x if e[j] is None else x - eps * (float(e[j]) if isinstance(x, float) else e[j])
                        for j, x in enumerate(args)]
                fd[idx] = (d.jvp(*step, *tangents)[1] - d.jvp(*back, *tangents)[1]) / (2 * eps)
            np.testing.assert_allclose(cts[i], fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn, args", [(line, (0.3, 0.7)), (loop, (0.3, 0.7)), (branch, (0.3, 0.7)),
                                      (closure, (0.3, 0.7))], ids=test_forward._id)
def test_forward_over_forward(fn, args):
    """The second directional derivative ``d²f(x)[v, v]`` from forward mode twice."""
    d = test_forward.derivative(fn, args)
    n = len(args)
    types = _types(args)
    second = pipeline.forward_of_function(d.stages.optimised, types + types, frozenset(range(2 * n)), fn.__name__, {})
    v = [1.0, 0.5]
    (value, tangent), (tangent_again, curvature) = second.jvp(*args, *v, *v, 0.0, 0.0)
    eps = 1e-4
    fd = (fn(*_shift(args, v, eps)) - 2 * fn(*args) + fn(*_shift(args, v, -eps))) / eps ** 2
    np.testing.assert_allclose(tangent, tangent_again, rtol=1e-12)
    np.testing.assert_allclose(curvature, fd, rtol=1e-5, atol=1e-5)


def product(x):
    return np.prod(x * x)


def test_what_forward_mode_cannot_do_is_refused_at_the_users_line():
    """Correct or refused: the VJP of np.prod is a primitive of its own; without a
    tangent rule in ``x`` a Hessian of it is refused with astad's error at the
    user's line (never a wrong tangent, never an internal error)."""
    x = np.array([0.5, 2.0, 1.5])
    try:
        check_hvp(product, (x,))
    except AstadError as e:
        assert not isinstance(e, InternalError)
        assert e.loc is not None and "np.prod" in e.loc.text
    test_forward.check_jvp(product, (x,))  # forward mode itself has a rule


# ---------------------------------------------------------------- random programs

from hypothesis import HealthCheck, assume, given, note, settings  # noqa: E402

import test_random_control_flow  # noqa: E402
import test_random_programs  # noqa: E402
from conftest import fuzz_examples, load_program  # noqa: E402


@pytest.fixture(scope="module")
def hvp_program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("hvp_random")


@settings(max_examples=fuzz_examples(4, long=8), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(test_random_control_flow.programs())
def test_random_hessian_vector_products(hvp_program_dir, program):
    """Forward over reverse on random programs with branches and loops whose value is a real scalar."""
    source, instrumented, params, dynamic, seed = program
    note(source)
    args = test_random_programs._arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])  # trip counts and conditions known only at run time
    margins = load_program(instrumented, hvp_program_dir, "hvp_margins")
    value = margins.f(*args)
    assume(min(margins._MARGINS, default=float("inf")) > test_random_control_flow.MARGIN)
    assume(not isinstance(value, tuple) and np.ndim(value) == 0 and np.isfinite(value))
    fn = load_program(source, hvp_program_dir, "hvp_control_flow").f
    try:
        check_hvp(fn, args, seed=seed % 1000)
    except AstadError as e:  # correct or refused: refused clearly, at the user's line
        assert not isinstance(e, InternalError) and e.loc is not None, e
        note(f"refused: {e}")


def _sin_weighted(x, y):
    return np.sum(np.sin(x) * y)


def test_a_cotangent_left_out_has_no_tangent():
    """grad with respect to x only: y's cotangent is None, and so is its tangent in
    the second-order program (it was `np.zeros_like(None)`, an object array)."""
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -2.0])
    g = astad.grad(_sin_weighted)
    jac = astad.jacfwd(g)
    H = jac(x, y)
    eps = 1e-6
    fd = np.stack([(g(x + eps * e, y) - g(x - eps * e, y)) / (2 * eps) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-9)
    assert "zeros_like(None)" not in g.source and "zeros_like(None)" not in jac.source  # (jac: the program)
