"""The compiled check that arguments have a structured call's keys
(calling.key_checker, used by Reverse.entry): for random pairs of nested
arguments (tuples, lists, dicts of arrays and scalars, one of them changed in
one place), it says True exactly when api._arg_key gives equal keys; and a
gradient of structured arguments of one kind, then another, then the first
again, is each time the right one."""

import numpy as np
from hypothesis import given, settings, strategies as st

import astad
from astad import api, calling
from conftest import fuzz_examples

_LEAVES = [1.0, 2, True, np.float64(1.0), np.zeros(2), np.zeros(3), np.zeros((2, 2)), np.zeros(2, np.float32),
           np.zeros(2, np.int64)]


def _values(depth=0):
    leaf = st.sampled_from(_LEAVES)
    if depth >= 3:
        return leaf
    inner = _values(depth + 1)
    return st.one_of(leaf, st.lists(inner, max_size=3).map(tuple), st.lists(inner, max_size=3),
                     st.dictionaries(st.sampled_from(["a", "b", 0, 1]), inner, max_size=3))


@settings(max_examples=fuzz_examples(120, long=300), deadline=None)
@given(st.lists(_values(), min_size=1, max_size=3), st.lists(_values(), min_size=1, max_size=3))
def test_the_check_is_key_equality(first, second):
    keys = tuple(map(api._arg_key, first))
    check = calling.key_checker(keys, api._SCALAR_KEYS)
    assert check is not None and check(first)
    for other in (second, first[:-1] + second[:1], first + second[:1]):
        assert check(other) == (keys == tuple(map(api._arg_key, other))), (first, other)


def _homogeneous(leaf, shape):
    """Nested containers of equal items (checked by a loop): ``shape`` is [(kind, length), ...], outermost first."""
    if not shape:
        return leaf
    (kind, n), rest = shape[0], shape[1:]
    return kind(_homogeneous(leaf, rest) for _ in range(n))


def _changed(value, path, leaf):
    """``value`` with the item at ``path`` (indices, each taken modulo the length) replaced by ``leaf``."""
    if not path or type(value) not in (tuple, list) or not value:
        return leaf
    i = path[0] % len(value)
    items = list(value)
    items[i] = _changed(items[i], path[1:], leaf)
    return type(value)(items)


@settings(max_examples=fuzz_examples(80, long=200), deadline=None)
@given(st.sampled_from(_LEAVES), st.lists(st.tuples(st.sampled_from([tuple, list]), st.integers(0, 3)), max_size=4),
       st.lists(st.integers(0, 5), max_size=5), st.sampled_from(_LEAVES + [(), [], (1.0,)]))
def test_the_check_of_containers_of_equal_items(leaf, shape, path, other_leaf):
    """A container whose items have one key is checked by a loop: still exactly key equality,
    whichever item (at whatever depth) is changed."""
    value = _homogeneous(leaf, shape)
    keys = (api._arg_key(value),)
    check = calling.key_checker(keys, api._SCALAR_KEYS)
    assert check is not None and check((value,))
    other = _changed(value, path, other_leaf)
    assert check((other,)) == (keys == (api._arg_key(other),)), (value, other)


def dict_loss(p, x):
    return np.sum(p["w"] * x) + p["s"][0] * np.sum(p["s"][1])


def test_gradients_of_alternating_structures():
    rng = np.random.default_rng(0)
    g = astad.grad(dict_loss)
    calls = [({"w": rng.standard_normal(3), "s": (2.0, rng.standard_normal(2))}, rng.standard_normal(3)),
             ({"w": rng.standard_normal(4), "s": [3.0, rng.standard_normal(1)]}, rng.standard_normal(4)),
             ({"s": (1.5, rng.standard_normal(2)), "w": rng.standard_normal(3)}, rng.standard_normal(3))]
    for p, x in calls + calls:
        got = g(p, x)
        assert list(got) == list(p) and type(got["s"]) is type(p["s"])
        np.testing.assert_allclose(got["w"], x)
        np.testing.assert_allclose(got["s"][0], np.sum(p["s"][1]))
        np.testing.assert_allclose(got["s"][1], np.full_like(p["s"][1], p["s"][0]))
