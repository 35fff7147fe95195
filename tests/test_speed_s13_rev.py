"""Session 13's speed work on the middle stages (structural pass, activity, reverse macro): what it changes
in the reverse macro's output, checked against independent oracles, and what it must leave unchanged (the
generated code)."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import astad
from astad import structural
from astad.ad import reverse
from astad.ir import Dup, Prim, Var
from astad.ir.interp import run_reverse
from conftest import fuzz_examples, load_program
from test_random_programs import _arguments, programs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import programs as bench  # noqa: E402


def _macro_output(fn, args, wrt=None):
    """The structural pass's output and the reverse macro's, of ``fn`` at ``args``."""
    from astad import pipeline

    made = []
    real = pipeline.reverse.reverse

    def spy(linear, active):
        made.append((linear, real(linear, active)))
        return made[-1][1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline.reverse, "reverse", spy)
        astad.clear_caches(disk=False)
        astad.reverse(fn).derivative(args, wrt)
    return made[0]


def _copies(linear):
    return {t.name: b.rhs.var for b in linear.body.binds if type(b.rhs) is Dup for t in b.targets}


STRAIGHT = bench.define(bench.straight_line_source(30), "straight_line_30")


def test_the_forward_block_of_primitives_reads_no_copy():
    """A program of primitives alone: the macro's forward block has them as they were (each reads the variable,
    not the copy ``dup`` made of it), and the replayed rules of the backward block read the variables too, so
    the optimiser's first fold has (nearly) no copies to rename."""
    args = bench.make_straight_line_inputs(np.random.default_rng(0))
    linear, prog = _macro_output(STRAIGHT, args, frozenset({0, 1}))
    copies = _copies(linear)
    assert copies  # (the program reads values more than once)
    fwd = [a.name for b in prog.forward.binds if type(b.rhs) is Prim for a in b.rhs.args if type(a) is Var]
    assert [n for n in fwd if n in copies] == []
    # the backward block's reads of copies: only where a rule ran (the first application like it), not replayed
    bwd = [a.name for b in prog.backward.binds if type(b.rhs) is Prim for a in b.rhs.args
           if type(a) is Var and a.name in copies]
    assert len(bwd) <= 40


@pytest.mark.parametrize("wrt", [frozenset({0, 1}), frozenset({0}), frozenset({1})])
def test_the_macro_output_with_the_primal_forward_block_is_the_gradient(wrt):
    """The reverse program (forward block as it was, backward block reading the variables, not their copies),
    run by the IR interpreter, gives the gradient central finite differences give."""
    rng = np.random.default_rng(1)
    v, W = bench.make_straight_line_inputs(rng)
    _, prog = _macro_output(STRAIGHT, (v, W), wrt)
    ct = 1.0
    value, grads = run_reverse(prog, (v, W), ct)
    assert np.isclose(value, STRAIGHT(v, W))
    for i, x in enumerate((v, W)):
        if i not in wrt:
            continue
        u = rng.standard_normal(x.shape)
        h = 1e-6

        def at(s):
            xs = [v, W]
            xs[i] = x + s * u
            return STRAIGHT(*xs)

        fd = (at(h) - at(-h)) / (2 * h)
        assert np.isclose(np.sum(grads[i] * u), fd, rtol=1e-5, atol=1e-7)


def _source(fn, args, wrt=None):
    astad.clear_caches(disk=False)
    try:
        return astad.reverse(fn).derivative(args, wrt).source
    except astad.AstadError as e:  # refused: the same way both times
        return f"refused: {type(e).__name__}: {e}"


@pytest.mark.parametrize("name", ["straight_line_500", "mlp", "logsumexp", "huber", "tiny_scalar", "horner",
                                  "gmm", "tree", "rk4"])
def test_the_primal_forward_block_changes_no_generated_code(name):
    fn, make_inputs, argnums = bench.PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    wrt = frozenset((argnums,) if isinstance(argnums, int) else argnums)
    primal = _source(fn, args, wrt)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reverse, "PRIMAL", False)
        assert _source(fn, args, wrt) == primal


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("speed_s13_rev")


@settings(max_examples=fuzz_examples(20, long=60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_the_primal_forward_block_changes_no_generated_code_of_random_programs(program_dir, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, program_dir, "rev13").f
    args = _arguments(params, seed)
    primal = _source(fn, args)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reverse, "PRIMAL", False)
        assert _source(fn, args) == primal


def test_primal_of_a_straight_line_is_the_core_block(program_dir):
    """``structural.primal``: the block binding for binding, of a block of primitives only; none of a block with a branch."""
    mod = load_program("import numpy as np\n\ndef f(x):\n    y = x * x\n    z = np.sin(y) + y\n    return z * x\n", program_dir, "rev13_a")
    x = np.linspace(0.1, 1.0, 4)
    linear, _ = _macro_output(mod.f, (x,))
    p = structural.primal(linear)
    assert p is not None and len(p.binds) == len(linear.body.binds)
    for b, q in zip(linear.body.binds, p.binds):
        assert type(b.rhs) is type(q.rhs) and b.targets == q.targets
    mod = load_program("import numpy as np\n\ndef f(x):\n    y = x * x\n    if np.sum(x) > 0:\n        y = y * x\n    return np.sum(y)\n",
                       program_dir, "rev13_b")
    linear, _ = _macro_output(mod.f, (x,))
    assert structural.primal(linear) is None


@pytest.mark.parametrize("start", [0, 1000, 1023, 1024, 2047, 5000])
def test_temporaries_past_the_names_made(start):
    """``Namer.temp`` steps over the temporaries taken past the end of the names it has made (it makes more)."""
    from astad.names import Namer

    taken = [f"t{k}" for k in range(start + 1, start + 700)]
    namer = Namer(taken + ["t5", f"t{start + 701}"])
    namer.temps = start
    drawn = [namer.temp() for _ in range(4)]
    assert drawn == [f"t{start + 700}", f"t{start + 702}", f"t{start + 703}", f"t{start + 704}"]
    assert all(name in namer.used and name in namer.taken for name in drawn)
