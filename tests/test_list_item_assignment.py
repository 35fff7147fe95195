"""Assignment to an element of a Python list, ``xs[i] = v`` (an int known when transforming, a
negative one, a loop's index, ``+= -= *= /=``), and through lists and tuples, ``ys[0][1] = v``
(lists of lists, lists of arrays): before, astad refused them ("assigning to an element of a list
or tuple is not supported").  A list is one object however many names hold it, so the update is
accepted only where nothing else that can be read holds the list (or, for ``ys[0][1] = v``, the
element changed): another name (``ys = xs``), another element of the list, a tuple, a closure, the
caller (a list argument); otherwise astad refuses, pointing at the line, and says what to write.
Derivatives against central finite differences in float64 (conftest.check_correct_or_refused:
the value, the pullback, the IR at every stage) and forward vs reverse, ``<u, J v> == <J^T u, v>``
(forward_oracle.check_forward)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward
from test_errors import check_located


def static_index(x):
    xs = [x[0], x[1], x[2]]
    xs[1] = xs[1] * 3.0
    xs[-1] = np.sin(xs[0])
    xs[0] += xs[2]
    xs[-2] *= x[2]
    return xs[0] + xs[1] * xs[2]


def loop_index(x):
    xs = [x[0], x[1], x[2], x[3]]
    for i in range(len(xs)):
        xs[i] = xs[i] * x[i] + xs[i - 1]
    return xs[0] * xs[3] + xs[1] - xs[2]


def loop_index_aug(x):
    xs = [float(x[0]), float(x[1]), float(x[2]), float(x[3])]
    for i in range(4):  # (Python floats: `+=` makes a new number, as `xs[i] = xs[i] + ...`)
        xs[i] += np.sin(xs[(i + 1) % 4])
        xs[-1] *= 0.5
    return xs[0] * xs[1] + xs[2] * xs[3]


def list_of_arrays(x):
    rows = [x * 1.0, x[::-1] * 2.0]
    rows[1] = np.tanh(rows[0] * rows[1])
    rows[0][1] = rows[1][2] * x[0]   # an element of an array a list holds
    rows[1][0:2] += x[1:3]
    return np.sum(rows[0] * rows[1])


def run_time_list_of_arrays(x):
    rows = []
    for k in range(3):
        rows.append(x * k)
    for k in range(3):
        rows[k] = np.sin(rows[k]) + rows[k - 1]
    return np.sum(np.stack(rows) ** 2)


def list_of_lists(x):
    ys = [[x[0], x[1]], [x[2], x[3]]]
    ys[0][1] = ys[1][0] * 2.0
    ys[1][-1] += ys[0][0] * ys[0][1]
    ys[0][0] = np.exp(ys[0][0])
    return ys[0][0] * ys[0][1] + ys[1][1] + ys[0][0]


def read_by_a_closure(x):
    xs = [x[0], x[1]]
    g = lambda: xs[0] * x[1]  # noqa: E731  (reads xs when called, as Python does)
    xs[0] = x[2]
    return g() + xs[0]


def tuple_of_list(x):
    t = ([x[0], x[1]], x[2])
    t[0][1] = t[1] * x[3]
    return t[0][0] * t[0][1]


def numpy_scalar_in_place_in_a_loop(x):
    # (each xs[i] is a numpy scalar, x[i]: `+=` rebinds the item to a new scalar, x stays as it was; refused
    # until session 9, which found that an element by integer indices shares no memory: s9-fixref)
    xs = [x[0], x[1], x[2]]
    for i in range(3):
        xs[i] += x[i]
    return xs[0] * xs[1] + xs[2]


ACCEPTED = [static_index, loop_index, loop_index_aug, list_of_arrays, run_time_list_of_arrays,
            list_of_lists, tuple_of_list, read_by_a_closure, numpy_scalar_in_place_in_a_loop]


@settings(max_examples=fuzz_examples(3, long=6), deadline=None)
@given(x=arrays(np.float64, 4, elements=st.floats(-1.5, 1.5)), data=st.data())
@pytest.mark.parametrize("fn", ACCEPTED, ids=lambda f: f.__name__)
def test_list_items_are_differentiated(fn, x, data):
    check_correct_or_refused(fn, [x])
    check_forward(fn, (x,), data)


def test_no_refusal_for_the_accepted_forms():
    x = np.array([0.3, -0.7, 1.1, 0.5])
    for fn in ACCEPTED:
        astad.grad(fn)(x)
        astad.jvp(fn, (x,), (np.ones(4),))


@settings(max_examples=fuzz_examples(10), deadline=None)
@given(n=st.integers(1, 5), writes=st.lists(st.tuples(st.integers(-6, 5), st.integers(0, 2)), min_size=1, max_size=5),
       data=st.data())
def test_static_indices_of_any_list(tmp_path_factory, n, writes, data):
    """A list of ``n`` numbers written at drawn indices (negative too; out of range: astad's error)."""
    from conftest import load_program
    lines = ["import numpy as np", "", "", "def f(x):", "    xs = [" + ", ".join(f"x[{k}] * {k + 1}.0" for k in range(n)) + "]"]
    for i, op in writes:
        lines.append(f"    xs[{i}] " + ["= np.sin(xs[0]) * x[1]", "+= xs[-1] * x[0]", "*= np.cos(xs[0])"][op])
    lines.append("    return " + " + ".join(f"xs[{k}] * {k + 0.5}" for k in range(n)))
    fn = load_program("\n".join(lines) + "\n", tmp_path_factory.mktemp("items")).f
    x = data.draw(arrays(np.float64, 5, elements=st.floats(-1.5, 1.5)))
    if any(not -n <= i < n for i, _ in writes):
        with pytest.raises(astad.AstadError, match="out of range"):
            astad.grad(fn)(x)
        return
    check_correct_or_refused(fn, [x])
    check_forward(fn, (x,), data)


# ------------------------------------------------------------------ refusals, each with astad's own error


def alias_name(x):
    xs = [x[0], x[1]]
    ys = xs
    xs[0] = x[1] * 2.0
    return ys[0] + xs[1]


def argument_list(xs):
    xs[0] = xs[0] * 2.0
    return xs[0] + xs[1]


def shared_inner(x):
    r = [x[0], x[1]]
    ys = [r, r]
    del_r = 0.0
    ys[0][1] = x[2] + del_r
    return ys[1][1] + ys[0][1]


def shared_array(x):
    ys = [x * 2.0]
    ys.append(ys[0])
    ys[0][1] = x[2]
    return np.sum(ys[1])


def array_named_too(x):
    a = x * 2.0
    ys = [a, x]
    ys[0][1] = x[2]
    return np.sum(a) + np.sum(ys[0])


def tuple_item(x):
    t = (x[0], x[1])
    t[0] = x[2]
    return t[0]


def through_run_time_list(x):
    rows = []
    for k in range(3):
        rows.append(x * k)
    rows[1][0] = x[2]
    return np.sum(rows[1])


def held_by_default(x):
    xs = [x[0], x[1]]
    g = lambda v=xs: v[0]  # noqa: E731  (the default is the list object itself)
    xs[0] = x[2]
    return g() + xs[0]


def seen_through_a_tuple(x):
    ys = [[x[0], x[1]], [x[2], x[0]]]
    t = (ys[0], 3)
    t[0][0] = np.exp(t[0][0])  # the list ys[0] changes: ys would see it
    return ys[0][0] + t[0][0]


def list_slice(x):
    xs = [x[0], x[1], x[2]]
    xs[0:2] = [x[2], x[1]]
    return xs[0]


def appended_to_itself(x):
    xs = [x[0], x[1]]
    xs.append(xs)
    xs[0] = x[2]  # xs[2] is xs: Python reads x[2] there
    return xs[2][0] * 1.0


def assigned_into_itself(x):
    xs = [x[0], x[1]]
    xs[0] = xs
    xs[1] = x[2] * 7.0  # xs[0] is xs: Python reads 7 * x[2] there
    return xs[0][1] * 1.0


def holds_a_list_holding_it(x):
    r = [x[0], x[1]]
    ys = [r, x[2]]
    r.append(ys)  # r[2] is ys, ys[0] is r: appending to r changes what ys[0] is
    return ys[0][2][1] * 1.0


def appended_to_itself_then_appended(x):
    xs = [x[0], x[1]]
    xs.append(xs)
    xs.append(x[2])  # xs[2] is xs: it has four elements now
    return xs[2][3] * 1.0


@pytest.mark.parametrize("fn, args, snippet, words", [
    (appended_to_itself, (), "xs[0] = x[2]", ["the list holds itself", "xs = xs[:i] + [v] + xs[i + 1:]"]),
    (assigned_into_itself, (), "xs[1] = x[2] * 7.0", ["the list holds itself"]),
    (holds_a_list_holding_it, (), "r.append(ys)", ["`ys` shares"]),
    (appended_to_itself_then_appended, (), "xs.append(x[2])", ["the list holds itself", "xs = xs + [v]"]),
    (alias_name, (), "xs[0] = x[1] * 2.0", ["`ys` shares", "xs = xs[:i] + [v] + xs[i + 1:]"]),
    (argument_list, ([np.ones(2), np.ones(2)],), "xs[0] = xs[0] * 2.0", ["argument", "xs = xs[:i] + [v]"]),
    (shared_inner, (), "ys[0][1] = x[2] + del_r", ["`r` shares"]),
    (shared_array, (), "ys[0][1] = x[2]", ["another element of `ys` holds it", "copy"]),
    (array_named_too, (), "ys[0][1] = x[2]", ["`a` shares", "copy"]),
    (tuple_item, (), "t[0] = x[2]", ["tuple", "t = t[:i] + (v,) + t[i + 1:]"]),
    (through_run_time_list, (), "rows[1][0] = x[2]", ["built at run time", "row = ys[i].copy()"]),
    (held_by_default, (), "xs[0] = x[2]", ["function made earlier"]),
    (seen_through_a_tuple, (), "t[0][0] = np.exp(t[0][0])", ["`ys` shares"]),
    (list_slice, (), "xs[0:2] = [x[2], x[1]]", ["not a slice", "xs = xs[:i] + [v] + xs[i + 1:]"]),
])
def test_refused_with_astad_error(fn, args, snippet, words):
    x = np.array([0.3, -0.7, 1.1])
    with pytest.raises(astad.AstadError) as e:
        astad.grad(fn, argnums=0)(*(args or (x,)))
    check_located(e.value, fn, snippet)
    for w in words:
        assert w in str(e.value), str(e.value)
