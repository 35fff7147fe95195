"""``x is None`` and ``x is not None`` (a helper's ``w=None`` default, the everyday idiom): known when
transforming, since a value's type says whether it is None. Other uses of ``is`` are refused with what to
write. Derivatives against central differences in float64 and forward vs reverse."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward


def helper(x, w=None, scale=None):
    if w is None:
        w = np.ones(3)
    if scale is not None:
        x = x * scale
    return np.sum(x * w * x)


def defaults_both_ways(x, v):
    return helper(x) + helper(x, w=v) + helper(x, None, 2.0) + helper(v, scale=x)


def none_on_the_left(x):
    w = None
    s = 0.0 if None is w else 1.0
    for k in range(3):
        if w is not None:
            s = s + np.sum(w * x)
        elif None is not x:
            s = s + np.sum(x * x) * k
    return s + np.sum(np.sin(x))


def in_a_conditional_expression(x, v):
    def pick(a, b=None):
        return a * a if b is None else a * b
    return np.sum(pick(x) + pick(x, v) + pick(v, b=None))


def of_a_call(x):
    def maybe(a):
        return None if a.shape[0] > 5 else a
    m = maybe(x)
    return np.sum(x) if maybe(x) is None else np.sum(m * m)


vectors = arrays(np.float64, 3, elements=st.floats(-2, 2))


@settings(max_examples=fuzz_examples(8), deadline=None)
@given(x=vectors, v=vectors, data=st.data())
def test_is_none_picks_the_path_python_takes(x, v, data):
    for fn, args in ((defaults_both_ways, (x, v)), (none_on_the_left, (x,)), (in_a_conditional_expression, (x, v)),
                     (of_a_call, (x,))):
        check_correct_or_refused(fn, list(args))  # value, central differences, every IR stage
        check_forward(fn, args, data)  # J v against central differences, <u, J v> == <J^T u, v>


def test_the_answer_is_a_constant_of_the_generated_code():
    """No test of None is left in the generated code: the path is chosen when transforming."""
    x = np.arange(3.0)
    d = astad.reverse(defaults_both_ways)
    d(x, x + 1.0)
    assert " is None" not in d.source and " is not None" not in d.source
    assert "np.ones" in d.source  # (the default path was taken)


def identity_test(x, v):
    return np.sum(x) if x is v else 0.0


def chained(x, w=None):
    return np.sum(x) if x is not None is w else 0.0


def not_in(x):
    return np.sum(x) if 1.0 not in x else 0.0


@pytest.mark.parametrize("fn, what, col", [(identity_test, "`is` is supported only as a test for None", 26),
                                           (chained, "`is` is supported only as a test for None", 26),
                                           (not_in, "only the comparisons", 28)])
def test_other_identity_tests_are_refused(fn, what, col):
    x = np.arange(3.0)
    with pytest.raises(astad.AstadError) as e:
        astad.grad(fn)(x, x) if fn is identity_test else astad.grad(fn)(x)
    message = str(e.value)
    assert what in message and not isinstance(e.value, astad.InternalError)
    line = message.splitlines()[0]
    assert line.split(":")[-3] == str(col) or f":{col}:" in line, message
    assert "^" in message and ("==" in message or "x is None" in message)
