"""``np.array(x, dtype=...)`` (a copy, converted) and ``np.asarray(x, dtype=...)`` (the array itself when
the dtype is its own, as numpy's: an update of one is an update of the other, so it is refused where
``y = x`` would be). Derivatives against central differences in float64 and forward vs reverse."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward
from test_errors import not_internal


def copies(x):
    y = np.array(x, dtype=float)
    y[0] = 2.0 * y[1]  # the copy is updated, not x
    return np.sum(np.asarray(x, dtype=np.float64) * y) + np.sum(np.array(x, float) ** 2)


def conversions(x, k):
    mask = np.array(x > 0.5, dtype=float)
    ks = np.asarray(k, dtype="float64")
    return np.sum(mask * x * ks) + np.sum(np.asarray([x[0], x[2]], dtype=np.float64))


def of_a_list(x):
    rows = [x * 2.0, np.cos(x)]
    return np.sum(np.asarray(rows) * np.array(rows, dtype=np.float64)[::-1])


def through_a_local_copy(x):
    y = x.copy()
    z = np.array(y, dtype=float)  # a copy of the copy: updating it leaves y alone
    z[1] = 0.0
    return np.sum(y * x) + np.sum(z * z)


vectors = arrays(np.float64, 3, elements=st.floats(-2, 2))
ints = arrays(np.int64, 3, elements=st.integers(-3, 3))


@settings(max_examples=fuzz_examples(8), deadline=None)
@given(x=vectors, k=ints, data=st.data())
def test_array_and_asarray_with_a_dtype(x, k, data):
    for fn, args in ((copies, (x,)), (conversions, (x, k)), (of_a_list, (x,)), (through_a_local_copy, (x,))):
        check_correct_or_refused(fn, list(args))
        check_forward(fn, args, data)


def to_float32(x):
    return np.sum(np.sin(np.asarray(x, dtype=np.float32)) * np.array(x, np.float32))


def test_a_conversion_to_float32_is_differentiated_at_float32():
    x = np.array([0.3, -1.2, 2.0])
    for make, dtype in ((astad.grad, np.float64), (astad.jacrev, np.float64), (astad.jacfwd, np.float32)):
        g = make(to_float32)(x)
        x32 = x.astype(np.float32)
        assert g.dtype == dtype  # (as JAX: a cotangent has the argument's dtype, J v the output's)
        np.testing.assert_allclose(g, np.cos(x32) * x32 + np.sin(x32), rtol=1e-6)


def asarray_then_update(x):
    y = np.asarray(x)
    y[0] = 5.0  # would change the caller's x, as numpy's asarray returns x itself
    return np.sum(y)


def asarray_of_a_number(x):
    return np.sum(np.asarray(x[0]) * x)


def complex_dtype(x):
    return np.sum(np.array(x, dtype=np.complex128).real)


@pytest.mark.parametrize("fn, words", [(asarray_then_update, "y[...] = ..."), (asarray_of_a_number, "0-d array"),
                                       (complex_dtype, "complex128")])
def test_what_stays_refused(fn, words):
    with pytest.raises(astad.AstadError) as e:
        astad.grad(fn)(np.arange(3.0))
    not_internal(e.value)
    assert words in str(e.value) and "supported instead" in str(e.value)
