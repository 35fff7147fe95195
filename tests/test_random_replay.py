"""The reverse macro's shortcuts change nothing it makes, over random programs: VJP rule applications
replayed from the record of an earlier like one (astad.ad.replay) and cotangents named where they are
made (``take``) give the same generated code as every rule run and every cotangent copied to its name
(which the optimiser's fold then removes).  The bench programs are checked in test_transform_work.py."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings, strategies as st

import astad
from astad.ad import replay, reverse
from conftest import fuzz_examples, load_program
from test_random_programs import _arguments, programs


def _source(fn, args):
    astad.clear_caches(disk=False)
    try:
        return astad.reverse(fn).derivative(args).source
    except astad.AstadError as e:  # refused: the same way both times
        return f"refused: {type(e).__name__}: {e}"


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_replay")


@settings(max_examples=fuzz_examples(20, long=60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_replayed_and_named_like_run_and_copied(program_dir, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, program_dir, "replay").f
    args = _arguments(params, seed)
    fast = _source(fn, args)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay, "REPLAY", False)
        mp.setattr(reverse, "NAME_COTANGENTS", False)
        assert _source(fn, args) == fast


# --------------------------------------------------------------------------- repeated applications, subtle keys

#: parameters: (shape, dtype), "py" a Python float
_KINDS = [((3,), "float64"), ((3,), "float32"), ((2, 3), "float64"), ((1, 3), "float64"), ((), "float64"),
          ((), "float32"), ((), "py"), ((2, 1), "float64"), ((), "py"), ((), "float32")]
#: literals whose keys differ where their values may be equal
_LITERALS = ["2", "2.0", "0.5", "-1", "1", "0", "True", "-0.0", "np.float32(2.0)", "np.float64(2.0)", "3.0"]
#: user names like those the macro draws
_NAMES = ["x_ct", "t3", "x0_ct", "t1_ct", "t2_2", "x0_1", "x0_1_ct", "x0_ct_2", "out_ct"]


def _repeated_program(seed):
    """A program applying mostly one replayed primitive many times, to values and literals whose keys differ
    subtly (dtypes, Python floats, numpy scalars, shapes that broadcast, an argument twice), its values named
    like the macro's, some in a loop, a branch or a lambda."""
    import random

    r = random.Random(seed)
    params = [r.choice(_KINDS) for _ in range(r.randint(1, 4))]
    names = [f"x{i}" for i in range(len(params))]
    main = r.choice(["*", "+", "-", "/", "np.exp", "np.sin", "np.tanh", "**", "np.maximum", "np.where", "np.where", "np.sum"])
    lines = []
    for n in range(r.randint(3, 9)):
        op = main if r.random() < 0.75 else r.choice(["*", "+", "np.sin", "np.sum"])
        a = r.choice(names)
        b = r.choice([r.choice(names), r.choice(_LITERALS), a])
        if op in ("*", "+", "-"):
            e = f"{a} {op} {b}" if r.random() < 0.6 else f"{b} {op} {a}"
        elif op == "/":
            e = f"{b} / ({a} * {a} + 1.0)"
        elif op == "**":
            e = f"({a} * {a} + 0.5) ** {r.choice(['2', '2.0', 'True', '0.5', '-1', 'np.float32(2.0)', '3'])}"
        elif op == "np.maximum":
            e = f"np.maximum({a}, {b})"
        elif op == "np.where":  # (of a Python float and a float32: a float32, its cotangent a Python float's)
            e = f"np.where({a} > 0.1, {a}, {r.choice([b, 'np.float32(2.0)'])})"
        elif op == "np.sum":
            e = f"np.sum({a}{r.choice(['', ', axis=0', ', axis=0, keepdims=True', ', axis=0, keepdims=1', ', axis=-1'])})"
        else:
            e = f"{op}({a})"
        target = r.choice(_NAMES + [f"v{n}"] * 3)
        lines.append(f"    {target} = {e}")
        names.append(target)
    form = r.choice(["plain", "plain", "loop", "branch", "lambda"])
    if form == "loop":
        i = r.randrange(len(lines))
        lines[i:] = lines[i:] + ["    for _ in range(2):"] + ["    " + ln for ln in lines[i:]]
    elif form == "branch":
        i = r.randrange(len(lines))
        lines[i:] = ["    if np.sum(x0) > 0.1:"] + ["    " + ln for ln in lines[i:]] + \
            ["    else:"] + ["    " + ln.replace(" * ", " + ", 1) for ln in lines[i:]]
    elif form == "lambda":
        lines.insert(0, "    g = lambda u: u * u + 2.0")
        lines.append(f"    {names[-1]} = g({names[-1]}) + g(x0) * g(g(x0))")
    outs = r.sample(names[len(params):], min(2, len(names) - len(params)))
    source = "import numpy as np\n\n\ndef f(" + ", ".join(f"x{i}" for i in range(len(params))) + "):\n" + \
        "\n".join(lines) + "\n    return " + " + ".join(f"np.sum({o}) * 0.5" for o in outs) + "\n"
    rng = np.random.default_rng(seed)
    args = []
    for shape, dtype in params:
        if dtype == "py":
            args.append(float(rng.uniform(-1.5, 1.5)))
        elif not shape:
            args.append(getattr(np, dtype)(rng.uniform(-1.5, 1.5)))
        else:
            args.append(rng.uniform(-1.5, 1.5, shape).astype(dtype))
    return source, args


def _second_order(fn, args):
    """The VJP of the gradient (reverse over reverse), or the refusal."""
    astad.clear_caches(disk=False)
    try:
        with np.errstate(all="ignore"):
            grads, pullback = astad.vjp(astad.grad(fn, argnums=tuple(range(len(args)))), *args)
            return pullback(tuple(np.ones_like(np.asarray(g)) if type(g) is not float else 1.0 for g in grads))
    except astad.AstadError as e:
        assert not isinstance(e, astad.InternalError), e
        return f"refused: {type(e).__name__}: {e}"


@settings(max_examples=fuzz_examples(15, long=40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1))
def test_repeated_applications_replayed_like_run(program_dir, seed):
    source, args = _repeated_program(seed)
    note(source)
    note(repr(args))
    try:
        fn = load_program(source, program_dir, "repeated").f
    except SyntaxError:
        return
    fast = _source(fn, args)
    assert "InternalError" not in fast
    second = _second_order(fn, args)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay, "REPLAY", False)
        mp.setattr(reverse, "NAME_COTANGENTS", False)
        assert _source(fn, args) == fast
        again = _second_order(fn, args)
    if isinstance(second, str) or isinstance(again, str):
        assert second == again
    else:
        for s, a in zip(second, again):
            np.testing.assert_array_equal(s, a)
