"""Program shapes that blew up (session 7, s5): an if/elif chain of 100 branches made generated
code Python refuses (nested past its 100 levels of indentation: an InternalError) and was walked
once per level by the structural pass (quadratic); a sum of 800 terms overflowed the stack of the
ast reading, which then fell back to libcst's (5 s); a static recursion 800 deep read each of its
800 dependency paths from the top (320,000 reads).  Each shape now works, its gradient checked
against central finite differences and forward mode against reverse (<u, J v> == <J^T u, v>),
or is refused at the user's line.  Larger sizes run with ASTAD_FUZZ_EXAMPLES set."""

import os
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import check_grad, load_program
from test_program_size import _pass_calls

import astad
from astad import cache
from astad.frontend import from_ast

BIG = bool(os.environ.get("ASTAD_FUZZ_EXAMPLES"))

#: the IR's walks (substitutions, free variables), counted with the passes that call them
IR_WALKS = tuple(str(p) for p in (Path(astad.__file__).parent / "ir").glob("*.py"))


def elif_chain(n):
    lines = ["def f(x, k):"]
    for i in range(n):
        lines += [f"    {'if' if i == 0 else 'elif'} k == {i}:", f"        y = x * {i + 1}.0 + x * x"]
    lines += ["    else:", "        y = x", "    return y * x"]
    return "\n".join(lines) + "\n"


def returning_chain(n):
    lines = ["def f(x, k):"]
    for i in range(n):
        lines += [f"    {'if' if i == 0 else 'elif'} k == {i}:", f"        return x * {i + 1}.0 * x"]
    return "\n".join(lines) + "\n    return x\n"


@pytest.mark.parametrize("make", [elif_chain, returning_chain])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_elif_chain_of_300_is_refused_at_the_101st(tmp_path, make, mode):
    """Past 100 nested ``if``s the lowering refuses (an early-returning chain of 200 was an
    InternalError: a RecursionError in the IR's walks)."""
    f = load_program(make(300), tmp_path).f
    with pytest.raises(astad.UnsupportedSyntaxError) as e:
        if mode == "reverse":
            astad.reverse(f)(0.3, 150)
        else:
            astad.jvp(f, (0.3, 150), (1.0, None))
    assert "nested more than 100 deep" in str(e.value) and "supported instead:" in str(e.value)
    assert e.value.loc.text.strip() == "elif k == 100:"


def long_sum(n):
    return "def f(x):\n    return x" + "".join(f" + x * x * {1 + i % 5}e-3" for i in range(n)) + "\n"


def recursion(n):
    return ("def r(x, k):\n    if k == 0:\n        return x\n    return r(x * 0.99 + 0.01 * x * x, k - 1)\n"
            f"def f(x):\n    return r(x, {n})\n")


def forward_matches_reverse(f, args, wrt=0):
    """Forward mode's tangent along v paired with u equals reverse mode's cotangent paired with v."""
    u, v = 0.7, -1.3
    tangents = tuple(v if i == wrt else None for i in range(len(args)))
    value, jv = astad.jvp(f, args, tangents)
    _, pullback = astad.reverse(f)(*args)
    np.testing.assert_allclose(u * jv, pullback(u)[wrt] * v, rtol=1e-12)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)


@pytest.mark.parametrize("k", [0, 17, 39, 40])
def test_elif_chain_gradient_both_modes(tmp_path, k):
    f = load_program(elif_chain(40), tmp_path).f
    check_grad(f, [0.3, k])
    forward_matches_reverse(f, (0.3, k))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_elif_chain_past_pythons_nesting_is_refused_at_an_elif(tmp_path, mode):
    """The derivative's code nests an ``else: if`` per ``elif``; past Python's 100 levels of
    indentation it is refused at the user's ``elif`` (was: InternalError, IndentationError)."""
    f = load_program(elif_chain(110), tmp_path).f
    with pytest.raises(astad.UnsupportedSyntaxError) as e:
        if mode == "reverse":
            astad.reverse(f)(0.3, 5)
        else:
            astad.jvp(f, (0.3, 5), (1.0, None))
    message = str(e.value)
    assert "nest too deeply for Python" in message and "supported instead:" in message
    assert e.value.loc is not None and e.value.loc.file.endswith(".py")
    assert re.match(r"\s*elif k == \d+:", e.value.loc.text), e.value.loc.text
    assert "^" in message


def test_elif_chain_passes_work_near_linearly(tmp_path):
    """The structural pass substituted each branch's free variables into the whole branch before
    walking it: once per level of an elif chain (calls, the IR's walks counted: 98,324 at 30
    branches, 284,427 at 60, a ratio of 2.9)."""
    counts = {n: _pass_calls(load_program(elif_chain(n), tmp_path).f, [0.3, 1], IR_WALKS) for n in (30, 60)}
    assert counts[60] <= 2.3 * counts[30], counts


@pytest.mark.parametrize("n", [800] + ([950] if BIG else []))
def test_long_sum_is_read_by_pythons_parser(tmp_path, n):
    """A sum of ``n`` terms is one expression nested ``n`` deep: read with Python's parser on
    fresh stacks (it declined on a RecursionError to libcst's reading, 20 times slower)."""
    source = long_sum(n)
    from_ast.read(source, "f")  # no RecursionError, no Decline
    f = load_program(source, tmp_path).f
    check_grad(f, [0.3])
    forward_matches_reverse(f, (0.3,))


def test_static_recursion_reads_its_dependencies_linearly(tmp_path, monkeypatch):
    reads = [0]
    resolve = cache.resolve

    def counted(root, path):
        reads[0] += len(path)
        return resolve(root, path)

    monkeypatch.setattr(cache, "resolve", counted)
    counts = {}
    for n in (100, 200):
        f = load_program(recursion(n), tmp_path).f
        reads[0] = 0
        check_grad(f, [0.3])
        counts[n] = reads[0]
    assert counts[200] <= 2.2 * counts[100] and counts[200] < 1000, counts
    forward_matches_reverse(f, (0.3,))


def many_parameters(n):
    ps = ", ".join(f"a{i}" for i in range(n))
    terms = " + ".join(f"a{i} * a{(i + 1) % n} * {1 + i % 3}.0" for i in range(n))
    return f"import numpy as np\ndef f({ps}):\n    return np.sin({terms})\n"


@pytest.mark.parametrize("kind", ["jacfwd", "hessian"])
def test_many_parameters_share_one_forward_program(tmp_path, monkeypatch, kind):
    """A Jacobian's columns along 40 scalar arguments ran 40 forward programs, each transformed on its
    own (a time quadratic in the arguments: jacfwd of 200, 6 s); past 8 arguments they share one."""
    from astad import pipeline

    n = 40
    made = [0]
    forward_of_function = pipeline.forward_of_function

    def counted(*a, **k):
        made[0] += 1
        return forward_of_function(*a, **k)

    monkeypatch.setattr(pipeline, "forward_of_function", counted)
    f = load_program(many_parameters(n), tmp_path).f
    rng = np.random.default_rng(3)
    args = [float(a) for a in rng.normal(size=n) * 0.3]
    got = np.array(getattr(astad, kind)(f, argnums=tuple(range(n)))(*args))
    assert made[0] <= 2, made
    inner = astad.grad(f, argnums=tuple(range(n))) if kind == "hessian" else f
    eps = 1e-6
    for j in (0, 17, n - 1):  # columns against central finite differences of f (of grad: rows of the hessian)
        plus, minus = list(args), list(args)
        plus[j] += eps
        minus[j] -= eps
        fd = (np.array(inner(*plus)) - np.array(inner(*minus))) / (2 * eps)
        column = got[..., j] if kind == "hessian" else got[j]
        np.testing.assert_allclose(column, fd, rtol=1e-5, atol=1e-6)
