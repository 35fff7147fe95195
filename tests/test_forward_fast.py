"""What makes forward mode's code fast, checked against central finite differences
and reverse mode (<u, J v> == <J^T u, v>): loops bind a carried variable where its
next value is computed (astad/codegen/carried.py) only where that is a renaming
(loops whose old values are read after the new ones are computed, swaps, flags of
while loops, nested loops); a product's negated factor becomes its term's sign
(optimise/factor.py), negations move outward (optimise/signs.py); sums over a last
axis become matrix-vector products (optimise/dots.py); astad.jvp's scalar fast path
still checks what it is given."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from astad.errors import AstadTypeError


def swap(a, b):
    for i in range(5):
        a, b = b, a * 0.5 + np.sin(b)
    return a * b


def read_after(x, y):
    for i in range(4):
        x_new = x * y
        y = y + np.cos(x)  # reads the old x after x_new is computed
        x = x_new
    return x + y


def newton(a, b):
    x = a
    step = 1.0
    it = 0
    while np.abs(step) > 1e-12 and it < 50:
        step = (x * x * x - a) / (3.0 * x * x)
        x = x - step * b
        it = it + 1
    return x


def nested(x, y):
    s = 0.0
    for i in range(3):
        t = x
        for j in range(2):
            t = t * y + np.sin(s)
            s = s + t * 0.1
        x = t - s * 0.5
    return x * s


def branchy(x, y):
    s = x
    for i in range(6):
        if s > 1.0:
            s = s * 0.5 + y
        else:
            s = s * y + 1.0
        y = y + s * 0.1
    return s * y


def array_loop(x, w):
    h = x
    for i in range(3):
        g = np.tanh(w @ h)
        h = h * 0.5 + g
    return np.sum(h * x)


def signs(x, y):
    a = np.cos(x) * y + np.exp(-y * y) * x
    return a / (1.0 - 0.5 * np.cos(y)) - x * np.cos(x * y) + np.sin(-x) * np.cos(-y)


CASES = [(signs, (0.3, 1.1)), (signs, (-1.2, 0.4)), (swap, (0.7, 1.3)), (read_after, (0.4, 0.9)), (newton, (7.3, 1.0)), (nested, (0.3, 0.8)),
         (branchy, (0.6, 1.2)), (branchy, (1.7, 0.4))]


def fd(fn, args, tangents, eps=1e-6):
    plus = [a + eps * t for a, t in zip(args, tangents)]
    minus = [a - eps * t for a, t in zip(args, tangents)]
    return (fn(*plus) - fn(*minus)) / (2 * eps)


@pytest.mark.parametrize("fn, args", CASES)
def test_jvp_of_loops_equals_finite_differences_and_reverse_mode(fn, args):
    rng = np.random.default_rng(3)
    tangents = tuple(float(t) for t in rng.standard_normal(len(args)))
    for _ in range(3):  # the first call transforms, the next take the scalar fast path
        value, tangent = astad.jvp(fn, args, tangents)
        assert value == pytest.approx(fn(*args), rel=1e-14)
        assert tangent == pytest.approx(fd(fn, args, tangents), rel=1e-6, abs=1e-9)
    g = astad.grad(fn, argnums=tuple(range(len(args))))(*args)
    assert tangent == pytest.approx(sum(gi * ti for gi, ti in zip(g, tangents)), rel=1e-10, abs=1e-12)


def array_signs(x, w):
    return np.sum(np.cos(w @ x) * x) - np.sum(np.exp(-x * x) * np.cos(x))


def sunk_negations(x, w):
    """Negated tangents read by products, quotients, matrix products and reductions."""
    z = (x - w[0]) * np.exp(-w[1])
    a = 0.5 * np.sum(np.sum(z * z, axis=0))
    b = np.sum((-x) @ w.T / (2.0 - np.cos(-w[2])))
    c = np.mean(np.transpose(-w) * (x * x)) - np.sum(x / -(1.5 + w[3] * w[3]))
    return a + b * c - np.sum(-z[1:])


def gmm_like(x, w):
    """Sums over the last axis of matrices times vectors broadcast along it (matrix-vector products)."""
    z = (w - x) * np.exp(-x)
    return np.sum(0.5 * np.sum(z * z, axis=1) * x) - np.sum(np.sum(w * x * 2.0, axis=-1) ** 2)


@pytest.mark.parametrize("fn", [array_loop, array_signs, sunk_negations, gmm_like])
def test_arrays_against_finite_differences_and_reverse_mode(fn):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal(5), rng.standard_normal((5, 5)) * 0.4
    tx, tw = rng.standard_normal(5), rng.standard_normal((5, 5))
    _, tangent = astad.jvp(fn, (x, w), (tx, tw))
    assert tangent == pytest.approx(fd(fn, (x, w), (tx, tw)), rel=1e-6)
    gx, gw = astad.grad(fn, argnums=(0, 1))(x, w)
    assert tangent == pytest.approx(np.sum(gx * tx) + np.sum(gw * tw), rel=1e-10)


def test_a_loop_variable_is_bound_where_its_next_value_is_computed():
    astad.jvp(newton, (7.3, 1.0), (1.0, 0.0))
    source = astad.forward(newton).source
    assert "x = x - step * b" in source and "x_t = " in source  # no `x_2`, no tuple of next values
    assert "step, x" not in source


def test_the_scalar_fast_path_still_checks_tangents():
    """A call of other kinds misses the fast path's table and is checked: a tangent
    of a discrete argument, an array tangent of a float, a missing tangent."""
    def scaled(x, n):
        return x * n

    for _ in range(2):
        assert astad.jvp(scaled, (1.5, 3), (2.0, None))[1] == pytest.approx(6.0)
        with pytest.raises(AstadTypeError, match="`n`"):
            astad.jvp(scaled, (1.5, 3), (2.0, 1.0))
        with pytest.raises(AstadTypeError, match="`x`"):
            astad.jvp(scaled, (1.5, 3), (np.ones(2), None))
        with pytest.raises(AstadTypeError, match="tangents"):
            astad.jvp(scaled, (1.5, 3, 4.0), (2.0,))
        with pytest.raises(AstadTypeError, match="`x`"):
            astad.jvp(scaled, (1.5, 3), ("a", None))
        with pytest.raises(AstadTypeError, match="`x`"):
            astad.jvp(scaled, (1.5, 3), ((2.0,), None))
        with pytest.raises(AstadTypeError, match="dtype"):
            astad.jvp(scaled, (1.5, 3), (np.float32(2.0), None))
    assert astad.jvp(scaled, (1.5, 3), (None, None)) == (4.5, 0.0)


def tree_node(t, W, b):
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([tree_node(t[0], W, b), tree_node(t[1], W, b)]) + b)
    return t


def tree_loss(W, b, tree):
    return np.sum(tree_node(tree, W, b) ** 2)


def test_long_code_reuses_names_and_is_exact():
    """Recursion over a tree of depth 5 inlines into hundreds of temporaries, whose names
    are reused (codegen/reuse.py): the JVP still equals FD and reverse mode."""
    from astad.codegen import reuse

    rng = np.random.default_rng(5)

    def tree(depth):
        return rng.standard_normal(3) if depth == 0 else (tree(depth - 1), tree(depth - 1))

    t = tree(5)
    W, b = rng.standard_normal((3, 6)) * 0.5, rng.standard_normal(3)
    tW, tb = rng.standard_normal((3, 6)), rng.standard_normal(3)
    _, tangent = astad.jvp(tree_loss, (W, b, t), (tW, tb, None))
    assert tangent == pytest.approx(fd(lambda W, b: tree_loss(W, b, t), (W, b), (tW, tb)), rel=1e-6)
    gW, gb = astad.grad(tree_loss, argnums=(0, 1))(W, b, t)
    assert tangent == pytest.approx(np.sum(gW * tW) + np.sum(gb * tb), rel=1e-10)
    source = astad.forward(tree_loss).source
    bound = [line.split(" = ")[0].strip() for line in source.splitlines() if " = " in line]
    assert len(bound) > reuse.MIN_TEMPORARIES and len(set(bound)) < len(bound) / 2  # names bound again
