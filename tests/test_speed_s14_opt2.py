"""Session 14 (opt2): ``outer_sums`` finds the outer products and what it looks at in one look at the ops,
and ``unit_axes`` copies the bindings only where it replaces one (its block itself otherwise).

Gradients against central finite differences in float64 (``check_grad``): a weight applied at many places
(its cotangent a sum of outer products made one matrix product), also with other terms in the sum, with outer
products only inside a loop's body (none at the top level) and with sums of too few of them; batches of one
row and of three (a matrix product over an axis of length 1 replaced, or not)."""

import numpy as np
import pytest

from astad import optimise
from conftest import check_grad


def many_places(W, x):
    h = x
    for _ in range(5):  # (a loop: its outer products in the backward loop body)
        h = np.tanh(W @ h)
    return np.sum(h * h)


def many_places_straight(W, x):
    a = np.tanh(W @ x)
    b = np.tanh(W @ a)
    c = np.tanh(W @ b)
    d = np.tanh(W @ c)
    e = np.sin(W @ d)
    return np.sum(e * a) + np.sum(W * W)  # (W's cotangent: the outer products and another term)


def two_places(W, x):
    a = np.tanh(W @ x)
    return np.sum(np.tanh(W @ a))  # (two outer products: too few to be made one product)


def in_a_loop(W, xs):
    s = 0.0
    for i in range(xs.shape[0]):
        s = s + np.sum(np.tanh(W @ xs[i]) ** 2)
    return s


@pytest.mark.parametrize("fn", [many_places, many_places_straight, two_places])
def test_outer_sums_gradients(fn):
    rng = np.random.default_rng(3)
    check_grad(fn, [rng.standard_normal((4, 4)) / 2, rng.standard_normal(4)])


def test_outer_sums_in_a_loop_only():
    rng = np.random.default_rng(4)
    check_grad(in_a_loop, [rng.standard_normal((4, 4)) / 2, rng.standard_normal((3, 4))])


def test_outer_sums_makes_one_product(monkeypatch):
    """Where four outer products are summed, the new block stacks them (one matrix product), and none is left."""
    seen = []
    outer_sums = optimise.outer_sums

    def recording(block, namer):
        out = outer_sums(block, namer)
        seen.append([b.rhs.op for b in out.binds if hasattr(b.rhs, "op")])
        return out

    monkeypatch.setattr(optimise, "outer_sums", recording)
    import astad
    astad.clear_caches()
    rng = np.random.default_rng(5)
    check_grad(many_places_straight, [rng.standard_normal((4, 4)) / 2, rng.standard_normal(4)])
    assert seen and "stack" in seen[0] and "outer" not in seen[0]


def dense(x, W):
    return np.sum(np.tanh(x @ W) ** 2) + np.sum(np.sin(np.tanh(x @ W.T) @ W))


@pytest.mark.parametrize("rows", [1, 3])
def test_unit_axes_gradients(rows, monkeypatch):
    """Batch 1: the cotangents of W are broadcast products (bindings replaced, a new block); batch 3: matrix
    products, nothing replaced, the very block returned."""
    seen = []
    unit_axes = optimise.unit_axes

    def recording(block):
        out = unit_axes(block)
        seen.append((block, out))
        return out

    monkeypatch.setattr(optimise, "unit_axes", recording)
    import astad
    astad.clear_caches()
    rng = np.random.default_rng(6)
    check_grad(dense, [rng.standard_normal((rows, 4)), rng.standard_normal((4, 4)) / 2])
    assert seen
    block, out = seen[0]
    if rows == 1:
        assert out is not block and len(out.binds) == len(block.binds)
        assert [b.targets for b in out.binds] == [b.targets for b in block.binds]
    else:
        assert out is block


def test_prim_rhss_once_per_block():
    """``blocks.prim_rhss`` is computed once per block (the lowering asks three times of the same body): the
    same list again, the right-hand sides in order; None where a right-hand side is not a primitive."""
    from astad.blocks import prim_rhss
    from astad.ir import Bind, Block, Num, Plus, Prim, Var

    t = Num((3,), "float64")
    x, y, z = Var("x", t), Var("y", t), Var("z", t)
    block = Block((Bind((y,), Prim("sin", (x,))), Bind((z,), Prim("mul", (x, y)))), z)
    first = prim_rhss(block)
    assert first == [b.rhs for b in block.binds] and prim_rhss(block) is first
    mixed = Block((Bind((y,), Prim("sin", (x,))), Bind((z,), Plus((x, y)))), z)
    assert prim_rhss(mixed) is None and prim_rhss(mixed) is None


def dead_temporaries(x, W):
    a, _ = np.sin(x), np.cos(x) * 2.0  # (an item nothing reads)
    return np.sum(W @ a * a)


def test_lowering_with_dead_temporaries():
    rng = np.random.default_rng(7)
    check_grad(dead_temporaries, [rng.standard_normal(4), rng.standard_normal((4, 4))])


SCALE = 0.2  # (a named constant: not a literal, its negation not made)


def literal_factors(x, y):
    a = -np.sin(x) * 0.2  # (a product by a float literal takes the negation into the literal)
    b = -np.cos(y) * SCALE  # (by a named constant: the result negated instead)
    c = -np.tanh(x * y) * 2  # (by an integer literal: likewise)
    d = 0.5 / -np.exp(x)
    return np.sum(a * b + c * d + a / y)


def test_absorbed_literal_factors():
    """``absorbed``'s test of a literal factor (``_literal``, written out where it finds the readers)."""
    rng = np.random.default_rng(8)
    check_grad(literal_factors, [rng.standard_normal(5), rng.standard_normal(5) + 3.0])
