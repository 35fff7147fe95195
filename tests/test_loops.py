"""``for i in range(...)`` loops: loop-carried floats, arrays and several
variables, nested loops, loops with branches, reads ``x[i]`` accumulated in
place in the backward pass.  Gradients against central finite differences;
every stage's IR against direct execution."""

import numpy as np
import pytest

import astad
from astad.ir import interp
from conftest import check_grad, check_stages


def scalar_loop(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * y[i] + 0.5 * x[i] * x[i]
    return s


def array_loop(w, x):
    h = x
    for k in range(3):
        h = np.tanh(h @ w)
    return np.sum(h * h)


def two_carried(x, a):
    u = a
    v = 1.0
    for i in range(1, len(x), 2):
        u, v = v * x[i], u + np.cos(x[i - 1]) * v
    return u * v


def nested_loops(m):
    total = 0.0
    for i in range(m.shape[0]):
        row = 0.0
        for j in range(m.shape[1]):
            row = row + m[i, j] * (j + 1.0)
        total = total + np.tanh(row)
    return total


def huber(r, delta):
    total = 0.0
    for i in range(len(r)):
        a = r[i]
        if a < -delta:
            total = total + delta * (-a - 0.5 * delta)
        elif a > delta:
            total = total + delta * (a - 0.5 * delta)
        else:
            total = total + 0.5 * a * a
    return total


def loop_in_branch(x, flag):
    y = x
    if flag > 0:
        for i in range(2):
            y = y * x + 1.0
    return np.sum(y)


def rows(m, v):
    acc = np.zeros(m.shape[1])
    for i in range(m.shape[0]):
        acc = acc + m[i, :] * v[i]
    return np.sum(acc * acc)


def zero_trips(x, n):
    s = x * 2.0
    for i in range(n):
        s = s * x
    return s


def augmented(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
        s *= 0.9
    return s


RNG = np.random.default_rng(5)
CASES = [
    (scalar_loop, (RNG.standard_normal(6), RNG.standard_normal(6))),
    (array_loop, (RNG.standard_normal((3, 3)) * 0.5, RNG.standard_normal((2, 3)))),
    (two_carried, (RNG.standard_normal(7), 0.3)),
    (nested_loops, (RNG.standard_normal((3, 4)) * 0.3,)),
    (huber, (np.array([-2.0, -0.3, 0.1, 0.7, 1.9, -1.2]), 1.0)),
    (loop_in_branch, (np.array([0.5, -0.2]), 1)),
    (loop_in_branch, (np.array([0.5, -0.2]), 0)),
    (rows, (RNG.standard_normal((4, 3)), RNG.standard_normal(4))),
    (zero_trips, (1.5, 3)),
    (zero_trips, (1.5, 0)),
    (augmented, (RNG.standard_normal(5),)),
]
IDS = [f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)]


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_loop_gradients(fn, args):
    check_grad(fn, list(args))


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_every_stage_evaluates_like_python(fn, args):
    check_stages(fn, args)


def test_reads_in_a_loop_accumulate_in_place():
    x, y = np.ones(5), np.ones(5)
    src = astad.reverse(scalar_loop).transform(x, y).source
    backward = src.split("def scalar_loop_backward")[1]
    loop_body = backward.split("    for ", 1)[1]
    assert "] += " in loop_body  # acc[i] += v: O(1) per read
    assert "zeros_like" not in loop_body  # no array the size of x per iteration


def test_the_backward_loop_runs_over_the_tape_in_reverse():
    src = astad.reverse(array_loop).transform(np.eye(3), np.ones((2, 3))).source
    forward, backward = src.split("def array_loop_backward")
    assert ".append(" in forward and "reversed(" in backward


def loop_variable_after(x):
    s = x
    for i in range(3):
        s = s * x
    return s + i


def test_the_loop_variable_after_its_loop_is_a_clear_error():
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.reverse(loop_variable_after)(1.0)
    assert "after its loop" in str(info.value)


def newton_sqrt(a):
    x = a
    step = 1.0
    k = 0
    while abs(step) > 1e-12 and k < 50:
        step = (x * x - a) / (2.0 * x)
        x = x - step
        k = k + 1
    return x


def halve_until_small(x, y):
    s = x
    while s > 1.0:
        s = s * 0.5 + y * 0.1
    return s * s


def never_runs(x):
    s = x
    while s < 0.0:
        s = s * 2.0
    return s * 3.0


def forever(x):
    while True:
        x = x * 0.5
    return x


@pytest.mark.parametrize("a", [2.0, 9.0, 0.3])
def test_newton_while_loop_differentiates_the_iteration(a):
    value, grad = astad.value_and_grad(newton_sqrt)(a)
    assert value == pytest.approx(np.sqrt(a), rel=1e-12)
    assert grad == pytest.approx(0.5 / np.sqrt(a), rel=1e-9)


@pytest.mark.parametrize("fn, args", [(halve_until_small, (5.0, 0.3)), (halve_until_small, (0.5, 0.3)),
                                      (never_runs, (2.0,))])
def test_while_loop_gradients(fn, args):
    check_grad(fn, list(args))
    d = astad.reverse(fn).transform(*args)
    np.testing.assert_allclose(interp.run(d.stages.structural, *args), fn(*args))


def test_a_while_loop_that_never_ends_is_a_clear_error():
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.reverse(forever)(1.0)
    assert "never ends" in str(info.value)


def over_rows(m, v):
    total = 0.0
    for row in m:
        total = total + np.sum(np.tanh(row * v))
    return total


def with_enumerate(x):
    s = 0.0
    for i, xi in enumerate(x):
        s = s + (i + 1.0) * np.sin(xi)
    return s


def with_zip(x, y, z):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * b * z
    return s


@pytest.mark.parametrize("fn, args", [
    (over_rows, (RNG.standard_normal((4, 3)), RNG.standard_normal(3))),
    (with_enumerate, (RNG.standard_normal(5),)),
    (with_zip, (RNG.standard_normal(5), RNG.standard_normal(4), 0.7)),
])
def test_loops_over_arrays_enumerate_and_zip(fn, args):
    check_grad(fn, list(args))
    d = astad.reverse(fn).transform(*args)
    np.testing.assert_allclose(interp.run(d.stages.structural, *args), fn(*args), rtol=1e-12)


# --------------------------------------------------------------------------- lists


def columns(x, w):
    out = []
    for j in range(w.shape[0]):
        out.append(np.sum(x * w[j], axis=1))
    big = np.stack(out, axis=1)
    return np.sum(np.tanh(big))


def static_list(x):
    xs = [x, x * 2.0]
    xs.append(np.sin(x))
    return np.sum(np.stack(xs)) + len(xs)


def list_reads(x):
    hs = []
    for i in range(3):
        hs.append(x * (i + 1.0))
    s = 0.0
    for i in range(len(hs)):
        s = s + np.sum(hs[i] * hs[i])
    return s + np.sum(np.array(hs)) + np.sum(np.concatenate(hs))


def list_of_scalars(x):
    vals = []
    for i in range(x.shape[0]):
        vals.append(np.sin(x[i]) * x[i])
    return np.sum(np.array(vals) ** 2)


@pytest.mark.parametrize("fn, args", [
    (columns, (RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3)))),
    (static_list, (RNG.standard_normal(3),)),
    (list_reads, (RNG.standard_normal(3),)),
    (list_of_scalars, (RNG.standard_normal(6),)),
])
def test_lists_built_by_append(fn, args):
    check_grad(fn, list(args))
    d = astad.reverse(fn).transform(*args)
    np.testing.assert_allclose(interp.run(d.stages.structural, *args), fn(*args), rtol=1e-12)
    value, residuals = d.forward(*args)
    cts = d.backward(residuals, 1.0)
    v, c = interp.run_reverse(d.stages.ad, args, 1.0)
    for got, expected in zip(c, cts):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def aliased_append(x):
    a = [x]
    b = a
    a.append(x * 2.0)
    return np.sum(np.stack(b))


def test_append_to_a_list_with_two_names_is_refused():
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.reverse(aliased_append)(np.ones(2))
    assert "`b` shares its memory" in str(info.value)


def reused_loop_variable(x):
    s = 0.0
    for i in range(2):
        s = s + x[i]
    for t in range(3):
        for i in range(2):
            s = s + x[i] * t
    return s * s


def test_a_loop_variable_name_reused_by_later_loops():
    check_grad(reused_loop_variable, [RNG.standard_normal(3)])


# --------------------------------------------------------------------------- break and continue


def first_big(x, t):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > t:
            break
        s = s + x[i] * x[i]
    return s


def skip_negative(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < 0.0:
            continue
        s = s + np.sin(x[i])
    return s


def while_with_break(a):
    x = a
    k = 0
    while k < 100:
        x = x * 0.5 + 1.0
        if abs(x - 2.0) < 1e-3:
            break
        k = k + 1
    return x * a


def nested_break(m):
    total = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j] < -1.0:
                break
            total = total + m[i, j] * (i + 1.0)
    return total


X = np.array([0.3, -0.5, 0.8, 2.5, 0.1])


@pytest.mark.parametrize("fn, args", [
    (first_big, (X, 1.0)), (first_big, (X, 5.0)), (skip_negative, (X,)), (while_with_break, (3.0,)),
    (nested_break, (np.array([[0.5, -1.5, 0.3], [0.2, 0.4, -2.0], [-3.0, 1.0, 1.0]]),)),
])
def test_break_and_continue(fn, args):
    check_grad(fn, list(args))
    check_stages(fn, args)


# --------------------------------------------------------------------------- return inside loops


def first_above(x, t):
    for i in range(len(x)):
        if x[i] > t:
            return x[i] * t
    return t * 2.0


def newton_until_converged(a):
    y = a
    for i in range(50):
        y_next = y - (y * y - a) / (2.0 * y)
        if abs(y_next - y) < 1e-12:
            return y_next
        y = y_next
    return y


def grow_forever(x):
    s = x
    while True:
        s = s * 1.5
        if s > 10.0:
            return s + x


def nested_return(x, n):
    acc = 0.0
    for i in range(n):
        for j in range(n):
            acc = acc + x[i] * x[j]
            if acc > 3.0:
                return acc * (i + 1.0)
    return acc * 2.0


def return_a_tuple(m):
    for row in m:
        if np.sum(row) > 0.5:
            return row * 2.0, np.sum(row * row)
    return m[0], 0.0


def return_from_helper_in_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = s + _first_positive(x[i:])
    return s


def _first_positive(v):
    for e in v:
        if e > 0.0:
            return e * e
    return 0.0


M = np.array([[0.1, 0.2], [0.5, 0.6], [0.9, 0.1]])


@pytest.mark.parametrize("fn, args", [
    (first_above, (X, 0.5)), (first_above, (X, 5.0)), (newton_until_converged, (2.0,)),
    (newton_until_converged, (0.3,)), (grow_forever, (1.2,)), (grow_forever, (11.0,)),
    (nested_return, (X, 3)), (nested_return, (X * 0.1, 3)), (return_a_tuple, (M,)), (return_a_tuple, (M * 0.1,)),
    (return_from_helper_in_loop, (X,)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_return_inside_a_loop(fn, args):
    """``return`` leaves the loop (and every loop around it) with its value; the
    loop carries whether it returned and what."""
    check_grad(fn, list(args))
    if not isinstance(fn(*args), tuple):
        check_stages(fn, args)


def test_a_loop_that_can_return_records_the_flag_not_a_closure():
    rev = astad.reverse(first_above)
    rev(X, 0.5)
    assert "returned" in rev.source and "for " in rev.source


# --------------------------------------------------------------------------- loop-carried tuples


def carried_tuple(x, n):
    state = (x, 1.0)
    for i in range(n):
        a, b = state
        state = (a * b + 0.1, np.sin(a))
    return state[0] + state[1]


def carried_nested_tuple(v, w):
    pair = (v, (w, 0.5))
    for k in range(3):
        p, (q, c) = pair
        pair = (np.tanh(p * c + q), (q * 0.9, c + np.sum(p)))
    return np.sum(pair[0] * pair[1][0]) + pair[1][1]


def carried_tuple_in_while(x):
    st = (x, 0)
    while st[1] < 5 and st[0] < 20.0:
        st = (st[0] * 1.7, st[1] + 1)
    return st[0] * x


@pytest.mark.parametrize("fn, args", [
    (carried_tuple, (0.7, 4)), (carried_tuple, (0.7, 0)),
    (carried_nested_tuple, (np.array([0.1, 0.3]), np.array([0.5, -0.2]))),
    (carried_tuple_in_while, (1.1,)), (carried_tuple_in_while, (0.01,)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_loop_carried_tuples(fn, args):
    check_grad(fn, list(args))
    check_stages(fn, args)


def changes_structure(x):
    st = (x, x)
    for i in range(3):
        st = (st[0] * 2.0, st[1], x)
    return st[0]


def test_a_carried_tuple_that_changes_length_is_a_clear_error():
    with pytest.raises(astad.AstadTypeError, match="`st` changes structure in the loop"):
        astad.reverse(changes_structure)(1.0)


def falls_off_after_loop(x):
    for i in range(3):
        if x > 1.0:
            return x
    x = x * 2.0


def test_a_function_that_returns_only_inside_its_loop_is_a_clear_error():
    with pytest.raises(astad.UnsupportedSyntaxError, match="not every path after this loop returns a value") as e:
        astad.reverse(falls_off_after_loop)(2.0)
    assert "for i in range(3):" in str(e.value)


def list_read_by_two_loops(m):
    rows = []
    for r in m:
        rows.append(r * 2.0)
    s = 0.0
    for k in range(len(rows)):
        s = s + np.sum(rows[k])
    t = 0.0
    for r in rows:
        t = t + np.sum(r) * 3.0
    return s + t


def test_a_list_read_by_two_loops():
    """Each loop accumulates into a list of cotangents of its own (a shared one
    was once updated in place by both: a gradient twice too large)."""
    m = np.array([[0.5, -1.0], [2.0, 0.3], [1.0, 1.0]])
    check_grad(list_read_by_two_loops, [m])
    np.testing.assert_allclose(astad.grad(list_read_by_two_loops)(m), np.full((3, 2), 8.0))
    check_stages(list_read_by_two_loops, (m,))


def while_break_before_update(x):
    s = 0.0
    k = 0
    while k < 3:
        if x > 0.0:
            break
        s = s + 1.0
        k += 1
    return s * x


def while_continue_after_update(x):
    s = 0.0
    k = 0
    while k < 3:
        if x > 0.0:
            k = k + 1
            continue
        k = k + 1
        s = s + x
    return x * k + s


def while_condition_on_a_later_update(x):
    s = 0.0
    k = 0
    while k < 4 and s < 2.0:
        if x > 5.0:
            break
        s = s + x
        k = k + 1
    return s * x


@pytest.mark.parametrize("fn, x", [
    (while_break_before_update, -1.0), (while_break_before_update, 1.0), (while_continue_after_update, 0.5),
    (while_continue_after_update, -0.5), (while_condition_on_a_later_update, 0.7),
    (while_condition_on_a_later_update, 6.0),
], ids=lambda a: getattr(a, "__name__", str(a)))
def test_a_while_condition_sees_what_the_body_assigned_after_its_if(fn, x):
    """The condition is evaluated where the iteration ends: after an `if` that
    may `break`/`continue`, on the names as the rest of the body left them
    (it once saw them as before that `if`: one trip too many)."""
    value, _ = astad.reverse(fn)(x)
    assert value == fn(x)
    check_grad(fn, [x])
    check_stages(fn, (x,))


def continue_at_the_end(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(x * x)
        if s > 100.0:
            continue
    return s


def break_on_every_path(x):
    s = 0.0
    for k in range(3):
        if k == 1:
            if x > 0.5:
                break
            break
        s = s + x
    return s


@pytest.mark.parametrize("fn, args", [
    (continue_at_the_end, (np.array([1.0, 0.5]), 3)), (break_on_every_path, (1.0,)), (break_on_every_path, (0.2,)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_an_if_whose_branches_all_go_on_or_all_leave(fn, args):
    """Such an `if` changes nothing: the forward pass drops it, and so must the
    backward pass (it once read the condition the forward pass no longer computed)."""
    check_grad(fn, list(args))
    check_stages(fn, args)


def list_read_in_one_branch(x, n):
    acc = []
    for i in range(n):
        acc.append(x * i)
    t = 0.0
    if x > 0.0:
        t = acc[1]
    return t


def run_time_length_read_in_one_branch(x, y):
    acc = []
    for i in range(2):
        acc.append(np.tanh(x * i))
    v = np.concatenate(acc)[:3]
    t = 0.0
    if y > 0.0:
        t = np.sum(v)
    return t * y


def list_read_after_continue(x, n):
    acc = []
    s = 0.0
    for i in range(n):
        acc.append(x * i)
        if i == 1:
            continue
        s = s + acc[i]
    return s


@pytest.mark.parametrize("fn, args", [
    (list_read_in_one_branch, (0.3, 3)), (list_read_in_one_branch, (-0.3, 3)),
    (run_time_length_read_in_one_branch, (np.array([0.2, 0.5]), 0.4)),
    (run_time_length_read_in_one_branch, (np.array([0.2, 0.5]), -0.4)), (list_read_after_continue, (0.7, 4)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_a_branch_that_does_not_read_a_list_gives_it_zeros_of_its_length(fn, args):
    """The zero cotangent of a list or of an array of run-time length, from a
    branch that does not read it, is made like the value (it once could not be
    made at all: InternalError)."""
    check_grad(fn, list(args))
    check_stages(fn, args)


def list_length_read_twice(x):
    acc = []
    for i in range(3):
        acc.append(x * i)
    return x * len(acc) + len(acc)


def list_element_read_and_dropped(x, y):
    acc = []
    for i in range(3):
        acc.append(x * i)
    m = len(acc)
    w = acc[0]
    return y * m


def element_named_and_read_again(x, y):
    acc = [y * 2.0]
    a = acc[0]
    b = acc[0] * 1.0
    return x * (a + b)


@pytest.mark.parametrize("fn, args", [
    (list_length_read_twice, (0.5,)), (list_element_read_and_dropped, (0.5, 0.3)),
    (element_named_and_read_again, (0.5, 0.3)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_lists_used_where_no_use_gives_a_cotangent(fn, args):
    """Uses of a list that give it no cotangent (`len`, a dead read) sum to a
    zero that need not be made (it once could not be: InternalError); an element
    of a list given a name keeps the name the list knows it by."""
    check_grad(fn, list(args))
    check_stages(fn, args)


def appended_and_read_inside(x, n):
    acc = [x]
    for i in range(n):
        acc.append(acc[-1] * 0.5 + np.sin(acc[i]))
    return np.sum(np.stack(acc))


def appended_only(x, n):
    acc = []
    for i in range(n):
        acc.append(np.tanh(x * (i + 1.0)))
    return np.sum(np.stack(acc) ** 2)


@pytest.mark.parametrize("fn, args", [
    (appended_and_read_inside, (np.array([0.3, -0.2]), 4)), (appended_only, (np.array([0.3, -0.2]), 5)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_lists_appended_in_place(fn, args):
    check_grad(fn, list(args))
    check_stages(fn, args)


def test_a_list_nothing_else_reads_is_appended_to_and_popped_in_place():
    """O(1) per iteration: `acc.append(v)` forward, `ct.pop()` backward, not a
    copy of the list each time."""
    source = astad.reverse(appended_only).transform(np.ones(2), 3).source
    forward, backward = source.split("def appended_only_backward")
    assert ".append(" in forward and " + [" not in forward
    assert ".pop()" in backward and "[:-1]" not in backward


def dead_read_in_an_inner_loop(x):
    s = 0.0
    for i in range(2):
        v = x[i] * (i + 1.0) if x[0] > 0.3 else 0.5
        for j in range(2):
            s = s + np.sum(x)
            w = v + x  # dead
    return s


def list_element_used_in_a_branch(x):
    acc = [x ** 2]
    if x > 0.0:
        s = 1.0
    else:
        for i in range(2):
            x = 0.5 * x
        s = 2.0
    return acc[0] * s


def list_element_read_by_an_elif(x, y):
    acc = [x * 2.0]
    if y < 0.0:
        y = 1.0
    elif acc[0] > 0.0:
        return x
    for k in range(2):
        x = x * 0.7
    return x


@pytest.mark.parametrize("fn, args", [
    (dead_read_in_an_inner_loop, (np.array([0.975, 0.902, 1.441, -0.972]),)),
    (list_element_used_in_a_branch, (0.5,)), (list_element_used_in_a_branch, (-0.5,)),
    (list_element_read_by_an_elif, (0.5, 0.2)), (list_element_read_by_an_elif, (-0.5, 0.2)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_values_computed_before_a_branch_or_read_by_dead_code(fn, args):
    """What is computed before an `if` is assigned before it (the generated
    code once computed it in one branch only); an inner loop's sum that no
    iteration adds to is zero, not a product with values the forward pass
    dropped."""
    check_grad(fn, list(args))
    check_stages(fn, args)


def appended_in_a_branch_and_dropped(x):
    acc = []
    for j in range(2):
        acc.append(x * j)
    if x < 1.0:
        acc.append(x)
    else:
        x = x * 3.0
    return x


def remade_in_each_iteration_and_appended_after_break(x):
    s = x
    for i in range(3):
        acc = []
        for j in range(2):
            acc.append(x * j)
        if s > 1.0:
            break
        acc.append(x)
        s = s * 2.0
    return s


def dead_read_of_a_list_in_a_nested_branch(x):
    acc = []
    for i in range(2):
        acc.append(x * 2.0)
    v = acc[0]
    if x[1] > 0.0:
        if x[2] > 0.0:
            x = x * 0.5
        if x[0] > 5.0:
            w = 1.0
        else:
            v = v * 0.5  # dead
    return x


def list_read_in_one_branch_of_each_iteration(x, n):
    sink = 0.0
    for k in range(2):
        acc = [np.sum(x * 2.0)]
        for j in range(n):
            acc.append(np.sum(np.sin(x)))
        v = acc[-2]
        if x >= 1.0:
            sink = sink + np.sum(np.array(acc))
            acc.append(np.sum(np.square(v)))
    return sink


@pytest.mark.parametrize("fn, args", [
    (appended_in_a_branch_and_dropped, (0.3,)), (appended_in_a_branch_and_dropped, (1.3,)),
    (remade_in_each_iteration_and_appended_after_break, (0.3,)),
    (remade_in_each_iteration_and_appended_after_break, (1.5,)),
    (dead_read_of_a_list_in_a_nested_branch, (np.array([-0.03, 0.8, 0.11]),)),
    (dead_read_of_a_list_in_a_nested_branch, (np.array([6.0, 0.8, -0.11]),)),
    (list_read_in_one_branch_of_each_iteration, (np.array(1.6479), np.int64(2))),
    (list_read_in_one_branch_of_each_iteration, (np.array(0.6479), np.int64(2))),
], ids=lambda a: getattr(a, "__name__", ""))
def test_list_cotangents_that_are_zero_on_some_paths(fn, args):
    """A list's cotangent that turns out zero only once the backward pass is
    simplified (a list appended to in a branch and then dropped, a dead read in
    a branch, a branch that reads the list and one that does not) is made as
    zeros of the list's length where one path needs it, and not carried through
    the backward loop at all where every path keeps it zero (it once could not
    be made: InternalError, or a NameError in the backward code)."""
    check_grad(fn, list(args))
    check_stages(fn, args)


def invariant_in_nested_loops(x, a):
    s = 0.0
    for i in range(3):
        for j in range(2):
            s = s + np.sum(np.sin(x[i] * j) * (1.0 + a * a))
    return s


def division_by_an_invariant(x, a, n):
    s = x
    for i in range(n):
        s = s + 1.0 / a
    return s


def array_made_before_and_read_in_a_loop(x, w):
    b = np.zeros(3) + w
    s = 0.0
    for i in range(3):
        s = s + np.sum(b * x[i])
    return s + np.sum(b)


@pytest.mark.parametrize("fn, args", [
    (invariant_in_nested_loops, (np.array([0.3, -0.2, 0.5]), 0.7)),
    (division_by_an_invariant, (0.5, 0.0, 0)), (division_by_an_invariant, (0.5, 0.8, 3)),
    (array_made_before_and_read_in_a_loop, (np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, 3.0]))),
], ids=lambda a: getattr(a, "__name__", ""))
def test_loop_invariant_code_moves_out_safely(fn, args):
    """What a loop computes from values bound outside it is computed once before
    it: out of nested loops too; not when it could raise in a loop that may
    not run (`1.0 / a` with a = 0.0 and n = 0 must not raise); and an array
    made before a loop and read in it is not updated in place."""
    if not (fn is division_by_an_invariant and args[1] == 0.0):  # (no finite differences at a = 0)
        check_grad(fn, list(args))
    value, pullback = astad.reverse(fn)(*args)
    assert value == pytest.approx(fn(*args))
    pullback(1.0)
    check_stages(fn, args)


def test_an_invariant_is_computed_once():
    source = astad.reverse(invariant_in_nested_loops).transform(np.ones(3), 0.7).source
    forward = source.split("def invariant_in_nested_loops_backward")[0]
    forward = "\n".join(ln for ln in forward.splitlines() if not ln.strip().startswith("#"))
    loop_at = forward.index("\n    for ")
    assert "a * a" in forward[:loop_at] and "a * a" not in forward[loop_at:]


def read_under_a_length_guard_before_the_append(x, n):
    acc = []
    s = 0.0
    for i in range(n):
        if len(acc) > 0:
            s = s + acc[-1] * x
        acc.append(np.sin(x * i))
    return s


def lists_of_another_length_in_each_branch(x, y):
    acc = [x * 2.0]
    if y > 0.0:
        acc.append(np.sin(x))
    if y > 0.5:
        acc.append(x * y)
        acc.append(x)
    else:
        acc.append(x - y)
        acc.append(x * x)
    acc.append(x ** 2)
    return np.sum(np.stack(acc)) + np.sum(acc[0] * acc[-1])


def appended_only_in_dead_code(x, n):
    acc = []
    k = []
    for i in range(n):
        if len(k) > 1:
            acc.append(x * i)
        x = x * 0.9
    v = 0.0
    if len(acc) > 0:
        v = np.sum(np.stack(acc))
    return x + v


@pytest.mark.parametrize("fn, args", [
    (read_under_a_length_guard_before_the_append, (0.7, np.int64(4))),
    (read_under_a_length_guard_before_the_append, (0.7, 4)),
    (lists_of_another_length_in_each_branch, (np.array([0.7, -0.4]), 0.3)),
    (lists_of_another_length_in_each_branch, (np.array([0.7, -0.4]), 0.8)),
    (lists_of_another_length_in_each_branch, (np.array([0.7, -0.4]), -0.3)),
    (appended_only_in_dead_code, (0.7, np.int64(3))),
], ids=lambda a: getattr(a, "__name__", ""))
def test_lists_whose_length_differs_between_paths(fn, args):
    """A list read under `len(acc) > 0` before the `append` in the source; a list
    of another length in each branch of an `if` (joined as a list built at run
    time; of one length, it stays a list); a list nothing is ever appended to
    has length 0 (these were refused)."""
    check_grad(fn, list(args))
    check_stages(fn, args)
