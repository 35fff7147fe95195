"""Backward-pass operations over an axis of length 1 (optimise/unit_axes.py):
gradients against central finite differences in float64 where the cotangent
of a weight matrix is ``x.T @ ct`` of rows (batch 1: a broadcast product) and
of wider matrices (batch 3: left a matrix product), in a loop accumulating
into one slice of a stacked weight, with the row read twice; and where a
bias's cotangent sums over a batch of one (a view of the row): on axis 0 and
1, kept dimensions, the view's base returned as another cotangent (the API
copies one of two cotangents sharing memory) or updated afterwards."""

import re

import numpy as np
import pytest

import astad
from hypothesis import given, settings, strategies as st

from conftest import check_grad, load_program


def dense(x, W, b):
    return np.sum(np.tanh(x @ W + b) ** 2)


def two_steps(x, W):
    h = np.tanh(x @ W)
    return np.sum(np.sin(h @ W.T) * x)


def stacked(xs, Ws):
    s = 0.0
    h = xs[0]
    for l in range(Ws.shape[0]):
        h = np.tanh(h @ Ws[l] + xs[l])
        s = s + np.sum(h * h)
    return s


def same_row(x, W):
    y = x @ W
    return np.sum(y * (x @ W.T))


def shared(x, b):
    return np.sum(np.tanh(x + b))  # x: (1, n), b: (n,): x's cotangent and b's are the same numbers


def columns(x, b):
    y = np.sin(x + b)  # x: (n, 1), b: (1,)
    return np.sum(y * y) + np.sum(np.cos(x).sum(axis=1, keepdims=True))


def then_updated(x, b, c):
    h = np.tanh(x @ np.ones((3, 3)) + b)
    return np.sum(h * c) + np.sum((h + b) * h)


def into_loop(x, b):
    y = x + b  # b's cotangent: a row of y's, added to what the loop accumulates into b's
    s = 0.0
    for i in range(3):
        s = s + y[0, i] * b[i] * x[0, i]
    return s + np.sum(y * y)


def row_as_accumulator(x, b):
    y = np.tanh(x + b)
    acc = b * 1.0  # acc's cotangent is a row of x * y's: the loop adds into it
    for i in range(3):
        acc = acc + y[0] * b[i]
    return np.sum(acc * y) + np.sum(x * y)


def recurrent(x, W, b):
    s = 0.0
    for t in range(3):
        x = np.tanh(x @ W + b)
        s = s + np.sum(x * x)
    return s


def user_outer(x, y):
    return np.sum(np.cos(x.T @ y))


_rng = np.random.default_rng(1)
CASES = [
    (dense, (_rng.standard_normal((1, 4)), _rng.standard_normal((4, 3)), _rng.standard_normal(3))),
    (dense, (_rng.standard_normal((3, 4)), _rng.standard_normal((4, 3)), _rng.standard_normal(3))),
    (two_steps, (_rng.standard_normal((1, 3)), _rng.standard_normal((3, 3)))),
    (stacked, (_rng.standard_normal((3, 1, 4)), _rng.standard_normal((3, 4, 4)) * 0.5)),
    (same_row, (_rng.standard_normal((1, 3)), _rng.standard_normal((3, 3)))),
    (shared, (_rng.standard_normal((1, 3)), _rng.standard_normal(3))),
    (columns, (_rng.standard_normal((4, 1)), _rng.standard_normal(1))),
    (then_updated, (_rng.standard_normal((1, 3)), _rng.standard_normal(3), _rng.standard_normal((1, 3)))),
    (into_loop, (_rng.standard_normal((1, 3)), _rng.standard_normal(3))),
    (row_as_accumulator, (_rng.standard_normal((1, 3)), _rng.standard_normal(3))),
    (recurrent, (_rng.standard_normal((1, 3)), _rng.standard_normal((3, 3)), _rng.standard_normal(3))),
    (user_outer, (_rng.standard_normal((1, 3)), _rng.standard_normal((1, 2)))),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{fn.__name__}{i}" for i, (fn, _) in enumerate(CASES)])
def test_gradients_of_row_products(fn, args):
    check_grad(fn, args)


def test_a_row_times_a_matrix_gives_its_weight_a_broadcast_product():
    x, W, b = CASES[0][1]
    backward = astad.reverse(dense).transform(x, W, b).source.split("def dense_backward")[1]
    assert "x.T * " in backward and "@" not in backward.split("W_ct")[1].split("\n")[0], backward
    wide = astad.reverse(dense).transform(*CASES[1][1]).source.split("def dense_backward")[1]
    assert "x.T @ " in wide, wide


def test_the_primal_keeps_the_users_matrix_product():
    src = astad.reverse(user_outer).transform(*CASES[-1][1]).source
    assert "x.T @ y" in src.split("def user_outer_backward")[0]


def test_a_bias_of_a_batch_of_one_gets_a_row_and_owns_its_memory():
    x, b = CASES[5][1]
    backward = astad.reverse(shared).transform(x, b).source.split("def shared_backward")[1]
    assert "b_ct = " in backward and not re.search(r"= \w+\.sum\(", backward), backward
    dx, db = astad.grad(shared, argnums=(0, 1))(x, b)
    np.testing.assert_array_equal(dx[0], db)
    assert not np.shares_memory(dx, db)
    value, pullback = astad.reverse(shared)(x, b)
    first = pullback(1.0)
    first[1][:] = 7.0  # the caller's arrays: a second pullback is not changed by writing into the first's
    np.testing.assert_array_equal(pullback(1.0)[1], db)


_STEPS = ["{a} @ M", "np.tanh({a} + {b}[0])", "{a} * np.sum({b}, axis=0)", "(({a}.T @ {b}) @ M)[1:2]",
          "np.sum({a}.T * {b}, axis=0, keepdims=True)", "{a} - {b}", "np.cos({a}) @ M.T", "{a} + b"]


@st.composite
def _programs(draw):
    lines, names = [], ["x", "y"]
    for k in range(draw(st.integers(1, 6))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        lines.append(f"    r{k} = " + draw(st.sampled_from(_STEPS)).format(a=a, b=b))
        names.append(f"r{k}")
    lines.append(f"    return np.sum({names[-1]} * {draw(st.sampled_from(names))})")
    return "import numpy as np\n\n\ndef f(x, y, M, b):\n" + "\n".join(lines) + "\n"


@settings(max_examples=30, deadline=None)
@given(_programs(), st.integers(0, 2**16))
def test_random_programs_of_rows(tmp_path_factory, source, seed):
    """Rows (1, 3), a matrix and a bias: products, sums and broadcasts over the batch axis of one."""
    fn = load_program(source, tmp_path_factory.mktemp("rows"), "rows").f
    rng = np.random.default_rng(seed)
    check_grad(fn, (rng.standard_normal((1, 3)), rng.standard_normal((1, 3)), rng.standard_normal((3, 3)) * 0.5,
                    rng.standard_normal(3)))
