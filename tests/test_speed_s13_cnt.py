"""Session 13 (cnt): the read counts (``use_counts``) a pass remembers on a block it made are exactly what a walk
of the block finds.  Codegen takes them (``Printer.__init__``) to decide which temporaries it inlines, so a wrong
remembered count would print wrong code.  Checked against a fresh walk (``walk._nested_use_counts``): ``dce``'s
counts (``count_reads``) on random backward blocks with dead bindings, and every block codegen is given with counts
remembered, by any pass, when transforming the bench programs and programs with loops, branches and closures
(whose gradients are checked against central differences).
"""

from __future__ import annotations

import os
import random
import sys

import numpy as np
import pytest

import astad
from astad.ir import Bind, Block, Num, Plus, Prim, Var
from astad.ir import walk
from test_speed_s13_opta import _backward_block, _lit

PY = sys.modules["astad.codegen.python"]

VEC = Num((3,), "float64")


def _block(rng, n):
    """A random backward-like block (test_speed_s13_opta's, with more and longer cotangent sums), its result a
    tuple or one of its values."""
    return _backward_block(rng, n, sums=3, max_terms=5, one_result=True)


@pytest.mark.parametrize("seed", range(200))
def test_dce_remembers_the_counts_a_walk_finds(seed):
    from astad.ir import ReverseProgram
    from astad.optimise.dce import dce
    rng = random.Random(seed)
    block, params = _block(rng, rng.randint(2, 40))
    if rng.random() < 0.5:  # (some bindings dead: read by none)
        block = Block(block.binds, block.binds[rng.randrange(len(block.binds))].targets[0])
    ct = Var("ct", VEC)
    prog = dce(ReverseProgram("f", tuple(params), Block((), params[0]), ct, block), count_reads=True)
    out = prog.backward
    known = out.__dict__.get("_use_counts")
    assert known is not None  # (no nested block: counted in dce's own walk)
    assert dict(known) == dict(walk._nested_use_counts(Block(out.binds, out.result)))
    assert all(n > 0 for n in known.values())
    assert walk.use_counts(out) == walk.use_counts(Block(out.binds, out.result))


# ---------------------------------------------------------------------------------------------------------------
# every block codegen is given with counts remembered (by any pass) against a fresh walk

def _in_loop(x, y):
    s = 0.0
    for i in range(5):
        s = s + -np.sin(x * y) * float(i) - x
    return s


def _branches(x, y):
    if x > 0.5:
        z = -(x * y) + np.cos(x)
    else:
        z = x - -y * 0.5
    return -z * z


def _closure(x, y):
    def f(u):
        return -(u * y) - np.sin(u)
    return f(x) * f(y) - -x


def _straight(x, y):
    a = -(x * y)
    b = np.sin(a) - -x
    c = -b * 0.25 + a
    return -(c * b) + y


@pytest.fixture
def checked_counts(monkeypatch):
    checked = []
    use_counts = PY.use_counts

    def checking(block):
        known = block.__dict__.get("_use_counts")
        if known is not None:
            assert dict(known) == dict(walk._nested_use_counts(Block(block.binds, block.result)))
            checked.append(block)
        return use_counts(block)

    monkeypatch.setattr(PY, "use_counts", checking)
    monkeypatch.setenv("ASTAD_DISK_CACHE", "0")
    return checked


def _straight_arrays(x, y):
    a = -(x * y)
    b = np.sin(a) - -x
    c = -b * 0.25 + a
    return np.sum(-(c * b) + y)


@pytest.mark.parametrize("fn, arrays", [(_in_loop, False), (_branches, False), (_closure, False),
                                        (_straight, False), (_straight_arrays, True)])
def test_counts_codegen_takes_are_a_walks(fn, arrays, checked_counts):
    """And the gradients, against central differences along a random direction."""
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(4), rng.standard_normal(4)) if arrays else (0.7, 1.3)
    astad.clear_caches()
    g = astad.grad(fn, argnums=(0, 1))(x, y)
    u, v = (rng.standard_normal(4), rng.standard_normal(4)) if arrays else (0.3, -0.8)
    h = 1e-6
    fd = (fn(x + h * u, y + h * v) - fn(x - h * u, y - h * v)) / (2 * h)
    assert abs(np.sum(g[0] * u) + np.sum(g[1] * v) - fd) < 1e-6 * max(1.0, abs(fd))


def test_counts_codegen_takes_are_a_walks_bench(checked_counts):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
    try:
        from programs import PROGRAMS
    finally:
        sys.path.pop(0)
    from astad import api
    for name in ["straight_line_500", "mlp", "logsumexp", "huber", "lstm", "horner", "tree", "tiny_scalar"]:
        if name not in PROGRAMS:
            continue
        fn, mk, argnums = PROGRAMS[name]
        args = mk(np.random.default_rng(0))
        astad.clear_caches()
        api.Reverse(fn).derivative(args, frozenset((argnums,) if isinstance(argnums, int) else argnums))
    assert len(checked_counts) >= 2


# ---------------------------------------------------------------------------------------------------------------
# cse's written-out path for two arguments: the same blocks as a plain reference implementation makes

def _reference_cse(block, seen, env):
    """Common subexpressions of a block without nested blocks, written plainly: each binding's atoms renamed by
    ``env``, then a primitive without effects applied to the same atoms (and parameters) as an earlier one is it."""
    from astad import rules
    from astad.ir import substitute
    from astad.optimise.cse import BUFFERS, _atom_key
    out = []
    for b in block.binds:
        rhs = substitute(b.rhs, env)
        if type(rhs) is Prim and rules.TABLE[rhs.op].stmts is None and rhs.op not in BUFFERS:
            key = ("ref", rhs.op, tuple(_atom_key(a) for a in rhs.args), rhs.params)
            if key in seen:
                env[b.targets[0].name] = seen[key]
                continue
            seen[key] = b.targets[0]
        out.append(Bind(b.targets, rhs, b.loc))
    result = env.get(block.result.name, block.result) if type(block.result) is Var else block.result
    return Block(tuple(out), result)


def _repeating_block(rng, n, prefix, pool):
    """Random primitives of one, two and three arguments (variables, literals, a named constant), many repeated."""
    binds = []
    ops2 = ["add", "mul", "sub", "div"]
    for k in range(n):
        target = Var(f"{prefix}{k}", VEC)
        arg = lambda: rng.choice(pool[-5:]) if rng.random() < 0.8 else _lit(rng.choice([0.5, 2.0]))  # noqa: E731
        shape = rng.random()
        if shape < 0.6:
            rhs = Prim(rng.choice(ops2), (arg(), arg()))
        elif shape < 0.8:
            rhs = Prim(rng.choice(["sin", "neg", "exp"]), (arg(),))
        elif shape < 0.9:
            rhs = Prim("where", (arg(), arg(), arg()))
        else:
            rhs = Plus((arg(), arg()))
        binds.append(Bind((target,), rhs))
        pool.append(target)
    return Block(tuple(binds), pool[-1])


@pytest.mark.parametrize("seed", range(200))
def test_cse_as_a_reference_makes_it(seed):
    from astad.ir import ReverseProgram
    from astad.optimise.cse import cse
    rng = random.Random(seed)
    params = [Var(f"r{i}", VEC) for i in range(3)]
    forward = _repeating_block(rng, rng.randint(1, 25), "f", list(params))
    backward = _repeating_block(rng, rng.randint(1, 25), "b", list(params) + [b.targets[0] for b in forward.binds])
    got = cse(ReverseProgram("f", tuple(params), forward, Var("ct", VEC), backward))
    seen, env = {}, {}
    want_forward = _reference_cse(forward, seen, env)
    want_backward = _reference_cse(backward, seen, env)
    assert [str(b) for b in got.forward.binds] == [str(b) for b in want_forward.binds]
    assert [str(b) for b in got.backward.binds] == [str(b) for b in want_backward.binds]
    assert str(got.forward.result) == str(want_forward.result)
    assert str(got.backward.result) == str(want_backward.result)
