"""Straight-line code lowered from Python's tree (astad/frontend/straight.py, fast.py): its
libcst nodes are made only where something reads them (astad.deep.LazyNodes).

Both ways must give the same IR (bindings, their places, the constants and globals read) and
the same errors at the same places; the nodes made when read must be those the full reading
makes; an edited source is still refused.
"""

from __future__ import annotations

import ast
import importlib
import linecache

import libcst as cst
import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
import test_random_programs
from astad import deep, frontend
from astad.errors import AstadError, SourceUnavailableError
from astad.frontend import from_ast
from conftest import check_grad, fuzz_examples, load_program

parse_module = importlib.import_module("astad.frontend.parse")


def _binds(block):
    """Every binding of a block (those of blocks inside too), printed, with its place."""
    out = []
    for b in block.binds:
        loc = b.loc
        out.append((str(b), None if loc is None else (loc.file, loc.line, loc.col, loc.text)))
        for part in ("then", "orelse", "body"):
            inner = getattr(b.rhs, part, None)
            if inner is not None and hasattr(inner, "binds"):
                out.extend(_binds(inner))
    return out


def _lowering(fn, args, straight):
    """What lowering ``fn`` at ``args``' types gives (the IR, its constants and the globals it read,
    or the error), from Python's tree where ``straight``, else from libcst's nodes; and whether
    its libcst nodes were made."""
    astad.clear_caches()
    try:
        rev = astad.api.Reverse(fn)
        types, parsed = rev._types(args), rev._parsed  # (a method's: its `self` fixed)
        block = from_ast.lazy_block(parsed.funcdef)
        if not straight and block is not None:
            assert len(block) > 0  # (any reading makes them)
        lowerer = frontend.Lowerer(parsed)
        made = lowerer.lower_function(list(types))
    except AstadError as e:
        return ("error", type(e).__name__, str(e)), None
    out = (_binds(made.body), str(made.body.result), [p.name for p in made.params], sorted(lowerer.constants),
           [path for path, _ in lowerer.deps], lowerer.out_template)
    return out, block is not None and not block.is_made()


def assert_same_lowering(fn, args):
    """Both ways give the same; True where the straight-line way lowered it to the end."""
    straight, used = _lowering(fn, args, True)
    general, _ = _lowering(fn, args, False)
    assert straight == general
    return bool(used)


def _program(tmp_path, body, params="x, W", prelude=""):
    source = f"import numpy as np\n{prelude}\n\ndef f({params}):\n" + "".join(f"    {line}\n" for line in body)
    return load_program(source, tmp_path, "s12").f


X, W = np.linspace(-0.9, 0.8, 4), np.linspace(-0.5, 0.7, 16).reshape(4, 4)


def test_the_bench_program_is_lowered_from_pythons_tree(tmp_path):
    steps = ["np.sin({a}) * 0.5 + {b}", "np.tanh({a} + 0.3 * {b})", "{a} * np.exp(-{b} * {b})",
             "W @ {a} * 0.1 + np.cos({b})", "{a} - 0.2 * {b} / (1.0 + {a} * {a})"]  # (bench/programs.py's)
    body = ["v0 = x", "v1 = np.sin(x)"] + [f"v{k} = " + steps[k % 5].format(a=f"v{k - 1}", b=f"v{k - 2}")
                                          for k in range(2, 40)] + ["return np.sum(v39 * v38)"]
    f = _program(tmp_path, body)
    assert assert_same_lowering(f, [X, W])
    check_grad(f, [X, W])


@pytest.mark.parametrize("body", [
    ["a = np.sin(x) * 0.5 + W @ x", "b = -(a + 1) / (2.0 + a * a)", "return np.sum(b ** 2, axis=0)"],
    ["a = x.T + +x", "b = np.maximum(a, 0.0) - x.size", "return np.sum(b)"],
    ["a = (((x)))", "b = np.tanh((a) * (1e-3 + 2.))", "return np.mean(b * W.T @ a)"],
    ["a = x; b = a * 3; c = b - 1_000", "return np.dot(c, np.cos(a))"],
    ["a = x \\", "  + 1", "return np.sum(a)"],
    ["a = x.dot(W) + x.sum(axis=0) * x.T.mean()", "return a.sum()"],
    ["a = x.dot(W) + x.shape", "return a.sum()"],  # (a tuple added: declined)
    ["a = g(x)", "return np.sum(a)"],  # a call of the user's function: declined
    ["a = [x, x]", "return np.sum(np.stack(a))"],  # a list: not straight-line code here
    ['"""A docstring,', '    on two lines."""', "a = np.sin(x)", "return np.sum(a)"],
    ["'doc'", "return np.sum(x)"],
])
def test_both_ways_agree(tmp_path, body):
    f = _program(tmp_path, body, prelude="def g(v):\n    return v * 2.0\n")
    assert_same_lowering(f, [X, W])
    if "shape" in body[0]:  # (refused, the same way both ways)
        assert _lowering(f, [X, W], True)[0][0] == "error"
    else:
        check_grad(f, [X, W])


def test_the_commonest_code_is_not_declined(tmp_path):
    f = _program(tmp_path, ["a = np.sin(x) * 0.5 + W @ x", "b = -(a + 1) / (2.0 + a * a)", "return np.sum(b)"])
    assert assert_same_lowering(f, [X, W])


@pytest.mark.parametrize("body, line, col, words", [
    (["a = np.sin(x)", "b = a @ np.ones(3)", "return np.sum(b)"], 6, 9, "matmul"),
    (["a = np.sin(x)", "b = a + nothing", "return np.sum(b)"], 6, 13, "not defined"),
    (["a = np.sin(x)", "b = np.frobnicate(a)", "return np.sum(b)"], 6, 9, "frobnicate"),
    (["a = np.sin(x); b = 2 * (a @", "  np.ones(3))", "return np.sum(b)"], 5, 29, "matmul"),
    (["a = np.sin(x)", "return np.sum(a, axis=3)"], 6, 12, "axis"),
])
def test_errors_point_where_they_did(tmp_path, body, line, col, words):
    f = _program(tmp_path, body)
    assert_same_lowering(f, [X, W])
    with pytest.raises(AstadError) as e:
        astad.grad(f)(X, W)
    assert e.value.loc.line == line and e.value.loc.col == col
    assert e.value.loc.text == "    " + body[line - 5] + "\n"
    assert words in str(e.value) and "^" in str(e.value)


def test_the_nodes_made_when_read_are_the_full_readings():
    source = ("def f(x, W):\n    a = np.sin((x)) * 0.5 + W @ x; b = -a\n    c = np.maximum(b, 0.0, out=x)\n"
              "    return np.sum(c ** 2 + a.T)\n")
    lazy, lazy_starts, lazy_found = from_ast.read(source, "f", lazy=True)
    assert type(lazy.body.body) is deep.LazyNodes and not lazy.body.body.is_made()
    full, full_starts, full_found = from_ast.read(source, "f")
    assert lazy_found == full_found
    assert cst.Module([lazy]).code == cst.Module([full]).code  # (libcst's own walk makes them)
    made = list(lazy.body.body)
    assert len(made) == len(full.body.body) and all(a.deep_equals(b) for a, b in zip(made, full.body.body))
    pairs = list(zip(deep.walk(lazy), deep.walk(full)))
    assert len(pairs) == len(list(deep.walk(full)))
    assert all(type(a) is type(b) for a, b in pairs)
    assert all(lazy_starts.get(id(a)) == full_starts.get(id(b)) for a, b in pairs)


def test_a_walk_makes_the_nodes():
    made, _, _ = from_ast.read("def f(x):\n    y = x + 1\n    return y\n", "f", lazy=True)
    assert sum(type(n) is cst.Name for n in deep.walk(made)) == 5  # f x y x y
    assert type(made.body.body) is deep.LazyNodes and made.body.body.is_made()


@pytest.mark.parametrize("source", [
    "def f(x):\n    y = x\n",  # no return
    "def f(x):\n    return x\n    y = 1\n",  # code after return
    "def f(x):\n    y = z = x\n    return y\n",
    "def f(x):\n    (y) = x\n    return y\n",
    "def f(x):\n    y = x if x else x\n    return y\n",
    "def f(x):\n    y = f(*x)\n    return y\n",
    "def f(x):\n    y = True\n    return y\n",
    "def f(x): return x\n",
    "def f(x): y = x + \\\n  1; return y\n",
    "def f(x):\n    y = x\n    \"doc\"\n    return y\n",  # (a string not first)
    "def f(x):\n    \"doc\"\n",
])
def test_what_is_not_straight_line_code(source):
    made, starts, found = from_ast.read(source, "f", lazy=True)
    assert type(made.body) is not cst.IndentedBlock or type(made.body.body) is tuple
    full, full_starts, full_found = from_ast.read(source, "f")
    assert cst.Module([made]).code == cst.Module([full]).code and found == full_found
    assert [starts.get(id(n)) for n in deep.walk(made)] == [full_starts.get(id(n)) for n in deep.walk(full)]


def test_an_edited_source_is_still_refused(tmp_path):
    f = _program(tmp_path, ["a = np.sin(x) + W @ x", "return np.sum(a)"])
    path = f.__code__.co_filename
    with open(path) as file:
        text = file.read()
    with open(path, "w") as file:
        file.write(text.replace("np.sin(x)", "np.cos(x)"))
    linecache.checkcache(path)
    astad.clear_caches()
    try:
        with pytest.raises(SourceUnavailableError, match="not the code Python runs"):
            astad.grad(f)(X, W)
    finally:
        linecache.checkcache(path)


# --- random straight-line programs ----------------------------------------------------------------

_CALLS = ["np.sin({})", "np.tanh({})", "np.exp(-{})", "np.maximum({}, 0.0)", "np.sum({}, axis=0)", "np.cos({})"]


@st.composite
def straight_programs(draw):
    names = ["x", "W"]
    lines = []

    def expr(depth):
        kind = draw(st.integers(0, 10 if depth < 3 else 1))
        if kind == 0:
            return draw(st.sampled_from(names + ["unknown"] * (draw(st.integers(0, 30)) == 0)))
        if kind == 1:
            return draw(st.sampled_from(["0.5", "2", "1e-3", "3.", "1_0", "(1.5)"]))
        if kind <= 4:
            op = draw(st.sampled_from(["+", "-", "*", "/", "@", "**"]))
            return f"{expr(depth + 1)} {op} {expr(depth + 1)}"
        if kind == 5:
            return f"({expr(depth + 1)})"
        if kind == 6:
            return draw(st.sampled_from(["-", "+", "- "])) + expr(depth + 1)
        if kind == 7:
            return draw(st.sampled_from(_CALLS)).format(expr(depth + 1))
        if kind == 8:
            return f"({expr(depth + 1)}).T" if draw(st.booleans()) else f"{draw(st.sampled_from(names))}.shape[0]"
        if kind == 9:
            return draw(st.sampled_from(["({}).sum()", "({}).dot(x)", "({}).T.mean(axis=0)"])).format(expr(depth + 1))
        return draw(st.sampled_from(["[x, W]", "(not x)", "x[0]", "g(x)"]))  # (not straight-line code)

    for i in range(draw(st.integers(1, 6))):
        line = f"v{i} = {expr(0)}"
        if " + " in line and draw(st.integers(0, 3)) == 0:  # continued on a line of its own, at the line's start
            line = line.replace(" + ", " + \\\n", 1)
        if draw(st.booleans()):  # a comment at the line's start
            line += "\n# a line commented out"
        lines.append(line)
        names.append(f"v{i}")
    lines.append(f"return np.sum({draw(st.sampled_from(names))})")
    return lines


def _method(tmp_path, body):
    """``body`` as the body of a method (its continued lines and its comments where they are: less indented
    than its ``def``)."""
    source = ("import numpy as np\n\n\ndef g(v):\n    return v * 2.0\n\n\nclass M:\n    def f(self, x, W):\n"
              + "".join(f"        {line}\n" for line in body))
    return load_program(source, tmp_path, "s12m").M().f


@settings(max_examples=fuzz_examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                                 HealthCheck.function_scoped_fixture])
@given(straight_programs(), st.booleans())
def test_random_straight_line_programs(tmp_path, body, method):
    note("\n".join(body))
    f = _method(tmp_path, body) if method else _program(tmp_path, body, prelude="def g(v):\n    return v * 2.0\n")
    assert_same_lowering(f, [X, W])
    assert "not the code Python runs" not in str(_lowering(f, [X, W], True)[0])  # (astad.source.dedent)


@settings(max_examples=fuzz_examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                                 HealthCheck.function_scoped_fixture])
@given(test_random_programs.programs())
def test_the_random_programs_of_the_suite(tmp_path, program):
    source, params, seed = program
    note(source)
    f = load_program(source, tmp_path, "s12r").f
    assert_same_lowering(f, test_random_programs._arguments(params, seed))


def test_the_straight_line_check_reads_the_names_the_reading_notes():
    source = "def f(x, W):\n    a = np.sin(x, out=x) * W.T\n    b = g(a) - -a\n    return h.k(b, 1)\n"
    names, called = set(), set()
    fn = ast.parse(source).body[0]
    from astad.frontend.straight import straight_line
    assert not straight_line(fn.body, names, called)  # (g(a): the user's function, or a builtin)
    source = source.replace("g(a)", "a.dot(a)")
    names, called = set(), set()
    assert straight_line(ast.parse(source).body[0].body, names, called)
    assert names == {"a", "np", "sin", "x", "out", "W", "T", "b", "dot", "h", "k"} and called == set()
    _, _, found = from_ast.read(source, "f")  # (the full reading: the def's own names too)
    assert found.names == names | {"f"} and found.called == called


def test_indented_functions_too(tmp_path):
    source = ("import numpy as np\n\n\nclass Model:\n    scale = 2.0\n\n    def loss(self, x, W):\n"
              "        a = np.tanh(W @ x) * 0.5\n        return np.sum(a * a)\n\n\n"
              "def outer(k):\n    def f(x, W):\n        a = np.sin(x) * k + W.T @ x\n        return np.sum(a)\n"
              "    return f\n")
    module = load_program(source, tmp_path, "s12i")
    for f in (module.Model().loss, module.outer(3.0)):
        assert assert_same_lowering(f, [X, W])
        check_grad(f, [X, W])


def test_a_node_of_pythons_tree_is_where_it_starts(tmp_path):
    f = _program(tmp_path, ["a = np.sin(x)", "b = 2.0 * (a +", "   W @ x)", "return np.sum(b)"])
    astad.clear_caches()
    parsed = parse_module.parse(f)
    stmts, _ = parsed.positions.kept
    inner = stmts[1].value.right.right  # `W @ x`, on the line after its statement's
    loc = parsed.loc(inner)
    assert (loc.line, loc.col, loc.text) == (7, 8, "       W @ x)\n")


@pytest.mark.parametrize("doc", ['"doc"', "'''doc\n    more'''", '"a" "b"', 'u"doc"', 'r"d\\oc"'])
def test_a_docstring(tmp_path, doc):
    f = _program(tmp_path, [doc, "a = np.sin(x) * W.T @ x", "return np.sum(a)"])
    used = assert_same_lowering(f, [X, W])
    assert used == (doc not in ('"a" "b"', 'u"doc"'))  # (strings side by side, u"": libcst's parser reads them)
    source = f"def f(x):\n    {doc}\n    a = x\n    return a\n"
    try:
        made, starts, found = from_ast.read(source, "f", lazy=True)
    except from_ast.Decline:
        with pytest.raises(from_ast.Decline):
            from_ast.read(source, "f")
        return
    full, full_starts, full_found = from_ast.read(source, "f")
    assert cst.Module([made]).code == cst.Module([full]).code and found == full_found


def test_a_lazy_reading_is_freed_when_let_go():
    """The block and its LazyNodes hold no cycle: a function's trees (Python's, libcst's) are freed by
    reference counting when the reading is let go, not kept until a full collection (24K objects for
    straight_line_500)."""
    import gc
    source = "def f(x, W):\n    a = np.sin(x) * 0.5 + W @ x\n    b = -a\n    return np.sum(b ** 2 + a.T)\n"
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        for read_them in (False, True):
            lazy, starts, found = from_ast.read(source, "f", lazy=True)
            assert type(lazy.body.body) is deep.LazyNodes
            if read_them:
                assert len(list(lazy.body.body)) == 3
            del lazy, starts, found
            assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
