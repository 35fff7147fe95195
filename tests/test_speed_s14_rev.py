"""Session 14's speed work on the reverse macro: ``rule_Prim`` keys a primitive of one or two variables, none
inactive, without ``_arg_key`` (its tests written out), and ``rule_Dup`` draws its temporary and names the sum
``v_ct`` itself (``Namer.temp`` and ``ct_name``'s common cases written out).  Checked against independent
oracles: central finite differences in float64 and forward mode's ``<u, J v> == <J^T u, v>``, on programs
that take each path and each fallback (a literal, an inactive argument, a user's name shaped like a
temporary's copy, a ``_ct`` name the user took)."""

import sys

import numpy as np
import pytest

import astad
from conftest import load_program

_PROGRAMS = {
    # two variables (the written-out keys), one inactive (W, held constant: _arg_key gives it its zero)
    "inactive_pair": """
import numpy as np

def f(v, W):
    a = np.sin(v)
    b = W @ a * 0.5 + a * a
    c = np.tanh(b) * v - W @ b
    d = np.exp(-c * c) + np.cos(W @ c)
    return np.sum(d * a + b)
""",
    # one variable of one argument, inactive (np.sin(W)), and one active (np.cos(v))
    "inactive_single": """
import numpy as np

def f(v, W):
    s = np.sin(W)
    c = np.cos(v)
    e = np.exp(c)
    return np.sum(s @ e + c * e)
""",
    # a user's names shaped like a temporary's copy (t3_a: rule_Dup's fallback to ct_name) and a user's
    # name that is another's cotangent name (x_ct: taken, so x's cotangent is x_ct_2), each read many times
    "odd_names": """
import numpy as np

def f(x, W):
    t3_a = x * x
    x_ct = np.sin(t3_a) + t3_a
    t1 = x_ct * t3_a - x
    t1_2 = W @ t1 + t1 * x_ct
    return np.sum(t1_2 * t1_2 + t3_a * x + x_ct)
""",
}


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("speed_s14_rev")


def _inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(6) * 0.5, rng.standard_normal((6, 6)) * 0.3


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_gradients_against_central_differences(program_dir, name, argnums):
    f = load_program(_PROGRAMS[name], program_dir, f"s14rev_{name}").f
    v, W = _inputs(3)
    astad.clear_caches(disk=False)
    grads = astad.grad(f, argnums)(v, W)
    if not isinstance(argnums, tuple):
        grads, argnums = (grads,), (argnums,)
    rng = np.random.default_rng(4)
    for i, g in zip(argnums, grads):
        x = (v, W)[i]
        u = rng.standard_normal(x.shape)
        h = 1e-6

        def at(s):
            xs = [v, W]
            xs[i] = x + s * u
            return f(*xs)

        fd = (at(h) - at(-h)) / (2 * h)
        assert np.isclose(np.sum(g * u), fd, rtol=1e-6, atol=1e-8), (name, i)


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_reverse_is_the_transpose_of_forward(program_dir, name):
    """<J^T 1, t> (the gradient of both arguments, reverse mode) equals <1, J t> (forward mode's tangent)."""
    f = load_program(_PROGRAMS[name], program_dir, f"s14rev_t_{name}").f
    v, W = _inputs(5)
    rng = np.random.default_rng(6)
    tv, tW = rng.standard_normal(v.shape), rng.standard_normal(W.shape)
    astad.clear_caches(disk=False)
    gv, gW = astad.grad(f, (0, 1))(v, W)
    _, tangent = astad.jvp(f, (v, W), (tv, tW))
    assert np.isclose(np.sum(gv * tv) + np.sum(gW * tW), tangent, rtol=1e-10, atol=1e-12)


def _kinds_remembered_and_walked(fn, args, wrt=None):
    """Of each structural output made transforming ``fn``: the kinds make_explicit remembered on its body
    and its primal block (None where it has none), and those a fresh walk of each finds."""
    from astad import pipeline, structural
    from astad.ir import Block, walk

    found = []
    real = pipeline.structural.make_explicit

    def spy(core):
        out = real(core)
        p = structural.primal(out)
        remembered = out.body.__dict__.get("_kinds"), None if p is None else p.__dict__.get("_kinds")
        walked = (walk._kinds(Block(out.body.binds, out.body.result)),
                  None if p is None else walk._kinds(Block(p.binds, p.result)))
        found.append((p is not None, remembered, walked))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline.structural, "make_explicit", spy)
        astad.clear_caches(disk=False)
        astad.reverse(fn).derivative(args, wrt)
    return found


@pytest.mark.parametrize("name", ["straight_line_500", "mlp", "logsumexp", "huber", "tiny_scalar", "horner",
                                  "gmm", "tree", "rk4"])
def test_the_kinds_make_explicit_remembers_are_a_walks(name):
    """make_explicit remembers ``ir.kinds`` of its output's body and primal block where it makes the primal
    block (a block of primitives, dups and drops: the reverse macro asks what it is made of): the same as a
    walk of each finds (primitives' ops, "Dup" and "Drop" where made, "call" among them)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import programs as bench

    fn, make_inputs, argnums = bench.PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    wrt = frozenset((argnums,) if isinstance(argnums, int) else argnums)
    for has_primal, remembered, walked in _kinds_remembered_and_walked(fn, args, wrt):
        if has_primal:
            assert remembered == walked
        else:
            assert remembered == (None, None)


@pytest.mark.parametrize("source, n", [
    ("import numpy as np\n\ndef f(x, y):\n    z = x * 2.0\n    return np.sum(x * x)\n", 2),  # y, z never read: drops
    ("import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x))\n", 1),  # nothing read twice: no dup, no drop
    ("import numpy as np\n\ndef g(x):\n    return x * x\n\ndef f(x):\n    y = g(x) + x\n    return np.sum(y * y)\n", 1),
])
def test_the_kinds_remembered_of_small_programs(program_dir, source, n):
    f = load_program(source, program_dir, "s14rev_kinds").f
    x = np.linspace(0.1, 0.9, 5)
    args = (x, x + 1.0)[:n]
    found = _kinds_remembered_and_walked(f, args)
    assert found
    for has_primal, remembered, walked in found:
        if has_primal:
            assert remembered == walked
    u, h = np.cos(np.arange(5.0)), 1e-6
    fd = (f(x + h * u, *args[1:]) - f(x - h * u, *args[1:])) / (2 * h)
    assert np.isclose(np.sum(astad.grad(f)(*args) * u), fd, rtol=1e-6)


def test_the_fields_run_named_sets_are_all_of_the_nodes():
    """replay.run_named makes Var, Prim and Bind without calling the classes, setting each field itself:
    these must be all their fields (a field added to one must be set there too)."""
    import dataclasses

    from astad.ir import Bind, Prim, Var

    assert [f.name for f in dataclasses.fields(Var)] == ["name", "type"]
    assert [f.name for f in dataclasses.fields(Prim)] == ["op", "args", "params"]
    assert [f.name for f in dataclasses.fields(Bind)] == ["targets", "rhs", "loc"]


_NODES_SCRIPT = r"""
import os, sys
sys.path.insert(0, "bench"); sys.path.insert(0, ".")
os.environ["ASTAD_DISK_CACHE"] = "0"
import numpy as np, astad
from astad import pipeline
from astad.ad import replay
from astad.ir import Bind, Prim, Var
import programs as P

assert replay._NEW is not None  # (the fast path: the nodes' __setattr__ does not raise)
made = []
real = pipeline.reverse.reverse
def spy(linear, active):
    made.append(real(linear, active))
    return made[-1]
pipeline.reverse.reverse = spy
rng = np.random.default_rng(2)
for n in (5, 40):
    fn = P.define(P.straight_line_source(n), f"straight_line_{n}")
    args = P.make_straight_line_inputs(rng)
    made.clear()
    astad.clear_caches(disk=False)
    g = astad.grad(fn, (0, 1))(*args)
    prims = 0
    for b in made[0].backward.binds:
        if type(b.rhs) is not Prim:
            continue
        prims += 1
        (v,) = b.targets
        assert type(v) is Var and isinstance(v.name, str) and v.type is not None
        assert b.loc is not None and b.loc.line > 0  # (the source line it differentiates: codegen's comments)
        again = Bind((Var(v.name, v.type),), Prim(b.rhs.op, b.rhs.args, b.rhs.params), b.loc)
        assert again == b and again.loc is b.loc and again.targets[0].type is v.type and hash(again) == hash(b)
    assert prims > 4 * n
    for i, x in enumerate(args):
        u, h = rng.standard_normal(np.shape(x)), 1e-6
        xs_p, xs_m = list(args), list(args)
        xs_p[i], xs_m[i] = x + h * u, x - h * u
        fd = (fn(*xs_p) - fn(*xs_m)) / (2 * h)
        assert np.isclose(np.sum(g[i] * u), fd, rtol=1e-5, atol=1e-7), (n, i)
print("ok")
"""


def test_the_nodes_run_named_makes_are_the_classes_own():
    """Without ``ASTAD_FROZEN_IR`` (as astad runs; the suite sets it, so run_named's fast path runs in a
    process of its own here): every binding of the macro's backward block (most made by run_named) has each
    field set and equals the binding the classes make of those fields; the gradients are the central
    differences'."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "ASTAD_FROZEN_IR": "0"}
    done = subprocess.run([sys.executable, "-c", _NODES_SCRIPT], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
