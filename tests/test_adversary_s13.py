"""Session 13's adversary: attacks on the speed work merged this session (the staleness check by
instructions, astad/straight_code.py; straight-line code lowered without the alias analysis; the reverse
macro's forward block kept as the structural pass's primitives; the optimiser's and codegen's faster walks).

None of these found a wrong derivative, a wrong refusal or a crash; they stay as regression tests of the
attacks, each against an independent oracle (central differences or the complex step in float64, forward
against reverse, or what compiling the text again says)."""

from __future__ import annotations

import ast
import importlib
import linecache
import os
import random
import re
import sys
import warnings

import numpy as np
import pytest

import astad
from astad import source, straight_code
from astad.errors import SourceUnavailableError
from astad.frontend.straight import straight_line
from conftest import fuzz_examples

ON_311 = sys.version_info[:2] == (3, 11)
HEAD = "import numpy as np\nimport math\nc = 2.0\n"


# --- the staleness check: an edited text is refused unless its code is the function's ----------------

def _edited(tmp_path, n: int, old: str, new: str):
    """``f`` of a module written with ``old``, imported, and its file then rewritten with ``new``."""
    name = f"adv_s13_stale_{n}"
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + old)
    sys.path.insert(0, str(tmp_path))
    try:
        fn = importlib.import_module(name).f
    finally:
        sys.path.remove(str(tmp_path))
    path.write_text(HEAD + new)
    st = os.stat(path)
    os.utime(path, (st.st_atime + 10, st.st_mtime + 10))  # (linecache sees the edit whatever its size)
    astad.clear_caches(disk=False)
    return fn


def _body(*lines: str, params: str = "x") -> str:
    return f"def f({params}):\n" + "".join(f"    {line}\n" for line in lines)


REFUSED = [  # (the text, the text after the edit): other code
    (_body("y = x * 2.0", "return y"), _body("y = x * 2", "return y")),  # 2.0 -> 2
    (_body("y = x * 1.0", "return y"), _body("y = x * True", "return y")),
    (_body("y = x * 0.0 + x", "return y"), _body("y = x * -0.0 + x", "return y")),  # the zero's sign
    (_body("y = x * 3.0 - x", "return y"), _body("y = x * 3.0 + x", "return y")),
    (_body("y = x * 3.0 / x", "return y"), _body("y = x * 3.0 * x", "return y")),  # the same precedence
    (_body("y = x / 2.0", "return y"), _body("y = x // 2.0", "return y")),
    (_body("y = x @ x", "return y"), _body("y = x * x", "return y")),
    (_body("y = np.sin(x)", "return y"), _body("y = np.cos(x)", "return y")),
    (_body("y = np.exp(x)", "return y"), _body("y = math.exp(x)", "return y")),
    (_body("y = x.sum()", "return y"), _body("y = x.prod()", "return y")),
    (_body("y = np.sum(x, axis=0)", "return y.sum()"), _body("y = np.sum(x, axis=1)", "return y.sum()")),
    (_body("y = np.clip(x, 0.1, 0.5)", "return y"), _body("y = np.clip(x, 0.5, 0.1)", "return y")),
    (_body("y = np.clip(x, a_min=0.1, a_max=0.5)", "return y"),  # keywords swapped, values kept in place
     _body("y = np.clip(x, a_max=0.1, a_min=0.5)", "return y")),
    (_body("y = x - w", "return y", params="x, w"), _body("y = w - x", "return y", params="x, w")),
    (_body("y = np.dot(x, w)", "return y", params="x, w"), _body("y = np.dot(x, w)", "return y", params="w, x")),
    (_body("y = x * c", "return y"), _body("c = 3.0", "y = x * c", "return y")),  # a global made a local
    (_body("y = x * 2.0", "return y"), _body('"""doc"""', "y = x * 2.0", "return y")),  # a docstring
    (_body("y = x * 2.0", "return y"), _body("y = x * 2.0", "y", "return y")),  # a statement with no effect
    (_body("y = x * 2.0", "return y"), _body("y = x * 2.0", "z = y", "return y")),
    (_body("y = x ** 2", "return y"), _body("y = x ** 2.0", "return y")),
    (_body("y = x * (2 * 3)", "return y"), _body("y = x * 2 * 3", "return y")),  # folded, and not
    (_body("y = -x * 2.0", "return y"), _body("y = -(x * 2.0)", "return y")),
    (_body("y = x * -2.0", "return y"), _body("y = -x * 2.0", "return y")),
    (_body("y = x ** 2", "return -y"), _body("y = x ** 2", "return ~y")),
    (_body("y = x * 123456789012345678901234567890", "return y"),
     _body("y = x * 123456789012345678901234567891", "return y")),
    (_body("y = x * 2.0", "return y"), _body("global y", "y = x * 2.0", "return y")),
    (_body("y = x * 2.0", "return y"), "async " + _body("y = x * 2.0", "return y")),
    (_body("y = x * 2.0", "return y"), _body("y = x * 2.0", "yield y")),
    (_body("y = x * 2.0", "return y"), _body("y = x * 2.0", "return y", params="x, /")),
    (_body("z = x * y", "return z", params="x, y"), _body("z = x * y", "return z", params="x, *, y")),
]

SAME_CODE = [  # (the text, the text after the edit): the same code, read (and derived) as it is
    (_body("y = x * 1e16", "return y"), _body("y = x * 10000000000000001.0", "return y")),  # the same float
    (_body("y = x * (2 * 3)", "return y"), _body("y = x * 6", "return y")),  # what the compiler folded
    (_body("y = x * -2.0", "return y"), _body("y = x * -(-(-2.0))", "return y")),
    (_body("y = x * 2.0", "return y"), _body("y = x * 2.0  # c = 3.0", "return y")),  # a comment
    (_body("y = x * 2.0", "return y"), _body("y = (x * 2.0)", "return (y)")),
    (_body("y = x * 2.0", "return y"), _body("y = x * 2.0; return y")),
    (_body("y = x * 2.0", "return y"), "@np.vectorize\n" + _body("y = x * 2.0", "return y")),
    (_body("y = x * 2.0", "return y"), _body("y = x * 2.0", "return y", params="x: 'float' = 1.0")),
]


@pytest.mark.parametrize("n", range(len(REFUSED)))
def test_an_edited_text_of_other_code_is_refused(tmp_path, n):
    old, new = REFUSED[n]
    fn = _edited(tmp_path, n, old, new)
    x = np.array([[0.3, 0.7], [0.2, 0.4]])
    args = (x, np.array([[0.5, 0.1], [0.9, 0.6]])) if fn.__code__.co_argcount == 2 else (x,)
    with pytest.raises(SourceUnavailableError):
        astad.reverse(fn)(*args)


@pytest.mark.parametrize("n", range(len(SAME_CODE)))
def test_an_edited_text_of_the_same_code_is_read(tmp_path, n):
    old, new = SAME_CODE[n]
    fn = _edited(tmp_path, 100 + n, old, new)
    x = np.array([0.3, -0.7, 0.5])
    value, pullback = astad.reverse(fn)(x)
    assert np.array_equal(value, fn(x))
    (g,) = pullback(np.ones(3))
    h = 1e-6
    want = np.array([(np.sum(fn(x + h * e)) - np.sum(fn(x - h * e))) / (2 * h) for e in np.eye(3)])
    assert np.allclose(g, want, rtol=1e-6, atol=1e-6)


def test_an_edited_default_is_not_read(tmp_path):
    """A default is the function's (``__defaults__``), not its text's: the code is the same."""
    fn = _edited(tmp_path, 200, _body("y = x * c", "return y", params="x, c=2.0"),
                 _body("y = x * c", "return y", params="x, c=3.0"))
    x = np.array([0.3, -0.7])
    value, pullback = astad.reverse(fn)(x)
    assert np.array_equal(value, x * 2.0) and np.allclose(pullback(np.ones(2))[0], 2.0)


# random programs and edits: "the same" only where compiling the edited text gives the function's code

_CONSTS = ["0.5", "2", "0.0", "-0.0", "1e16", "10000000000000001.0", "1", "1.0", "True", "False", "None", "'a'",
           "123456789012345678901234567890", "-1", "-(1)", "+1", "~1", "2 ** 64", "1e400", "-1e400", "0", "-0",
           "(2*3)", "6", "0x10", "16", "1_0", "10", "0.1", "0.10000000000000001", "1j"]
_NAMES = ["x", "W", "np", "math", "g", "a", "b"]
_NUMBER = re.compile(r"(?<![\w.])-?[0-9][0-9.e_x]*")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9][0-9.e_x]*|\*\*|//|<<|>>|[-+*/@%|&^~(),=]")
_HEADS = ["import numpy as np\nimport math\n", "np = None\nimport math\n",
          "import numpy as np\nfrom __future__ import annotations\n",
          "from __future__ import annotations\nimport numpy as np\ng = 1\n", "import numpy as np, math as g\n"]


def _expr(r: random.Random, d: int = 0) -> str:
    k = r.randint(0, 9 if d < 3 else 1)
    if k == 0:
        return r.choice(_NAMES + ["v0", "v1", "v2"])
    if k == 1:
        return r.choice(_CONSTS if r.random() < 0.3 else list(_TWINS))
    if k <= 4:
        op = r.choice(["+", "-", "*", "/", "@", "**", "//", "%", "<<", ">>", "|", "&", "^"])
        return f"({_expr(r, d + 1)} {op} {_expr(r, d + 1)})"
    if k == 5:
        return r.choice(["-", "+", "~", "not "]) + f"({_expr(r, d + 1)})"
    if k == 6:
        base = r.choice(["np", "math", "x", "np.linalg", "g", "(x)", "a.b"])
        args = [_expr(r, d + 1) for _ in range(r.randint(0, 3))]
        kws = list(dict.fromkeys(f"{r.choice(['axis', 'keepdims', 'out', 'a_min', 'ord'])}=" for _ in range(2)))
        kws = [k + _expr(r, d + 1) for k in kws[:r.randint(0, 2)]]
        return f"{base}.{r.choice(['sin', 'sum', 'dot', 'T', 'norm', 'clip', 'exp'])}({', '.join(args + kws)})"
    if k == 7:
        return f"({_expr(r, d + 1)}).{r.choice(['T', 'real', 'shape', 'imag'])}"
    if k == 8:
        return f"{_expr(r, d + 1)} + 1.0 * 2.0"
    return f"np.{r.choice(['pi', 'e', 'newaxis'])}"


def _random_def(r: random.Random) -> str:
    lines = [r.choice(['"""doc"""', "'doc'"])] if r.random() < 0.15 else []
    lines += [f"{r.choice(['v0', 'v1', 'v2', 'a', 'np', 'x', 'W'])} = {_expr(r)}" for _ in range(r.randint(1, 5))]
    lines.append(f"return {_expr(r)}")
    return f"def f({r.choice(['x, W', 'W, x', 'x, W, a', 'x', 'x, W=2.0', 'x, np'])}):\n" + \
        "".join(f"    {line}\n" for line in lines)


#: numbers and their twins: another spelling of the same value, or a value equal to it of another type
_TWINS = {"2": ["2.0", "2.", "0x2"], "2.0": ["2", "2.00"], "1": ["1.0", "True", "1j"], "1.0": ["1", "True"],
          "0.0": ["-0.0", "0", "0.00"], "-0.0": ["0.0", "-0"], "0": ["0.0", "False", "-0"], "0.5": ["0.50", "5e-1"],
          "1e16": ["10000000000000001.0", "1e16 + 1", "10000000000000000"], "6": ["(2*3)", "6.0"], "16": ["0x10", "16."],
          "10": ["1_0", "10.0"], "0.1": ["0.10000000000000001", "0.1000000000000001"], "-1": ["-1.0", "-(1)", "~0"],
          "3": ["3.0", "3.", "0b11"], "123456789012345678901234567890": ["123456789012345678901234567891",
                                                                          "1.2345678901234568e+29"]}


def _random_edit(r: random.Random, text: str) -> str:
    twins = [m for m in _NUMBER.finditer(text) if m.group() in _TWINS]
    if twins and r.random() < 0.4:  # (one number made its twin: equal, or not, in value and type)
        m = r.choice(twins)
        return text[:m.start()] + r.choice(_TWINS[m.group()]) + text[m.end():]
    for _ in range(r.randint(1, 2)):
        k = r.randint(0, 6)
        if k <= 3:
            m = r.choice(list(_TOKEN.finditer(text)))
            t = m.group()
            kind = (_NAMES + ["v0", "v1", "v2", "sin", "cos", "axis", "keepdims", "T", "real"] if t[0].isalpha()
                    else _CONSTS if t[0].isdigit() else ["+", "-", "*", "/", "@", "**", "//", "%", ",", "(", ")", "~"])
            text = text[:m.start()] + r.choice(kind) + text[m.end():]
        elif k == 4:  # two names swapped everywhere (the parameters too)
            text = text.replace("x", "\0").replace("W", "x").replace("\0", "W")
        else:  # a line repeated, or two lines swapped
            lines = text.split("\n")
            i, j = r.randint(1, max(1, len(lines) - 3)), r.randint(1, max(1, len(lines) - 3))
            if k == 5:
                lines.insert(i, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


def _function_code(module: str):
    code = compile(module, "<adv s13>", "exec", dont_inherit=True)
    return next((c for c in code.co_consts if hasattr(c, "co_code") and c.co_name == "f"), None)


@pytest.mark.skipif(not ON_311, reason="the instructions are CPython 3.11's")
@pytest.mark.parametrize("seed", range(4))
def test_instructions_never_take_an_edit_for_the_code(seed):
    """Richer constants (True, None, strings, big and folded numbers, 1e16 spelled two ways), operators of
    one precedence, keywords, parameters swapped, lines repeated or swapped, imports that change how a
    call compiles: "the same" only where compiling the edited text says so too; and then the names found
    are those straight_line finds."""
    r = random.Random(1300 + seed)
    accepted = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(fuzz_examples(1500)):
            head, old = r.choice(_HEADS), _random_def(r)
            new = _random_edit(r, old) if r.random() < 0.8 else old
            try:
                code, tree = _function_code(head + old), ast.parse(head + new)
            except SyntaxError:
                continue
            node = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "f"), None)
            if code is None or node is None:
                continue
            imported = source.imported_names(head + new)
            names = straight_code.names_if_matches(code, node, imported)
            if names is None:
                continue
            accepted += 1
            again = source._compile(code, ast.get_source_segment(head + new, node), imported)
            assert again is not None and source.same_code(again, code), (head, old, new)
            found: set[str] = set()
            assert straight_line(node.body, found, set()) and found == names, (old, new)
    assert accepted > 10  # (the check ran: not only refusals)


# --- derivatives of programs aimed at this session's optimiser passes, both modes ----------------------

OPTIMISED = '''
import numpy as np

def negations(x, w):
    a = -x
    b = -a * w
    c = -(-b)
    return np.sum(c * -w - a)

def negated_products(x, w):
    a = x * w
    b = -(x * w)
    c = a * b - (-a) * (-b)
    return np.sum(c + a * a)

def shared_factors(x, w):
    a = x * w
    b = w * x
    c = a * x * w
    d = (x * w) * (w * x)
    return np.sum(c + d + a * b)

def powers(x, w):
    a = x * x
    b = a * x
    c = b * a
    return np.sum(c / (1.0 + a)) - np.sum(-b * -a)

def outer_products(x, w):
    m = np.outer(x, w)
    s = np.sum(m, axis=0) + np.sum(m, axis=1) * 2.0
    n = x[:, None] * w[None, :]
    return np.sum(s * s) + np.sum(m * m) + np.sum(n.T * np.outer(w, x)) - np.sum(n, axis=0) @ w

def unit_axes(x, w):
    a = np.reshape(x, (1, 3))
    b = np.reshape(w, (3, 1))
    c = x[None, :] @ w[:, None]
    return np.sum(a @ b) + np.sum((b @ a) @ b) + np.sum(a.T * b) + np.sum(c) * (x @ w)

def signs_in_a_loop(x, w):
    s = x * 0.0
    for i in range(3):
        s = s - x * w * (i + 1.0)
        s = -s
    return np.sum(s * s)

def signs_in_branches(x, w):
    a = -x
    if np.sum(x) > 0:
        b = a * w
    else:
        b = -a * w
    return np.sum(-b * a)

def literal_factors(x, w):
    a = x * 2.0
    b = a * 3.0
    c = -b * -2.0
    d = c / -4.0
    return np.sum(d * x * w)

def mixed_types(x, w, s):
    a = np.sin(x) * s
    b = np.sin(s) * x
    c = np.sin(s * w) + np.sin(x * s)
    d = s * s * a + b * s
    return np.sum(a + b + c + d) + s * np.sum(w)
'''


@pytest.fixture(scope="module")
def optimised(tmp_path_factory):
    d = tmp_path_factory.mktemp("adv_s13")
    (d / "adv_s13_optimised.py").write_text(OPTIMISED)
    sys.path.insert(0, str(d))
    try:
        return importlib.import_module("adv_s13_optimised")
    finally:
        sys.path.remove(str(d))


_OPT_NAMES = ["negations", "negated_products", "shared_factors", "powers", "outer_products", "unit_axes",
              "signs_in_a_loop", "signs_in_branches", "literal_factors", "mixed_types"]


@pytest.mark.parametrize("name", _OPT_NAMES)
def test_both_modes_against_the_complex_step(optimised, name):
    f = getattr(optimised, name)
    x, w = np.array([0.3, -0.7, 0.5]), np.array([0.4, 0.9, -0.2])
    u, v = np.array([0.2, 0.5, -0.3]), np.array([-0.6, 0.1, 0.7])
    args, tangents = ((x, w, 0.37), (u, v, 0.8)) if name == "mixed_types" else ((x, w), (u, v))
    h = 1e-30  # (every operation here is analytic: the complex step is exact to rounding)
    want = f(*[a + 1j * h * t for a, t in zip(args, tangents)]).imag / h
    grads = astad.grad(f, argnums=tuple(range(len(args))))(*args)
    got_rev = sum(np.sum(g * t) for g, t in zip(grads, tangents))
    _, got_fwd = astad.jvp(f, args, tangents)
    assert abs(got_rev - want) <= 1e-9 * max(1.0, abs(want))
    assert abs(got_fwd - want) <= 1e-9 * max(1.0, abs(want))


@pytest.mark.parametrize("name", ["negated_products", "shared_factors", "outer_products", "literal_factors"])
def test_hessians_against_differences_of_gradients(optimised, name):
    f = getattr(optimised, name)
    x, w = np.array([0.3, -0.7, 0.5]), np.array([0.4, 0.9, -0.2])
    H = astad.hessian(f, argnums=0)(x, w)
    g = astad.grad(f)
    h = 1e-5
    want = np.stack([(g(x + h * e, w) - g(x - h * e, w)) / (2 * h) for e in np.eye(3)], axis=1)
    assert np.allclose(H, want, atol=1e-6)


# --- long random straight-line code (names used many times, a float among arrays) --------------------

_TWO = ["{a} * {b}", "{a} - {b}", "-{a} * {b}", "-({a} * {b})", "{a} * -{b}", "{a} + {b}", "-{a} - {b}",
        "({a} - {b}) * {a}", "{a} / (1.5 + {b} * {b})", "{a} * {b} * {a}"]
_ONE = ["{a} * s", "s * {a} - s", "-s * {a}", "np.sin(s) * {a}", "{a} * (s * s)", "-{a}", "np.sin({a})",
        "{a} * 0.5", "-(-{a})", "{a} * {a}", "np.exp(-{a} * {a})", "np.cos({a}) * -2.0"]
_VECTOR = ["np.sum({a}) * {b}", "np.outer({a}, {b}).sum(axis=0)", "np.outer({a}, {b}) @ {b}",
           "({a}[:, None] * {b}[None, :]).sum(axis=1)", "np.sum(np.outer({a}, {b}), axis=0) * -{a}",
           "({a} @ {b}) * {a}", "np.expand_dims({a}, 0)[0] * {b}"]


def _long_program(r: random.Random, n: int) -> str:
    names, lines = ["x", "w"], []
    for i in range(n):
        k = r.random()
        form = r.choice(_TWO if k < 0.45 else _ONE if k < 0.75 else _VECTOR)
        lines.append(f"    v{i} = " + form.format(a=r.choice(names), b=r.choice(names)))
        names.append(f"v{i}")
    ret = " + ".join(f"np.sum({o} * {r.choice(names)})" for o in r.sample(names, 3))
    return "import numpy as np\n\n\ndef f(x, w, s):\n" + "\n".join(lines) + f"\n    return {ret}\n"


@pytest.mark.parametrize("seed, length", [(33, 600), (36, 90), (37, 40)])
def test_long_programs_against_the_complex_step(tmp_path, seed, length):
    r = random.Random(seed)
    (tmp_path / f"adv_s13_long_{seed}.py").write_text(_long_program(r, length))
    sys.path.insert(0, str(tmp_path))
    try:
        f = importlib.import_module(f"adv_s13_long_{seed}").f
    finally:
        sys.path.remove(str(tmp_path))
    rs = np.random.default_rng(seed)
    n = 70  # (outer products of 4,900 elements: written in place by the generated code)
    x, w = rs.uniform(-0.9, 0.9, n) / np.sqrt(n), rs.uniform(-0.9, 0.9, n) / np.sqrt(n)
    u, v, s, ts = rs.normal(size=n), rs.normal(size=n), 0.37, 0.8
    want = f(x + 1e-30j * u, w + 1e-30j * v, s + 1e-30j * ts).imag / 1e-30
    assert np.isfinite(want)
    gx, gw, gs = astad.grad(f, argnums=(0, 1, 2))(x, w, s)
    _, tangent = astad.jvp(f, (x, w, s), (u, v, ts))
    for got in (gx @ u + gw @ v + gs * ts, tangent):
        assert abs(got - want) <= 1e-8 * max(1.0, abs(want))


# --- in-place forms in branches (codegen: no walk for sums and tapes of a block without loops) -------

BRANCHY = '''
import numpy as np

def branches(x, w):
    a = x * w
    b = np.sin(a)
    if np.sum(x) > 0:
        c = a * b + a
        d = c * x + b * a
    else:
        c = a - b
        d = c * c
    e = d + a + b + c
    if np.sum(w) > 0:
        f = e * e + a
    else:
        f = -e + b
    return np.sum(f * a) + np.sum(e * b)

def outer_in_branches(x, w):
    m = np.outer(x, w)
    if np.sum(x) > 0:
        n = m * m + m
    else:
        n = m - m * m
    k = n + m + n * m
    return np.sum(k * m)
'''


@pytest.mark.parametrize("name, n", [("branches", 5000), ("outer_in_branches", 80)])
@pytest.mark.parametrize("sign", [1, -1])
def test_big_arrays_written_in_place_in_branches(tmp_path, name, n, sign):
    (tmp_path / "adv_s13_branchy.py").write_text(BRANCHY)
    sys.path.insert(0, str(tmp_path))
    try:
        f = getattr(importlib.import_module("adv_s13_branchy"), name)
    finally:
        sys.path.remove(str(tmp_path))
    rs = np.random.default_rng(n)
    x = sign * np.abs(rs.normal(size=n)) / np.sqrt(n)
    w = -sign * np.abs(rs.normal(size=n)) / np.sqrt(n)
    u, v = rs.normal(size=n), rs.normal(size=n)
    want = f(x + 1e-30j * u, w + 1e-30j * v).imag / 1e-30
    rev = astad.reverse(f)
    _, pullback = rev(x, w)
    gx, gw = pullback(1.0)
    assert "+=" in rev.source  # (the in-place forms this is about)
    _, tangent = astad.jvp(f, (x, w), (u, v))
    for got in (gx @ u + gw @ v, tangent):
        assert abs(got - want) <= 1e-9 * max(1.0, abs(want))
