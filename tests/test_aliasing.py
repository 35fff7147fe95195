"""In-place updates and values that share memory (issue 9, items 1 and 5).

Each program either is refused with astad's own error, or astad's value and
gradient equal plain Python's (value) and central finite differences
(gradient).  The refused ones change, in Python, an object that something else
still reads: a view's base, a base's view, an alias, a list held elsewhere, the
caller's argument."""

import numpy as np
import pytest

import astad
from conftest import check_grad

# --------------------------------------------------------------------------- arrays: refused


def view_slice(x):
    y = x * 1.0
    v = y[1:]
    v *= 2.0          # numpy changes y too
    return np.sum(y)


def view_rows_in_a_loop(x):
    y = np.reshape(x * 1.0, (2, 2))
    for row in y:
        row *= 2.0
    return np.sum(y)


def view_made_in_a_lambda(x):
    y = x * 1.0
    tail = lambda a: a[1:]
    v = tail(y)
    v *= 2.0
    return np.sum(y)


def view_made_in_a_helper_def(x):
    def tail(a):
        return a[1:]
    y = x * 1.0
    v = tail(y)
    v += 1.0
    return np.sum(y * y)


def view_of_a_view(x):
    y = x * 1.0
    v = y[1:]
    w = v[1:]
    v = v * 1.0
    w *= 3.0
    return np.sum(y)


def view_ellipsis_0d(x):
    y = x * 1.0
    s = y[..., 0]     # a 0-d array: a view
    s += 5.0
    return np.sum(y)


def view_ellipsis_column(x):
    y = np.reshape(x * 1.0, (2, 2))
    c = y[..., 0]
    c *= 2.0
    return np.sum(y * y)


def view_newaxis(x):
    y = x * 1.0
    v = y[:, None]
    v *= 2.0
    return np.sum(y)


def view_dot_t(x):
    y = np.reshape(x * 1.0, (2, 2))
    v = y.T
    v += 1.0
    return np.sum(y * y)


def view_ravel(x):
    y = np.reshape(x * 1.0, (2, 2))
    v = y.ravel()
    v *= 2.0
    return np.sum(y)


def view_reshape_method(x):
    y = x * 1.0
    v = y.reshape(2, 2)
    v *= 2.0
    return np.sum(y)


def view_expand_dims(x):
    y = x * 1.0
    v = np.expand_dims(y, 0)
    v *= 2.0
    return np.sum(y)


def view_np_transpose(x):
    y = np.reshape(x * 1.0, (2, 2))
    v = np.transpose(y)
    v -= 1.0
    return np.sum(y * y)


def base_changed_under_a_view(x):
    y = x * 1.0
    v = y[:2]
    y *= 3.0          # v changes too
    return np.sum(v)


def view_of_an_argument(x):
    v = x[1:]
    v += 2.0          # the caller's array changes
    return np.sum(v)


def argument_itself(x):
    x *= 2.0
    return np.sum(x)


def alias_by_name(x):
    y = x * 1.0
    z = y
    z += 1.0
    return np.sum(y)


def alias_in_a_tuple(x):
    y = x * 1.0
    pair = (y, 2.0)
    y += 1.0
    return np.sum(pair[0])


def alias_in_a_list(x):
    y = x * 1.0
    held = [y]
    y += 1.0
    return np.sum(np.stack(held))


def alias_carried_through_a_loop(x):
    a = x * 1.0
    b = a
    for i in range(2):
        a += 1.0      # b is the same array
    return np.sum(b * b)


def alias_made_by_the_loop_back_edge(x):
    y = x * 1.0
    a = np.zeros(4)
    for i in range(3):
        a += 1.0      # from the second iteration on, a is a view of y
        a = y[0:4]
    return np.sum(y * y)


def alias_through_two_carried_names(x):
    a = np.zeros(4)
    b = np.zeros(4)
    for i in range(3):
        a += x        # from the second iteration on, a and b are one array
        c = x * 2.0
        a = c
        b = c
    return np.sum(b * b)


def alias_in_a_branch(x):
    y = x * 1.0
    v = x * 2.0
    if x[0] > 0.0:
        v = y[0:4]
    v *= 3.0
    return np.sum(y * v)


def alias_kept_by_continue(x):
    r = x * 1.0
    held = [x * 0.5]
    for i in range(4):
        r /= 2.0      # after a `continue`, r is the array the list holds
        if x[i] > 0.5:
            held.append(r)
            continue
        r = r + x
    return np.sum(np.stack(held)) + np.sum(r)


def zero_d_argument_scalar(x):
    s = x[0] * 1.0
    t = np.where(s > 0.0, s, -s)  # a 0-d array
    u = t
    t += 1.0
    return u * 2.0


REFUSED = [view_slice, view_rows_in_a_loop, view_made_in_a_lambda, view_made_in_a_helper_def, view_of_a_view,
           view_ellipsis_0d, view_ellipsis_column, view_newaxis, view_dot_t, view_ravel, view_reshape_method,
           view_expand_dims, view_np_transpose, base_changed_under_a_view, view_of_an_argument, argument_itself,
           alias_by_name, alias_in_a_tuple, alias_in_a_list, alias_carried_through_a_loop,
           alias_made_by_the_loop_back_edge, alias_through_two_carried_names, alias_in_a_branch,
           zero_d_argument_scalar, alias_kept_by_continue]

X = np.array([0.3, -1.2, 0.7, 2.0])


def _python_sees_a_difference(fn):
    """The program's in-place update really changes something else in Python:
    its result differs from the same program read functionally (every `a op= b`
    as `a = a op b`)."""
    import inspect
    import re
    import textwrap

    src = textwrap.dedent(inspect.getsource(fn))
    functional = re.sub(r"^(\s*)(\w+) ([-+*/])= (.*)$", r"\1\2 = \2 \3 \4", src, flags=re.M)
    namespace = dict(fn.__globals__)
    exec(functional, namespace)
    x = X.copy()
    value = np.asarray(fn(x), float)
    return not np.array_equal(x, X) or not np.allclose(value, np.asarray(namespace[fn.__name__](X.copy()), float))


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_an_update_something_else_sees_is_refused(fn):
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.reverse(fn)(X.copy())
    message = str(info.value)
    assert "in place" in message and "supported instead" in message
    assert f"{fn.__code__.co_filename}:" in message  # points at the user's line


@pytest.mark.parametrize("fn", [f for f in REFUSED if f not in (alias_through_two_carried_names,)],
                         ids=lambda f: f.__name__)
def test_the_refused_programs_are_ones_a_functional_reading_gets_wrong(fn):
    """The oracle for the refusals: plain Python differs from the functional reading."""
    assert _python_sees_a_difference(fn)


# --------------------------------------------------------------------------- arrays: accepted


def fresh_update(x):
    y = x * 2.0
    y += 1.0
    y *= x
    return np.sum(y * y)


def view_dead_before_the_update(x):
    y = x * 1.0
    v = y[1:]
    s = np.sum(v * v)
    v = x * 3.0
    y *= 2.0          # no view of y is left
    return s + np.sum(y * v)


def base_rebound_before_the_update(x):
    y = x * 1.0
    v = y[1:]
    y = y * 3.0       # the old y is no longer reachable
    v *= 2.0
    return np.sum(v) + np.sum(y * y)


def scalar_element_copy(x):
    y = x * 1.0
    s = y[0]          # a numpy scalar: a copy
    s += 1.0
    return s * np.sum(y)


def accumulate_in_a_loop(x):
    acc = np.zeros(4)
    for i in range(3):
        acc += x * i
    return np.sum(acc * acc)


def fresh_each_iteration_and_kept(x):
    b = np.zeros(4)
    for i in range(3):
        c = x * 2.0
        c += b        # c is new in this iteration; b holds the previous one's
        b = c
    return np.sum(b * b)


def loop_over_a_copy_of_rows(x):
    y = np.reshape(x * 1.0, (2, 2))
    total = 0.0
    for row in y:
        r = row * 1.0
        r *= 2.0
        total = total + np.sum(r * r)
    return total + np.sum(y)


def scalar_accumulators(x):
    s = 0.0
    t = np.sum(x)
    prev = t
    for v in x:
        s += v * v
        t += v        # a numpy scalar: `prev` does not change
    return s + t * prev


def update_then_view(x):
    y = x * 1.0
    y += 2.0
    v = y[1:]
    return np.sum(v * v)


def copy_of_an_argument(x):
    y = x.copy()
    y *= 2.0
    z = np.copy(y)
    z += x
    w = x.flatten()   # flatten copies (ravel may not)
    w -= 1.0
    return np.sum(y * z) + np.sum(w * x)


def alias_kept_only_by_break(x):
    r = x * 1.0
    held = [x * 0.5]
    for i in range(4):
        r /= 2.0      # the list holds r only once the loop has stopped
        if x[i] > 0.5:
            held.append(r)
            break
        r = r + x
    return np.sum(np.stack(held)) + np.sum(r)


def copy_of_a_local(x):
    y = x * 1.0
    z = y.copy()
    z += 1.0
    return np.sum(y * z)


ACCEPTED = [copy_of_an_argument, copy_of_a_local, fresh_update, view_dead_before_the_update, base_rebound_before_the_update, scalar_element_copy,
            accumulate_in_a_loop, fresh_each_iteration_and_kept, loop_over_a_copy_of_rows, scalar_accumulators,
            update_then_view, alias_kept_only_by_break]


@pytest.mark.parametrize("fn", ACCEPTED, ids=lambda f: f.__name__)
def test_an_update_nothing_else_sees_is_differentiated(fn):
    x = X.copy()
    check_grad(fn, [x])
    np.testing.assert_array_equal(x, X)  # the caller's array is unchanged


# --------------------------------------------------------------------------- lists


def list_in_a_tuple(x):
    a = [x]
    t = (a, 1.0)
    a.append(x * 2.0)
    return np.sum(np.stack(t[0]))


def list_in_a_list(x):
    a = [x]
    outer = [a, [x]]
    a.append(x * 2.0)
    return np.sum(np.stack(outer[0]))


def list_under_two_names_in_a_loop(x):
    a = []
    b = a
    for i in range(3):
        a.append(x * float(i))
    return np.sum(np.stack(b)) if len(b) > 0 else np.sum(x)


def list_held_by_a_default(x):
    a = [x]
    count = lambda held=a: len(held)
    a.append(x)
    return np.sum(x) * count()


def list_read_by_a_lambda(x):
    a = [x]
    count = lambda: len(a)     # reads `a` when called, as Python does: the same list
    a.append(x * 2.0)
    return np.sum(x) * count() + np.sum(np.stack(a))


def list_argument(xs):
    xs.append(xs[0] * 2.0)   # the caller's list changes
    return np.sum(np.stack(xs))


def list_in_a_dict_argument(d):
    xs = d["xs"]
    xs.append(xs[0] * 2.0)
    return np.sum(np.stack(xs))


def _append_to(acc, v):
    acc.append(v)
    return acc


def list_appended_to_by_a_helper(x):
    a = [x]
    b = _append_to(a, x * 2.0)
    return np.sum(np.stack(a)) + np.sum(np.stack(b))


def _with_default(v, acc=[]):  # noqa: B006 (the point of the test)
    acc.append(v)
    return np.stack(acc)


def list_default_argument(x):
    return np.sum(_with_default(x))


@pytest.mark.parametrize("fn, arg", [
    (list_in_a_tuple, X), (list_in_a_list, X), (list_under_two_names_in_a_loop, X), (list_held_by_a_default, X),
    (list_argument, [X[:2].copy(), X[2:].copy()]), (list_in_a_dict_argument, {"xs": [X[:2].copy()]}),
    (list_appended_to_by_a_helper, X), (list_default_argument, X),
], ids=lambda v: getattr(v, "__name__", ""))
def test_an_append_something_else_sees_is_refused(fn, arg):
    with pytest.raises(astad.AstadError) as info:
        astad.reverse(fn)(arg)
    assert "supported instead" in str(info.value) or "cannot use" in str(info.value)


def own_list(x):
    a = [x]
    a.append(x * 2.0)
    b = [a[0]]        # a new list holding the same array is not the list
    b.append(x)
    return np.sum(np.stack(a)) + np.sum(np.stack(b))


def list_rebound_before_the_append(x):
    a = [x]
    b = a
    a = [x * 3.0]
    a.append(x)
    return np.sum(np.stack(a)) + np.sum(np.stack(b))


def list_grown_in_a_loop(x):
    hs = [x]
    for i in range(3):
        hs.append(np.tanh(hs[-1] * 0.5 + x))
    return np.sum(np.stack(hs))


@pytest.mark.parametrize("fn", [own_list, list_rebound_before_the_append, list_grown_in_a_loop,
                                list_read_by_a_lambda],
                         ids=lambda f: f.__name__)
def test_an_append_nothing_else_sees_is_differentiated(fn):
    check_grad(fn, [X.copy()])


def test_every_primitive_says_how_its_result_shares_memory():
    """A primitive without an entry would be UNKNOWN (every update near it
    refused): the table must name each one."""
    from astad import rules
    from astad.aliases import KIND

    assert set(rules.TABLE) <= set(KIND), sorted(set(rules.TABLE) - set(KIND))


def update_in_a_nested_def_of_its_argument(x):
    y0 = x * 1.0

    def h1(t):
        t *= 0.5      # the caller's x changes
        return t
    v2 = h1(x)
    return np.sum(y0 * v2)


def test_an_update_of_a_function_values_parameter_is_refused():
    """A nested def called with numbers becomes a function value (a lam) whose
    parameter is whatever the call passes: updating it in place changes the
    caller's array (found by the aliasing generator: accepted, argument left unchanged)."""
    with pytest.raises(astad.UnsupportedSyntaxError, match="in place"):
        astad.reverse(update_in_a_nested_def_of_its_argument)(X.copy())


def update_in_a_nested_def_of_a_fresh_array(x):
    def h1(t):
        t *= 0.5
        return t
    v = h1(x * 2.0)   # nothing else sees the array
    return np.sum(v * x)


def test_an_update_of_a_parameter_bound_to_a_fresh_array_is_differentiated():
    check_grad(update_in_a_nested_def_of_a_fresh_array, [X.copy()])


def copy_of_a_zero_d_array(x):
    c = x.copy()      # a 0-d array (np.copy of a scalar is one too): mutable
    d = c
    c += 1.0          # d changes too
    return d * 2.0


def test_a_copy_of_a_zero_d_array_is_an_array_updates_see():
    """Checked against numpy: the copy of a 0-d array is a 0-d array, so `+=` changes `d` too."""
    x = np.array(0.7)
    assert copy_of_a_zero_d_array(x.copy()) == 3.4
    with pytest.raises(astad.UnsupportedSyntaxError, match="in place"):
        astad.reverse(copy_of_a_zero_d_array)(x)


def two_calls_of_one_function_value(x):
    make = lambda c: (lambda t: c * t)
    m = make(x)
    v5 = m(x)
    v7 = m(x)     # a new array: the product is made again at each call
    v7 /= 2.0
    return np.sum(v5 * v7)


def two_calls_returning_the_captured_array(x):
    c = x * 2.0
    m = lambda t: c
    v5 = m(x)
    v7 = m(x)     # c itself, as v5 is
    v7 /= 2.0
    return np.sum(v5 * v7)


def calls_of_a_function_value_in_a_loop(x):
    m = lambda t: t * 3.0
    keep = m(x)
    for i in range(3):
        v = m(x)
        v += keep  # each call's array is new; `keep` is not changed
        keep = v
    return np.sum(keep * x)


@pytest.mark.parametrize("fn", [two_calls_of_one_function_value, calls_of_a_function_value_in_a_loop])
def test_what_a_function_value_allocates_is_new_at_each_call(fn):
    """Found by the random generators: two results of one function value were taken to share
    the arrays its body makes, so an update of one was refused."""
    check_grad(fn, [X.copy()])


def test_a_function_value_returning_what_it_captured_is_shared_by_its_calls():
    assert two_calls_returning_the_captured_array(X.copy()) != pytest.approx(0.0)
    with pytest.raises(astad.UnsupportedSyntaxError, match="in place"):
        astad.reverse(two_calls_returning_the_captured_array)(X.copy())
