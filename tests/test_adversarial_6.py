"""Adversarial cases against in-place updates and the alias analysis (sixth round): ``+= *= /=``,
``y[i] = v``, ``.append`` in loops with ``break``/``continue``/``return``, views, lists and tuples
of arrays, closures, helpers; in reverse mode, forward mode and higher order.  The oracle is plain
Python and central finite differences in float64 (``conftest.check_correct_or_refused``,
``forward_oracle.check_forward``), never astad's own output.  Each section names what astad did
before its fix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from conftest import Refused, check_correct_or_refused, central_differences
from forward_oracle import check_forward

X = np.array([0.3, -1.2, 0.7, 2.0])


def accepted_and_correct(fn, *args):
    """astad accepts ``fn`` and its value, pullback (against central differences), and the
    arguments it leaves are plain Python's."""
    try:
        check_correct_or_refused(fn, list(args))
    except Refused as e:
        pytest.fail(f"{fn.__name__} refused: {e}")


def correct_or_refused(fn, *args) -> bool:
    """True when astad refused ``fn`` (with its own error), False when it was accepted and correct."""
    try:
        check_correct_or_refused(fn, list(args))
    except Refused:
        return True
    return False


def forward_correct_or_refused(fn, *args) -> bool:
    """``astad.jvp`` along a random tangent against central differences, and against reverse mode."""
    @settings(max_examples=3, deadline=None, derandomize=True)
    @given(st.data())
    def run(data):
        try:
            check_forward(fn, list(args), data)
        except Refused:
            pass

    run()
    return True


# ------------------------------------------------------------------ 1. `x.conj()` of a real array is the array

def conj_method_then_update(x):
    y = x * 1.0
    z = y.conj()           # numpy: `z is y` for a real array
    y *= 2.0               # so this changes z too
    return np.sum(z ** 2)


def conjugate_method_then_setitem(x):
    y = x * 1.0
    z = y.conjugate()
    y[0] = 5.0
    return np.sum(z * x)


def conj_function_is_a_copy(x):
    y = x * 1.0
    z = np.conj(y)         # the ufunc: a new array
    y *= 2.0
    return np.sum(z ** 2) + np.sum(y)


def conj_method_read_only(x):
    y = np.tanh(x)
    return np.sum(y.conj() * y.conjugate() * x)


@pytest.mark.parametrize("fn", [conj_method_then_update, conjugate_method_then_setitem])
def test_the_conj_method_of_a_real_array_is_the_array(fn):
    """``y.conj()`` returns ``y`` itself for a real array (numpy); astad read it as a copy, so
    ``y *= 2.0`` after it left ``z`` unchanged: value and gradient wrong (6.02 where Python gives
    24.08).  Now the method is the array, and the update is refused."""
    assert correct_or_refused(fn, X.copy())
    forward_correct_or_refused(fn, X.copy())


@pytest.mark.parametrize("fn", [conj_function_is_a_copy, conj_method_read_only])
def test_conj_still_accepted_where_nothing_is_updated_through_it(fn):
    accepted_and_correct(fn, X.copy())
    forward_correct_or_refused(fn, X.copy())


# ------------------------------------------------------------------ 2. a tuple as an index is one index per axis

def tuple_index_row(x):
    y = np.outer(x, x)
    z = y[(0,)]            # numpy: y[0], a row (a view)
    return z * 2.0


def tuple_index_element(x):
    y = np.outer(x, x)
    return y[(0, 1)] * y[(2, 3)]   # numpy: y[0, 1] * y[2, 3], a number


def tuple_index_row_view_then_update(x):
    y = np.outer(x, x)
    z = y[(0,)]
    y *= 2.0               # changes the row z views
    return np.sum(z ** 2)


def tuple_index_assigned(x):
    y = np.outer(x, x)
    y[(1, 2)] = x[0] * 3.0
    y[(0,)] += x
    return np.sum(y ** 2)


def tuple_index_empty(x):
    y = np.outer(x, x)
    return np.sum(y[()] * 2.0)


def tuple_held_by_a_name(x):
    y = np.outer(x, x)
    i = (0, 1)
    return y[i] * 2.0      # numpy: y[0, 1]


def tuple_among_indices_is_an_integer_array(x):
    y = np.outer(x, x)
    return y[(0, 2), 1] * 2.0  # numpy: y[[0, 2], 1]


def list_index_is_an_integer_array(x):
    y = np.outer(x, x)
    return y[[0, 1]] * 2.0   # numpy: rows 0 and 1


@pytest.mark.parametrize("fn", [tuple_index_row, tuple_index_element, tuple_index_assigned,
                                list_index_is_an_integer_array, tuple_among_indices_is_an_integer_array])
def test_a_tuple_index_is_one_index_per_axis(fn):
    """``y[(0, 1)]`` is numpy's ``y[0, 1]``; astad read the tuple as an integer array (``y[[0, 1]]``):
    a (2, 4) array where Python gives a number, and its derivative."""
    accepted_and_correct(fn, X.copy())
    forward_correct_or_refused(fn, X.copy())


@pytest.mark.parametrize("fn", [tuple_index_row_view_then_update, tuple_held_by_a_name, tuple_index_empty])
def test_a_tuple_index_is_correct_or_refused(fn):
    """``z = y[(0,)]`` is a view: astad took it for a copy (an integer-array index), and accepted
    ``y *= 2.0`` after it (value 0.54 where Python gives 2.17)."""
    correct_or_refused(fn, X.copy())
    forward_correct_or_refused(fn, X.copy())


def test_a_tuple_index_refusal_says_what_to_write():
    with pytest.raises(astad.AstadError) as e:
        astad.grad(tuple_held_by_a_name)(X.copy())
    message = str(e.value)
    assert "test_adversarial_6.py" in message and "y[i]" in message and "^" in message
    assert "y[i, j]" in message


# ------------------------------------------------------------------ 3. a slice of a list is a list; `xs + [v]`

def slice_of_a_list_is_a_list(x):
    ys = [x * 1.0, x * 2.0]
    zs = ys[:]
    if isinstance(zs, list):
        return np.sum(x)
    return np.sum(x ** 2)


def slice_of_a_list_appended(x):
    ys = [x * 1.0, x * 2.0]
    zs = ys[:1]
    zs.append(x * 3.0)
    return np.sum(np.stack(zs) ** 2) + len(ys)


def list_plus_list(x):
    xs = [x * 1.0]
    xs = xs + [x * 2.0, np.sin(x)]
    return np.sum(np.stack(xs) ** 2)


def list_replaced_element(x):
    ys = [x * 1.0, x * 2.0, x * 3.0]
    i = 1
    ys = ys[:i] + [np.sin(x)] + ys[i + 1:]   # what astad suggests for `ys[i] = v`
    return np.sum(np.stack(ys) ** 2)


def list_plus_in_a_loop(x):
    xs = [x * 1.0]
    for i in range(3):
        xs = xs + [xs[-1] * x]
    return np.sum(np.stack(xs) ** 2)


def list_plus_in_a_loop_with_break(x, n):
    xs = [x * 1.0]
    for i in range(n):
        if np.sum(xs[-1]) > 3.0:
            break
        xs = xs + [xs[-1] * 1.5 + x]
    return np.sum(np.stack(xs) ** 2) * len(xs)


def list_copy_appended(x):
    xs = [x * 1.0]
    ys = list(xs)          # a new list: appending to it leaves xs alone
    ys.append(x * 2.0)
    return np.sum(np.stack(ys) ** 2) + len(xs)


def list_copy_shares_the_elements(x):
    r = x * 1.0
    ys = list([r, x])
    r *= 2.0               # ys[0] is r
    return np.sum(np.stack(ys) ** 2)


def list_plus_then_append_to_the_old(x):
    xs = [x * 1.0]
    ys = xs + [x * 2.0]    # a new list: appending to xs leaves ys alone
    xs.append(x * 3.0)
    return np.sum(np.stack(ys) ** 2) + np.sum(np.stack(xs))


def list_plus_shares_the_elements(x):
    r = x * 1.0
    ys = [x] + [r]
    r *= 2.0               # ys[1] is r: Python sees the update through the list
    return np.sum(np.stack(ys) ** 2)


def list_plus_aliased_elements_in_a_loop(x):
    r = x * 1.0
    xs = [x * 0.5]
    for i in range(3):
        xs = xs + [r]
        r *= 1.5           # changes the element the list holds
    return np.sum(np.stack(xs) ** 2)


@pytest.mark.parametrize("fn", [slice_of_a_list_is_a_list, slice_of_a_list_appended, list_plus_list,
                                list_replaced_element, list_plus_in_a_loop, list_copy_appended])
def test_lists_sliced_and_concatenated(fn):
    """A slice of a list was a tuple (``isinstance(ys[:], list)`` False: wrong value), and ``xs + [v]``,
    which astad's refusals of ``xs.append(v)`` and ``ys[i] = v`` suggest, was itself refused."""
    accepted_and_correct(fn, X.copy())
    forward_correct_or_refused(fn, X.copy())


@pytest.mark.parametrize("n", [0, 1, np.int64(5)])
def test_list_concatenation_in_a_loop_with_break(n):
    accepted_and_correct(list_plus_in_a_loop_with_break, X.copy(), n)
    forward_correct_or_refused(list_plus_in_a_loop_with_break, X.copy(), n)


@pytest.mark.parametrize("fn", [list_plus_then_append_to_the_old, list_plus_shares_the_elements,
                                list_plus_aliased_elements_in_a_loop])
def test_list_concatenation_aliasing_correct_or_refused(fn):
    correct_or_refused(fn, X.copy())
    forward_correct_or_refused(fn, X.copy())


def test_list_concatenation_shares_elements_refused():
    """``r *= 2.0`` changes the array ``ys`` holds: refused, naming ``ys``."""
    for fn in (list_plus_shares_the_elements, list_plus_aliased_elements_in_a_loop, list_copy_shares_the_elements):
        assert correct_or_refused(fn, X.copy()), fn.__name__


def list_extended_in_place(x):
    xs = [x * 1.0]
    ys = xs
    xs += [x * 2.0]        # extends the list ys names too
    return np.sum(np.stack(ys) ** 2)


def test_list_augmented_assignment_refused_with_what_works():
    with pytest.raises(astad.AstadError) as e:
        astad.grad(list_extended_in_place)(X.copy())
    assert "xs.append(v)" in str(e.value) and "xs = xs + [v]" in str(e.value)


def test_list_plus_a_non_list_is_refused():
    def bad(x):
        xs = [x]
        return np.sum(np.stack(xs + (x,)))

    with pytest.raises(astad.AstadError) as e:
        astad.grad(bad)(X.copy())
    assert "+" in str(e.value) and "^" in str(e.value)


# ------------------------------------------------------------------ 4. break, continue and return with updates

def update_after_a_break_that_kept_it(x):
    r = x * 1.0
    held = [x * 0.5]
    for i in range(4):
        r /= 2.0
        if x[i] > 0.5:
            held.append(r)
            break
        r = r + x
    r *= 3.0               # held[-1] is r when the loop broke
    return np.sum(np.stack(held) ** 2) + np.sum(r)


def while_break_kept_only_at_the_end(x):
    r = x * 1.0
    held = [x * 0.5]
    i = 0
    while i < 4:
        r /= 2.0
        if x[i] > 0.5:
            held.append(r)
            break
        r = r + x
        i += 1
    return np.sum(np.stack(held) ** 2) + np.sum(r)


def inner_break_kept_across_the_outer_loop(x):
    r = x * 1.0
    held = [x * 0.5]
    for j in range(2):
        r /= 2.0           # the second outer iteration changes what the first one appended
        for i in range(4):
            if x[i] > 0.5:
                held.append(r)
                break
    return np.sum(np.stack(held) ** 2) + np.sum(r)


def inner_update_after_an_inner_break(x):
    r = x * 1.0
    held = [x * 0.5]
    for j in range(2):
        for i in range(4):
            r /= 2.0       # the inner loop's next run starts with the r the list holds
            if x[i] > 0.5:
                held.append(r)
                break
            r = r + x
    return np.sum(np.stack(held) ** 2) + np.sum(r)


def break_on_the_first_iteration(x, n):
    r = x * 1.0
    for i in range(n):
        r[i] *= 3.0
        break
    return np.sum(r ** 2)


def return_from_a_nested_loop(x):
    r = x * 1.0
    for i in range(3):
        for j in range(4):
            r[j] *= 1.0 + 0.1 * i
            if r[j] > 3.0:
                return np.sum(r ** 2)
    return np.sum(r)


@pytest.mark.parametrize("fn", [update_after_a_break_that_kept_it, inner_break_kept_across_the_outer_loop,
                                inner_update_after_an_inner_break])
def test_what_a_break_keeps_is_still_seen(fn):
    """What a ``break`` passes on reaches the loop's results (and, for an inner loop, the outer loop's
    next iteration): an update of it there is refused."""
    assert correct_or_refused(fn, X.copy())


@pytest.mark.parametrize("fn", [while_break_kept_only_at_the_end, return_from_a_nested_loop])
def test_updates_with_break_and_return_accepted(fn):
    accepted_and_correct(fn, X.copy())
    forward_correct_or_refused(fn, X.copy())
    h = astad.hessian(fn)(X.copy())
    g = astad.grad(fn)
    np.testing.assert_allclose(h, np.stack([central_differences(lambda y: g(y)[k], X.copy(), 1e-5)
                                            for k in range(4)]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [0, 1, 3, np.int64(2)])
def test_break_on_the_first_iteration(n):
    accepted_and_correct(break_on_the_first_iteration, X.copy(), n)
    forward_correct_or_refused(break_on_the_first_iteration, X.copy(), n)


# ------------------------------------------------------------------ 5. 0-d arrays are mutable, numpy scalars are not

def tensordot_zero_d_updated(x):
    a = x * 1.0
    t = np.tensordot(a, a, 1)      # numpy: a 0-d array, not a numpy scalar
    u = t
    t += 1.0                       # in place: u changes too
    return u * 2.0


def tensordot_zero_d_in_a_tuple(x):
    a = x * 1.0
    t = np.tensordot(a, x, axes=([0], [0]))
    p = (t, 1.0)
    t -= 0.5
    return p[0] * 2.0


def tensordot_zero_d_held_through_a_loop(x):
    t = np.tensordot(x * 1.0, x, 1)
    held = [t]
    for i in range(2):
        t *= 1.5
    return np.sum(np.stack(held)) + t


def astype_zero_d_updated(x):
    s = np.where(x[0] > 0.0, x[0], -x[0])
    t = s.astype(np.float64)       # a 0-d array (astype of one)
    u = t
    t *= 3.0
    return u * 2.0 + np.sum(x)


def astype_discrete_zero_d_updated(x):
    s = np.where(x[0] > 0.0, 2.0, 3.0)
    k = s.astype(np.int64)         # a 0-d integer array
    m = k
    k += 1
    return np.sum(x) * m


def roll_zero_d_updated(x):
    s = np.where(x[0] > 0.0, x[0], -x[0])
    t = np.roll(s, 1)
    u = t
    t *= 3.0
    return u * 2.0 + np.sum(x)


def tile_zero_d_updated(x):
    s = np.where(x[0] > 0.0, x[0], -x[0])
    t = np.tile(s, ())
    u = t
    t *= 3.0
    return u * 2.0 + np.sum(x)


def tensordot_zero_d_alone(x):
    t = np.tensordot(x * 1.0, x, 1)
    t *= 1.5                       # nothing else holds it: sound
    return t * np.sum(x)


@pytest.mark.parametrize("fn", [tensordot_zero_d_updated, tensordot_zero_d_in_a_tuple,
                                tensordot_zero_d_held_through_a_loop, astype_zero_d_updated,
                                astype_discrete_zero_d_updated, roll_zero_d_updated, tile_zero_d_updated])
def test_zero_d_arrays_updated_through_another_name(fn):
    """np.tensordot of two vectors, ``astype``, ``np.roll`` and ``np.tile`` of a 0-d array give a 0-d
    array (mutable), which astad took for a numpy scalar: ``u = t; t += 1.0`` was accepted and ``u``
    kept the old value (reverse mode: value and gradient wrong)."""
    assert correct_or_refused(fn, X.copy())
    forward_correct_or_refused(fn, X.copy())


def test_zero_d_array_nothing_else_holds_is_accepted():
    accepted_and_correct(tensordot_zero_d_alone, X.copy())
    forward_correct_or_refused(tensordot_zero_d_alone, X.copy())


# ------------------------------------------------------------------ 6. higher order on the programs above

@pytest.mark.parametrize("fn", [list_plus_in_a_loop, list_replaced_element, tensordot_zero_d_alone])
def test_hessians_of_list_concatenation_and_zero_d_updates(fn):
    """Forward over reverse (``hessian``), forward over reverse by hand (``jacfwd(grad)``) and reverse
    over reverse (``jacrev(grad)``) against central differences of the gradient (itself checked
    against central differences above)."""
    g = astad.grad(fn)
    want = np.stack([central_differences(lambda y: g(y)[k], X.copy(), 1e-5) for k in range(4)])
    for h in (astad.hessian(fn), astad.jacfwd(astad.grad(fn)), astad.jacrev(astad.grad(fn))):
        np.testing.assert_allclose(h(X.copy()), want, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ 7. found sound: kept as regressions

def nested_def_updates_a_captured_array(x):
    y = x * 1.0

    def g():
        y[1] += 3.0        # changes the enclosing function's y
        return np.sum(y)

    a = g()
    return np.sum(y ** 2) + a


def nested_def_appends_to_a_captured_list(x):
    acc = [x * 1.0]

    def g(v):
        acc.append(v * 2.0)
        return 0.0

    a = g(x)
    return np.sum(np.stack(acc) ** 2) + a


def returned_closure_reads_an_updated_array(x):
    def make(a):
        return lambda: np.sum(a ** 2)

    r = x * 1.0
    f = make(r)
    r += 1.0               # f reads the same object
    return f()


def continue_keeps_what_the_list_holds(x):
    r = x * 1.0
    held = [x]
    i = 0
    while i < 4:
        i += 1
        r *= 1.1           # changes what the list took before the `continue`
        if x[i - 1] < 0.0:
            held.append(r)
            continue
        r = r + 1.0
    return np.sum(np.stack(held) ** 2) + np.sum(r)


def break_keeps_a_view_updated_after(x):
    r = np.outer(x, x)
    held = [x]
    for i in range(4):
        r *= 0.5
        if r[i, i] > 0.1:
            held.append(r[i])  # a row of r
            break
        r = r + 1.0
    r[0, 0] = 7.0
    return np.sum(np.stack(held) ** 2) + np.sum(r)


@pytest.mark.parametrize("fn", [nested_def_updates_a_captured_array, nested_def_appends_to_a_captured_list,
                                returned_closure_reads_an_updated_array, continue_keeps_what_the_list_holds,
                                break_keeps_a_view_updated_after])
def test_updates_others_see_are_refused(fn):
    assert correct_or_refused(fn, X.copy()), fn.__name__


def zero_d_integer_array_added_a_float(x):
    k = np.where(x[0] > 0.0, 1, 2)   # a 0-d integer array: `+= 0.5` raises in numpy (same_kind casting)
    k += 0.5
    return np.sum(x) * k


def numpy_integer_scalar_added_a_float(x):
    k = np.sum(np.array([1, 2]))     # a numpy integer, immutable: `+=` makes a new float
    k += 0.5
    return np.sum(x) * k


def test_an_in_place_update_that_would_change_a_zero_d_arrays_dtype_is_refused():
    """Python raises (UFuncTypeError); astad gave a gradient."""
    with pytest.raises(Exception):
        zero_d_integer_array_added_a_float(X.copy())
    with pytest.raises(astad.AstadError) as e:
        astad.grad(zero_d_integer_array_added_a_float)(X.copy())
    assert "cannot change" in str(e.value) and "k = k + ..." in str(e.value)
    accepted_and_correct(numpy_integer_scalar_added_a_float, X.copy())


def list_extend(x):
    xs = [x, x * 2.0]
    xs.extend([x])
    return np.sum(np.stack(xs))


def list_pop(x):
    xs = [x, x * 2.0]
    v = xs.pop()
    return np.sum(v)


def tuple_count(x):
    t = (x, x * 2.0)
    return t.count(x)


@pytest.mark.parametrize("fn, hint", [(list_extend, "on a list: xs.append(v)"), (list_pop, "on a list: xs.append(v)"),
                                      (tuple_count, "on a tuple: t[i]")], ids=lambda v: getattr(v, "__name__", ""))
def test_an_attribute_of_a_list_or_tuple_is_refused_with_what_works_there(fn, hint):
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.reverse(fn)(np.ones(2))
    message = str(info.value)
    assert f"supported instead: {hint}" in message and "array attributes" not in message
    assert f"{fn.__code__.co_filename}:" in message
