"""Adversarial cases of the ninth round: reverse mode (``astad.reverse``, ``grad``, ``vjp``) on
everyday numerical code (numpy's breadth, indexing, updates, Python's conventions, recursion, the
disk cache).  The oracle is plain Python and central finite differences in float64
(``conftest.check_correct_or_refused``), and forward mode against reverse mode
(``forward_oracle.check_forward``: ``<u, J v> == <J^T u, v>``), never astad's own output.  Each
section names what astad did before its fix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from conftest import Refused, check_correct_or_refused
from forward_oracle import check_forward


def accepted_and_correct(fn, args, data=None):
    """astad accepts ``fn``; its value and pullback agree with plain Python and central differences,
    and (given hypothesis' ``data``) ``astad.jvp`` agrees with central differences and the pullback."""
    try:
        check_correct_or_refused(fn, list(args))
        if data is not None:
            check_forward(fn, list(args), data)
    except Refused as e:
        pytest.fail(f"{fn.__name__} refused: {e}")


def _arrays(*shapes):
    """Arrays of ``shapes`` from a drawn seed (normal samples: no ties, no kinks)."""
    return st.integers(0, 2 ** 32 - 1).map(
        lambda s: [np.random.default_rng(s).standard_normal(shape) for shape in shapes])


# ------------------------------------------------------------------ 1. np.concatenate(..., axis=None) flattens
# Before: typed as a join along axis 0; the value was numpy's (flat), the pullback cut the cotangent
# into rows (x_ct = t_ct[:2]) and refused a cotangent of the value's shape.

def concat_none(x, y):
    return np.concatenate([x, y], axis=None) * np.arange(12.0)


def concat_none_of_different_ranks(x, y):
    return np.sin(np.concatenate((x, y[0]), axis=None)) * np.arange(9.0)


def concat_none_of_a_list(x, y):
    xs = []
    for i in range(2):
        xs.append(x * (i + 1.0) + y)
    return np.concatenate(xs, axis=None) ** 2


def concat_none_of_a_list_of_scalars(x, y):
    xs = []
    for i in range(3):
        xs.append(np.sum(x[0, i] * y))
    return np.concatenate(xs, axis=None) * np.arange(3.0)


@pytest.mark.parametrize("fn", [concat_none, concat_none_of_different_ranks, concat_none_of_a_list,
                                concat_none_of_a_list_of_scalars])
@settings(max_examples=3, deadline=None, derandomize=True)
@given(xy=_arrays((2, 3), (2, 3)), data=st.data())
def test_concatenate_axis_none_flattens(fn, xy, data):
    accepted_and_correct(fn, xy, data)


# ------------------------------------------------------------------ 2. chained assignment `a = b = value`
# Before: InternalError ("structural pass: not linear ... unbound ['t1']"): the first name took the
# value's binding for itself and left the second one naming a variable nothing bound.

def chained(x):
    a = b = x * 2.0
    a = a + 1.0
    return a * b


def chained_scalar(x):
    a = b = x[0] * 2.0
    return a * b + x


def chained_tuple(x):
    a, b = c = x[0] * 3.0, np.sin(x[1])
    return a * b + c[0] * c[1] + x


def chained_in_loop_and_branch(x):
    s = t = 0.0
    for i in range(3):
        if x[i] > 0:
            s = t = s + x[i] * t + x[i]
        else:
            u = v = np.cos(x[i])
            s = s * u + v
    return s * t + x


def chained_subscript(x):
    y = np.zeros(3)
    y[0] = z = x[1] * x[2]
    y[1:] = w = np.exp(x[:2])
    return y * z + np.sum(w)


def chained_in_helper(x):
    def h(v):
        p = q = np.tanh(v)
        return p * q
    return h(x) + h(x * 2.0)


@pytest.mark.parametrize("fn", [chained, chained_scalar, chained_tuple, chained_in_loop_and_branch,
                                chained_subscript, chained_in_helper])
@settings(max_examples=3, deadline=None, derandomize=True)
@given(xs=_arrays((3,)), data=st.data())
def test_chained_assignment(fn, xs, data):
    accepted_and_correct(fn, xs, data)


def test_chained_assignment_shares_the_object():
    """``a = b = x * 2`` makes one array: an update of ``a`` is seen by ``b``, so it is refused."""
    def update(x):
        a = b = x * 2.0
        a[0] = 5.0
        return b

    with pytest.raises(astad.AstadError, match="shares its memory"):
        astad.grad(lambda x: np.sum(update(x)))(np.ones(3))


# ------------------------------------------------------------------ 3. the disk cache and keyword-only defaults
# Before: a called function's fingerprint held its source and `__defaults__` but not its
# `__kwdefaults__`, whose values the derivative reads when transforming: `def helper(v, *, k=SCALE)`
# with SCALE edited in the file gave, in a fresh process, the value and derivative of the old SCALE
# (1.085 for 2.713) from the disk cache.

KEYWORD_DEFAULTS = """\
import numpy as np

SCALE = 2.0


def helper(v, *, k=SCALE, n=2):
    for i in range(n):
        v = np.sin(v) * k
    return v


def loss(x):
    return np.sum(helper(x) ** 2)
"""


@pytest.mark.parametrize("edit", ["SCALE = -0.5"])
def test_a_keyword_only_default_edited_in_the_file_is_not_stale(tmp_path, edit):
    from test_cache import run_fresh  # a fresh process: value == plain function, gradient == central differences

    module, cache = tmp_path / "keyword_defaults.py", tmp_path / "cache"
    module.write_text(KEYWORD_DEFAULTS)
    first = run_fresh(tmp_path, module, "loss", cache)
    assert first["transforms"] >= 1
    assert run_fresh(tmp_path, module, "loss", cache)["transforms"] == 0  # the entry is used while it is valid
    module.write_text(KEYWORD_DEFAULTS.replace("SCALE = 2.0", edit))
    after = run_fresh(tmp_path, module, "loss", cache)
    assert after["value"] != first["value"]
    assert after["transforms"] >= 1


# ------------------------------------------------------------------ 4. a `while` on a shape the loop changes
# Before: refused, "this `while` loop never ends: its condition is always true": the condition was
# decided on the first pass over the body, where the array still has its shape from before the loop
# (README: an array may grow or shrink from one iteration to the next).  A loop whose condition stays
# true is still refused.

def shrinking_while(x):
    v = x
    while v.shape[0] > 1:
        v = v[1:] * v[:-1] + 0.5
    return v


def shrinking_while_len(x):
    v = x
    s = 0.0
    while len(v) > 2:
        s = s + np.sum(v ** 2)
        v = v[::2]
    return s + np.sum(v)


def growing_while(x):
    v = x[:1]
    while v.shape[0] < 4:
        v = np.concatenate([v, np.sin(v[-1:]) * x[1]])
    return v


@pytest.mark.parametrize("fn", [shrinking_while, shrinking_while_len, growing_while])
@settings(max_examples=3, deadline=None, derandomize=True)
@given(xs=_arrays((5,)), data=st.data())
def test_while_on_a_shape_the_loop_changes(fn, xs, data):
    accepted_and_correct(fn, xs, data)


def endless_on_a_shape(x):
    v = x
    while x.shape[0] > 1:  # x's shape: always true
        v = v * 0.5
    return v


def test_a_while_whose_condition_stays_true_is_still_refused():
    with pytest.raises(astad.AstadError, match="never ends") as e:
        astad.grad(lambda x: np.sum(endless_on_a_shape(x)))(np.ones(3))
    assert "while x.shape[0] > 1" in str(e.value)


# ------------------------------------------------------------------ 5. what a decorator's arguments hold
# Before: a function under a decorator that returns it unchanged (a registry) was refused for what the
# decorator's arguments hold ("dicts are not supported yet" at `@register({"lr": 0.1})`): the subset
# check read the decorators too, which run where the function is defined, not in its code.

REGISTRY: list = []


def register(options, key=lambda: [{"a": 1}]):
    def add(fn):
        REGISTRY.append((fn, options, key))
        return fn
    return add


@register({"lr": 0.1, "names": ["w", "b"]}, key=lambda: {"w": 1, "b": (2, 3)})
def registered_loss(w, b):
    return np.sum(np.tanh(w * b) ** 2)


def test_a_decorators_arguments_are_not_the_functions_code():
    assert any(fn is registered_loss for fn, _, _ in REGISTRY)
    accepted_and_correct(registered_loss, [np.array([0.3, -1.2, 0.5]), np.array([1.1, 0.4, -0.7])])


@register({"lr": 0.1})
def registered_loss_with_a_dict_inside(w):
    d = {"w": w}
    return np.sum(d["w"])


def test_what_the_function_itself_holds_is_still_checked():
    with pytest.raises(astad.AstadError, match="dicts are not supported") as e:
        astad.grad(registered_loss_with_a_dict_inside)(np.ones(3))
    assert 'd = {"w": w}' in str(e.value)


# ------------------------------------------------------------------ 6. np.array of an array is a copy
# Before: refused with "np.stack needs a list or tuple of arrays" (no hint): `np.array(y)` of an array
# is numpy's copy (copy=True), so updating it leaves `y` alone.

def array_of_an_array_updated(x):
    y = x * 1.5
    z = np.array(y)
    z[0] = 5.0
    z *= x
    return y * z + np.array(np.sin(y))


def test_np_array_of_an_array_is_a_copy():
    accepted_and_correct(array_of_an_array_updated, [np.array([0.3, -1.2, 0.7])])


def array_of_a_number(x):
    return x * np.array(2.0)


def test_np_array_of_a_number_is_refused_with_what_to_write():
    with pytest.raises(astad.AstadError, match="np.array of a number") as e:
        astad.grad(lambda x: np.sum(array_of_a_number(x)))(np.ones(3))
    assert "np.float64(x)" in str(e.value)
