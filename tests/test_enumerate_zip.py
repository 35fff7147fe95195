"""``for i, (a, b) in enumerate(zip(x, y)):`` -- the index and one name per zipped sequence
(arrays of different lengths, structured list arguments, lists built at run time). It was
refused with "zip is not callable". Checked against central differences and forward vs reverse."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import central_differences, fuzz_examples


def weighted(x, w):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, w)):
        s = s + (i + 1.0) * np.sin(a) * b
    return s


def three_with_branch(x, w, v):
    s = 0.0
    for i, (a, b, c) in enumerate(zip(x, w, v)):
        if a > 0:
            s = s + a * b - c * i
        else:
            s = s - b * b
    return s


def over_list_argument(xs, w):
    acc = 0.0
    for k, (row, c) in enumerate(zip(xs, w)):
        acc = acc + np.sum(row * row) * c * k
    return acc


def over_built_list(x):
    rows = []
    for j in range(3):
        rows.append(x * (j + 1.0))
    acc = 0.0
    for k, (r, y) in enumerate(zip(rows, x)):
        acc = acc + np.sum(np.tanh(r)) * y * (k + 0.5)
    return acc


def one_name_for_two_arrays(x, w):
    s = 0.0
    for i, a in enumerate(zip(x, w)):
        s = s + a
    return s


finite = st.floats(-2.0, 2.0, allow_nan=False).filter(lambda v: abs(v) > 1e-3)


@settings(max_examples=fuzz_examples(10, long=25), deadline=None)
@given(arrays(np.float64, st.integers(1, 6), elements=finite), arrays(np.float64, st.integers(1, 6), elements=finite))
def test_weighted_against_central_differences(x, w):
    gx, gw = astad.grad(weighted, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, central_differences(lambda x: weighted(x, w), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, central_differences(lambda w: weighted(x, w), w), rtol=1e-6, atol=1e-8)
    u = np.linspace(-1.0, 1.0, x.size)
    _, tangent = astad.jvp(weighted, (x, w), (u, np.zeros_like(w)))
    assert tangent == pytest.approx(np.dot(gx, u), rel=1e-10, abs=1e-12)  # <J u> == <J^T 1, u>


def test_three_arrays_and_a_branch():
    rng = np.random.default_rng(3)
    x, w, v = rng.standard_normal(5), rng.standard_normal(4), rng.standard_normal(6)
    grads = astad.grad(three_with_branch, argnums=(0, 1, 2))(x, w, v)
    for k, arg in enumerate((x, w, v)):
        def at(a, k=k):
            args = [x, w, v]
            args[k] = a
            return three_with_branch(*args)
        np.testing.assert_allclose(grads[k], central_differences(at, arg), rtol=1e-6, atol=1e-8)


def test_a_list_argument_and_a_list_built_at_run_time():
    rng = np.random.default_rng(4)
    xs, w = [rng.standard_normal(3) for _ in range(3)], rng.standard_normal(2)
    got = astad.grad(over_list_argument)(xs, w)
    for k in range(3):
        want = central_differences(lambda r: over_list_argument(xs[:k] + [r] + xs[k + 1:], w), xs[k])
        np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-8)
    x = rng.standard_normal(4)
    np.testing.assert_allclose(astad.grad(over_built_list)(x), central_differences(over_built_list, x),
                               rtol=1e-6, atol=1e-8)


def test_one_name_for_the_zipped_arrays_is_refused_with_the_form_to_write():
    with pytest.raises(astad.UnsupportedSyntaxError, match="one loop variable per zipped array") as info:
        astad.grad(one_name_for_two_arrays)(np.ones(3), np.ones(3))
    assert "enumerate(zip(x, y))" in info.value.hint and info.value.loc.line > 0
