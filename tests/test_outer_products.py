"""Outer products of a column and a row in the backward pass printed as broadcast
products (optimise/outer_products.py): gradients against central finite
differences in float64 where the cotangent of a weight matrix is ``x.T @ ct``
of rows (batch 1: rewritten) and of wider matrices (batch 3: left a matrix
product), in a loop accumulating into one slice of a stacked weight, with the
row read twice and the column a view of a parameter."""

import numpy as np
import pytest

import astad
from conftest import check_grad


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


def user_outer(x, y):
    return np.sum(np.cos(x.T @ y))


_rng = np.random.default_rng(1)
CASES = [
    (dense, (_rng.standard_normal((1, 4)), _rng.standard_normal((4, 3)), _rng.standard_normal(3))),
    (dense, (_rng.standard_normal((3, 4)), _rng.standard_normal((4, 3)), _rng.standard_normal(3))),
    (two_steps, (_rng.standard_normal((1, 3)), _rng.standard_normal((3, 3)))),
    (stacked, (_rng.standard_normal((3, 1, 4)), _rng.standard_normal((3, 4, 4)) * 0.5)),
    (same_row, (_rng.standard_normal((1, 3)), _rng.standard_normal((3, 3)))),
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
