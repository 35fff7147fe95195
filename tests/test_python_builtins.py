"""Python's builtins and statements in the functions astad differentiates:
``float() int() bool() abs() min() max() round() sum() pow()``, numpy's scalar
types, ``print``, ``raise``, ``assert``, ``isinstance`` on parameters, lists of
floats as arguments, and the messages of what stays refused.

Oracles: central finite differences in float64 (grad and jvp), forward mode
against reverse mode (``<u, J v> == <J^T u, v>``), and the primal itself: what
it prints (captured) and the exception it raises."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad

# --------------------------------------------------------------------------- oracles


def _fd_grad(f, args: list, i: int, eps: float = 1e-6) -> object:
    """Central differences of a real-valued f in argument i (a float, an array or a list of floats)."""
    x = args[i]
    if isinstance(x, list):
        return [_fd_grad(lambda *a: f(*a[:i], [*x[:k], a[i], *x[k + 1:]], *a[i + 1:]), [*args[:i], x[k], *args[i + 1:]], i, eps)
                for k in range(len(x))]
    if isinstance(x, float):
        plus, minus = list(args), list(args)
        plus[i], minus[i] = x + eps, x - eps
        return (f(*plus) - f(*minus)) / (2 * eps)
    out = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        plus, minus = list(args), list(args)
        plus[i], minus[i] = x.copy(), x.copy()
        plus[i][idx] += eps
        minus[i][idx] -= eps
        out[idx] = (f(*plus) - f(*minus)) / (2 * eps)
    return out


def _check_grad(f, *args, argnums: int = 0) -> None:
    got = astad.grad(f, argnums)(*args)
    want = _fd_grad(f, list(args), argnums)
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=1e-6, atol=1e-7)
    assert type(got) is type(args[argnums]) or isinstance(args[argnums], float), (type(got), type(args[argnums]))
    # forward mode: the tangent along a direction v is <grad, v>
    x = args[argnums]
    v = [0.5 + k for k in range(len(x))] if isinstance(x, list) else (0.7 if isinstance(x, float) else np.linspace(0.3, 1.1, x.size).reshape(x.shape))
    primals = tuple(args)
    tangents = tuple(v if k == argnums else _zero_like(a) for k, a in enumerate(args))
    value, tangent = astad.jvp(f, primals, tangents)
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert tangent == pytest.approx(float(np.sum(np.asarray(got, dtype=float) * np.asarray(v, dtype=float))), rel=1e-9, abs=1e-12)


def _ones_like(a):
    if isinstance(a, dict):
        return {k: _ones_like(v) for k, v in a.items()}
    return [1.0] * len(a) if isinstance(a, list) else (1.0 if isinstance(a, float) else np.ones_like(a))


def _zero_like(a):
    if isinstance(a, dict):
        return {k: _zero_like(v) for k, v in a.items()}
    if isinstance(a, list):
        return [0.0] * len(a)
    if isinstance(a, float):
        return 0.0
    if isinstance(a, int):
        return None
    return np.zeros_like(a)


# --------------------------------------------------------------------------- builtins


def b_conversions(x):
    return float(x) * 2.0 + float(x * x) + int(x) + bool(x) + round(x) + round(x, 1) + np.float64(x) * x


def b_extrema(x, y):
    return abs(x) * max(x, y, 0.25) + min([x, y]) + pow(x, 2) + max(2, 3) * min((x, 1.5, y))


def b_arrays(x):
    return np.sum(np.float64(x) * x) + float(x[0]) * np.float64(x[1]) + np.int64(x[1]) + abs(np.sum(x))


def b_float32(x):
    return float(np.sum(np.float32(x)) * np.float32(2.0)) + float(x[0])


def b_sum(xs):
    return sum(xs) * max(xs) + sum([v * v for v in xs], 1.0)


def test_conversions_round_and_scalar_types():
    _check_grad(b_conversions, 1.3)
    _check_grad(b_conversions, -2.6)
    _check_grad(b_arrays, np.array([1.5, -2.25, 0.5]))


def test_min_max_abs_pow_select_the_argument_python_returns():
    _check_grad(b_extrema, 1.3, -0.5, argnums=0)
    _check_grad(b_extrema, 1.3, -0.5, argnums=1)
    _check_grad(b_extrema, -0.7, 0.4, argnums=0)
    _check_grad(b_extrema, 0.1, 0.2, argnums=1)


def test_max_at_a_tie_gives_the_first_argument_as_python_returns_it():
    def f(x, y):
        return max(x, y) * 3.0

    assert astad.grad(f, (0, 1))(1.0, 1.0) == (3.0, 0.0)  # max(1.0, 1.0) is its first argument
    assert astad.grad(lambda_free_min, (0, 1))(1.0, 1.0) == (3.0, 0.0)


def lambda_free_min(x, y):
    return min(x, y) * 3.0


def test_values_and_types_are_the_primals():
    def f(x, n):
        return max(x, n) + round(x) + int(x) + max(n, 0)

    for x, n in ((2.5, 1), (-0.5, 2), (0.5, -3)):
        value, _ = astad.reverse(f)(x, n)
        assert value == f(x, n) and type(value) is type(f(x, n))
    assert astad.reverse(b_float32)(np.array([0.1, 0.2]))[0] == b_float32(np.array([0.1, 0.2]))


def b_dtype_builtin(x):
    return np.sum(np.ones(3, dtype=float) * x) + np.sum(np.ones(2, dtype=int)) * x


def test_builtin_types_as_dtypes():
    _check_grad(b_dtype_builtin, 1.5)
    assert astad.grad(b_dtype_builtin)(1.5) == 5.0


def test_float32_conversion_casts_the_derivative():
    x = np.array([0.1, 0.2])
    g = astad.grad(b_float32)(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, [3.0, 2.0])


def b_runtime_list(x, n):
    ls = []
    for i in range(n):
        ls.append(x * (i - 1.5) ** 2 + 0.1 * i)
    return max(ls) + min(ls) * 2.0


def b_array_extrema(x):
    return max(x) * min(np.sin(x)) + max(x * x)


def test_sum_and_max_of_a_list_of_floats():
    _check_grad(b_sum, [1.5, -0.5, 0.75])


def test_max_and_min_of_a_list_built_at_run_time_and_of_an_array():
    _check_grad(b_runtime_list, 1.3, 4)
    _check_grad(b_runtime_list, -0.7, 3)
    _check_grad(b_array_extrema, np.array([0.3, 2.0, -1.0, 1.7]))
    x = np.array([0.3, 2.0, -1.0, 2.0])  # a tie: Python returns the first, and so gets the derivative
    np.testing.assert_allclose(astad.grad(lambda_free_max_of)(x), [0.0, 1.0, 0.0, 0.0])
    for xs in ([1.0, float("nan"), 3.0], [float("nan"), 1.0]):  # the item Python returns, also at a nan
        value, _ = astad.reverse(lambda_free_max_of)(np.array(xs))
        assert value is not None and (np.isnan(value) and np.isnan(max(np.array(xs))) or value == max(np.array(xs)))


def lambda_free_max_of(x):
    return max(x) * 1.0


@settings(max_examples=15, deadline=None)
@given(x=st.floats(-3, 3), y=st.floats(-3, 3))
def test_extrema_and_abs_match_finite_differences_across_the_plane(x, y):
    if min(abs(x - y), abs(x - 0.25), abs(y - 0.25), abs(x), abs(x - 1.5), abs(y - 1.5)) < 1e-3:
        return  # a kink: finite differences do not apply
    _check_grad(b_extrema, x, y, argnums=0)
    _check_grad(b_extrema, x, y, argnums=1)


# --------------------------------------------------------------------------- print


def p_scalar(x, n):
    print("x is", x, f"sq={x * x:.3f}", [x, 1.0], (n,), sep="|", end=";\n")
    y = x
    for i in range(n):
        print(f"{i}: {y!r:>8} {y=}")
        y = y * 1.5
    if y > 2.0:
        print("big")
    else:
        print("small")
    return y * y


def p_array(x):
    s = np.sum(x * x)
    print(x.shape, x, s, f"{s:.2e}")
    while s > 1.0:
        print("halving", s)
        s = s / 2.0
    return s


def helper(y):
    print("helper", y)
    return y * y


def p_calls(x):
    g = lambda z: helper(z) + 1.0
    return g(x) + g(2.0 * x)


def p_pytree(params, xs):
    print("params:", params, "xs:", xs, f"{xs[0]:+.2f}")
    return np.sum(params["w"] * xs[0]) + params["b"] * xs[1]


@pytest.mark.parametrize("f, args", [(p_scalar, (1.3, 3)), (p_scalar, (0.5, 1)), (p_array, (np.arange(3.0),)),
                                     (p_calls, (1.5,)), (p_pytree, ({"w": np.ones(2), "b": 0.5}, [1.5, -2.0]))])
def test_print_runs_once_per_primal_run_with_the_primal_values(f, args, capsys):
    f(*args)
    primal = capsys.readouterr().out
    assert primal
    astad.grad(f)(*args)
    assert capsys.readouterr().out == primal
    astad.value_and_grad(f)(*args)
    assert capsys.readouterr().out == primal
    astad.jvp(f, args, (_ones_like(args[0]), *map(_zero_like, args[1:])))
    assert capsys.readouterr().out == primal
    value, pullback = astad.reverse(f)(*args)
    assert capsys.readouterr().out == primal
    pullback(1.0)
    assert capsys.readouterr().out == ""  # the backward pass prints nothing


def test_print_does_not_change_the_derivative():
    _check_grad(p_scalar, 1.3, 3)
    _check_grad(p_array, np.array([0.5, 1.5]))


def test_generated_code_prints_as_the_user_wrote_it():
    src = astad.reverse(p_scalar).transform(1.3, 3).source
    assert 'print("x is", x, f"sq={' in src and 'sep="|", end=";\\n")' in src
    assert 'print("big")' in src


# --------------------------------------------------------------------------- raise and assert


from python_statements import r_after_return, r_assert_plain, r_elif, r_else, r_guard, r_in_loop  # noqa: E402  (not rewritten by pytest: they assert)


@pytest.mark.parametrize("f, args", [(r_guard, (-1.5,)), (r_guard, (12.0,)), (r_else, (0.5,)), (r_assert_plain, (2.0,)),
                                     (r_after_return, (-1.0,)), (r_elif, (-0.5,)), (r_in_loop, (3.0, 5))])
def test_exceptions_are_the_primals(f, args, capsys):
    with pytest.raises(Exception) as primal:
        f(*args)
    printed = capsys.readouterr().out
    tangents = (1.0, *[None] * (len(args) - 1))
    for run in (lambda: astad.grad(f)(*args), lambda: astad.jvp(f, args, tangents), lambda: astad.reverse(f)(*args)):
        with pytest.raises(type(primal.value)) as got:
            run()
        assert type(got.value) is type(primal.value) and got.value.args == primal.value.args
        assert capsys.readouterr().out == printed


def test_paths_that_do_not_raise_are_differentiated():
    _check_grad(r_guard, 2.5)
    _check_grad(r_else, 2.0)
    _check_grad(r_else, -1.5)
    _check_grad(r_assert_plain, 3.0)
    _check_grad(r_after_return, 1.5)
    _check_grad(r_elif, 2.0)
    _check_grad(r_elif, 0.5)
    _check_grad(r_in_loop, 1.0, 3)


# --------------------------------------------------------------------------- isinstance and lists of floats


def i_dispatch(x):
    if isinstance(x, float):
        return x * 2.0
    if isinstance(x, (list, tuple)):
        return x[0] * x[1]
    if isinstance(x, dict):
        return x["a"] * 3.0
    if isinstance(x, np.ndarray):
        return np.sum(x * x)
    return x * 1.0


def test_isinstance_on_parameters_is_decided_when_transforming():
    assert astad.grad(i_dispatch)(1.5) == 2.0
    assert astad.grad(i_dispatch)([1.5, 2.0]) == [2.0, 1.5]
    assert astad.grad(i_dispatch)((1.5, 2.0)) == (2.0, 1.5)
    assert astad.grad(i_dispatch)({"a": 1.0}) == {"a": 3.0}
    np.testing.assert_allclose(astad.grad(i_dispatch)(np.array([1.0, 2.0])), [2.0, 4.0])


def test_isinstance_refuses_where_a_numpy_scalar_and_a_0d_array_differ():
    with pytest.raises(astad.AstadTypeError, match="numpy scalar and a 0-d array"):
        astad.grad(i_dispatch)(np.float64(1.5))


def l_poly(xs, c):
    total = 0.0
    for k, v in enumerate(xs):
        total = total + c * v ** (k + 1)
    return total


def test_lists_of_floats_are_pytrees():
    xs = [1.5, -0.5, 2.0]
    _check_grad(l_poly, xs, 0.7, argnums=0)
    g = astad.grad(l_poly)(xs, 0.7)
    assert type(g) is list and all(type(v) is float for v in g)
    value, pullback = astad.vjp(l_poly, xs, 0.7)
    cts = pullback(2.0)
    assert type(cts[0]) is list
    np.testing.assert_allclose(cts[0], [2.0 * v for v in g])
    _, t = astad.jvp(l_poly, (xs, 0.7), ([1.0, 0.0, 0.0], 0.0))
    assert t == pytest.approx(g[0])


# --------------------------------------------------------------------------- messages that name the real cause


def m_list_as_number(xs):
    return np.sin(xs)


def m_complex(x):
    return np.sum(x)


class _Holder:
    def method(self, x, y):
        return x * y


def m_fstring(x):
    label = f"{x}"
    return x


def m_user_exception(x):
    raise _Mine("no")


class _Mine(Exception):
    pass


def m_tuple_call(x):
    return np.sum(np.array(tuple([x, x])))


def _refusal(run) -> astad.AstadError:
    with pytest.raises(astad.AstadError) as info:
        run()
    return info.value


@pytest.mark.parametrize("run, message, line, at", [
    (lambda: astad.grad(m_list_as_number)([1.0, 2.0]), "a list is used where a number", "return np.sin(xs)", "np.sin"),
    (lambda: astad.grad(m_complex)(np.ones(2, complex)), "complex numbers are not supported", "def m_complex(x)", "x)"),
    (lambda: astad.grad(m_complex)(1j), "argument `x` is a complex: complex numbers", "def m_complex(x)", "x)"),
    (lambda: astad.grad(m_fstring)(1.0), "f-strings are supported only in print", 'label = f"{x}"', 'f"{x}"'),
    (lambda: astad.grad(m_user_exception)(1.0), "only Python's builtin exceptions", 'raise _Mine("no")', "_Mine"),
    (lambda: astad.grad(m_tuple_call)(1.0), "calling `tuple` is not supported", "np.array(tuple(", "tuple("),
])
def test_messages_name_the_real_cause(run, message, line, at):
    """Each names its cause (float(x) was "float is not callable": see the tests above), file:line:col,
    a caret under the cause, and what to write instead."""
    e = _refusal(run)
    text = str(e)
    assert message in text, text
    assert re.match(r".+\.py:\d+:\d+: ", text), text
    source, caret = text.splitlines()[1:3]
    assert line in source and caret.strip() == "^", text
    assert source[caret.index("^"):].startswith(at), text
    assert e.hint, text


# --------------------------------------------------------------------------- aliasing: max(a, b) is a or b; np.float64(x) of a float64 array is x


def a_max_update(a, b):
    y = max(a, b)
    y += 1.0
    return y * 1.0


def a_convert_update(a):
    y = np.float64(a)
    y *= 2.0
    return np.sum(y)


@pytest.mark.parametrize("f, args", [(a_max_update, (np.array(1.0), np.array(2.0))), (a_convert_update, (np.ones(2),))])
def test_updating_what_may_be_an_argument_is_refused(f, args):
    with pytest.raises(astad.UnsupportedSyntaxError, match="would change for the caller"):
        astad.grad(f)(*args)
