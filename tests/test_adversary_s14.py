"""Session 14's adversary: attacks on the speed work merged this session: the straight-line fast path
(astad/frontend/fast.py: binary operations, negations and numpy functions of one argument bound by
``Fast._bound``, operands read inline, result types read from the rules' caches by the ids of the operands'
types, results named with the user's name), parse.loc_at, and the optimiser's ``_renamed_only``,
remembered forward reads and cse's ``__missing__``.

None of these found a wrong derivative, a wrong value, a crash or a wrong refusal; they stay as regression
tests of the attacks, each against an independent oracle: the lowering of libcst's nodes (the same IR, with
the same places, and the same errors), Python's own value, central differences in float64, forward mode
against reverse mode (<u, J v> == <J^T u, v>) and the IR interpreter."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from astad import rules
from astad.errors import AstadError
from astad.ir import Num
from conftest import check_grad, check_stages, fuzz_examples, load_program
from astad import frontend
from test_frontend_s12 import _lowering as _lowering_untyped
from test_numpy_shape import check_forward

# --- random straight-line programs: the fast path against the lowering of libcst's nodes -----------------

#: user names that look like astad's own (temporaries, cotangents, the generated code's names)
NAMES = ["a", "t1", "t3", "t12_ct", "v_ct", "v_1_ct", "residuals", "out_ct", "x_ct", "ct", "v", "v_1", "t2_1",
         "x_1", "W_ct", "t0", "t4", "value", "pullback", "g", "zeros", "n_ct"]
#: numpy functions of one argument (the fast path's ``spec.unary``) and others near them
FUNCS = ["sin", "cos", "tanh", "exp", "abs", "sqrt", "log1p", "arctan", "sinh", "floor", "sign", "square",
         "negative", "positive", "absolute", "reciprocal", "cbrt", "expm1", "fabs", "isnan", "rint"]
OPS = ["+", "-", "*", "/"] * 6 + ["//", "%", "**", "@", "|", "&"]  # (the common ones likelier)
#: numbers as written: ints, floats and bools, the same digits as int and float, other spellings
LITERALS = ["2.0", "3", "0.5", "True", "1e-3", "2", "1.5", "0", "0.0", "7", "False", "1", "1_0", "0x1F", ".5",
            "5.", "1E3", "2.50"]
PARAMS = ["x", "W", "s", "n", "b", "y32", "z0", "f32", "R", "C"]
SIGNATURE = "x, W, s, n, b, y32, z0, f32, R, C"


def _lowering(fn, args, straight):
    """test_frontend_s12's ``_lowering`` with each binding's types too (a wrong type prints as the same
    binding: ``let a = sin(n)``)."""
    made: list = []
    original = frontend.Lowerer.lower_function

    def lower_function(self, arg_types):
        made.append(original(self, arg_types))
        return made[-1]

    frontend.Lowerer.lower_function = lower_function  # type: ignore[method-assign]
    try:
        out, used = _lowering_untyped(fn, args, straight)
    finally:
        frontend.Lowerer.lower_function = original  # type: ignore[method-assign]
    if out[0] != "error":
        out = (*out, [tuple(str(t.type) for t in b.targets) for b in _all_binds(made[-1].body)])
    return out, used


def _all_binds(block):
    out = []
    for b in block.binds:
        out.append(b)
        for part in ("then", "orelse", "body"):
            inner = getattr(b.rhs, part, None)
            if inner is not None and hasattr(inner, "binds"):
                out.extend(_all_binds(inner))
    return out


def _arguments():
    rng = np.random.default_rng(0)
    return [rng.normal(size=4), rng.normal(size=(4, 4)), 1.3, 3, True, rng.normal(size=4).astype(np.float32),
            np.array(0.7), np.float32(1.25), rng.normal(size=(1, 4)), rng.normal(size=(3, 1))]


@st.composite
def _expr(draw, names, depth=0):
    kind = draw(st.integers(0, 11)) if depth < 3 else draw(st.integers(0, 3))
    if kind <= 3:
        return draw(st.sampled_from(names + PARAMS if names else PARAMS) if kind else st.sampled_from(LITERALS))
    if kind <= 8:
        text = f"{draw(_expr(names, depth + 1))} {draw(st.sampled_from(OPS))} {draw(_expr(names, depth + 1))}"
        return text if depth == 0 else f"({text})"
    if kind == 9:
        text = f"-{draw(_expr(names, depth + 1))}"
        return text if depth == 0 else f"({text})"
    return f"np.{draw(st.sampled_from(FUNCS))}({draw(_expr(names, depth + 1))})"


@st.composite
def straight_programs(draw):
    names: list[str] = []
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        target = draw(st.sampled_from(NAMES))
        lines.append(f"{target} = {draw(_expr(names))}")
        if draw(st.integers(0, 9)) == 0:
            lines.append(lines[-1])  # a statement repeated
        if target not in names:
            names.append(target)
    # (the block again: its operations then meet the types they met, read from the rules' caches by their ids)
    lines += lines
    lines.append(f"return np.sum({lines[-1].split(' = ')[0]}) + np.sum({draw(st.sampled_from(names))}) * 0.5"
                 " + np.sum(x)")
    where = draw(st.sampled_from(["module", "nested", "class"]))
    body = "".join(f"    {line}\n" for line in lines)
    if where == "module":
        return f"import numpy as np\n\ndef f({SIGNATURE}):\n{body}"
    inner = f"    def f({SIGNATURE}):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    if where == "nested":
        return f"import numpy as np\n\ndef make():\n{inner}    return f\n\nf = make()\n"
    return f"import numpy as np\n\nclass K:\n    @staticmethod\n{inner}\nf = K.f\n"


def _value(v):
    return tuple(_value(a) for a in v) if isinstance(v, tuple) else np.asarray(v)


@settings(max_examples=fuzz_examples(80, long=400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(straight_programs())
def test_straight_line_programs_lower_as_libcsts_nodes_do(tmp_path_factory, source):
    """The fast path gives the IR (bindings, names, places), the constants, the globals read and the errors of
    the lowering of libcst's nodes; what astad computes is what Python computes."""
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("adv_s14"), "adv_s14").f
    args = _arguments()
    fast, _ = _lowering(fn, args, True)
    general, _ = _lowering(fn, args, False)
    assert fast == general
    if fast[0] == "error":
        return
    with np.errstate(all="ignore"):
        try:
            want = fn(*args)
        except ArithmeticError:
            return  # (Python raises: astad's code raises too, or refused)
        try:
            got, _ = astad.reverse(fn)(*args)
        except (AstadError, ArithmeticError):
            return
    want, got = _value(want), _value(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)


# --- smooth straight-line programs: derivatives against central differences and forward mode -------------

SMOOTH_FUNCS = ["sin", "cos", "tanh", "exp", "arctan", "sinh", "square", "negative", "positive", "expm1"]
SMOOTH_OPS = ["+", "-", "*", "+", "*"]


@st.composite
def _smooth(draw, names, depth=0):
    kind = draw(st.integers(0, 9)) if depth < 3 else 0
    if kind <= 2:
        # (no bool: np.tanh(True) is a float16, whose sums with s central differences do not see)
        pool = names + ["x", "s", "n", "z0", "1.5", "2", "0.5", "t"]
        return draw(st.sampled_from(pool))
    if kind <= 5:
        text = f"{draw(_smooth(names, depth + 1))} {draw(st.sampled_from(SMOOTH_OPS))} {draw(_smooth(names, depth + 1))}"
        return text if depth == 0 else f"({text})"
    if kind == 6:  # (a quotient whose denominator is not near zero)
        return f"({draw(_smooth(names, depth + 1))} / (1.5 + np.square({draw(_smooth(names, depth + 1))})))"
    if kind == 7:
        text = f"-{draw(_smooth(names, depth + 1))}"
        return text if depth == 0 else f"({text})"
    if kind == 8:
        return f"(W @ np.tanh({draw(_smooth(names, depth + 1))} * x))"
    return f"np.{draw(st.sampled_from(SMOOTH_FUNCS))}(np.tanh({draw(_smooth(names, depth + 1))}))"


@st.composite
def smooth_programs(draw):
    names: list[str] = []
    lines = []
    for _ in range(draw(st.integers(1, 7))):
        target = draw(st.sampled_from(NAMES))
        lines.append(f"{target} = {draw(_smooth(names))}")
        if target not in names:
            names.append(target)
    lines += lines  # (as above: the types met again)
    last = lines[-1].split(" = ")[0]
    lines.append(f"return np.sum(np.tanh({last})) + np.sum(np.tanh({draw(st.sampled_from(names))})) * x[0]")
    return "import numpy as np\nt = 0.25\n\ndef f(x, W, s, n, z0):\n" + "".join(f"    {line}\n" for line in lines)


@settings(max_examples=fuzz_examples(40, long=200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(smooth_programs())
def test_straight_line_derivatives(tmp_path_factory, source):
    """Reverse mode against central differences, the IR interpreted at every stage, forward mode against
    central differences and reverse mode, of programs the fast path lowers."""
    note(source)
    fn = load_program(source, tmp_path_factory.mktemp("adv_s14_smooth"), "adv_s14_smooth").f
    rng = np.random.default_rng(1)
    args = [rng.normal(size=4) * 0.7, rng.normal(size=(4, 4)) * 0.5, 0.6, 2, np.array(0.3)]
    fast, _ = _lowering(fn, args, True)
    assert fast == _lowering(fn, args, False)[0]
    check_grad(fn, args)
    check_stages(fn, args)
    check_forward(fn, args)


# --- the rules' caches by the ids of types: past their bound, types freed, caches cleared ----------------

def test_type_caches_past_their_bound_and_freed_types(tmp_path):
    """``infer.pairs`` (read by the fast path) is keyed by the ids of types it keeps alive: made to clear
    itself (4,096 entries) with types freed after, between transformations at other shapes, the types it
    gives are still right (the derivatives against central differences)."""
    fn = load_program("import numpy as np\n\ndef f(x, y):\n    a = x * y\n    b = np.sin(a) - y\n"
                      "    c = -b @ y\n    d = a / 2.0 + c\n    return np.sum(d * b)\n", tmp_path, "adv_s14_ids").f
    for k in range(1, 13):
        if k % 3 == 0:
            for extra in range(4200):  # fresh types, freed after: the caches pass their bound and clear
                t = Num((extra % 7 + 1,), "float64")
                rules.TABLE["mul"].infer([t, t], {})
                rules.TABLE["sin"].infer([t], {})
                rules.TABLE["matmul"].infer([t, t], {})
            gc.collect()
        if k % 4 == 0:
            astad.clear_caches(disk=False)
        n = k % 5 + 1
        check_grad(fn, [np.linspace(-1, 1, n) + 0.1, np.linspace(0.5, 1.5, n)])


# --- threads: the fast path's caches shared -----------------------------------------------------------

def test_threads_lowering_at_once_give_what_one_thread_gives(tmp_path):
    programs = []
    for k in range(8):  # (the same shapes and types: each thread's lowering reads what another's cached)
        body = [f"a = x * {k + 1}.5", "t1 = np.sin(a) + a * 1.5", "v_ct = -t1 @ W", "t3 = np.tanh(v_ct) * s",
                f"out_ct = t3 / (1.5 + a * a) + {k}", "return np.sum(out_ct * t1)"]
        if k % 2:
            body[2:4] = ["v_ct = t1", "t3 = -v_ct * a"]
        source = "import numpy as np\n\ndef f(x, W, s):\n" + "".join(f"    {ln}\n" for ln in body)
        programs.append(load_program(source, tmp_path, f"adv_s14_thr{k}").f)
    x, W = np.linspace(-0.9, 0.8, 4), np.linspace(-0.5, 0.7, 16).reshape(4, 4)

    def run(fn):
        r = astad.reverse(fn)
        v, pb = r(x, W, 0.7)
        return r.source, v, pb(1.0)

    alone = [run(fn) for fn in programs]
    astad.clear_caches(disk=False)
    seen: dict = {}
    errors: list = []

    def worker(i):
        try:
            for j in range(len(programs)):
                k = (i + j) % len(programs)
                seen.setdefault(k, []).append(run(programs[k]))
        except Exception as e:  # pragma: no cover (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, runs in seen.items():
        for source, v, cts in runs:
            assert source == alone[k][0]
            assert v == alone[k][1]
            for got, want in zip(cts, alone[k][2]):
                np.testing.assert_array_equal(got, want)
    for fn in programs:
        check_grad(fn, [x, W, 0.7])


# --- numpy's functions rebound after a transformation; np aliased or shadowed --------------------------

def test_a_numpy_function_replaced_after_a_transformation(tmp_path):
    fn = load_program("import numpy as np\n\ndef f(x):\n    a = np.sin(x)\n    b = np.tanh(a) * 2.0\n"
                      "    return np.sum(b * a)\n", tmp_path, "adv_s14_patch").f
    x = np.linspace(-1, 1, 3)
    check_grad(fn, [x])
    original = np.sin
    try:
        np.sin = np.cos  # (what the function reads now: the next call transforms it again)
        check_grad(fn, [x])
    finally:
        np.sin = original
    check_grad(fn, [x])


@pytest.mark.parametrize("source", [
    "import numpy as jnp\nimport numpy\n\ndef f(x, W):\n    a = jnp.sin(x)\n    b = numpy.tanh(a) + jnp.sin(a)\n"
    "    c = numpy.sin(b) * jnp.cos(b)\n    return numpy.sum(c)\n",
    "import numpy as np\nimport numpy\n\ndef f(x, W):\n    a = numpy.sin(x)\n    np = numpy\n    b = np.sin(a)\n"
    "    return np.sum(b)\n",  # (a local np read before it is assigned: refused as Python raises)
    "import numpy as np\n\ndef f(x, np):\n    a = np * x\n    b = np * a\n    return (a * b).sum()\n",  # (np a parameter)
    "import numpy as np\nt1 = 2.5\nt2 = 3\nv_ct = 0.5\n\ndef f(x, W):\n    a = x * t1\n    b = t2 * a + v_ct\n"
    "    t3 = b * t1\n    return np.sum(t3 * t2)\n",  # (globals named like temporaries and cotangents)
    # numbers written in other ways, the same digits as int, float and bool
    "import numpy as np\n\ndef f(x, W):\n    a = x * 1_0\n    b = a + 0x1F\n    c = b * 1E3 + .5 * b + 5. * a + 0o7 * a\n"
    "    d = c * 1_0 + 0x1F * c + 1E3 * c + .5 * c + c * True + c * 1 + c * 1.0\n    return np.sum(d)\n",
    # numbers on continued lines of a nested function's text, some not indented as far as the def
    "import numpy as np\n\ndef make():\n    def f(x, W):\n        a = (x *\n  2.5)\n        b = a + (x *\n 12.5)\n"
    "        c = (2.5 *\n12.5 * b) + (b\n  * 2.5)\n        return np.sum(c * b)\n    return f\n\nf = make()\n",
    "import numpy as np\n\ndef f(x, W):\n    a = x * 2.5; b = a + 2.5; c = b * 12.5\n    d = c - 2.5 * \\\n"
    "        12.5 * \\\n  b\n    return np.sum(d * a)\n",
    # negations of arrays, ints, floats, 0-d arrays and numpy scalars; numpy functions of Python numbers
    "import numpy as np\n\ndef f(x, W, n, s, z, q):\n    a = -x\n    c = -n\n    d = -s\n    e = -(-z) * -q\n"
    "    g = -a * -c * -d * np.sin(-e)\n    h = np.sin(s) * np.sqrt(n) + np.abs(n) * np.exp(q)\n"
    "    return np.sum(g * h + e)\n",
    # matrix products, the same statement again, a deep nesting of calls
    "import numpy as np\n\ndef f(x, W):\n    a = W @ x\n    a = W @ x\n    b = x @ W\n    c = W @ W @ x\n"
    "    d = x @ x\n    g = W @ W\n    h = " + "np.sin(" * 60 + "d" + ")" * 60 + "\n    return np.sum(g @ a) + d * h\n",
])
def test_edge_programs_lower_as_libcsts_nodes_do(tmp_path, source):
    fn = load_program(source, tmp_path, "adv_s14_edge").f
    x, W = np.linspace(-0.9, 0.8, 4), np.linspace(-0.5, 0.7, 16).reshape(4, 4)
    params = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    extra = {"n": 3, "s": 1.5, "z": np.array(0.5), "q": np.float64(2.0), "np": 1.5}
    args = [x, W][:2] + [extra[p] for p in params[2:]] if params[1] == "W" else [x, extra["np"]]
    fast, used = _lowering(fn, args, True)
    general, _ = _lowering(fn, args, False)
    assert fast == general
    if fast[0] == "error":
        assert "before it is assigned" in fast[2]
        return
    check_grad(fn, args)


@pytest.mark.parametrize("body, line, col, words", [
    # a product of mismatched shapes, inside an expression and at a statement's level, after the same types
    # were met (their result read from the rule's cache) and before
    (["a = W @ x", "b = a @ W", "c = b @ R", "return np.sum(c)"], 6, 9, "@"),
    (["a = x * 2.0", "b = a @ x", "c = 1.0 + (R @ a)", "return np.sum(c) * b"], 6, 16, "@"),
    (["a = x * 2.0", "b = s @ a", "return np.sum(b)"], 5, 9, "@"),
    (["a = x * 2.0", "b = a + C", "c = b + x.reshape(2, 2)", "return np.sum(c)"], 6, 9, "broadcast"),
    (["c = x > 0.5", "a = -c", "return np.sum(x) * a"], 5, 9, "boolean"),  # (numpy refuses it)
])
def test_refusals_after_cached_types_are_where_they_were(tmp_path, body, line, col, words):
    source = "import numpy as np\n\ndef f(x, W, s, b, R, C):\n" + "".join(f"    {ln}\n" for ln in body)
    fn = load_program(source, tmp_path, "adv_s14_refuse").f
    args = [np.ones(4), np.ones((4, 4)), 1.5, True, np.ones((3, 3)), np.ones((3, 1))]
    fast, _ = _lowering(fn, args, True)
    general, _ = _lowering(fn, args, False)
    assert fast == general
    assert fast[0] == "error" and words in fast[2] and f":{line}:{col}:" in fast[2], fast


# --- the optimiser: cse's two-variable keys, the remembered forward reads, the fold that only renames ------

@pytest.mark.parametrize("body", [
    # the same two variables in both orders (operations that do not commute), and again in the first order
    ["a = x - y", "b = y - x", "c = x / y", "d = y / x", "e = x - y", "return np.sum(a * b + c * d * e)"],
    ["a = W @ V", "b = V @ W", "c = W @ V", "d = x @ W", "e = W @ x", "return np.sum(a * b - c) + np.sum(d * e)"],
    ["a = np.abs(x) ** y", "b = np.abs(y) ** x", "c = np.arctan2(x, y)", "d = np.arctan2(y, x)",
     "return np.sum(a - b + c * d)"],
    # the backward pass reads the forward values again (residuals), in both orders
    ["a = np.sin(x - y)", "b = np.sin(y - x)", "c = np.tanh(a / (2.0 + y * y))", "d = np.tanh(b / (2.0 + x * x))",
     "return np.sum(c - d) + np.sum(a * b)"],
])
def test_common_subexpressions_keep_their_operands_order(tmp_path, body):
    source = "import numpy as np\n\ndef f(x, y, W, V):\n" + "".join(f"    {ln}\n" for ln in body)
    fn = load_program(source, tmp_path, "adv_s14_cse").f
    rng = np.random.default_rng(3)
    args = [rng.uniform(0.5, 1.5, 4), rng.uniform(0.5, 1.5, 4), rng.normal(size=(4, 4)), rng.normal(size=(4, 4))]
    check_grad(fn, args)
    check_stages(fn, args)
    check_forward(fn, args)


@settings(max_examples=fuzz_examples(30, long=150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(smooth_programs())
def test_remembered_reads_and_renamed_only_fold_on_straight_programs(tmp_path_factory, monkeypatch, source):
    """What ``_before_structure`` remembers of the forward block (its reads, its ops) is what a walk finds, and
    each block ``_renamed_only`` makes is the fold's, on the programs the fast path lowers."""
    from astad.ir import Block, kinds, walk
    from astad.optimise import program_fold, simplify

    note(source)
    taken, checked = [], []
    before, renamed_only = program_fold._before_structure, program_fold._renamed_only

    def noting(forward):
        found = before(forward)
        if found is not None:
            taken.append(found[0])
        return found

    def checking(block, env):
        out = renamed_only(block, env)
        if out is not None:
            fresh = Block(block.binds, block.result)
            folded = simplify.fold(fresh, env=env)
            checked.append(out.pretty() == folded.pretty() and out.result == folded.result
                           and kinds(out) == kinds(Block(folded.binds, folded.result)))
        return out

    with monkeypatch.context() as m:
        m.setattr(program_fold, "_before_structure", noting)
        m.setattr(program_fold, "_renamed_only", checking)
        fn = load_program(source, tmp_path_factory.mktemp("adv_s14_opt"), "adv_s14_opt").f
        rng = np.random.default_rng(1)
        args = [rng.normal(size=4) * 0.7, rng.normal(size=(4, 4)) * 0.5, 0.6, 2, np.array(0.3)]
        astad.clear_caches(disk=False)
        check_grad(fn, args)
    assert all(checked)
    assert taken  # (straight-line code: the forward block is the structural pass's primitives)
    for core in taken:
        if "_use_counts" in core.__dict__:
            assert dict(core.__dict__["_use_counts"]) == dict(walk._nested_use_counts(Block(core.binds, core.result)))
        if "_ops" in core.__dict__:
            assert core.__dict__["_ops"] == walk._ops(Block(core.binds, core.result))
