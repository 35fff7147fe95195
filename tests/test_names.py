"""User names that look like the names astad generates.

Small programs (loops, a while, branches, lambdas and nested defs, a helper
with a module-level constant, lists, comprehensions, ``map``) have their
locals, parameters, helper functions and constants renamed, consistently, to
names drawn from what generated code uses: every identifier in the generated
modules of the same programs (collected here, so a name a future codegen makes
is covered without editing this file), the runtime helpers, ``np`` (the
programs import numpy as ``xp``), the builtins, and the generator's suffix
patterns (``x_1``, ``x_ct``, ``x_ct_2``, ``x_ct_sum``, ``x_tape``, ``t3``).
Renaming changes nothing in Python, so the oracles are those of an unrenamed
program: the value and pullback against central finite differences
(``conftest.check_grad``) and every stage's IR, interpreted
(``conftest.check_stages``).

``ASTAD_FUZZ_EXAMPLES=1000`` runs more examples.
"""

import ast
import builtins
import functools
import keyword
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from astad import names
from astad.errors import InternalError
from astad.rules import RUNTIME
from conftest import check_grad, check_stages, load_program

PRELUDE = "import numpy as xp\n\n"

_rng = np.random.default_rng(1)
_r = _rng.standard_normal

#: (source, arguments); each defines ``f``; numpy is ``xp`` so that ``np`` is free for the user
PROGRAMS = [
    ("""
def f(x, w, b):
    h = xp.tanh(x @ w + b)
    g = h * h
    h = g + xp.log(h * h + 1.0)
    return xp.sum(h * g)
""", (_r((2, 4)), _r((4, 3)), _r(3))),
    ("""
def f(x, y):
    s = x
    acc = 0.0
    for i in range(3):
        s = xp.sin(s) * y + i
        acc = acc + xp.sum(s * x)
    return acc
""", (_r(3), _r(3))),
    ("""
def f(x, v):
    total = 0.0
    for i in range(len(v)):
        total = total + v[i] * x[i] * x[0]
    return total
""", (_r(3), _r(3))),
    ("""
def f(x, a):
    n = 0
    z = x
    while n < 3:
        if xp.sum(z) > 0.0:
            z = z * a
        else:
            z = z - a * 0.5
        n = n + 1
    return xp.sum(z * z)
""", (np.array([0.3, 0.4, -0.2]), 1.3)),
    ("""
def f(x, c):
    sq = lambda t: t * t * c
    def step(u, k=2.0):
        inner = xp.cos(u) * k
        return inner + sq(u)
    y = step(x)
    y = step(y * 0.5)
    return xp.sum(sq(y))
""", (_r(3), 0.7)),
    ("""
def f(x, y):
    hs = [x]
    for i in range(3):
        hs.append(xp.tanh(hs[-1] * y + 0.1))
    st = xp.stack(hs)
    zs = [xp.sin(r) * s for r, s in zip(x, y)]
    ms = list(map(lambda p, q: p * q, x, y))
    return xp.sum(st * st) + xp.sum(xp.stack(zs)) + xp.sum(xp.stack(ms))
""", (_r(3), _r(3))),
    ("""
W = xp.array([[0.5, -0.2], [0.1, 0.3], [0.7, 0.4]])
scale = 1.5


def helper(a, b):
    m = a @ W
    return m * b, xp.prod(m + 2.0)


def f(x, b):
    m, p = helper(x, b)
    q, r = helper(x * 0.5, m)
    return xp.sum(q) * p * scale + r
""", (_r(3), _r(2))),
    ("""
def f(W, x):
    h1 = xp.tanh(W @ x)
    h2 = xp.tanh(W @ h1)
    h3 = xp.tanh(W @ h2)
    h4 = xp.tanh(W @ h3)
    return xp.sum(xp.where(h4 > 0.0, h4, 0.1 * h4)) + xp.sum(xp.maximum(h2, h3 + 0.05))
""", (_r((3, 3)), _r(3))),
    ("""
def f(A, v):
    d = xp.diag(A)
    B = A.T @ A + xp.diag(v)
    return xp.sum(B[1:, :2]) + xp.mean(d * v) + xp.sum(xp.reshape(B, (-1,)) ** 2) + xp.sum(xp.sqrt(A * A + 1.0))
""", (_r((3, 3)), _r(3))),
    ("""
V = xp.array([[0.5, -0.2, 0.1], [0.1, 0.3, 0.2], [0.7, 0.4, -0.3]])


def helper(a):
    return xp.tanh(a @ V)


def f(x):
    s = x
    for i in range(3):
        s = helper(s)
        if xp.sum(s) > 100.0:
            return xp.sum(s)
    V = s * 2.0
    return xp.sum(V * x)
""", (_r(3),)),
]

#: a function of Python floats, whose grad and jvp calls of the same kinds run code that checks its
#: own arguments (astad/guards.py, scalar_grad.py): a name of the user's shadows a builtin there too
PROGRAMS.insert(0, ("""
def f(x, y):
    s = x * y
    t = xp.sin(s) + y
    for i in range(2):
        t = t * x + s
    return t * s
""", (0.7, 1.3)))


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("names")


def _module_names(tree):
    """(names the module binds: variables, parameters, functions; names it only reads)."""
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name)
    return bound, read - bound


def _renamable(source):
    bound, _ = _module_names(ast.parse(source))
    return sorted(bound - {"f", "xp"})


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.mapping.get(node.arg, node.arg)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node


def renamed(source, mapping):
    return ast.unparse(_Rename(mapping).visit(ast.parse(source))) + "\n"


def _generated_identifiers(source):
    """Every identifier of a generated module (not attribute names: ``np.sin`` gives ``np``)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.FunctionDef):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name.split(".")[0])
    return out


@functools.lru_cache(maxsize=None)
def generated_identifiers(tmp):
    """Per program, the identifiers of its generated module; and all of them together."""
    per = []
    for i, (source, args) in enumerate(PROGRAMS):
        fn = load_program(PRELUDE + source, tmp, f"names_{i}").f
        per.append(frozenset(_generated_identifiers(astad.reverse(fn).transform(*args).source)))
    return per, frozenset().union(*per)


def _suffixed(name):
    return [f"{name}_1", f"{name}_2", f"{name}_ct", f"{name}_ct_2", f"{name}_ct_sum", f"{name}_tape", f"{name}_out",
            f"{name}_record", f"{name}_index", f"{name}_ct_out", f"{name}_out_ct"]


BUILTIN_NAMES = sorted(n for n in dir(builtins) if n.isidentifier() and not n.startswith("__")
                       and not keyword.iskeyword(n))


def candidate_names(i, tmp):
    """Names to rename program ``i``'s names to: this program's generated
    identifiers first, then every other source of look-alikes."""
    per, every = generated_identifiers(tmp)
    source = PROGRAMS[i][0]
    taken = set().union(*_module_names(ast.parse(PRELUDE + source))) | {"f"}
    patterns = {n for name in _renamable(source) for n in _suffixed(name)}
    patterns |= {f"t{k}" for k in range(1, 13)} | {"np", "out_ct", "items", "element", "residuals", "_"}
    patterns |= {"f_forward", "f_backward", *RUNTIME, *BUILTIN_NAMES}
    taken = {names.python_name(n) for n in taken}
    seen = set()

    def ok(n):  # one spelling of each name Python reads
        py = names.python_name(n)
        fine = n.isidentifier() and not keyword.iskeyword(py) and py not in taken | seen and not n.startswith("__")
        seen.add(py)
        return fine

    own = [n for n in sorted(per[i]) if ok(n)]
    rest = [n for n in sorted(every | patterns) if ok(n)]
    return own, rest


EXAMPLES = int(os.environ.get("ASTAD_FUZZ_EXAMPLES", "40"))


@st.composite
def renamings(draw, tmp):
    i = draw(st.integers(0, len(PROGRAMS) - 1))
    own, rest = candidate_names(i, tmp)
    mapping = {}
    for name in _renamable(PROGRAMS[i][0]):
        chosen = {names.python_name(n) for n in mapping.values()}
        choices = [n for n in own + rest if names.python_name(n) not in chosen]
        pick = draw(st.one_of(st.none(), st.sampled_from([n for n in own if n in choices] or choices),
                              st.sampled_from(choices)))
        if pick is not None:
            mapping[name] = pick
    return i, mapping


def _check(fn, args):
    check_grad(fn, args)
    check_stages(fn, args)
    if all(type(a) is float for a in args):  # the fast calls of scalars (see PROGRAMS[0])
        _check_fast_calls(fn, args, astad.reverse(fn)(*args)[1](1.0))  # (checked against FD by check_grad)


def _check_fast_calls(fn, args, cts):
    """grad, value_and_grad and jvp of a function of floats, called again (their checked fast calls)."""
    nums = tuple(range(len(args)))
    for _ in range(3):
        assert astad.grad(fn, argnums=nums)(*args) == pytest.approx(cts, rel=1e-12)
        assert astad.value_and_grad(fn, argnums=0)(*args)[1] == pytest.approx(cts[0], rel=1e-12)
        assert astad.jvp(fn, args, (1.0,) + (None,) * (len(args) - 1))[1] == pytest.approx(cts[0], rel=1e-12)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_names_that_look_generated(program_dir, data):
    i, mapping = data.draw(renamings(program_dir))
    source = renamed(PRELUDE + PROGRAMS[i][0], mapping)
    note(source)
    _check(load_program(source, program_dir, "renamed").f, PROGRAMS[i][1])


@pytest.mark.parametrize("i", range(len(PROGRAMS)))
def test_every_name_renamed(program_dir, i):
    """Every name of the program at once, to this program's own generated
    identifiers (in order: ``x`` may become ``x_ct``), then to the helpers and builtins."""
    own, rest = candidate_names(i, program_dir)
    targets = [n for n in own + rest if n not in ("f",)]
    for offset in (0, len(own) // 2, len(own)):
        pool = iter(targets[offset:] + targets[:offset])
        mapping = {name: next(pool) for name in _renamable(PROGRAMS[i][0])}
        source = renamed(PRELUDE + PROGRAMS[i][0], mapping)
        _check(load_program(source, program_dir, "every").f, PROGRAMS[i][1])


_SCALAR_READS = _module_names(ast.parse(PRELUDE + PROGRAMS[0][0]))[1]


@pytest.fixture(scope="module")
def scalar_gradient(program_dir):
    """The gradient of the function of floats, by reverse mode, checked against finite differences."""
    args = PROGRAMS[0][1]
    plain = load_program(PRELUDE + PROGRAMS[0][0], program_dir, "plain").f
    fds = [(plain(*(a + 1e-6 * (i == j) for j, a in enumerate(args))) -
            plain(*(a - 1e-6 * (i == j) for j, a in enumerate(args)))) / 2e-6 for i in range(len(args))]
    cts = astad.reverse(plain)(*args)[1](1.0)
    assert cts == pytest.approx(fds, rel=1e-6)
    return cts


@pytest.mark.parametrize("builtin", [n for n in BUILTIN_NAMES if n not in _SCALAR_READS | names.OUTSIDE])
def test_each_builtin_as_a_name_of_the_scalar_program(program_dir, scalar_gradient, builtin):
    """A parameter and a local of the function of floats named after each builtin that generated code
    does not reserve (``type`` and ``tuple`` were not, which the code of its checked fast calls reads)."""
    source = renamed(PRELUDE + PROGRAMS[0][0], {"y": builtin, "t": f"{builtin}_"})
    _check_fast_calls(load_program(source, program_dir, "builtin").f, PROGRAMS[0][1], scalar_gradient)


# --------------------------------------------------------------------------- the cases of issue 9

_x = np.array([0.3, 0.5, 0.7])

ISSUE = [
    ("def f(x):\n    out_ct = xp.sin(x)\n    return xp.sum(out_ct * x)\n", (_x,)),
    ("def f(x):\n    x_ct = x * 2.0\n    return xp.sum(x_ct * x)\n", (_x,)),
    ("def f(x):\n    s = x\n    x_ct_sum = x\n    for i in range(3):\n        s = s + x * x\n"
     "        x_ct_sum = x_ct_sum + x\n    return xp.sum(s) + xp.sum(x_ct_sum * x)\n", (_x,)),
    ("def f(x):\n    reversed = x * 2.0\n    s = x\n    for i in range(3):\n        s = xp.sin(s) * reversed\n"
     "    return xp.sum(s)\n", (_x,)),
    ("def f(x):\n    log_domain = xp.log(x)\n    return xp.sum(log_domain * x)\n", (_x,)),
    ("def f(x):\n    s = x\n    i_tape = 2.0\n    for i in range(3):\n        s = xp.sin(s) * x * i_tape\n"
     "    return xp.sum(s)\n", (_x,)),
    ("def f(np, y):\n    return xp.sum(xp.sin(y) * np)\n", (_x, _x + 1.0)),
    ("def f(x):\n    range = x * 2.0\n    s = x\n    for r in x:\n        s = s + xp.sin(r) * range\n"
     "    return xp.sum(s)\n", (_x,)),
    ("def f(x, float):\n    return float * 2.0 * x\n", (1.5, 0.5)),
    ("def f(x, y):\n    x_ct = x > 0\n    return xp.sum(xp.where(x_ct, y, 2.0 * y))\n", (_x - 0.45, _x)),
    ("def f(x, zip):\n    return xp.sum(xp.stack(list(map(lambda a, b: a * b * zip, x, x))))\n", (_x, 2.0)),
    ("np = xp.array([1.0, 2.0, 3.0])\nf_forward = 3.0\n\n\ndef f(x):\n    return xp.sum(x * np) * f_forward\n", (_x,)),
    ("x_1 = xp.array([1.0, 2.0, 3.0])\n\n\ndef f(x):\n    return xp.sum(x * x * x_1)\n", (_x,)),
    PROGRAMS[-1],  # a constant named while lowering a loop that is lowered again (return in it), a local of its name
]


ISSUE_IDS = ["out_ct", "x_ct", "x_ct_sum", "reversed", "log_domain", "i_tape", "param_np", "range", "param_float",
             "zero_ct_x_ct", "param_zip", "constants_np_f_forward", "constant_x_1", "constant_and_local_V"]


@pytest.mark.parametrize("source,args", ISSUE, ids=ISSUE_IDS)
def test_issue_9_names(program_dir, source, args):
    _check(load_program(PRELUDE + source, program_dir, "issue").f, args)


# --------------------------------------------------------------------------- the check before running


@pytest.mark.parametrize("body", [
    "    reversed = 1.0\n    return reversed",   # binds a builtin generated code calls
    "    np = x\n    return np",                 # binds the module
    "    return W + x",                          # reads a constant it binds too
    "    return abs(x)",                         # reads a global that is not an outside name
])
def test_generated_code_is_checked(body):
    tree = ast.parse(f"def g_forward(x):\n{body}\n\ndef g_backward(residuals, out_ct):\n    W = 1.0\n    return W\n")
    with pytest.raises(InternalError):
        names.check_generated(tree, ["W"])



# --------------------------------------------------------------------------- the namer itself

_bases = st.sampled_from(sorted(names.OUTSIDE | names.KEYWORDS | {"x", "x_2", "x_ct", "t1", "t2", "f_forward", "y"}))


@settings(max_examples=50, deadline=None)
@given(st.sets(_bases), st.lists(st.one_of(_bases, st.just(None)), max_size=12), st.sets(_bases))
def test_namer_hands_out_each_name_once(reserved, requests, program_has):
    """A user's own name is kept unless it is an outside name, a keyword or the
    name of a generated function; nothing is handed out twice; a namer for a
    program never hands out a name the program has."""
    for namer, mentioned, have in ((names.Namer(reserved, "f"), reserved, set()),
                                   (names.Namer.adding_to(program_has, "f"), program_has, program_has)):
        given_out = []
        for base in requests:
            name = namer.temp() if base is None else namer.fresh(base)
            assert name.isidentifier() and not keyword.iskeyword(name)
            assert name not in names.OUTSIDE | names.function_names("f") | have
            if base is None or base != name:  # a temporary or a suffixed name: no name the user's code mentions
                assert name not in mentioned
            if base is not None and base not in names.OUTSIDE | names.KEYWORDS | names.function_names("f") | have \
                    and base not in given_out:
                assert name == base
            given_out.append(name)
        assert len(set(given_out)) == len(given_out)


no_ct_2 = 1.0  # the name forward over reverse once gave its unused cotangent parameter


def _named_like_generated(x, no_ct):
    unused = x * no_ct_2  # the constant is read, then dead: the module of derivatives does not read it
    return np.sum(np.sin(x) * no_ct)


def test_second_order_names_do_not_collide_with_globals_or_parameters():
    """A parameter named `no_ct` and a global `no_ct_2`: the Hessian-vector product's
    generated code names its own variables otherwise (found by test_random_higher)."""
    x, v = np.array([0.3, -0.4]), np.array([1.0, 2.0])
    hv = astad.hvp(_named_like_generated, (x, 0.7), (v, None))[0]
    np.testing.assert_allclose(hv, -np.sin(x) * 0.7 * v, rtol=1e-12)
    assert astad.grad(_named_like_generated)(x, 0.7) == pytest.approx(np.cos(x) * 0.7)


_MODULES = [  # generated-looking modules: plain functions (read from their code) and others (their symbol table)
    "def g_forward(x):\n    t = np.tanh(x)\n    return t * W\n",
    "def g_forward(x):\n    reversed = 1.0\n    return reversed\n",
    "def g_forward(x):\n    np = x\n    return np\n",
    "def g_forward(x):\n    return W + x\n\ndef g_backward(residuals, out_ct):\n    W = 1.0\n    return W\n",
    "def g_forward(x):\n    return sorted(x), abs(x)\n",
    "def g_forward(x):\n    del x\n    return x\n",
    "def g_forward(x):\n    for i in range(3):\n        y = x[i]\n    try:\n        z = y\n    except (ValueError, E) as e:\n"
    "        z = e\n    return z\n",
    "def W(x):\n    return x\n",
    "def g_forward(x):\n    return [W * a for a in x]\n",                 # a comprehension: the symbol table
    "def g_forward(x):\n    f = lambda a: a * W\n    return f(x)\n",     # a lambda
    "def g_forward(x):\n    import numpy as np\n    return np.tanh(x)\n",  # an import
    "def g_forward(x):\n    global W\n    W = x\n    return W\n",       # a global bound
    "def g_forward(x):\n    def h():\n        return x\n    return h()\n",  # a closure
    "class C:\n    W = 1.0\n\ndef g_forward(x):\n    return x\n",
    "def g_forward(x):\n" + "".join(f"    v{i} = g{i}(x)\n" for i in range(300)) + "    return v0\n",  # EXTENDED_ARG
]


@pytest.mark.parametrize("text", _MODULES)
def test_compiled_scopes_are_the_symbol_tables(text):
    """The scopes read from compiled code are the symbol table's (bindings, globals read), and the
    check before running refuses the same modules either way."""
    def verdict(scopes):
        try:
            names.check_generated(scopes, ["W"])
            return "ok"
        except InternalError as e:
            return str(e)

    compiled = names.compiled_scopes(compile(text, "<test>", "exec", dont_inherit=True), text)
    table = names.function_scopes(text)
    assert [(n, b, r - b) for n, b, r in compiled] == [(n, b, r - b) for n, b, r in table if n != "C"]
    assert verdict(compiled) == verdict(table)
    assert names._BYTECODE  # (this Python's bytecode is read: else every module is read from its symbol table)
