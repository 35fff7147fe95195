"""Reverse mode over reverse mode: ``astad.vjp`` of a gradient runs the reverse
macro over the gradient's program (reverse-mode target IR lowered to core IR by
``astad/ad/lower_target.py``).  Checked against forward over reverse
(``astad.hvp``: Hessian-vector products agree to 1e-10) and central finite
differences of the gradient."""

import numpy as np
import pytest

import astad
from astad.ad.lower_target import lower
from astad.api_higher import Plain, vjp_of
from astad.errors import AstadError


def straight(x):
    return np.sum(np.sin(x) * x) * x[0] + np.exp(x[1] * x[2])


def for_loop(x):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x[i]) * x[i] * s + x[i] ** 2
    return s


def while_loop(x):
    s = 1.0
    k = 0
    while k < 3:
        s = s * np.cos(x[k]) + x[k] * s
        k = k + 1
    return s


def branches(x):
    s = np.sum(x * x)
    if s > 5.0:
        s = s * np.sin(s)
    else:
        s = np.exp(s) * x[0]
    return s * x[1]


def closures(x):
    def g(t):
        return np.sin(t) * x[0]
    h = lambda t: t * t * x[1]
    return g(x[1]) + h(x[2]) + g(h(x[0]))


def lists(x):
    ys = []
    for i in range(3):
        ys.append(np.sin(x[i]) * x[i])
    s = 0.0
    k = 0
    while k < 2:
        s = s + ys[k] * ys[k + 1]
        k = k + 1
    if s > 0:
        s = s * s
    return s


def arrays(w, x):
    h = np.tanh(w @ x)
    return np.sum(h * h) + np.sum(w * w) * x[0]


CASES = [straight, for_loop, while_loop, branches, closures, lists]
POINTS = [np.array([0.4, -0.9, 1.3]), np.array([1.5, 0.7, 2.1])]  # the if: both branches


def _fd_hessian_vector(f, x, u, h=1e-5):
    g = astad.grad(f)
    return (g(x + h * u) - g(x - h * u)) / (2 * h)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("k", range(len(POINTS)))
def test_vjp_of_grad_is_the_hessian_vector_product(f, k):
    x = POINTS[k]
    u = np.array([0.3, -0.7, 1.1])
    value, pullback = astad.vjp(astad.grad(f), x)
    np.testing.assert_allclose(value, astad.grad(f)(x), rtol=1e-12, atol=1e-12)
    (uh,) = pullback(u)
    (hu,) = astad.hvp(f, (x,), (u,))  # forward over reverse
    np.testing.assert_allclose(uh, hu, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(uh, _fd_hessian_vector(f, x, u), rtol=1e-6, atol=1e-6)


def test_jacrev_of_grad_is_the_hessian():
    for f in CASES:
        for x in POINTS:
            np.testing.assert_allclose(astad.jacrev(astad.grad(f))(x), astad.hessian(f)(x), rtol=1e-10, atol=1e-10)


def test_two_arguments_and_argnums():
    w = np.array([[0.2, -0.5, 0.9], [1.1, 0.3, -0.4]])
    x = np.array([0.7, -1.2, 0.5])
    uw = np.array([[0.1, 0.2, -0.3], [0.5, -0.6, 0.7]])
    value, pullback = astad.vjp(astad.grad(arrays, (0, 1)), w, x)
    ct_w, ct_x = pullback((uw, np.zeros(3)))
    hw, hx = astad.hvp(arrays, (w, x), (uw, np.zeros(3)))
    np.testing.assert_allclose(ct_w, hw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ct_x, hx, rtol=1e-10, atol=1e-10)
    _, pb = astad.vjp(astad.grad(arrays, 1), w, x)  # only x's gradient, held-constant w
    ux = np.array([0.4, 0.1, -0.2])
    ct_w, ct_x = pb(ux)
    hw, hx = astad.hvp(arrays, (w, x), (np.zeros_like(w), ux))
    np.testing.assert_allclose(ct_x, hx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ct_w, hw, rtol=1e-10, atol=1e-10)


def test_the_lowered_program_is_core_ir():
    """No tape, backward loop or zero atom is left for the reverse macro."""
    from astad.ir import LoopBack, Zero, all_binds, atoms_of
    for f in CASES:
        x = POINTS[0]
        prog = vjp_of(Plain(f).rev, (x,), (0,), True)
        low = lower(prog.fn)
        for b in all_binds(low.body):
            assert not isinstance(b.rhs, LoopBack)
            assert getattr(b.rhs, "tape", None) is None
            assert not any(isinstance(a, Zero) for a in atoms_of(b.rhs))


def test_the_second_order_program_is_readable_python():
    x = POINTS[0]
    prog = vjp_of(Plain(lists).rev, (x,), (0,), True)
    src = prog.reverse().source
    compile(src, "<second order>", "exec")
    assert "def lists_vjp_forward" in src and "def lists_vjp_backward" in src
    assert "for " in src and "# line" in src


def test_a_derivative_assembled_from_several_is_refused():
    with pytest.raises(AstadError):
        astad.vjp(astad.jacfwd(straight, (0,)), POINTS[0])[1](np.ones((3, 3)))


def nested(x):
    s = 0.0
    for i in range(3):
        t = x[i]
        for j in range(2):
            t = np.sin(t) * x[j]
        if t > 0.0:
            for j in range(2):
                t = t * t + x[j]
        s = s + t * x[i]
    return s


def branch_loop(x):
    s = x[0]
    if np.sum(x) > 1.0:
        for i in range(3):
            s = np.cos(s) * x[i]
    k = 0
    while s < 4.0 and k < 3:
        s = s + np.exp(x[k]) * s
        k = k + 1
    return s


@pytest.mark.parametrize("f", [nested, branch_loop], ids=lambda f: f.__name__)
@pytest.mark.parametrize("k", range(len(POINTS)))
def test_nested_control_flow(f, k):
    test_vjp_of_grad_is_the_hessian_vector_product(f, k)


# ---------------------------------------------------------------- random programs (the generators of
# test_random_programs and test_random_control_flow, as test_random_higher draws them)

from hypothesis import given, settings, strategies as st  # noqa: E402

import test_random_control_flow as cf  # noqa: E402
import test_random_higher as rh  # noqa: E402
import test_random_programs as sl  # noqa: E402
from conftest import fuzz_examples  # noqa: E402
from forward_oracle import _real_like  # noqa: E402


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("reverse_over_reverse")


def check_reverse_over_reverse(fn, args, u):
    """The VJP of the gradient (reverse over reverse) along ``u`` is the HVP (forward over reverse)."""
    value, pullback = astad.vjp(astad.grad(fn), *args)
    got = pullback(u)
    assert len(got) == len(args)
    hv = astad.hvp(fn, tuple(args), (u,) + (None,) * (len(args) - 1))[0]
    scale = max(1.0, float(np.max(np.abs(hv))))
    np.testing.assert_allclose(got[0], hv, rtol=1e-10, atol=1e-10 * scale)


@settings(max_examples=fuzz_examples(6), **rh._SETTINGS)
@given(sl.programs(first=rh.VECTOR_SHAPES, scalar=True), st.data())
def test_random_reverse_over_reverse(program_dir, program, data):
    fn, args = rh._straight(program_dir, program)
    check_reverse_over_reverse(fn, args, data.draw(_real_like(args[0]), label="u"))


@settings(max_examples=fuzz_examples(3, long=6), **rh._SETTINGS)
@given(cf.programs(first=rh.VECTOR_SHAPES, scalar=True), st.data())
def test_random_reverse_over_reverse_loops(program_dir, program, data):
    fn, args = rh._control_flow(program_dir, program)
    check_reverse_over_reverse(fn, args, data.draw(_real_like(args[0]), label="u"))


def pruned_tape(x, n):
    v1 = x + x
    for i in range(n):
        v2 = x[i % len(x)]
        v1 = x + x * v1
    return np.sum(v1 * v1)


@pytest.mark.parametrize("n", [0, 2])
def test_a_loop_that_saves_nothing(n):
    """The optimiser pruned the loop's tape to nothing: the lowered loop still counts its iterations."""
    x, u = POINTS[0], np.array([0.3, -0.7, 1.1])
    _, pullback = astad.vjp(astad.grad(pruned_tape), x, n)
    uh, none = pullback(u)
    assert none is None
    np.testing.assert_allclose(uh, astad.hvp(pruned_tape, (x, n), (u, None))[0], rtol=1e-10, atol=1e-10)


def test_jacrev_of_grad_shows_the_reverse_over_reverse_code():
    j = astad.jacrev(astad.grad(for_loop))
    j(POINTS[0])
    src = j.source
    assert src.startswith("# Reverse mode of for_loop") and "def for_loop_vjp_backward" in src
    assert "# line " in src and "reversed(" in src
    assert "for_loop_vjp" in j.ir("core")


def stacked_in_a_branch(x, n):
    acc = []
    k = 0
    while k < n:
        x = np.tanh(x + x)
        acc.append(np.tanh(x))
        k = k + 1
    out = np.tanh(np.sum(np.stack(acc), axis=0)) if len(acc) > 0 else np.zeros((4,))
    return np.sum(x * x) + np.mean(out) * 2.0


def unread_list(x, y, n):
    acc = []
    k = 0
    while k < n:
        x = 0.5 * x + 0.5 * np.tanh(x * y)
        if k % 2 == 0:
            acc.append(np.tanh(np.where(y > 0.1, x[0], 0.0)))
        k = k + 1
    v = np.tanh(np.sum(np.array(acc) * np.array(acc))) if len(acc) > 0 else 0.0
    return np.sum(x * x)


@pytest.mark.parametrize("n", [0, 3])
def test_found_by_the_random_programs(n):
    """A branch exporting an array of run-time shape its other branch does not bind (an empty
    one stands in); the cotangent of a list nothing differentiable is appended to."""
    x = np.array([0.41, 0.44, 1.09, -0.17])
    y = np.array([1.4, -1.45, 0.09, -0.62])
    u = np.array([-0.5, -0.54, 0.27, -0.94])
    _, pb = astad.vjp(astad.grad(stacked_in_a_branch), x, n)
    np.testing.assert_allclose(pb(u)[0], astad.hvp(stacked_in_a_branch, (x, n), (u, None))[0], rtol=1e-10, atol=1e-10)
    _, pb = astad.vjp(astad.grad(unread_list), x, y, n)
    np.testing.assert_allclose(pb(u)[0], astad.hvp(unread_list, (x, y, n), (u, None, None))[0], rtol=1e-10,
                               atol=1e-10)
