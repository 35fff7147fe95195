"""An adversary's programs for straight-line code lowered from Python's tree (astad/frontend/straight.py,
fast.py; session 12): where the fast way and the full lowering (from libcst's nodes) could differ.

Each program is lowered both ways (the same IR, places, constants, globals read; the same error) and,
where it is not refused, its derivative checked against central finite differences and forward mode
against reverse mode (<u, J v> == <J^T u, v>).  The same text laid out at random (blanks, tabs, line
continuations, comments, semicolons, docstrings, methods whose continuation lines are less indented than
their `def`) must read the same lazily (its statements' nodes made when asked for) as at once.
"""

from __future__ import annotations

import io
import re
import threading
import tokenize

import libcst as cst
import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from astad import deep
from astad import frontend
from astad.frontend import from_ast
from conftest import check_grad, fuzz_examples, load_program
from test_frontend_s12 import W, X, _lowering, _program, assert_same_lowering


def _forward_matches_reverse(f, args, seed=0):
    """<u, J v> (forward mode) == <J^T u, v> (reverse mode) for random u, v (x and W both)."""
    rng = np.random.default_rng(seed)
    v = [rng.standard_normal(np.shape(a)) for a in args]
    value, jv = astad.jvp(f, tuple(args), tuple(v))
    _, pullback = astad.vjp(f, *args)
    u = rng.standard_normal(np.shape(value))
    cts = pullback(u)
    cts = cts if isinstance(cts, tuple) else (cts,)
    left = float(np.sum(u * np.asarray(jv)))
    right = sum(float(np.sum(c * w)) for c, w in zip(cts, v) if c is not None)
    assert np.isclose(left, right, rtol=1e-9, atol=1e-9)


# --- programs: shadowed names, modules, numpy values, methods, literals -----------------------------

PROGRAMS = [
    ["np = x", "return np.sum()"],  # a local named np: an array
    ["a = np.sin(x)", "np = 2.0", "return np.sum(a)"],  # np read before Python makes it a local: refused
    ["sin = np.sin(x)", "sum = np.sum(sin)", "return sum * 2"],  # locals named like numpy's functions
    ["a = x * math.pi + np.pi - np.e", "return np.sum(a)"],
    ["a = np.minimum(x, np.inf) * np.float64(2)", "return np.sum(a)"],
    ["a = x.astype(np.float64) * np.float32(0.5)", "return np.sum(a * a)"],
    ["a = np.expand_dims(x, 0).T", "return np.sum(a * a)"],
    ["a = W.reshape(2, 8).sum(axis=1) + W.T.T.ravel().mean()", "return np.sum(a)"],
    ["a = W.mean(axis=1) + W.max(axis=0) + x.clip(0, 1) + x.copy() + x.conj()", "return a.sum()"],
    ["a = -x + +x - ~3 + - - -x", "return np.sum(a)"],
    ["a = x * 1 + 1.0 + 1e3 + 0x1F + 1_000 + 0o7 + 0b1 + 1. + 1e-3", "return np.sum(a) * 1"],
    ["a = x * 2 + 2 + 2.0 + 2.", "b = a * 2", "return np.sum(b * 2.0) ** 2"],
    ["a = x * x.size + x.ndim + x.shape[0]", "return np.sum(a)"],
    ["a = x ** 2 + 2 ** x + 2 ** -1 + x // 2 + x % 3", "return np.sum(a)"],
    ["a = x * K + L", "return np.sum(a)"],  # globals: an int, an array
    ["a = x * cfg.scale", "return np.sum(a)"],  # an object's attribute: the full lowering
    ["a = np.linalg.norm(W, axis=0) + np.linalg.norm(x)", "return np.sum(a)"],
    ["a = 3 << 1", "return np.sum(x) * a"],  # an operator refused
    ["a = x.fill(0)", "return np.sum(x)"],  # an array method refused
    ["a = x.sort()", "return np.sum(x)"],  # in place: refused
    ["a = np.add.reduce(x)", "return a"],
    ["a = np.sinn(x)", "return np.sum(a)"],
    ["a = y + x", "return np.sum(a)"],
    ["a = np.sum(x, dtype=np.float64)", "return a"],
    ['"doc"; a = np.sin(x)', "return np.sum(a)"],
    ['"""doc', '  less indented; \\\\ # not a comment"""', "a = np.sin(x); b = a @ W", "return np.sum(b)"],
    ["a = np.sin(x); return np.sum(a) * x.shape[0]"],
    ["a = np.sin(x)\t+\tW @ x  # a comment; with a semicolon \\", "b = (a +", "\t 2.0)", "return np.sum(b)"],
]


@pytest.mark.parametrize("body", PROGRAMS)
def test_programs_lower_the_same_both_ways(tmp_path, body):
    prelude = ("import math\nimport types\nK = 3\nL = np.linspace(0.1, 0.4, 4)\n"
               "cfg = types.SimpleNamespace(scale=1.5)\n")
    f = _program(tmp_path, body, prelude=prelude)
    assert_same_lowering(f, [X, W])
    if _lowering(f, [X, W], True)[0][0] != "error":
        check_grad(f, [X, W])
        _forward_matches_reverse(f, [X, W])


def test_a_parameter_named_like_a_module(tmp_path):
    f = _program(tmp_path, ["a = x * math + np", "return (a * a).sum()"], params="x, math, np")
    args = [X, 2.0, np.ones(4)]
    assert assert_same_lowering(f, args)
    check_grad(f, args)


def test_an_error_deep_in_a_long_function_points_at_its_line(tmp_path):
    body = ["a0 = np.sin(x)"] + [f"a{i} = np.tanh(a{i - 1}) * 0.5 + W @ a{i - 1}" for i in range(1, 2000)]
    body[300] = "a300 = a299 @ np.ones(3)"
    f = _program(tmp_path, body + ["return np.sum(a1999)"])
    assert_same_lowering(f, [X, W])
    with pytest.raises(astad.errors.AstadError) as e:
        astad.grad(f)(X, W)
    assert (e.value.loc.line, e.value.loc.col) == (305, 12) and "matmul" in str(e.value)
    assert e.value.loc.text == "    a300 = a299 @ np.ones(3)\n"


def test_deep_expressions(tmp_path):
    for expr in ("x" + " + x" * 600, "-" * 600 + "x", "x" + ".T" * 600, "np.sin(" * 150 + "x" + ")" * 150,
                 "(" * 150 + "x" + " + 1)" * 150):
        f = _program(tmp_path, [f"a = {expr}", "return np.sum(a)"])
        assert assert_same_lowering(f, [X, W])


def test_threads_transforming_one_function(tmp_path):
    body = ["a0 = np.sin(x)"] + [f"a{i} = np.tanh(a{i - 1}) * 0.5 + W @ a{i - 1} + {i % 7}.25"
                                 for i in range(1, 200)] + ["return np.sum(a199)"]
    f = _program(tmp_path, body)
    want = None
    for _ in range(3):
        astad.clear_caches()
        got = [None] * 6

        def work(k):
            got[k] = astad.grad(f, argnums=(0, 1))(X, W)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        want = want if want is not None else astad.grad(f, argnums=(0, 1))(X, W)
        for g in got:
            assert g is not None and all(np.array_equal(a, b) for a, b in zip(g, want))


# --- methods whose continuation lines are less indented than their `def` -------------------------

_METHODS = '''import numpy as np


class M:
    def backslash(self, x, W):
        y = np.sin(x) * 2.5 + \\
3.5
        return np.sum(y @ W)

    def bracket(self, x, W):
        y = np.sin(
  x) * 2.5 + W @ (x +
1.0)
        return np.sum(y)

    def docstring(self, x, W):
        """A docstring,
  a line of it less indented."""
        y = np.sin(x) * 2.5 + \\
3.5
        return np.sum(y)

    def comment(self, x, W):
# a comment at the line's start (code commented out, say)
        y = np.sin(x) * 2.5  # (Python reads no indentation of a comment)
      # another
        return np.sum(y @ W)

    def loop(self, x, W):
        """A docstring."""
        y = np.sin(x) + np.cos(
x)
        z = 0.0
        for i in range(2):
            z = z + np.sum(y * \
  i)
        return z

    def lambda_(self, x, W):
        g = lambda v: np.sin(v) + \
1.0
        return np.sum(g(x))

    def not_straight(self, x, W):
        y = np.sin(x) * 2.5 + \\
3.5
        if y[0] > 10.0:
            y = y * 2.0
        return np.sum(y)
'''


@pytest.mark.parametrize("name", ["backslash", "bracket", "docstring", "comment", "loop", "lambda_", "not_straight"])
def test_a_methods_continuation_lines_may_be_less_indented(tmp_path, name):
    # (Python reads them: a line continued is one logical line; astad refused them as "edited")
    f = getattr(load_program(_METHODS, tmp_path, "adv2m").M(), name)
    assert_same_lowering(f, [X, W])
    check_grad(f, [X, W])


def test_a_closures_continuation_lines_may_be_less_indented(tmp_path):
    source = ("import numpy as np\n\n\ndef outer(k):\n    def f(x, W):\n        y = np.sin(x) * k + \\\n3.0\n"
              "# a comment\n        return np.sum(y @ W)\n    return f\n")
    f = load_program(source, tmp_path, "adv2c").outer(2.0)
    assert assert_same_lowering(f, [X, W])
    check_grad(f, [X, W])


@pytest.mark.parametrize("doc", ["", '        """A docstring."""\n'])
def test_an_error_on_a_continued_line_of_a_method_points_there(tmp_path, doc):
    source = ("import numpy as np\n\n\nclass M:\n    def f(self, x, W):\n" + doc + "        y = np.sin(x) + (\n"
              "            x @ np.ones(3))\n        return np.sum(y)\n")
    f = load_program(source, tmp_path, "adv2d").M().f
    assert_same_lowering(f, [X, W])
    with pytest.raises(astad.errors.AstadError) as e:
        astad.grad(f)(X, W)
    assert (e.value.loc.line, e.value.loc.col, e.value.loc.text) == (7 + bool(doc), 13, "            x @ np.ones(3))\n")


def test_an_error_on_a_less_indented_line_points_there(tmp_path):
    source = ("import numpy as np\n\n\nclass M:\n    def f(self, x, W):\n        y = np.sin(x) + \\\n(x @ \\\n np.ones(3))\n"
              "        return np.sum(y)\n")
    f = load_program(source, tmp_path, "adv2e").M().f
    assert_same_lowering(f, [X, W])
    with pytest.raises(astad.errors.AstadError) as e:
        astad.grad(f)(X, W)
    assert (e.value.loc.line, e.value.loc.col, e.value.loc.text) == (7, 2, "(x @ \\\n")


# --- the same text laid out at random ----------------------------------------------------------------

_EXPRESSIONS = ["np.sin(x) * 0.5 + W @ x", "-(a + 1) / (2.0 + a * a)", "np.sum(a ** 2, axis=0)",
                "x.T.sum(axis=0) + (1e-3)", "np.maximum(a, 0.0) - x.size", "W.reshape(2, 8).mean()",
                "((a)) * (+x) - - 3", "x.dot(W).sum() + 0x1F + 1_000"]
_DOCSTRINGS = ["", '"""doc"""', "'d'", '"""two\n    lines"""', "r'a\\\\b; c'", '"# not; a \\\\ comment"',
               "'''x\n;\\\n'''", '"a" "b"', 'b"x"', "f'x'", '"""doc"""; ', "'d' \\\n ;", '"""a\n  # b ; \\\\ c"""']
_ENDS = ["\n", "  # c\n", "\n\n", "\n    # c; d\n", "  # a \\\n", "  #;\n"]


@st.composite
def laid_out(draw):
    """A straight-line function (a method, or not) whose tokens are apart by random blanks, line
    continuations (at any indentation), comments and line breaks inside brackets."""
    method = draw(st.booleans())
    stmts = [f"v{i} = " + draw(st.sampled_from(_EXPRESSIONS)) for i in range(draw(st.integers(0, 3)))]
    stmts = ["a = " + draw(st.sampled_from(_EXPRESSIONS))] + stmts + ["return " + draw(st.sampled_from(_EXPRESSIONS))]
    lines = []
    for s in stmts:
        toks = [t.string for t in tokenize.generate_tokens(io.StringIO(s).readline)
                if t.type not in (tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.NL)]
        out, depth = [toks[0]], 0
        for t in toks[1:]:
            kind = draw(st.integers(0, 9))
            margin = " " * draw(st.integers(0, 9)) if kind < 3 else ""
            if kind < 2 and depth > 0:
                sep = draw(st.sampled_from(["\n", "  # c\n", "\n\t", " # (x)\n\n"]))
                sep += "<<<" if draw(st.booleans()) else margin  # (<<<: at the line's start, less indented)
            elif kind < 3:
                sep = draw(st.sampled_from([" \\\n", "\\\n", "\t\\\n"]))
                sep += "<<<" if draw(st.booleans()) else margin
            elif kind < 6:
                sep = draw(st.sampled_from([" ", "\t", "  "]))
            else:
                sep = " " if (out[-1][-1].isalnum() or out[-1][-1] == "_") and (t[0].isalnum() or t[0] == "_") else ""
            out.append(sep)
            out.append(t)
            depth += t in "([{"
            depth -= t in ")]}"
        lines.append("".join(out))
    doc = draw(st.sampled_from(_DOCSTRINGS))
    text = "def f(x, W):" + draw(st.sampled_from(["\n", "  # c\n", "\n\n"]))
    if doc:
        text += "    " + doc + ("" if doc.rstrip().endswith(";") else "\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        while i + 1 < len(lines) and draw(st.integers(0, 4)) == 0 and not line.endswith("\\") and \
                "#" not in line.split("\n")[-1]:
            i += 1
            line += draw(st.sampled_from([";", "; ", " ;\t"])) + lines[i]
        text += "    " + line.replace("\n", "\n    ") + draw(st.sampled_from(_ENDS))
        i += 1
    if method:
        text = "class M:\n" + "".join(("    " + t if t.strip() else t) for t in text.splitlines(True))
        text = text.replace("def f(x, W)", "def f(self, x, W)")
    return re.sub(r"\n[ \t]*<<<", "\n", text), method


def _same_reading(source):
    """The lazy reading of ``source``'s function, made in full, is its reading at once (or both decline)."""
    try:
        full = from_ast.read(source, "f")
    except Exception as e:  # (from_ast.Decline, SyntaxError: libcst's parser reads it)
        with pytest.raises(type(e)):
            from_ast.read(source, "f", lazy=True)
        return
    made, starts, found = from_ast.read(source, "f", lazy=True)
    full_made, full_starts, full_found = full
    assert cst.Module([made]).code == cst.Module([full_made]).code and found == full_found
    assert [starts.get(id(n)) for n in deep.walk(made)] == [full_starts.get(id(n)) for n in deep.walk(full_made)]


@settings(max_examples=fuzz_examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                                 HealthCheck.function_scoped_fixture])
@given(laid_out())
def test_random_layouts(tmp_path, drawn):
    source, method = drawn
    note(source)
    if not method:
        _same_reading(source)
    module = load_program("import numpy as np\n" + source, tmp_path, "adv2l")
    f = module.M().f if method else module.f
    assert_same_lowering(f, [X, W])
    value = _lowering(f, [X, W], True)[0]
    assert value[0] != "error" or "not the code Python runs" not in value[2]


@pytest.mark.parametrize("body", [["é = np.sin(x) * W @ x", "return np.sum(é)"],
                                  ["ﬁ = np.sin(x)", "return np.sum(fi)"],  # (Python reads `ﬁ` as `fi`)
                                  ['"""Ünïcode in a docstring."""', "a = np.sin(x)", "return np.sum(a)"]])
def test_text_not_ascii_is_read_the_full_way(tmp_path, body):
    f = _program(tmp_path, body)
    assert not assert_same_lowering(f, [X, W])  # (columns in bytes are not columns in characters)
    if "ﬁ" in body[0]:  # (refused: astad would read two names where Python reads one)
        assert "NFKC" in _lowering(f, [X, W], True)[0][2]
    else:
        check_grad(f, [X, W])


class _Racy(dict):
    """The leaves made for Python's tree (:meth:`astad.frontend.fast.Fast.ast_leaf`) as a thread sees
    them where another made the same leaf between its look and its store: never found."""

    def get(self, key, default=None):
        return default


def test_one_leaf_per_node_of_pythons_tree_when_threads_race(tmp_path):
    # (each node keyed in the starts is alive: a leaf made twice, the one not kept freed, left its id there)
    f = _program(tmp_path, ["a = np.sin(x) * 2.5 + W @ x", "b = a * a - x", "return np.sum(b)"])
    astad.clear_caches()
    parsed = astad.api.Reverse(f)._parsed
    stmts, leaves = parsed.positions.kept
    parsed.positions.kept = (stmts, _Racy(leaves))
    sizes = []
    for _ in range(3):
        lowerer = frontend.Lowerer(parsed)
        lowerer.lower_function(list(astad.api.Reverse(f)._types([X, W])))
        sizes.append(len(parsed.positions))
    assert from_ast.lazy_block(parsed.funcdef) is not None  # (lowered from Python's tree each time)
    assert sizes[0] == sizes[1] == sizes[2]
