"""Session 13, the frontend's speed: the check that a straight-line function's text is the code Python
runs reads the code's instructions against the def's tree (astad/straight_code.py) instead of compiling
the text again.  It must say "the same" only where compiling says so (never a stale text taken for the
code), say it for the commonest code (the bench's), and every edit is still refused.
"""

from __future__ import annotations

import ast
import importlib
import linecache
import re
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
import astad.frontend
import astad.ir
from astad import source, straight_code
from astad.aliases import Aliases
from astad.frontend.straight import straight_line
from astad.errors import SourceUnavailableError
from conftest import fuzz_examples

ON_311 = sys.version_info[:2] == (3, 11)


def _code_and_tree(text: str, edited: str | None = None, imports: str = "import numpy as np\n"):
    """The code of ``f`` in the module ``imports + text``, and the tree of ``f`` in ``imports + edited``
    (``text`` where None), with the names the module imports."""
    module = compile(imports + text, "<astad test s13>", "exec", dont_inherit=True)
    code = next(c for c in module.co_consts if isinstance(c, type(module)) and c.co_name == "f")
    tree = ast.parse(imports + (text if edited is None else edited))
    node = next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "f")
    return code, node, source.imported_names(imports)


def _compiled_same(code, node, imported) -> bool:
    """The full check's answer: the tree's text compiled again is ``code``."""
    again = source._compile(code, ast.unparse(node), imported)
    return again is not None and source.same_code(again, code)


def _define(text: str, filename: str):
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = {"np": np}
    exec(compile(text, filename, "exec"), scope)
    return scope["f"]


BENCH_LIKE = ("import numpy as np\n\n\ndef f(v, W):\n    v0 = v\n    v1 = np.sin(v)\n"
              "    v2 = np.tanh(v1 + 0.3 * v0)\n    v3 = v2 * np.exp(-v1 * v1)\n    v4 = W @ v3 * 0.1 + np.cos(v2)\n"
              "    v5 = v4 - 0.2 * v3 / (1.0 + v4 * v4)\n    v6 = np.sum(v5, axis=0) + v5.T @ v4 - -0.5\n"
              "    return np.sum(v6 * v5)\n")


@pytest.mark.skipif(not ON_311, reason="the instructions are CPython 3.11's")
def test_straight_line_code_is_checked_without_compiling_it(monkeypatch):
    """The bench's kind of function: its text is not compiled again (before: always compiled)."""
    fn = _define(BENCH_LIKE, "<astad test s13: bench-like>")
    compiled = []
    real = source._compile
    monkeypatch.setattr(source, "_compile", lambda *a: compiled.append(a) or real(*a))
    astad.clear_caches(disk=False)
    x, W = np.linspace(-0.9, 0.8, 4), np.linspace(-0.5, 0.7, 16).reshape(4, 4)
    g = astad.grad(fn)(x, W)
    assert not compiled
    h = 1e-6
    for i in range(4):  # (a derivative of the function read, against central differences)
        e = np.zeros(4)
        e[i] = h
        assert abs(g[i] - (fn(x + e, W) - fn(x - e, W)) / (2 * h)) < 1e-5 * max(1.0, abs(g[i]))


@pytest.mark.parametrize("old, new", [
    ("0.3 * v0", "0.3 * v1"),  # a name
    ("0.3 * v0", "0.3 + v0"),  # an operator
    ("0.3 * v0", "0.25 * v0"),  # a constant
    ("* 0.1 +", "* 0.0 +"),
    ("- -0.5", "- 0.5"),  # a folded constant
    ("- -0.5", "- -0.0"),
    ("np.sin(v)", "np.cos(v)"),  # an attribute
    ("axis=0", "axis=1"),  # a keyword's value
    ("axis=0", "out=0"),  # its name
    ("v5.T @ v4", "v5 @ v4"),
    ("v5.T @ v4", "v4.T @ v5"),  # operands swapped
    ("np.exp(-v1 * v1)", "np.exp(v1 * v1)"),  # a sign
    ("def f(v, W):", "def f(W, v):"),  # the parameters
    ("return np.sum(v6 * v5)", "return np.sum(v6 * v6)"),
    ("W @ v3", "W @ v3 @ W"),  # an operation more
    ("    v0 = v\n", "    v0 = v\n    v0 = v\n"),  # a statement more
])
def test_every_edit_is_refused(old, new):
    assert old in BENCH_LIKE
    name = f"<astad test s13: edited {old} -> {new}>"
    fn = _define(BENCH_LIKE, name)
    text = BENCH_LIKE.replace(old, new, 1)
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    astad.clear_caches(disk=False)
    with pytest.raises(SourceUnavailableError, match="not the code Python runs"):
        astad.grad(fn)(np.linspace(-0.9, 0.8, 4), np.eye(4))


@pytest.mark.skipif(not ON_311, reason="the instructions are CPython 3.11's")
def test_the_bench_program_is_checked_by_its_instructions():
    sys.path.insert(0, "bench")
    try:
        from programs import PROGRAMS
    finally:
        sys.path.remove("bench")
    fn = PROGRAMS["straight_line_500"][0]
    text = "".join(linecache.getlines(fn.__code__.co_filename))
    node = ast.parse(text).body[0]
    assert straight_code.matches(fn.__code__, node, frozenset())
    edited = ast.parse(text.replace("0.3 *", "0.31 *", 1)).body[0]
    assert not straight_code.matches(fn.__code__, edited, frozenset())


# --- never "the same" where compiling says otherwise ----------------------------------------------

@st.composite
def _expressions(draw, names, depth=0):
    kind = draw(st.integers(0, 9 if depth < 3 else 1))
    if kind == 0:
        return draw(st.sampled_from(names + ["np.pi", "unknown"]))
    if kind == 1:
        return draw(st.sampled_from(["0.5", "2", "0.0", "-0.0", "1e-3", "-1", "3"]))
    if kind <= 4:
        op = draw(st.sampled_from(["+", "-", "*", "/", "@", "**", "//", "%"]))
        return f"{draw(_expressions(names, depth + 1))} {op} {draw(_expressions(names, depth + 1))}"
    if kind == 5:
        return draw(st.sampled_from(["-", "+", "~", "not "])) + f"({draw(_expressions(names, depth + 1))})"
    if kind == 6:
        f = draw(st.sampled_from(["np.sin({})", "np.sum({}, axis=0)", "np.maximum({}, {})", "np.linalg.norm({})",
                                  "({}).sum()", "({}).dot({})", "np.sum({}, keepdims=True, axis=1)"]))
        return f.format(*[draw(_expressions(names, depth + 1)) for _ in range(f.count("{}"))])
    if kind == 7:
        return f"({draw(_expressions(names, depth + 1))}).T"
    if kind == 8:
        return f"{draw(_expressions(names, depth + 1))} + 1.0 * 2.0"  # (a constant folded)
    return draw(st.sampled_from(["[x, W]", "x[0]", "g(x)", "(x, W)", "x if W else x"]))  # (not straight-line)


@st.composite
def _programs(draw):
    names = ["x", "W"]
    lines = []
    if draw(st.integers(0, 5)) == 0:
        lines.append('"""a docstring"""')
    for i in range(draw(st.integers(1, 5))):
        target = draw(st.sampled_from(names[2:] + [f"v{i}"] if len(names) > 2 else [f"v{i}"]))
        lines.append(f"{target} = {draw(_expressions(names))}")
        if target not in names:
            names.append(target)
    lines.append(f"return {draw(_expressions(names))}")
    return "def f(x, W):\n" + "".join(f"    {line}\n" for line in lines)


_WORDS = ["x", "W", "v0", "v1", "v2", "np", "sin", "cos", "sum", "maximum", "dot", "T", "axis", "pi", "unknown"]
_NUMBERS = ["0.5", "2", "0.0", "1e-3", "3", "1", "2.0", "0.50"]
_OPERATORS = ["+", "-", "*", "/", "@", "**", "//", "%"]
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9][0-9.e]*|\*\*|//|[-+*/@%]")


def _edited(draw, text: str) -> str:
    """``text`` with one token (a name or an attribute, a number, an operator) replaced by another of
    its kind (or by itself)."""
    body = text.index(":\n")  # (not the def's own name and parameters)
    spots = [m for m in _TOKEN.finditer(text) if m.start() > body]
    m = draw(st.sampled_from(spots))
    t = m.group()
    kind = _WORDS if t[0].isalpha() or t[0] == "_" else _NUMBERS if t[0].isdigit() else _OPERATORS
    return text[:m.start()] + draw(st.sampled_from(kind)) + text[m.end():]


@pytest.mark.skipif(not ON_311, reason="the instructions are CPython 3.11's")
@settings(max_examples=fuzz_examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs(), st.data(), st.sampled_from(["import numpy as np\n", "np = None\n"]))
def test_the_instructions_agree_with_compiling(text, data, imports):
    """For a function and its text edited (or not): "the same" only where compiling the edited text
    gives the function's code too; and for the text itself, "the same" wherever it is straight-line code
    the compiler does not fold (the check is the one that runs, not only a refusal)."""
    edited = _edited(data.draw, text)
    note(text)
    note(edited)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        try:
            code, node, imported = _code_and_tree(text, edited, imports)
        except SyntaxError:
            return
        if straight_code.matches(code, node, imported):
            assert _compiled_same(code, node, imported)
        code, node, imported = _code_and_tree(text, None, imports)
    names: set[str] = set()
    if straight_line(node.body, names, set()) and not _folds(node) and "keepdims=True" not in text:
        assert straight_code.matches(code, node, imported)
    found = straight_code.names_if_matches(code, node, imported)
    if found is not None:  # (what the reading then takes for the walk of straight_line: the same names)
        assert straight_line(node.body, set(), set()) and found == names


def _constant(n) -> bool:
    return type(n) is ast.Constant or (type(n) is ast.UnaryOp and _constant(n.operand))


def _folds(node) -> bool:
    """Whether the compiler folds constants of ``node`` other than a negative number (``-1.0``)."""
    return any((type(n) is ast.BinOp and _constant(n.left) and _constant(n.right)) or (
        type(n) is ast.UnaryOp and _constant(n.operand) and not (type(n.op) is ast.USub and type(n.operand) is ast.Constant))
        for n in ast.walk(node))


# --- the alias analysis is not followed in straight-line code lowered from Python's tree ------------


@pytest.mark.parametrize("body", [
    ["a = np.sin(x)", "b = np.maximum(a, 0.0, out=a)", "return np.sum(b + a)"],  # an update in place: declined
    ["a = np.sin(x)", "b = np.maximum(a, 0.0, out=x)", "return np.sum(b)"],  # of an argument: refused both ways
    ["a = np.sin(x).T", "b = np.split(a, 2)", "return np.sum(b[0])"],
])
def test_what_asks_for_aliases_is_lowered_as_before(tmp_path, body):
    from test_frontend_s12 import W, X, _lowering, _program

    f = _program(tmp_path, body)
    straight, used = _lowering(f, [X, W], True)
    general, _ = _lowering(f, [X, W], False)
    assert straight == general and not used


def test_straight_line_code_does_not_follow_aliases(tmp_path):
    from test_frontend_s12 import W, X, _program

    parse = importlib.import_module("astad.frontend.parse")
    f = _program(tmp_path, ["a = np.sin(x).T * 2.0", "b = a.T @ x + np.sum(W, axis=0)", "return np.sum(b)"])
    lowerer = astad.frontend.Lowerer(parse.parse(f))
    lowerer.lower_function([astad.ir.Num((4,), "float64"), astad.ir.Num((4, 4), "float64")])
    assert not isinstance(lowerer.aliases, Aliases)  # (before: every binding's roots noted)


@pytest.mark.skipif(not ON_311, reason="the instructions are CPython 3.11's")
def test_code_specialised_by_running_is_read_as_compiled():
    """CPython 3.11 rewrites the instructions of code it runs often (specialisation); ``co_code`` gives
    them as compiled, which the check compares."""
    text = "def f(x, y):\n    a = x * y + 1.0\n    return (a - 2.0 * y) / np.sin(x)\n"
    scope = {"np": np}
    exec(compile(text, "<astad test s13: run>", "exec"), scope)
    f = scope["f"]
    for _ in range(5000):
        f(2.0, 3.0)
    tree = ast.parse(text).body[0]
    assert straight_code.matches(f.__code__, tree, frozenset())
    assert not straight_code.matches(f.__code__, ast.parse(text.replace("2.0 *", "2.5 *")).body[0], frozenset())
