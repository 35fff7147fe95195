"""A top-level argument that is None (``def loss(x, mask=None)`` called as ``grad(loss)(x)``, or
``grad(loss)(x, None)``): its type is None, so ``mask is None`` is known when transforming, and it
keys the caches apart from an array; its cotangent is None (as an int's), it takes no tangent.
Derivatives against central differences in float64 and forward vs reverse."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward
from test_errors import not_internal


def loss(x, mask=None, scale=None):
    if mask is None:
        mask = np.ones_like(x)
    y = x * mask if scale is None else x * mask * scale
    return np.sum(np.sin(y) * y)


def in_a_structure(p, x):
    w, b = p["w"], p["b"]
    y = np.tanh(w * x)
    return np.sum(y * y) if b is None else np.sum(y + b)


def returned(x, m):
    return np.sum(x * x), m


vectors = arrays(np.float64, 3, elements=st.floats(-2, 2))


@settings(max_examples=fuzz_examples(4, long=8), deadline=None)
@given(x=vectors, v=vectors, s=st.floats(-2, 2), data=st.data())
def test_none_arguments_take_python_s_path(x, v, s, data):
    for fn, args in ((loss, (x, None, None)), (loss, (x, v, None)), (loss, (x, None, s)), (loss, (x, v, s)),
                     (in_a_structure, ({"w": v, "b": None}, x)), (in_a_structure, ({"w": v, "b": x}, x))):
        check_correct_or_refused(fn, list(args))  # value, central differences, every IR stage
        check_forward(fn, args, data)  # J v against central differences, <u, J v> == <J^T u, v>


def test_cotangent_of_none_is_none_and_the_key_tells_none_from_an_array():
    x, v = np.arange(3.0), np.array([1.0, 3.0, 0.5])
    g = astad.grad(loss)
    for _ in range(2):  # the second round through the caches and the fast paths
        np.testing.assert_allclose(g(x), astad.grad(loss)(x, np.ones(3)))
        assert not np.allclose(g(x, v), g(x, None))
        np.testing.assert_allclose(g(x, None), g(x))
    value, pullback = astad.vjp(loss, x, None, 2.0)
    cts = pullback(1.0)
    assert cts[1] is None and type(cts[2]) is float
    value, pullback = astad.vjp(returned, x, None)
    assert value[1] is None and pullback((1.0, None))[1] is None
    cts = astad.grad(in_a_structure)({"w": v, "b": None}, x)
    assert set(cts) == {"w", "b"} and cts["b"] is None
    # forward mode: the None argument takes the tangent None; the structure's key tells None from an array
    for _ in range(2):
        y, t = astad.jvp(loss, (x, None), (v, None))
        y2, t2 = astad.jvp(loss, (x, v), (v, None))
        assert not np.isclose(y, y2)
        np.testing.assert_allclose(t, astad.jvp(loss, (x,), (v,))[1])
        np.testing.assert_allclose(astad.jacfwd(loss)(x, None), astad.jacrev(loss)(x, None))
        np.testing.assert_allclose(astad.hessian(loss)(x, None), astad.hessian(loss)(x, np.ones(3)))
    src = astad.reverse(loss).transform(x, None, None).source
    assert not [line for line in src.splitlines() if " is None" in line and not line.lstrip().startswith("#")]


def test_what_a_none_argument_refuses():
    x = np.arange(3.0)
    with pytest.raises(astad.AstadTypeError, match="None, which has no gradient"):
        astad.grad(loss, argnums=1)(x, None)
    with pytest.raises(astad.AstadTypeError, match="takes no tangent"):
        astad.jvp(loss, (x, None), (x, x))

    def uses_it(x, m=None):
        return np.sum(x * m)

    with pytest.raises(astad.AstadError) as e:
        astad.grad(uses_it)(x)
    assert "np.sum(x * m)" in str(e.value) and "got None" in str(e.value) and "is None:` first" in str(e.value)
    not_internal(e.value)


def reduce_over(x, axis=None):
    return np.sum(np.sum(x * x, axis=axis) ** 2)


def test_a_none_argument_is_a_constant_where_one_is_needed():
    """``axis=None`` passed or left to its default: None is known from its type (an int axis is not: refused)."""
    x = np.arange(6.0).reshape(2, 3)
    want = 4.0 * np.sum(x * x) * x
    np.testing.assert_allclose(astad.grad(reduce_over)(x), want)
    np.testing.assert_allclose(astad.grad(reduce_over)(x, None), want)
    with pytest.raises(astad.AstadTypeError, match="`axis` must be a constant"):
        astad.grad(reduce_over)(x, 0)


def test_a_structure_with_a_none_leaf_is_keyed_apart_from_one_with_an_array():
    """The structure check of a call (calling.key_checker) tells {'b': None} from {'b': array}, alternating."""
    x, v = np.array([0.3, -1.0, 2.0]), np.array([1.0, 0.5, -0.7])
    y = np.tanh(v * x)
    g = astad.grad(in_a_structure)
    for _ in range(2):
        np.testing.assert_allclose(g({"w": v, "b": None}, x)["w"], 2 * y * (1 - y ** 2) * x)
        np.testing.assert_allclose(g({"w": v, "b": x}, x)["w"], (1 - y ** 2) * x)
