"""Conditionals: ``if``/``elif``/``else`` (joins and early returns), conditional
expressions, ``and``/``or``/``not`` and chained comparisons.  Gradients are
checked against central finite differences at points away from the branch
boundaries; at a boundary the derivative is that of the branch Python takes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad
from conftest import check_grad, check_stages


def piecewise(x, y):
    if x > 0.0:
        z = x * y
        w = np.sin(z)
    elif x > -1.0:
        z = y
        w = x * x
    else:
        z = 2.0 * y
        w = 0.0
    return z + w


def early_return(x, a):
    if np.sum(x) > a:
        return np.sum(x * x)
    s = np.sum(np.exp(x))
    return s * a


def nested(x, y):
    r = x
    if x > 0.0:
        if y > 0.0:
            r = x * y
        else:
            r = x - y
        r = r * r
    return r + y


def ternary_and_logic(x, y):
    t = x if x > y else y * 2.0
    ok = x > 0.0 and y > 0.0 or not x < -5.0
    u = 1.0 if 0.0 < x < 1.0 else 3.0
    return t * u + (x if ok else y)


def arrays_in_branches(x, w, c):
    h = x @ w
    if c > 0.0:
        h = np.tanh(h)
        extra = np.sum(w * w)
    else:
        extra = c * c
    return np.sum(h * h) + extra


def one_sided(x, y, flag):
    v = y
    if flag > 0:
        v = np.exp(x) * y
    return np.sum(v)


def tuple_join(x):
    if x[0] > 0.0:
        a, b = x * 2.0, np.sum(x)
    else:
        a, b = x - 1.0, 0.5
    return np.sum(a * b)


def static_shape_branch(x):
    if x.shape[0] > 2:
        return np.sum(x[:2] * x[1:3])
    return np.sum(x * x)


def int_condition(x, n):
    if n:
        x = x * n
    if n % 2 == 0:
        return np.sum(x)
    return np.sum(np.sin(x))


def kink(x):
    if x >= 0.0:
        return x * 3.0
    return -x


CASES = [
    (piecewise, (0.7, 1.3)),
    (piecewise, (-0.4, 1.3)),
    (piecewise, (-2.5, 1.3)),
    (early_return, (np.array([0.3, -0.2, 0.5]), -1.0)),
    (early_return, (np.array([0.3, -0.2, 0.5]), 2.0)),
    (nested, (0.8, 0.5)),
    (nested, (0.8, -0.5)),
    (nested, (-0.8, -0.5)),
    (ternary_and_logic, (0.5, 0.2)),
    (ternary_and_logic, (0.1, 0.9)),
    (ternary_and_logic, (-6.5, 0.4)),
    (ternary_and_logic, (2.0, -1.0)),
    (arrays_in_branches, (np.arange(6.0).reshape(2, 3) / 6, np.ones((3, 4)) * 0.3, 0.5)),
    (arrays_in_branches, (np.arange(6.0).reshape(2, 3) / 6, np.ones((3, 4)) * 0.3, -0.5)),
    (one_sided, (np.array([0.1, 0.2]), np.array([1.0, -2.0]), 1)),
    (one_sided, (np.array([0.1, 0.2]), np.array([1.0, -2.0]), 0)),
    (tuple_join, (np.array([0.5, -1.0, 2.0]),)),
    (tuple_join, (np.array([-0.5, -1.0, 2.0]),)),
    (static_shape_branch, (np.array([0.5, -1.0, 2.0, 0.1]),)),
    (static_shape_branch, (np.array([0.5, -1.0]),)),
    (int_condition, (np.array([0.5, -1.0]), 2)),
    (int_condition, (np.array([0.5, -1.0]), 3)),
    (int_condition, (np.array([0.5, -1.0]), 0)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)])
def test_gradient_of_the_branch_taken(fn, args):
    check_grad(fn, list(args))


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)])
def test_every_stage_evaluates_like_python(fn, args):
    check_stages(fn, args)


def test_at_a_kink_the_branch_python_takes_decides():
    # x >= 0 is True at 0, so the derivative there is that of `x * 3.0`
    assert astad.grad(kink)(0.0) == 3.0
    assert astad.grad(kink)(-1e-9) == -1.0


def test_the_structural_stage_drops_what_a_branch_does_not_read():
    text = astad.reverse(piecewise).ir("structural", 0.7, 1.3)
    assert "if " in text and "drop" in text and "dup" in text


def test_generated_code_has_if_statements_in_both_passes():
    src = astad.reverse(piecewise).transform(0.7, 1.3).source
    forward, backward = src.split("def piecewise_backward")
    assert "if " in forward and "if " in backward
    compile(src, "<test>", "exec")


@settings(max_examples=40, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0))
def test_piecewise_gradient_everywhere_off_the_boundaries(x, y):
    if min(abs(x), abs(x + 1.0)) < 1e-3:
        return  # the finite difference would straddle a branch boundary
    check_grad(piecewise, [x, y])
    check_grad(nested, [x, y]) if min(abs(x), abs(y)) > 1e-3 else None


def bad_join(x):
    if x[0] > 0.0:
        y = x
    else:
        y = np.reshape(x, (3, 1))  # another number of dimensions: no array type holds both
    return np.sum(y)


def array_condition(x):
    if x > 0.0:
        return np.sum(x)
    return np.sum(-x)


def test_branches_of_different_ranks_are_a_clear_error():
    with pytest.raises(astad.AstadTypeError) as info:
        astad.reverse(bad_join)(np.ones(3))
    assert "one branch" in str(info.value) and "test_conditionals.py" in str(info.value)


def test_a_condition_on_an_array_is_a_clear_error():
    with pytest.raises(astad.AstadTypeError) as info:
        astad.reverse(array_condition)(np.ones(3))
    assert "np.where" in str(info.value)


def test_gradients_returned_through_a_branch_are_writable_arrays():
    for flag in (0, 1):
        _, pullback = astad.reverse(one_sided)(np.array([0.1, 0.2]), np.array([1.0, -2.0]), flag)
        for g in pullback(1.0)[:2]:
            assert isinstance(g, np.ndarray) and g.flags.writeable


def one_line_def(x): return np.sum(np.sin(x) * x)  # noqa: E704


def one_line_blocks(x, n):
    s = 0.0
    for i in range(n): s = s + np.sum(x) * i  # noqa: E701
    while s > 10.0: s = s / 2.0  # noqa: E701
    if s > 3.0: return s * s  # noqa: E701
    else: y = s * 3.0; return y  # noqa: E701, E702


@pytest.mark.parametrize("args", [(np.array([0.3, -1.2]), 4), (np.array([0.1, 0.2]), 2), (np.array([5.0, 1.0]), 3)])
def test_one_line_blocks(args):
    """``def f(x): return ...`` and ``if c: ...`` on one line are blocks like any other."""
    check_grad(one_line_def, args[:1])
    check_grad(one_line_blocks, args)
    check_stages(one_line_blocks, args)


def update_after_a_nested_return(x, y):
    v = np.tanh(x)
    if y < 0.0:
        y = 1.0
    else:
        if y > 0.5:
            return np.sum(x)
        v += 0.25
    return np.sum(v[0])


def view_in_one_branch_update_in_the_other(x, y):
    v = np.tanh(x)
    if y > 0.0:
        w = v[0]
        return np.sum(w) * y
    else:
        v += 0.25
    return np.sum(v[0] * v[1])


@pytest.mark.parametrize("fn, args", [
    (update_after_a_nested_return, (np.array([[0.5, -0.2], [0.1, 0.3]]), 0.3)),
    (update_after_a_nested_return, (np.array([[0.5, -0.2], [0.1, 0.3]]), 0.7)),
    (update_after_a_nested_return, (np.array([[0.5, -0.2], [0.1, 0.3]]), -0.3)),
    (view_in_one_branch_update_in_the_other, (np.array([[0.5, -0.2], [0.1, 0.3]]), 0.3)),
    (view_in_one_branch_update_in_the_other, (np.array([[0.5, -0.2], [0.1, 0.3]]), -0.3)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_a_view_taken_on_one_path_does_not_refuse_an_update_on_another(fn, args):
    """`v += ...` is refused when a view of `v` exists, but a view taken in one
    branch (or in the code after an `if` that returns, which is lowered into
    each branch) does not exist on the other path."""
    check_grad(fn, list(args))
    check_stages(fn, args)


def test_an_update_after_a_view_taken_in_a_branch_is_still_refused():
    def f(x, y):
        v = np.tanh(x)
        if y > 0.0:
            w = v[0]
        else:
            w = v[1]
        v += 0.25
        return np.sum(w)

    with pytest.raises(astad.UnsupportedSyntaxError, match="a view of it"):
        astad.reverse(f)(np.ones((2, 2)), 0.3)
