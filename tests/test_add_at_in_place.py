"""``np.add.at(y, idx, v)`` printed as ``np.add.at(y, idx, v)`` on ``y`` itself where nothing else
reads ``y`` (as codegen prints ``y[idx] = v`` in place), ``y_new = y.copy()`` first where something
does (the backward pass's residual, another reader after it); before, every call made
``t = np.zeros_like(y); np.add.at(t, idx, v); y_2 = y + t``, O(size(y)) more per call.  The reverse
rule is ``add_at``'s transpose: ``y`` gets the cotangent, ``v`` gets ``ct[idx]``, an element added
twice getting it twice.  Derivatives against central finite differences in float64
(conftest.check_correct_or_refused) and forward vs reverse (forward_oracle.check_forward); refusals
(a view of ``y``, another name, the caller's array) are tests/test_numpy_masked.py's."""


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward, derivative_sources

IDX = np.array([0, 3, 3, 1, 0, 3])


def in_a_loop(x):
    y = np.zeros(4)
    for i in range(len(x)):
        np.add.at(y, IDX[i % 6], x[i] * x[i])
    return np.sum(y * np.sin(y))


def rows_in_a_loop(x):
    y = np.ones((4, 2))
    for i in range(2):
        np.add.at(y, IDX[i:i + 3], np.outer(x[i:i + 3], x[:2]))
    return np.sum(y ** 3)


def read_before_nonlinearly(x):
    y = np.cos(x)
    s = np.sum(y ** 2)  # the backward pass reads the old y
    np.add.at(y, IDX[:4], x * 2.0)
    return s * np.sum(y * y)


def read_after_by_a_copy(x):
    y = x * 3.0
    a = y * 1.0
    np.add.at(y, [1, 1, 2], x[:3])
    return np.sum(a * y)


def twice(x):
    y = np.zeros(4)
    np.add.at(y, IDX[:4], x)
    np.add.at(y, IDX[2:], y[:4] * x)
    return np.sum(y * y)


FNS = [in_a_loop, rows_in_a_loop, read_before_nonlinearly, read_after_by_a_copy, twice]


@settings(max_examples=fuzz_examples(4, long=8), deadline=None)
@given(x=arrays(np.float64, 4, elements=st.floats(-1.5, 1.5)), data=st.data())
@pytest.mark.parametrize("fn", FNS, ids=lambda f: f.__name__)
def test_derivatives(fn, x, data):
    check_correct_or_refused(fn, [x])
    check_forward(fn, (x,), data)


@pytest.mark.parametrize("fn", [in_a_loop, rows_in_a_loop, twice], ids=lambda f: f.__name__)
def test_in_place(fn):
    """No array of zeros, no copy and no sum with one per call: ``np.add.at(y, ...)`` (or ``y[i] +=``)."""
    for source in derivative_sources(fn, (np.array([0.3, -0.7, 1.1, 0.5]),)):
        forward = source.split("_backward(")[0]
        body = [line for line in forward.splitlines() if line.startswith(" " * 8)]
        assert not any("zeros_like(" in line or ".copy()" in line for line in body), source
        assert "np.add.at(y" in forward or "[t" in forward, source


def test_copied_where_the_backward_pass_reads_the_old_array():
    reverse, _ = derivative_sources(read_before_nonlinearly, (np.array([0.3, -0.7, 1.1, 0.5]),))
    assert ".copy()" in reverse.split("_backward(")[0], reverse


def test_repeated_indices_give_the_cotangent_each_time():
    """d/dv sum(w * add_at(y, idx, v)) = w[idx], an index named three times getting w there three times."""
    w = np.array([0.5, -2.0, 3.0, 7.0])

    def f(v):
        y = np.zeros(4)
        np.add.at(y, IDX, v)
        return np.sum(w * y)

    np.testing.assert_array_equal(astad.grad(f)(np.linspace(0.0, 1.0, 6)), w[IDX])
    _, jv = astad.jvp(f, (np.zeros(6),), (np.ones(6),))
    assert jv == pytest.approx(np.sum(w[IDX]))


def test_value_is_numpys_own():
    """The value is what numpy's np.add.at gives, rounding included (float32 into float32, float64
    values into float32: cast as numpy casts them; the values added one at a time)."""
    def f(x):
        y = np.full(3, 0.1, dtype=np.float32)
        np.add.at(y, [0, 0, 0, 2], x.astype(np.float32) * np.float32(1e-3))
        np.add.at(y, [1, 1], x[:2] * 1e-7)
        return np.sum(y * y)

    x = np.array([1.1, 2.3, 3.7, 4.9])
    assert astad.value_and_grad(f)(x)[0] == f(x)

    def tiny_repeats(x):  # numpy: 1 + 3e-8 rounds to 1 in float32, twice (summed first: 1.0000001)
        y = np.ones(2, dtype=np.float32)
        np.add.at(y, [0, 0], (x[:2] * 3e-8).astype(np.float32))
        return np.sum(y * x[:2])

    x = np.array([1.0, 1.0, 0.0])
    value, pullback = astad.reverse(tiny_repeats)(x)
    assert value == tiny_repeats(x) and value.dtype == np.float64
    for fn in (astad.reverse, astad.forward):  # derivatives as the other forms' (the value's rounding aside)
        assert fn(tiny_repeats)(x)[0] == tiny_repeats(x)


@pytest.mark.parametrize("fn", [in_a_loop, twice, read_before_nonlinearly], ids=lambda f: f.__name__)
def test_hessian(fn):
    x = np.array([0.3, -0.7, 1.1, 0.5])
    g, eps = astad.grad(fn), 1e-6
    fd = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(astad.hessian(fn)(x), fd, rtol=1e-6, atol=1e-7)
