"""Cotangents of parts that tile an array concatenated (optimise/tiles.py):
gradients against central finite differences in float64 for arrays cut into
parts along one axis (gates of an LSTM step, in a loop too), with negative
bounds, parts read twice, a gap left zero, overlapping parts, a strided part
and parts along the first axis, and random cuts (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from conftest import check_grad, load_program


def gates(x, W, c):
    H = c.shape[1]
    g = x @ W
    ifo = 1.0 / (1.0 + np.exp(-g[:, :3 * H]))
    c2 = ifo[:, H:2 * H] * c + ifo[:, :H] * np.tanh(g[:, 3 * H:])
    return np.sum(ifo[:, 2 * H:3 * H] * np.tanh(c2))


def steps(x, W, c):
    H = c.shape[1]
    s = 0.0
    for t in range(3):
        g = np.tanh(x @ W)
        c = g[:, :H] * c + g[:, H:2 * H]
        x = np.concatenate([c, g[:, 2 * H:]], axis=1)
        s = s + np.sum(c * c)
    return s


def negative_bounds(x):
    return np.sum(np.sin(x[-2:]) * x[:-2][:2]) + np.sum(x[:-2] ** 2)


def read_twice(x):
    a, b = x[:3], x[3:]
    return np.sum(a * a * b[:3]) + np.sum(np.cos(b)) + np.sum(a)


def gap(x):
    return np.sum(x[:2] ** 2) + np.sum(np.sin(x[3:]))


def overlap(x):
    return np.sum(x[:4] ** 2) + np.sum(np.sin(x[2:]))


def strided(x):
    return np.sum(x[::2] ** 2) + np.sum(np.sin(x[1::2]))


def rows(M):
    return np.sum(np.tanh(M[:1]) * M[1:3]) + np.sum(M[3:] ** 3)


_rng = np.random.default_rng(2)
CASES = [
    (gates, (_rng.standard_normal((1, 3)), _rng.standard_normal((3, 8)), _rng.standard_normal((1, 2)))),
    (gates, (_rng.standard_normal((2, 3)), _rng.standard_normal((3, 8)), _rng.standard_normal((2, 2)))),
    (steps, (_rng.standard_normal((1, 4)), _rng.standard_normal((4, 6)) * 0.5, _rng.standard_normal((1, 2)))),
    (negative_bounds, (_rng.standard_normal(6),)),
    (read_twice, (_rng.standard_normal(7),)),
    (gap, (_rng.standard_normal(6),)),
    (overlap, (_rng.standard_normal(6),)),
    (strided, (_rng.standard_normal(6),)),
    (rows, (_rng.standard_normal((5, 3)),)),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{fn.__name__}{i}" for i, (fn, _) in enumerate(CASES)])
def test_gradients_of_parts(fn, args):
    check_grad(fn, args)


def test_the_gates_cotangent_is_one_concatenation():
    backward = astad.reverse(gates).transform(*CASES[0][1]).source.split("def gates_backward")[1]
    assert backward.count("np.concatenate(") == 2 and "np.zeros" not in backward, backward
    untiled = astad.reverse(gap).transform(*CASES[5][1]).source.split("def gap_backward")[1]
    assert "np.concatenate(" not in untiled, untiled


@st.composite
def _cuts(draw):
    n = draw(st.integers(2, 7))
    edges = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1)) | {0, n})
    parts = list(zip(edges, edges[1:]))
    if draw(st.booleans()) and len(parts) > 1:  # drop one part: a gap
        parts.pop(draw(st.integers(0, len(parts) - 1)))
    funcs = ["np.sin", "np.cos", "np.tanh", "np.exp"]
    terms = [f"np.sum({draw(st.sampled_from(funcs))}(x[:, {a}:{b}]) * {k + 1.0})" for k, (a, b) in enumerate(parts)]
    source = "import numpy as np\n\n\ndef f(x):\n    return " + " + ".join(terms) + "\n"
    return source, n


@settings(max_examples=30, deadline=None)
@given(_cuts(), st.integers(0, 2**16))
def test_random_cuts(tmp_path_factory, cut, seed):
    source, n = cut
    fn = load_program(source, tmp_path_factory.mktemp("tiles"), "tiles").f
    check_grad(fn, (np.random.default_rng(seed).standard_normal((2, n)),))
