"""Session 13 (opta): the work the optimiser's passes leave out does not change what they make.

- ``cotangent_signs``: readers are kept only of the names ``taken`` may ask about (``_asked``), and ``run``
  looks only at the bindings reading them;
- ``products``: a product is looked up among those of the other sign only where it reads a name a negation
  negates (or a negation of one, or in turn a product of one), and its factors are remembered for ``_made``
  only where one is a factor of a product the forward pass made.

Each pass is run on random blocks twice: as it is, and with that filtering turned off (every name tracked,
every binding looked at, every product looked up and remembered: what the passes did before); the blocks made
must be the same, binding for binding, with the same names drawn.  Then the values: the interpreter's
result of each block before and after the rewrite, on random inputs, are equal (a negation is exact).
"""

import random
import sys

import numpy as np
import pytest

from astad.ir import Bind, Block, Const, MakeTuple, Num, Plus, Prim, ReverseProgram, Var
from astad.names import Namer

CS = sys.modules["astad.optimise.cotangent_signs"]
PR = sys.modules["astad.optimise.products"]

VEC = Num((3,), "float64")
MAT = Num((3, 3), "float64")


def _lit(x):
    return Const.literal(x, Num((), "float64", True))


def _backward_block(rng, n, sums=2, max_terms=4, one_result=False):
    """A random backward-like block: negations, sums, differences, products (some by a literal), quotients,
    matrix products, sines, cotangent sums (``sums`` in the draw of 13 or so, of 2 to ``max_terms`` terms); its
    result a tuple of the last values (with ``one_result``, 3 times in 10 the last value alone)."""
    params = [Var(f"r{i}", VEC) for i in range(3)]
    mat = Var("W", MAT)
    pool = list(params)
    binds = []
    for k in range(n):
        target = Var(f"c{k}", VEC)
        op = rng.choice(["neg", "neg", "neg", "add", "sub", "mul", "mul", "mullit", "div", "matmul", "sin"]
                        + ["plus"] * sums)
        pick = lambda: rng.choice(pool[-6:] if rng.random() < 0.7 else pool)  # noqa: E731
        if op == "neg" or op == "sin":
            rhs = Prim(op, (pick(),))
        elif op == "mullit":
            rhs = Prim("mul", (pick(), _lit(0.5)) if rng.random() < 0.5 else (_lit(-0.25), pick()))
        elif op == "matmul":
            rhs = Prim("matmul", (pick(), mat))
        elif op == "plus":
            rhs = Plus(tuple(pick() for _ in range(rng.randint(2, max_terms))))
        else:
            rhs = Prim(op, (pick(), pick()))
        binds.append(Bind((target,), rhs))
        pool.append(target)
    if one_result and rng.random() < 0.3:  # (a negation returned: computed after the last binding)
        return Block(tuple(binds), pool[-1]), params + [mat]
    out = Var("out", None)
    binds.append(Bind((out,), MakeTuple(tuple(pool[-3:]))))
    return Block(tuple(binds), out), params + [mat]


def _run_block(block, env):
    """The block's result, by numpy (the few primitives ``_backward_block`` makes)."""
    env = dict(env)
    with np.errstate(all="ignore"):  # (a quotient of random values may divide by 0: the same in both)
        return _run(block, env)


def _run(block, env):
    val = lambda a: env[a.name] if type(a) is Var else a.value  # noqa: E731
    for b in block.binds:
        rhs = b.rhs
        if type(rhs) is Plus:
            v = val(rhs.items[0])
            for a in rhs.items[1:]:
                v = v + val(a)
        elif type(rhs) is MakeTuple:
            v = tuple(val(a) for a in rhs.items)
        else:
            args = [val(a) for a in rhs.args]
            v = {"neg": lambda x: -x, "sin": np.sin, "add": np.add, "sub": np.subtract, "mul": np.multiply,
                 "div": np.divide, "matmul": np.matmul}[rhs.op](*args)
        env[b.targets[0].name] = v
    return val(block.result)


def _absorbed(block, every):
    """``absorbed`` of ``block``, and the temporaries its namer drew; ``every``: without the filtering."""
    namer = Namer(["r0", "r1", "r2", "W", "out"] + [f"c{k}" for k in range(len(block.binds))])
    if not every:
        return CS.absorbed(block, namer), namer.temps
    init, asked = CS._Absorb.__init__, CS._asked

    def init_all(self, blk, nm):
        init(self, blk, nm)
        self.visit = None  # (every binding looked at)

    CS._Absorb.__init__, CS._asked = init_all, lambda rhs, read, readers: True
    try:
        return CS.absorbed(block, namer), namer.temps
    finally:
        CS._Absorb.__init__, CS._asked = init, asked


@pytest.mark.parametrize("seed", range(300))
def test_absorbed_tracks_what_it_needs(seed):
    rng = random.Random(seed)
    block, params = _backward_block(rng, rng.randint(3, 30))
    (fast, unread), temps = _absorbed(block, every=False)
    (slow, unread_all), temps_all = _absorbed(block, every=True)
    assert [str(b) for b in fast.binds] == [str(b) for b in slow.binds]
    assert str(fast.result) == str(slow.result) and unread == unread_all and temps == temps_all
    nrng = np.random.default_rng(seed)
    env = {p.name: nrng.standard_normal(p.type.shape) for p in params}
    for x, y in zip(_run_block(block, env), _run_block(fast, env)):
        np.testing.assert_array_equal(x, y)


def _products_program(rng, n):
    """A random program for ``shared_products``: a forward block of negations, products, tanh, exp of
    negated squares; a backward block of negations and products of cotangents and forward values."""
    xs = [Var(f"x{i}", VEC) for i in range(3)]
    pool, fbinds = list(xs), []
    pairs = []  # (a, e) of each product a * e of the forward block, e bounded
    for k in range(rng.randint(2, 10)):
        target = Var(f"f{k}", VEC)
        op = rng.choice(["neg", "mul", "tanh", "sq", "times_tanh"])
        pick = lambda: rng.choice(pool)  # noqa: E731
        if op == "times_tanh":  # (a factor whose product the forward block made: ``_made``)
            e = Var(f"f{k}t", VEC)
            a = pick()
            fbinds.append(Bind((e,), Prim("tanh", (pick(),))))
            pairs.append((a, e))
            rhs = Prim("mul", (a, e))
        elif op == "sq":
            a = pick()
            neg = Var(f"f{k}n", VEC)
            sq = Var(f"f{k}s", VEC)
            fbinds += [Bind((neg,), Prim("neg", (a,))), Bind((sq,), Prim("mul", (neg, a)))]
            rhs = Prim("exp", (sq,))
        elif op == "neg" or op == "tanh":
            rhs = Prim(op, (pick(),))
        else:
            rhs = Prim("mul", (pick(), pick()))
        fbinds.append(Bind((target,), rhs))
        pool.append(target)
    forward = Block(tuple(fbinds), pool[-1])
    ct = Var("ct", VEC)
    bpool, bbinds = [ct], []
    few = rng.sample(pool, min(len(pool), 2))  # (few names, read again and again: products of the same pair)
    for k in range(n):
        target = Var(f"c{k}", VEC)
        op = rng.choice(["neg", "mul", "mul", "mul", "made"])
        pick = lambda: rng.choice(bpool[-3:] + few if rng.random() < 0.8 else bpool + pool)  # noqa: E731
        if op == "made" and pairs:  # (ct * a) * e, the forward block having made a * e
            a, e = rng.choice(pairs)
            inner = Var(f"c{k}p", VEC)
            bbinds.append(Bind((inner,), Prim("mul", (pick(), a) if rng.random() < 0.5 else (a, pick()))))
            rhs = Prim("mul", (inner, e) if rng.random() < 0.5 else (e, inner))
        else:
            rhs = Prim("neg", (pick(),)) if op == "neg" else Prim("mul", (pick(), pick()))
        bbinds.append(Bind((target,), rhs))
        bpool.append(target)
    out = Var("out", None)
    bbinds.append(Bind((out,), MakeTuple(tuple(bpool[-3:]))))
    return ReverseProgram("p", tuple(xs), forward, ct, Block(tuple(bbinds), out)), xs, ct


def _shared(prog, every):
    if not every:
        return PR.shared_products(prog)
    block = PR._block

    def block_all(blk, negations, made, counts, changed=None, where=None, made_factors=(), bases=None, flat=False):
        return block(blk, negations, made, counts, changed, where, PR._All(), None, False)

    PR._block = block_all
    try:
        return PR.shared_products(prog)
    finally:
        PR._block = block


@pytest.mark.parametrize("seed", range(300))
def test_shared_products_looks_up_what_it_needs(seed):
    rng = random.Random(seed)
    prog, xs, ct = _products_program(rng, rng.randint(3, 30))
    fast, slow = _shared(prog, every=False), _shared(prog, every=True)
    assert [str(b) for b in fast.backward.binds] == [str(b) for b in slow.backward.binds]
    nrng = np.random.default_rng(seed)
    env = {x.name: nrng.standard_normal(3) for x in xs}
    env["ct"] = nrng.standard_normal(3)
    fenv = dict(env)
    for b in prog.forward.binds:
        args = [fenv[a.name] for a in b.rhs.args]
        fenv[b.targets[0].name] = {"neg": lambda x: -x, "mul": np.multiply, "tanh": np.tanh, "exp": np.exp}[
            b.rhs.op](*args)
    for x, y in zip(_run_block(prog.backward, fenv), _run_block(fast.backward, fenv)):
        np.testing.assert_allclose(x, y, rtol=1e-12)  # (a product of three associated the other way)
