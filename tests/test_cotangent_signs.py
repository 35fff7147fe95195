"""Negations in the backward pass taken by their readers (optimise/cotangent_signs.py):
gradients against central finite differences in float64 for programs whose
backward pass negates cotangents that sums, products, literals, matrix
products, views, loops and branches read (once or many times, with broadcasting
and with one value read twice by one operation), and random straight-line
programs of those operations (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from conftest import check_grad, load_program


def subs(a, b, c):
    d = a - b  # two cotangents of d, one of them negated, summed into b's
    e = b - d * c
    return np.sum(e * d - (a - c))


def cosines(x, W):
    y = W @ x * 0.1 + np.cos(x)
    z = y - 0.2 * x / (1.0 + y * y)
    return np.sum(z * y)


def many_readers(x, y):
    n = -x  # read by a sum, a product by a literal, a product, a matrix product and a reduction
    return np.sum(y + n) + np.sum(n * 0.5 * y) + np.sum(n @ np.ones((3, 2))) + np.sum(n[1:]) + np.sum(n.T * y)


def broadcast(v, M):
    r = M - v  # (4, 3) - (3,): v's cotangent is a negated sum over rows
    s = v - M[0]
    return np.sum(r * r) + np.sum(np.cos(s)) - np.sum(np.sin(v))


def same_twice(x):
    d = x - x * 0.5
    e = -d
    return np.sum(e * e) + np.sum(-(-x))


def in_loop(x, w):
    s = 0.0
    for i in range(3):
        x = np.cos(x) - w * x
        s = s - np.sum(x / (1.0 + x * x))
    return s


def in_branch(x, w, flag):
    if flag > 0:
        y = np.cos(x) - w
    else:
        y = w - np.sin(x)
    return np.sum(-y * y) - np.sum(-w)


def negated_result(x, y):
    return -(x - y)


def scalars(a, b):
    c = -a
    return c * b - (c - b) / (1.0 + b * b) - np.cos(a)


_rng = np.random.default_rng(0)
CASES = [
    (subs, (_rng.standard_normal(4), _rng.standard_normal(4), _rng.standard_normal(4))),
    (cosines, (_rng.standard_normal(5), _rng.standard_normal((5, 5)))),
    (many_readers, (_rng.standard_normal((3, 3)), _rng.standard_normal((3, 3)))),
    (broadcast, (_rng.standard_normal(3), _rng.standard_normal((4, 3)))),
    (same_twice, (_rng.standard_normal(3),)),
    (in_loop, (_rng.standard_normal(4), 0.3)),
    (in_branch, (_rng.standard_normal(3), _rng.standard_normal(3), 1)),
    (in_branch, (_rng.standard_normal(3), _rng.standard_normal(3), -1)),
    (negated_result, (_rng.standard_normal(3), _rng.standard_normal(3))),
    (scalars, (0.7, -1.3)),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{fn.__name__}{i}" for i, (fn, _) in enumerate(CASES)])
def test_gradients_where_negations_are_taken(fn, args):
    check_grad(fn, args)


def test_the_straight_line_steps_negate_no_cotangent():
    """``cos`` and ``a - k * b / (1 + a * a)`` negate cotangents; the sums read them."""
    x, W = CASES[1][1]
    src = astad.reverse(cosines).transform(x, W).source
    backward = src[src.index("def cosines_backward"):]
    assert " = -" not in backward and "-(" not in backward, backward
    assert "* -0.2" in backward and " - " in backward


# ------------------------------------------------------------------ random programs

_UNARY = ["-{a}", "np.cos({a})", "{a} * 0.5", "-0.3 * {a}", "{a}[::-1]", "{a} / 2.0"]
_BINARY = ["{a} - {b}", "{a} + {b}", "{a} * {b}", "-{a} - {b}", "{b} - -{a}", "({a} - {b}) / (1.0 + {b} * {b})"]


@st.composite
def _programs(draw):
    n = draw(st.integers(2, 7))
    lines, names = [], ["x", "y"]
    for k in range(n):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        step = draw(st.sampled_from(_UNARY + _BINARY + ["M @ {a}", "np.sum({a}) - {b}"]))
        lines.append(f"    v{k} = " + step.format(a=a, b=b))
        names.append(f"v{k}")
    out = draw(st.sampled_from(["np.sum({a} * {b})", "np.sum({a}) - np.sum({b} * {b})", "np.sum(-{a} * -{b})"]))
    lines.append("    return " + out.format(a=names[-1], b=draw(st.sampled_from(names))))
    return "import numpy as np\n\n\ndef f(x, y, M):\n" + "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None)
@given(_programs(), st.integers(0, 2**16))
def test_random_programs_of_negations(tmp_path_factory, source, seed):
    fn = load_program(source, tmp_path_factory.mktemp("signs"), "signs").f
    rng = np.random.default_rng(seed)
    check_grad(fn, (rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((3, 3))))
