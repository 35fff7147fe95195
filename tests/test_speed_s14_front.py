"""Session 14 (front): straight-line code lowered from Python's tree binds a binary operation without
:meth:`astad.frontend.core.LowererCore.emit`'s general steps where there is nothing to fold and no power
to test (astad/frontend/fast.py, ``_bound``), and reads a name or a number written before without the
general dispatch.  Both ways must give the same IR, names, places and errors as the lowering of libcst's
nodes, at the edges of these shortcuts too; the derivatives agree with finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import check_grad
from test_frontend_s12 import X, W, _lowering, _program, assert_same_lowering


@pytest.mark.parametrize("body", [
    # operands: names, numbers written before (and an int and a float of the same digits), a global
    ["a = x * 2.0", "b = 2.0 * a", "c = b + 2", "d = 2 * c", "return np.sum(d * a)"],
    ["a = x * 1.0", "b = a - 1", "c = b / 1.0", "return np.sum(c) + G"],
    ["a = G * x", "b = a @ W", "c = b - G", "return np.sum(c * a)"],
    # folded (both Python numbers) and not (a number and an array), a power (tested where it runs)
    ["c = 2.0 * 3.0", "d = c - 1", "a = x * c", "e = d ** 0.5", "return np.sum(a) * e"],
    ["a = x ** 2", "b = a ** 0.5", "c = s ** 1.5", "return np.sum(b) * c"],
    # nested operations, unary ones, calls between them
    ["a = W @ x * 0.1 + np.cos(x)", "b = a - 0.2 * x / (1.0 + a * a)", "c = -b * np.exp(-a * a)",
     "return np.sum(c * b)"],
    # negations: of arrays, of Python numbers (ints, floats), of a constant (folded)
    ["k = -n", "m = -s * k", "c = -2.0", "return np.sum(-x) * m * c"],
    # numpy's functions of one argument: of arrays, of Python numbers (a parameter's: numpy's scalar), of a
    # constant, of an int, discrete ones, the same function again (its type then read from the rule's results)
    ["a = np.sin(x)", "b = np.sin(a) + np.cos(s)", "c = np.exp(2.0) * np.tanh(b)", "d = np.sin(x) * np.abs(n)",
     "e = np.isnan(d) * np.floor(a)", "f = np.sqrt(np.abs(np.sin(W @ x)))", "return np.sum(b * c + e * f + d)"],
    ["a = np.tanh(x)", "b = np.tanh(x * 2.0)", "c = np.tanh(s)", "d = np.tanh(c)", "return np.sum(a * b) * d"],
    # a module's functions read again (np.sin), from a module inside a module (np.linalg.norm), a module's constant
    ["a = np.sin(x) * G", "b = np.linalg.norm(a) + np.linalg.norm(x)", "c = np.sin(a) * np.pi", "return b * np.sum(c)"],
    # a call at a statement's own level named when bound (names like temporaries', a name reassigned)
    ["a = np.sin(x)", "b = np.sin(x)", "t1 = np.sin(x)", "t2 = np.tanh(t1)", "t3 = np.tanh(t1)", "b = np.sin(x)",
     "return np.sum(b * t2 * t3 * a)"],
    # Python numbers of every kind: ints, floats, bools (a parameter's), their operations
    ["k = n * 2", "m = k + n", "q = m / 4", "r = q * s", "return np.sum(x) * r"],
    # a name reassigned; operands named like temporaries
    ["t1 = x + 1.0", "t2 = t1 * t1", "t1 = t2 - x", "return np.sum(t1 * t2)"],
    # operators less common: floor division, modulo, matrix products of two matrices
    ["a = W @ W", "b = a // 2.0", "c = a % 3.0", "return np.sum(b + c)"],
])
def test_operations_agree_with_the_general_lowering(tmp_path, body):
    f = _program(tmp_path, body, params="x, W, s=1.5, n=3", prelude="G = 0.25")
    assert assert_same_lowering(f, [X, W, 1.5, 3])  # (lowered from Python's tree to the end)
    check_grad(f, [X, W, 1.5, 3])


@pytest.mark.parametrize("body, line, col, words", [
    # shapes that do not broadcast, a product of mismatched shapes: refused where the operation starts
    (["a = x * 2.0", "b = a + np.ones(3)", "return np.sum(b)"], 6, 9, "broadcast"),
    (["a = x * 2.0", "b = 1.0 + (a @ np.ones(3))", "return np.sum(b)"], 6, 16, "@"),
    (["a = x * 2.0", "b = (-2.0) ** 0.5", "return np.sum(a) * b"], 6, 9, "complex"),
])
def test_refusals_are_where_they_were(tmp_path, body, line, col, words):
    f = _program(tmp_path, body)
    straight, _ = _lowering(f, [X, W], True)
    general, _ = _lowering(f, [X, W], False)
    assert straight == general
    assert straight[0] == "error" and words in straight[2] and f":{line}:{col}:" in straight[2], straight


@pytest.mark.parametrize("body", [
    # lists and tuples as operands, keywords of a numpy function: declined, lowered from libcst's nodes (the same
    # result or error)
    ["a = np.sin(x)", "b = np.sin(a, out=a)", "return np.sum(b)"],
    ["a = np.sin(x)", "np = a", "b = np.sin(a)", "return b"],  # (a local named np: an array's attribute, refused)
    ["a = np.sin(x)", "b = np.sin(a, a)", "return np.sum(b)"],
    ["a = np.sin(x)", "b = np.sin(x=a)", "return np.sum(b)"],
    ["a = [x, x]", "b = a + [x]", "return np.sum(b[0])"],
    ["a = (x, x)", "b = a * 2", "return np.sum(b[0])"],
])
def test_what_the_shortcut_declines_is_lowered_as_before(tmp_path, body):
    f = _program(tmp_path, body)
    straight, _ = _lowering(f, [X, W], True)
    general, _ = _lowering(f, [X, W], False)
    assert straight == general


def test_module_constants_named_like_temporaries(tmp_path):
    """drop_dead_temporaries reads the arguments' names in one walk, constants' too (a program's names are
    distinct): constants named t1, t2 among temporaries, a dead temporary (an unused shape), both ways."""
    body = ["a = x * t1 + t2", "n = x.shape", "b = np.sin(a) * t2 - t1", "return np.sum(b * a) + t1"]
    f = _program(tmp_path, body, prelude="t1 = 0.5\nt2 = 2.0")
    straight, _ = _lowering(f, [X, W], True)
    general, _ = _lowering(f, [X, W], False)
    assert straight == general
    check_grad(f, [X, W])
    from astad import frontend
    from astad.api import Reverse
    rev = Reverse(f)
    fn, _ = frontend.lower(rev._parsed, list(rev._types([X, W])))
    printed = [str(b) for b in fn.body.binds]
    assert not any(" dim(" in p for p in printed), printed  # (the unused shape dropped)
    assert any("t1" in p for p in printed) and any("t2" in p for p in printed), printed


def test_a_call_at_a_statements_level_is_given_the_users_name(tmp_path):
    f = _program(tmp_path, ["a = np.sin(x)", "b = np.sin(x)", "a = np.sin(x)", "return np.sum(a * b)"])
    got, used = _lowering(f, [X, W], True)
    assert used  # (lowered from Python's tree to the end)
    binds = [text for text, _ in got[0]]
    assert binds[:3] == ["let a = sin(x)", "let b = sin(x)", "let a_2 = sin(x)"], binds


@pytest.mark.parametrize("depth", [40, 120])
def test_deeply_nested_operations_and_calls(tmp_path, depth):
    """Operations and calls nested deeply (a fresh stack every few levels, as expr takes one), both ways."""
    nested = "x"
    for i in range(depth):
        nested = f"np.sin({nested} * 0.5)" if i % 3 == 0 else f"(-{nested} + x)" if i % 3 == 1 else f"(x - {nested})"
    f = _program(tmp_path, [f"a = {nested}", "return np.sum(a)"])
    assert assert_same_lowering(f, [X, W])
    check_grad(f, [X, W])


def test_nested_operations_under_a_low_recursion_limit(tmp_path):
    """Below a recursion limit of 1000 each level of an expression is lowered on a fresh stack (expr's
    ``roomy``): the nested operations read here too, both ways the same."""
    import sys
    nested = "x"
    for i in range(30):
        nested = f"np.sin({nested} * 0.5)" if i % 2 else f"(x - {nested})"
    f = _program(tmp_path, [f"a = {nested}", "return np.sum(a)"])
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(500, len(__import__("inspect").stack()) + 300))
    try:
        assert sys.getrecursionlimit() < 1000
        assert assert_same_lowering(f, [X, W])
    finally:
        sys.setrecursionlimit(old)
