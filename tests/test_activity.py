"""Activity analysis (astad/ad/activity.py): a value gets a cotangent or a
tangent only if it depends on a differentiated input and the output depends
on it.  The stage ``activity`` of ``.ir(...)`` marks the others; the
generated code computes nothing for them (regexes on the source); gradients
and JVPs are checked against central finite differences in float64 and
forward against reverse (``<u, J v> == <J^T u, v>``)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from astad.ad import activity
from astad.frontend import Lowerer, drop_dead_temporaries, parse
from astad.ir import Num, Var
from astad import structural


def poly_fit(c, n):
    t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)
    p = np.zeros(n)
    for k in range(c.shape[0]):
        p = p * t + c[k]
    return np.sum(p * p)


def test_an_inactive_value_gets_no_cotangent_in_the_backward_loop():
    c = np.random.default_rng(0).normal(size=12) / 12
    r = astad.reverse(poly_fit)
    value, pullback = r(c, 40)
    (dc, dn) = pullback(1.0)
    eps = 1e-6
    fd = np.array([(poly_fit(c + eps * e, 40) - poly_fit(c - eps * e, 40)) / (2 * eps) for e in np.eye(12)])
    np.testing.assert_allclose(dc, fd, rtol=1e-6, atol=1e-9)
    assert dn is None
    backward = r.source.split("def poly_fit_backward")[1]
    assert not re.search(r"\bt_ct", backward)  # nothing accumulates the cotangent of t


def mixed(x, w):
    """Nodes from np.arange, a constant, an integer counter, a second argument
    and a value computed but not returned."""
    nodes = np.arange(x.shape[0]) * 0.5 + 1.0
    scale = 3.0
    u = x * nodes
    k = 0
    for i in range(3):
        u = u * np.cos(w) + x * scale
        k = k + 1
    junk = np.exp(u) * w
    return np.sum(u * u) * k + np.sum(w * nodes)


# --------------------------------------------------------------------------- helpers


def marks(text: str) -> dict[str, bool]:
    """Each name a line of the activity stage binds -> whether it is active."""
    found: dict[str, bool] = {}
    for line in text.splitlines():
        m = re.match(r"\s*let \(?([\w, ]+?)\)? = .*?(?:  # inactive(?:: ([\w, ]+))?)?$", line)
        if not m:
            continue
        names = [n.strip() for n in m.group(1).split(",")]
        marked = "  # inactive" in line
        listed = {n.strip() for n in m.group(2).split(",")} if m.group(2) else None
        for n in names:
            found[n] = not (marked and (listed is None or n in listed))
    return found


def params_marked(text: str) -> dict[str, bool]:
    header = text.splitlines()[0]
    found = re.finditer(r"(\w+): (.*?)(?=, \w+: |\) =$)", header[header.index("(") + 1:])
    return {m.group(1): not m.group(2).endswith(" (inactive)") for m in found}


def inputs(rng: np.random.Generator, n: int = 6) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(size=n), rng.normal(size=n)


def central(f, args: tuple, i: int, eps: float = 1e-6) -> np.ndarray:
    """The gradient of ``f`` by argument ``i`` by central finite differences."""
    x = np.asarray(args[i], dtype=float)
    g = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[j] = eps
        plus = args[:i] + (x + e,) + args[i + 1:]
        minus = args[:i] + (x - e,) + args[i + 1:]
        g[j] = (f(*plus) - f(*minus)) / (2 * eps)
    return g


# --------------------------------------------------------------------------- the stage


def test_the_activity_stage_is_named_in_both_directions():
    assert "activity" in astad.STAGES
    from astad.pipeline import FORWARD_STAGES
    assert FORWARD_STAGES.index("structural") < FORWARD_STAGES.index("activity") < FORWARD_STAGES.index("forward")
    assert astad.STAGES.index("structural") < astad.STAGES.index("activity") < astad.STAGES.index("ad")


@pytest.mark.parametrize("direction", ["reverse", "forward"])
def test_the_stage_marks_what_needs_no_derivative(direction):
    args = inputs(np.random.default_rng(1))
    maker = astad.reverse if direction == "reverse" else astad.forward
    text = maker(mixed).derivative(args, frozenset({0})).stages.text("activity")
    active = marks(text)
    for name in ("nodes", "junk", "k_2"):  # from np.arange; unused; the counter
        assert active[name] is False, (name, text)
    assert active["u"] is True and active["u_3"] is True
    assert not any(active[n] for n in active if n.startswith("w_"))  # w is not differentiated
    assert params_marked(text) == {"x": True, "w": False}


def test_with_every_argument_the_second_one_is_active():
    args = inputs(np.random.default_rng(2))
    rev = astad.reverse(mixed)
    rev(*args)
    text = rev.ir("activity")
    active = marks(text)
    assert params_marked(text) == {"x": True, "w": True}
    assert active["junk"] is False and active["nodes"] is False
    assert any(active[n] for n in active if n.startswith("w_"))


def test_the_analysis_on_core_ir_directly():
    """The analysis on the structural IR, outside the pipeline: the loop's counter
    and the nodes are inactive, the carried polynomial is active."""
    parsed = parse(poly_fit)
    core = drop_dead_temporaries(Lowerer(parsed).lower_function([Num((12,), "float64"), Num((), "int64", py=True)]))
    act = activity.analyse(structural.make_explicit(core), frozenset({0}))
    assert not act.active(Var("t", Num((), "float64"))) and not act.active(Var("n", Num((), "int64")))
    assert act.active(Var("p_3", Num((None,), "float64")))
    assert not act.active(Var("k", Num((), "int64")))


# --------------------------------------------------------------------------- the generated code


def test_no_cotangent_of_an_argument_not_differentiated():
    rng = np.random.default_rng(3)
    args = inputs(rng)
    d = astad.reverse(mixed).derivative(args, frozenset({0}))
    backward = d.source.split("def mixed_backward")[1]
    for name in ("w", "nodes", "junk", "k", "scale"):
        assert not re.search(rf"\b{name}(_\d+)*_ct", backward), (name, backward)
    fwd = astad.forward(mixed).derivative(args, frozenset({0})).source
    for name in ("w", "nodes", "junk", "k"):
        assert not re.search(rf"\b{name}(_\d+)*_t\b", fwd), (name, fwd)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_gradients_and_jvps_against_finite_differences(seed):
    rng = np.random.default_rng(seed)
    args = inputs(rng)
    for i in (0, 1):
        g = astad.grad(mixed, argnums=i)(*args)
        np.testing.assert_allclose(g, central(mixed, args, i), rtol=1e-5, atol=1e-6)
        v = rng.normal(size=args[i].shape)
        tangents = tuple(v if j == i else np.zeros_like(a) for j, a in enumerate(args))
        value, jv = astad.jvp(mixed, args, tangents)
        assert np.isclose(jv, g @ v, rtol=1e-10, atol=1e-10)  # forward against reverse
        assert np.isclose(value, mixed(*args))


# --------------------------------------------------------------------------- fixed points and other constructs


def shift_register(x, n):
    """``a`` gets a derivative only after three iterations (through b and c)."""
    a = 1.0
    b = 2.0
    c = 3.0
    for i in range(n):
        a, b, c = b, c, c * x
    return a


def late_branch(x, y):
    s = 0.0
    for i in range(4):
        if i > 1:
            s = s + x * y
        else:
            s = s + y
    return s * s


def floor_times(x):
    return np.sum(np.floor(x) * x)


def captured_argument(x, w):
    f = lambda z: z * w  # noqa: E731
    return sum([f(a) for a in [x, x * x]])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_a_value_active_only_after_some_iterations(n):
    x = 0.7
    g = astad.grad(shift_register)(x, n)
    fd = (shift_register(x + 1e-6, n) - shift_register(x - 1e-6, n)) / 2e-6
    assert np.isclose(g, fd, rtol=1e-6, atol=1e-8)
    text = astad.reverse(shift_register).derivative((x, n), frozenset({0})).stages.text("activity")
    assert marks(text)["a_2"] is True  # the carried a, made active by a fixed point


@pytest.mark.parametrize("argnum", [0, 1])
def test_a_branch_that_makes_a_value_active(argnum):
    args = (0.3, -1.2)
    g = astad.grad(late_branch, argnums=argnum)(*args)
    assert np.isclose(g, central(late_branch, args, argnum), rtol=1e-6)
    value, jv = astad.jvp(late_branch, args, (1.0, 0.0) if argnum == 0 else (0.0, 1.0))
    assert np.isclose(jv, g, rtol=1e-12)


def test_a_zero_derivative_primitive_cuts_the_dependence():
    x = np.array([0.3, 1.7, -2.4])
    text = astad.reverse(floor_times).derivative((x,), None).stages.text("activity")
    floor_line = next(line for line in text.splitlines() if "floor(" in line)
    assert "# inactive" in floor_line
    np.testing.assert_allclose(astad.grad(floor_times)(x), np.floor(x))


@pytest.mark.parametrize("argnum", [0, 1])
def test_a_function_value_capturing_an_argument(argnum):
    args = (np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75]))

    def total(x, w):
        return np.sum(captured_argument(x, w))

    g = astad.grad(total, argnums=argnum)(*args)
    np.testing.assert_allclose(g, central(total, args, argnum), rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- found by the random programs


def rebound_in_loop(x, n):
    """The carried ``v`` is never read in the body: the loop's result is the
    initial value when the loop does not run, so the carried value is active."""
    v = x + x
    for i in range(n):
        v = x * 3.0
    return v * v


def call_in_inactive_loop(x, w):
    f = lambda t: t * t  # noqa: E731
    acc = 0.0
    for i in range(2):
        acc = acc + np.sum(f(w))
    return np.sum(np.sin(x)) * acc


def taped_branch(x):
    y = x
    for i in range(3):
        if x > i - 1.0:
            y = y * 1.01 + 0.5 * x * x
        else:
            y = y - x
    return y


@pytest.mark.parametrize("n", [0, 2])
def test_a_loop_result_that_may_be_the_initial_value(n):
    x = 0.3
    assert np.isclose(astad.grad(rebound_in_loop)(x, n), central(rebound_in_loop, (x, n), 0)[()], rtol=1e-6)
    assert np.isclose(astad.jvp(rebound_in_loop, (x, n), (1.0, None))[1], central(rebound_in_loop, (x, n), 0)[()],
                      rtol=1e-6)
    second = astad.grad(astad.grad(rebound_in_loop))
    d1 = astad.grad(rebound_in_loop)
    assert np.isclose(second(x, n), (d1(x + 1e-5, n) - d1(x - 1e-5, n)) / 2e-5, rtol=1e-6)


def test_a_call_in_a_loop_with_no_tangent():
    args = (np.array([0.5, -1.0]), np.array([1.5, 0.25, -0.75]))
    v = np.array([0.3, 0.7])
    value, jv = astad.jvp(call_in_inactive_loop, args, (v, None))
    assert np.isclose(jv, central(call_in_inactive_loop, args, 0) @ v, rtol=1e-6)
    assert np.isclose(value, call_in_inactive_loop(*args))


@pytest.mark.parametrize("x", [0.4, -0.6, -1.7])
def test_second_derivatives_through_taped_branches(x):
    d1 = astad.grad(taped_branch)
    want = (d1(x + 1e-5) - d1(x - 1e-5)) / 2e-5
    assert np.isclose(astad.grad(d1)(x), want, rtol=1e-6)
    assert np.isclose(astad.hessian(taped_branch)(x), want, rtol=1e-6)
