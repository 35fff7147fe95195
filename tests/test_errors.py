"""Errors on unsupported input: astad's own exception classes, pointing at the
user's source (``file:line:col: message``, the quoted line, a caret and a
``supported instead:`` hint), and never an internal traceback.

The programs under test are defined in this module (astad reads their source);
they are never run by Python itself.  Expected line and column numbers are
computed from this file with :mod:`inspect`, so editing the file cannot make
the tests stale.
"""

# ruff: noqa: F821, F841

import importlib.util
import inspect
import math
import os
import sys
import textwrap

import numpy as np
import pytest

import astad
from conftest import check_grad

G = 1.0

# --------------------------------------------------------------------------- programs


def p_for(x):
    for k in range(2):
        for i in range(3):
            x = x * 2.0
        else:
            break  # (a loop's `else` block runs; a `break` in it, leaving the loop around, is refused)
    return x


def p_try(x):
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return y


def p_with(x):
    with open("unused") as fh:
        y = x
    return y


def p_nested_def(x):
    @staticmethod
    def g(y):
        return y * 2.0
    return g(x)


def p_lambda(x):
    g = lambda *ys: ys[0] * 2.0
    return g(x)


def p_listcomp(x):
    ys = {i: x * 2.0 for i in range(3)}
    return x


def p_dict(x):
    d = {"a": x}
    return x


def p_and(x, y):
    z = x and y
    return z


def p_or(x, y):
    z = x or y
    return z


def p_not(x):
    z = not x
    return x


def p_global(x):
    global G
    G = x
    return x * G


def p_mutation(x):
    x[0] = 1.0
    return x


def p_expression_statement(x):
    np.sin(x)  # print(x) is an effect astad keeps; this statement has none
    return x


def p_early_return(x):
    return x
    y = x * 2.0


def p_missing_return(x):
    y = x * 2.0


def p_string(x):
    return x * "abc"  # strings are only dict keys


def p_eig(x):
    return np.sum(np.linalg.eig(x).eigenvalues)


def p_convolve(x):
    return np.sum(np.convolve(x, x))


def p_math(x):
    return math.gamma(x)


def p_undefined(x):
    return x + zzz_not_defined


def p_matmul(a, b):
    c = a @ b
    return np.sum(c)


def p_broadcast(a, b):
    return np.sum(a + b)


def p_recursive(x):
    return p_recursive(x * 0.5)


def p_mutual_a(x):
    return p_mutual_b(x) * 2.0


def p_mutual_b(x):
    return p_mutual_a(x)


def p_star_args(*args):
    return args[0]


def p_kwonly(x, y):
    def g(a, *, b):  # keyword-only parameters: of the function differentiated only
        return a * b
    return g(x, b=y)


def helper_with_bad_shapes(a, b):
    return a + b


def p_calls_bad_helper(a, b):
    c = helper_with_bad_shapes(a, b)
    return np.sum(c)


def vector_out(x):
    return x * 2.0


def tuple_out(x):
    return x, x * 2.0


def scaled(x, n):
    return np.sum(x) * n


# --------------------------------------------------------------------------- helpers


def where(fn, snippet):
    """(file, line, col, stripped line) of the first occurrence of ``snippet`` in ``fn``'s source."""
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return inspect.getsourcefile(fn), start + i, text.index(snippet) + 1, text
    raise AssertionError(f"{snippet!r} not in the source of {fn.__name__}")


def not_internal(e):
    assert isinstance(e, astad.AstadError)
    assert not isinstance(e, astad.InternalError), str(e)
    assert "Traceback" not in str(e)


def check_located(e, fn, snippet, hint=True):
    """The message starts with ``file:line:col: `` at ``snippet`` in ``fn``,
    quotes that line with a caret under the column, and (``hint``) ends with a hint."""
    not_internal(e)
    file, line, col, text = where(fn, snippet)
    msg = str(e)
    lines = msg.splitlines()
    prefix = f"{file}:{line}:{col}: "
    assert lines[0].startswith(prefix), f"expected {prefix!r}, got:\n{msg}"
    assert len(lines[0]) > len(prefix)  # there is a message after the location
    assert os.path.samefile(file, e.loc.file)
    assert (e.loc.line, e.loc.col) == (line, col)
    stripped = text.rstrip("\n").lstrip()
    indent = len(text) - len(text.lstrip())
    assert lines[1] == "    " + stripped, msg
    assert lines[2] == "    " + " " * (col - 1 - indent) + "^", msg
    if hint:
        assert lines[-1].startswith("supported instead: ") and len(lines[-1]) > len("supported instead: "), msg
        assert e.hint


def raise_on_use(fn, *args):
    """Decorate ``fn`` and call it; return the AstadError raised on the way."""
    with pytest.raises(astad.AstadError) as info:
        astad.reverse(fn)(*args)
    return info.value


# --------------------------------------------------------------------------- unsupported syntax

SYNTAX_CASES = [
    (p_for, (1.0,), "else:"),  # for ... else: break
    (p_try, (1.0,), "try:"),
    (p_with, (1.0,), "with open("),
    (p_nested_def, (1.0,), "@staticmethod"),
    (p_lambda, (1.0,), "*ys: ys[0]"),
    (p_listcomp, (1.0,), "{i: x * 2.0 for i in range(3)}"),
    (p_dict, (1.0,), '{"a": x}'),
    (p_global, (1.0,), "global G"),
    (p_mutation, (np.ones(3),), "x[0] = 1.0"),
    (p_expression_statement, (1.0,), "np.sin(x)"),
    (p_early_return, (1.0,), "return x"),
    (p_missing_return, (1.0,), "y = x * 2.0"),
    (p_string, (1.0,), '"abc"'),
    (p_recursive, (1.0,), "p_recursive(x * 0.5)"),
    (p_star_args, (1.0,), "*args"),
    (p_kwonly, (1.0, 2.0), "b):"),
]


BOOLEAN_CASES = [
    (p_and, (1.0, 2.0), "x and y"),
    (p_or, (1.0, 2.0), "x or y"),
    (p_not, (1.0,), "not x"),
]


@pytest.mark.parametrize("fn, args, snippet", BOOLEAN_CASES, ids=[c[0].__name__ for c in BOOLEAN_CASES])
def test_and_or_not_need_booleans(fn, args, snippet):
    e = raise_on_use(fn, *args)
    assert isinstance(e, astad.AstadTypeError), f"{type(e).__name__}: {e}"
    check_located(e, fn, snippet)


@pytest.mark.parametrize("fn, args, snippet", SYNTAX_CASES, ids=[c[0].__name__ for c in SYNTAX_CASES])
def test_unsupported_syntax(fn, args, snippet):
    e = raise_on_use(fn, *args)
    assert isinstance(e, astad.UnsupportedSyntaxError), f"{type(e).__name__}: {e}"
    check_located(e, fn, snippet)


def test_mutual_recursion_points_at_the_call_that_recurses():
    e = raise_on_use(p_mutual_a, 1.0)
    assert isinstance(e, astad.UnsupportedSyntaxError)
    check_located(e, p_mutual_b, "p_mutual_a(x)")


def test_syntax_errors_are_found_at_decoration():
    # the subset check runs on decoration: no need to call with arguments
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.reverse(p_try)
    check_located(info.value, p_try, "try:")


def test_the_same_error_again_on_a_second_attempt():
    first = raise_on_use(p_for, 1.0)
    second = raise_on_use(p_for, 1.0)
    assert str(first) == str(second)


# --------------------------------------------------------------------------- unsupported functions


FUNCTION_CASES = [
    (p_eig, (np.eye(3),), "np.linalg.eig(x)", "np.linalg.eig"),
    (p_convolve, (np.ones(3),), "np.convolve(x, x)", "np.convolve"),
    (p_math, (1.0,), "math.gamma(x)", "math.gamma"),
]


@pytest.mark.parametrize("fn, args, snippet, named", FUNCTION_CASES, ids=[c[0].__name__ for c in FUNCTION_CASES])
def test_unsupported_function(fn, args, snippet, named):
    e = raise_on_use(fn, *args)
    assert isinstance(e, astad.UnsupportedFunctionError), f"{type(e).__name__}: {e}"
    check_located(e, fn, snippet)
    assert named in e.message


def test_supported_numpy_functions_are_listed_in_the_hint():
    e = raise_on_use(p_convolve, np.ones(3))
    assert "np.sum" in e.hint and "np.tanh" in e.hint


# --------------------------------------------------------------------------- types and shapes


def test_undefined_name():
    e = raise_on_use(p_undefined, 1.0)
    assert isinstance(e, astad.AstadTypeError), f"{type(e).__name__}: {e}"
    check_located(e, p_undefined, "zzz_not_defined")
    assert "zzz_not_defined" in e.message


def test_matmul_shape_mismatch():
    e = raise_on_use(p_matmul, np.ones((3, 4)), np.ones((5, 6)))
    assert isinstance(e, astad.AstadTypeError), f"{type(e).__name__}: {e}"
    check_located(e, p_matmul, "a @ b")
    assert "(3, 4)" in e.message and "(5, 6)" in e.message


def test_broadcast_shape_mismatch():
    e = raise_on_use(p_broadcast, np.ones(3), np.ones(4))
    assert isinstance(e, astad.AstadTypeError), f"{type(e).__name__}: {e}"
    check_located(e, p_broadcast, "a + b")
    assert "(3,)" in e.message and "(4,)" in e.message


def test_shape_mismatch_inside_a_helper_points_into_the_helper():
    e = raise_on_use(p_calls_bad_helper, np.ones(3), np.ones(4))
    assert isinstance(e, astad.AstadTypeError), f"{type(e).__name__}: {e}"
    check_located(e, helper_with_bad_shapes, "a + b")


def test_same_function_fine_at_other_shapes():
    value, _ = astad.reverse(p_broadcast)(np.ones(3), np.ones(3))
    assert value == 6.0


# --------------------------------------------------------------------------- source not available


def test_function_defined_by_exec():
    ns = {"np": np}
    exec("def made_by_exec(x):\n    return x * 2.0\n", ns)  # noqa: S102
    with pytest.raises(astad.SourceUnavailableError) as info:
        astad.reverse(ns["made_by_exec"])
    not_internal(info.value)
    assert "made_by_exec" in str(info.value)
    assert "supported instead: " in str(info.value)


def test_builtin_numpy_function():
    with pytest.raises(astad.SourceUnavailableError) as info:
        astad.reverse(np.sin)
    not_internal(info.value)
    assert "sin" in str(info.value)
    assert "supported instead: " in str(info.value)


def test_lambda_without_source():
    """A lambda astad can read is differentiated (tests/test_calling_conventions.py); one made by
    eval has no source file."""
    with pytest.raises(astad.SourceUnavailableError) as info:
        astad.reverse(eval("lambda x: x * 2.0"))
    not_internal(info.value)
    assert "<string>" in str(info.value)
    assert "supported instead: " in str(info.value)


def test_helper_file_with_known_line_numbers(tmp_path):
    # an error in a separate file: the path and line come from that file
    path = tmp_path / "errors_helper_mod.py"
    path.write_text(textwrap.dedent("""\
        import numpy as np


        def f(x):
            y = np.tanh(x)
            try:
                y = y - 1.0
            except ValueError:
                y = y + 1.0
            return y
        """))
    spec = importlib.util.spec_from_file_location("errors_helper_mod", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["errors_helper_mod"] = mod
    try:
        spec.loader.exec_module(mod)
        with pytest.raises(astad.UnsupportedSyntaxError) as info:
            astad.reverse(mod.f)
    finally:
        del sys.modules["errors_helper_mod"]
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{path}:6:5: ")
    assert lines[1] == "    try:"
    assert lines[2] == "    ^"
    assert lines[-1].startswith("supported instead: ")


# --------------------------------------------------------------------------- API misuse


def test_grad_of_an_array_output():
    with pytest.raises(astad.NonScalarOutputError) as info:
        astad.grad(vector_out)(np.ones(3))
    not_internal(info.value)
    assert "supported instead: " in str(info.value)


def test_grad_of_a_tuple_output():
    with pytest.raises(astad.NonScalarOutputError) as info:
        astad.value_and_grad(tuple_out)(1.0)
    not_internal(info.value)


@pytest.mark.parametrize("argnums", [2, -3, (0, 2), 7])
def test_argnums_out_of_range(argnums):
    with pytest.raises(astad.AstadTypeError) as info:
        astad.grad(scaled, argnums=argnums)(np.ones(3), 2)
    not_internal(info.value)
    assert "argnums" in str(info.value)


@pytest.mark.parametrize("argnums", [1, -1, (0, 1)])
def test_argnums_at_an_int_argument(argnums):
    with pytest.raises(astad.AstadTypeError) as info:
        astad.grad(scaled, argnums=argnums)(np.ones(3), 2)
    not_internal(info.value)
    assert "int" in str(info.value)


@pytest.mark.parametrize("args", [(np.ones(3),), (np.ones(3), 2, 3)], ids=["too few", "too many"])
def test_wrong_number_of_arguments(args):
    for call in (astad.reverse(scaled), astad.grad(scaled), astad.value_and_grad(scaled),
                 lambda *a: astad.vjp(scaled, *a)):
        with pytest.raises(astad.AstadTypeError) as info:
            call(*args)
        not_internal(info.value)
        with pytest.raises(TypeError) as primal:
            scaled(*args)
        assert isinstance(info.value, TypeError) and info.value.message == str(primal.value)  # Python's own


def test_keyword_arguments():
    """Keyword arguments are placed by the signature (as Python does); unknown ones are refused."""
    x = np.array([0.5, -1.0, 2.0])
    for call in (astad.reverse(scaled), lambda *a, **k: astad.vjp(scaled, *a, **k)):
        (v1, p1), (v2, p2) = call(x, 3), call(x, n=3)
        assert v1 == v2 == scaled(x, 3)
        np.testing.assert_array_equal(p1(1.0)[0], p2(1.0)[0])
    np.testing.assert_allclose(astad.grad(scaled)(x, n=3), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(astad.value_and_grad(scaled)(x, n=3)[1], [3.0, 3.0, 3.0])
    with pytest.raises(astad.AstadTypeError) as info:  # as in JAX, arguments passed by keyword are not differentiated
        astad.grad(scaled)(n=3, x=x)
    assert "by position" in str(info.value)
    for bad in ({"m": 2}, {"x": x, "n": 2}):
        with pytest.raises(astad.AstadTypeError) as info:
            astad.reverse(scaled)(x, **bad)
        not_internal(info.value)


@pytest.mark.parametrize("ct", [np.ones(4), np.ones((3, 1)), 1.0], ids=["(4,)", "(3,1)", "scalar"])
def test_cotangent_of_the_wrong_shape(ct):
    _, pullback = astad.reverse(vector_out)(np.ones(3))
    with pytest.raises(astad.AstadTypeError) as info:
        pullback(ct)
    not_internal(info.value)
    assert "(3,)" in str(info.value)


@pytest.mark.parametrize("ct", [1.0, (1.0,), (1.0, np.ones(3))], ids=["not a tuple", "too short", "wrong shape"])
def test_cotangent_of_the_wrong_structure(ct):
    _, pullback = astad.reverse(tuple_out)(1.0)
    with pytest.raises(astad.AstadTypeError) as info:
        pullback(ct)
    not_internal(info.value)


def test_array_cotangent_of_a_scalar_output():
    _, pullback = astad.reverse(scaled)(np.ones(3), 2)
    with pytest.raises(astad.AstadTypeError) as info:
        pullback(np.ones(2))
    not_internal(info.value)


@pytest.mark.parametrize("bad", ["abc", {1.5: 1.0}, ["abc"], np.ones(3, complex)],
                         ids=["str", "dict with a float key", "list of str", "complex array"])
def test_argument_of_an_unsupported_type(bad):
    with pytest.raises(astad.AstadTypeError) as info:
        astad.reverse(vector_out)(bad)
    not_internal(info.value)
    assert "`x`" in str(info.value)
    assert "supported instead: " in str(info.value)


@pytest.mark.parametrize("structured", [[1.0, 2.0], {"x": 1.0}], ids=["list", "dict"])
def test_a_structured_argument_used_as_a_number(structured):
    with pytest.raises(astad.AstadTypeError) as info:
        astad.reverse(vector_out)(structured)
    not_internal(info.value)
    assert "is used where a number or an array is expected" in str(info.value), str(info.value)
    check_located(info.value, vector_out, "x * 2.0")


def test_inspecting_before_the_first_call():
    rev = astad.Reverse(scaled)  # a new object has no argument types yet
    for look in (lambda: rev.source, lambda: rev.ir("core")):
        with pytest.raises(astad.AstadError) as info:
            look()
        not_internal(info.value)


# --------------------------------------------------------------------------- in-place updates


def p_inplace_view(x):
    v = x * 2.0
    w = v[1:]
    v += 1.0
    return np.sum(w)


def p_inplace_alias(x):
    v = x * 2.0
    u = v
    v *= 3.0
    return np.sum(u)


def p_inplace_argument(x):
    x -= 1.0
    return np.sum(x)


def p_inplace_fresh(x):
    v = x * 2.0
    v += 1.0
    v /= 4.0
    return np.sum(v * v)


@pytest.mark.parametrize("fn, snippet", [
    (p_inplace_view, "v += 1.0"), (p_inplace_alias, "v *= 3.0"), (p_inplace_argument, "x -= 1.0"),
])
def test_in_place_update_that_others_could_see_is_refused(fn, snippet):
    # numpy would change the array in place, visible through the view/alias/caller:
    # astad's functional reading would silently differ, so it refuses.
    e = raise_on_use(fn, np.arange(3.0))
    assert isinstance(e, astad.UnsupportedSyntaxError), f"{type(e).__name__}: {e}"
    check_located(e, fn, snippet)


def test_in_place_update_of_a_fresh_array_is_fine():
    x = np.array([0.5, -1.0, 2.0])
    value, pullback = astad.reverse(p_inplace_fresh)(x)
    assert value == pytest.approx(p_inplace_fresh(x.copy()))
    np.testing.assert_allclose(pullback(1.0)[0], 2 * ((2 * x + 1) / 4) * 0.5)


def p_inplace_after_element_read(x):
    a = x * 2.0
    s = a[0] + a[1]  # elements are copies, not views
    a += s
    return np.sum(a * a)


def test_in_place_update_after_reading_elements_is_fine():
    check_grad(p_inplace_after_element_read, [np.array([0.3, 0.5, 0.7])])

