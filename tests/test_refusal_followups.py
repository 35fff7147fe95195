"""Refusals that named the wrong thing, or refused code Python runs (nothing wrong was computed).

Accepted code is checked against central differences in float64 (``check_correct_or_refused``, which also
runs the IR at every stage) and forward mode against reverse mode (``check_forward``); code that stays
refused is checked for astad's message: the construct named, the caret at the right column, what to write.
"""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from conftest import check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward


def refusal(fn, *args):
    """The error astad raises for ``grad(fn)(*args)`` (an AstadError that is not an InternalError)."""
    with pytest.raises(astad.AstadError) as info:
        astad.grad(fn)(*args)
    assert not isinstance(info.value, astad.InternalError), str(info.value)
    return info.value


def column_of(fn, snippet, occurrence=0):
    """(line, column) of ``snippet`` in ``fn``'s source in this file, 1-based, as astad reports them."""
    lines, first = inspect.getsourcelines(fn)
    found = [(first + k, line.index(snippet) + 1) for k, line in enumerate(lines) if snippet in line]
    return found[occurrence]


def assert_points_at(error, fn, snippet):
    assert (error.loc.line, error.loc.col) == column_of(fn, snippet), str(error)
    assert "^" in str(error) and error.hint


def accepted(fn, args, data=None):
    """``fn`` at ``args`` is differentiated right: reverse against central differences (never refused), and
    forward against reverse where hypothesis' ``data`` is given."""
    check_correct_or_refused(fn, list(args))
    if data is not None:
        check_forward(fn, list(args), data)


# --------------------------------------------------------------------------- 1. x.item(i, ...)


def item_flat(x):
    return x.item(2) * x.item(-1) + x.item(0)


def item_per_axis(x):
    return x.item(1, 0) ** 2 + x.item((0, 1)) * x[1:, 1:].item()


def item_run_time_index(x, i):
    return np.sin(x.item(i)) * x.item(i - 1)


def item_three_of_two(x):
    return x.item(1, 0, 0)


def item_float_index(x):
    return x.item(1.0)


@settings(max_examples=fuzz_examples(6), deadline=None)
@given(st.data())
def test_item_with_indices_is_the_element_numpy_reads(data):
    x = data.draw(st.lists(st.floats(-2, 2), min_size=3, max_size=6).map(np.array))
    accepted(item_flat, (x,), data)
    m = data.draw(st.lists(st.floats(-2, 2), min_size=1, max_size=1)).pop()
    y = np.array([[m, 0.5], [1.5, -m]])
    accepted(item_per_axis, (y,), data)
    z = data.draw(st.lists(st.floats(-2, 2), min_size=6, max_size=6).map(lambda v: np.array(v).reshape(3, 2)))
    accepted(item_run_time_index, (z, data.draw(st.integers(1, 5))), data)


def test_item_refusals_name_the_indices():
    e = refusal(item_three_of_two, np.ones((2, 2)))
    assert "3 indices for an array of 2 dimensions" in e.message and "x.item(i, j, ...)" in e.hint
    assert_points_at(e, item_three_of_two, "x.item")
    e = refusal(item_float_index, np.ones(3))
    assert "integer indices, not float" in e.message
    assert_points_at(e, item_float_index, "x.item")


# --------------------------------------------------------------------------- 1. np.array of nested lists


def nested_of_elements(x):
    a = np.array([[x[0]], [x[1] * 2.0]])
    return np.sum(a * a * np.arange(1.0, 3.0)[:, None])


def nested_constants(x):
    return np.sum(np.array([[0.0], [2.0]]) * x)


def nested_mixed(x, s):
    a = np.array([[x[0], s], (x, x * s)[1]])  # a list and an array, rows of one matrix
    return np.sum(np.sin(a) * np.arange(4.0).reshape(2, 2))


def nested_run_time_lists(x):
    rows = []
    for i in range(2):
        rows.append(x[i] * x)
    a = np.array([rows, rows])
    return np.sum(a[0] * a[1] * np.arange(4.0).reshape(2, 2))


def nested_arrays(x):
    a = np.array([[x, 2.0 * x], (x * x, x)])
    return np.sum(a * np.arange(4.0).reshape(2, 2, 1))


def nested_ints_and_bools(x):
    a = np.array([[1, 2], [True, 3]])
    return np.sum(a * x) + np.sum(a)


def nested_ragged(x):
    return np.sum(np.array([[x[0], x[1]], [x[0]]]))


@settings(max_examples=fuzz_examples(6), deadline=None)
@given(st.data())
def test_np_array_of_nested_lists_is_their_stack(data):
    x = data.draw(st.lists(st.floats(-2, 2), min_size=2, max_size=2).map(np.array))
    s = data.draw(st.floats(-2, 2))
    accepted(nested_of_elements, (x,), data)
    accepted(nested_constants, (np.array([[x[0]], [x[1]]]),), data)
    accepted(nested_mixed, (x, s), data)
    accepted(nested_run_time_lists, (x,), data)
    accepted(nested_arrays, (x,), data)
    accepted(nested_ints_and_bools, (x,))


def test_np_array_of_a_ragged_nesting_is_refused():
    e = refusal(nested_ragged, np.ones(2))
    assert "ragged nesting" in e.message and "(1,) and (2,)" in e.message and "one length" in e.hint
    assert_points_at(e, nested_ragged, "np.array")


# --------------------------------------------------------------------------- 1. lists of functions


def functions_appended(x):
    fs = [np.sin]
    fs.append(lambda v: v * 3.0)
    gs = fs
    return gs[1](x) + fs[0](x) * len(fs)


def closures_appended_in_unrolled_loop(x, ws):
    fs = []
    for w in ws:
        fs.append(lambda v: v * w)  # Python's late binding: every one reads the last w
    return fs[0](x) + 10.0 * fs[1](x)


def closures_with_defaults(x, ws):
    fs = []
    for w in ws:
        fs.append(lambda v, w=w: v * w)
    return fs[0](x) + 10.0 * fs[1](x)


def lambdas_of_a_comprehension(x):
    fs = [lambda v, k=k: v * k for k in range(3)]
    return fs[1](x)


def square(v):
    return v * v


def functions_appended_in_a_loop(x):
    fs = []
    for k in range(2):
        fs.append(square)
    return fs[0](x)


def test_functions_appended_to_a_list_known_element_by_element():
    for x in (1.5, -0.25):
        accepted(functions_appended, (x,))
        accepted(closures_appended_in_unrolled_loop, (x, [2.0, -3.0]))
        accepted(closures_with_defaults, (x, [2.0, -3.0]))


def test_a_list_of_functions_built_at_run_time_is_refused_by_name():
    e = refusal(lambdas_of_a_comprehension, 1.5)
    assert "a comprehension makes a list of functions (`<lambda>`)" in e.message
    assert "fs = [f, g, h]" in e.hint and "lambda v, k: v * k" in e.hint
    assert_points_at(e, lambdas_of_a_comprehension, "lambda v, k=k")
    e = refusal(functions_appended_in_a_loop, 1.5)
    assert "a function is appended to a list in a loop (`square`)" in e.message
    assert_points_at(e, functions_appended_in_a_loop, "square)")


# --------------------------------------------------------------------------- 1. map of a decorated helper


@astad.reverse
def decorated(v):
    return np.sin(v) * v


def map_of_pairs(xs):
    ys = list(map(lambda v: decorated(v), xs))
    return ys[0][0] * ys[1][0]


def comprehension_of_pairs(xs):
    ys = [decorated(v) for v in xs]
    value, _ = ys[1]
    return value - ys[0][0]


def map_of_pairs_over_an_array(x):
    ys = list(map(lambda v: decorated(v), x))
    return ys[0][0]


def test_a_list_of_a_decorated_helpers_pairs_is_python_s():
    for xs in ([1.0, 2.0], [-0.5, 0.75]):
        accepted(map_of_pairs, (xs,))
        accepted(comprehension_of_pairs, (xs,))


def test_pairs_in_a_run_time_list_are_refused_with_the_value_to_write():
    e = refusal(map_of_pairs_over_an_array, np.array([1.0, 2.0]))
    assert "a list built at run time" in e.message and "returns a pair (value, pullback)" in e.message
    assert "`decorated(...)[0]`" in e.hint
    assert_points_at(e, map_of_pairs_over_an_array, "map(")


# --------------------------------------------------------------------------- 2. +x, f32 += f64, list(xs)


def plus_then_update(x):
    y = +x
    y[0] = y[1] * 3.0
    return np.sum(y * x)  # x keeps its old value (and derivative)


def plus_then_in_place(x):
    y = +x
    y *= 2.0
    return np.sum(y * x) + x[0]


def plus_of_own_copy(x):
    z = x.copy()
    y = +z
    y[1] = 0.0
    return np.sum(z * z) + np.sum(y)


def plus_of_a_slice(x):
    y = +x[0:2]
    y += 1.0
    return np.sum(y * x[:2]) + np.sum(x)


def plus_of_a_python_bool(x, b):
    k = +b  # +True is the int 1
    return x[k] * 2.0 + isinstance(k, bool)


def plus_of_a_mask(x):
    return np.sum(x * +(x > 0))


def f32_plus_f64(x):
    y = x.astype(np.float32)
    y += np.float64(1.1)
    return np.sum(y * y)


def f32_times_f64_array(x, w):
    y = x.astype(np.float32)
    y *= w
    return np.sum(y.astype(np.float64) * x)


def f32_divided_value(x):
    y = x.astype(np.float32)
    y /= np.float64(3.0)
    return y


def f32_updated_while_another_name_holds_it(x):
    y = x.astype(np.float32)
    z = y
    y += np.float64(1.1)
    return np.sum(z)


def int_plus_float(x):
    k = np.arange(3)
    k += 1.5
    return np.sum(x * k)


def copied_run_time_list(x):
    acc = []
    for i in range(3):
        acc.append(x[i] * 2.0)
    b = list(acc)
    b.append(x[0])
    return np.sum(np.stack(b)) + acc[0] * len(acc) + len(b)


def original_appended_after_copy(x):
    acc = []
    for i in range(3):
        acc.append(x * i)
    b = list(acc)
    acc.append(x)
    for i in range(2):
        b.append(x * x * i)
    return np.sum(np.stack(b) ** 2) * len(b) + np.sum(np.stack(acc)) * len(acc)


def copy_appended_under_another_name(x):
    acc = []
    for i in range(3):
        acc.append(x * i)
    b = list(acc)
    c = b
    b.append(x)
    return np.sum(np.stack(c))


def element_of_copy_updated(x):
    acc = []
    for i in range(3):
        acc.append(x * i)
    b = list(acc)
    y = b[1]
    y += 1.0  # the element is the same array in both lists
    return np.sum(np.stack(acc))


@settings(max_examples=fuzz_examples(3, long=6), deadline=None)
@given(st.data())
def test_code_python_accepts_is_differentiated(data):
    x = data.draw(st.lists(st.floats(-2, 2), min_size=3, max_size=3).map(np.array))
    w = data.draw(st.lists(st.floats(-2, 2), min_size=3, max_size=3).map(np.array))
    for fn in (plus_then_update, plus_then_in_place, plus_of_own_copy, plus_of_a_slice, copied_run_time_list,
               original_appended_after_copy):
        accepted(fn, (x,), data)
    accepted(plus_of_a_python_bool, (x, True), data)
    # float32 values: central differences with a step float32 resolves (the functions are at most quadratic);
    # stages=False: the cotangent of a float32 value that meets a float64 one is float64 in the generated code
    # and rounded to float32 by the IR interpreter, a difference within float32 precision that predates this
    for fn, args in ((f32_plus_f64, (x,)), (f32_times_f64_array, (x, w)), (f32_divided_value, (x,))):
        check_correct_or_refused(fn, list(args), eps=1e-2, rtol=1e-3, atol=1e-3, stages=False)


def test_f32_in_place_keeps_the_arrays_dtype_as_numpy():
    x, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.5, -2.0])
    for fn, args in ((f32_plus_f64, (x,)), (f32_times_f64_array, (x, w)), (f32_divided_value, (x,))):
        want = fn(*args)
        value, _ = astad.reverse(fn)(*args)
        assert np.asarray(value).dtype == np.asarray(want).dtype and np.array_equal(value, want)
    value, push = astad.forward(f32_divided_value)(x)
    assert value.dtype == np.float32 and np.allclose(push(np.ones(3)), np.float32(1 / 3))


def test_aliased_updates_stay_refused():
    x = np.array([1.0, 2.0, 3.0])
    for fn, snippet, names in ((f32_updated_while_another_name_holds_it, "y +=", "`z` shares its memory"),
                               (copy_appended_under_another_name, "b.append", "`c` shares its memory"),
                               (element_of_copy_updated, "y +=", "`acc` shares its memory")):
        e = refusal(fn, x)
        assert names in e.message
        assert_points_at(e, fn, snippet)
    e = refusal(int_plus_float, x)
    assert "cannot change int[3] into f64[3]" in e.message and "k = k + ..." in e.hint
    e = refusal(plus_of_a_mask, x)
    assert "positive" in e.message  # numpy has no +(bool array) either


# --------------------------------------------------------------------------- 4. the caret after a multi-line string


class WithStrings:
    def loss(self, x):
        print("""first
  second""", np.frobnicate(x))
        return np.sum(x)

    def plain(self, x):
        return np.frobnicate(x)


def test_the_caret_after_a_multi_line_string_in_an_indented_function():
    for fn, snippet in ((WithStrings().loss, 'np.frobnicate'), (WithStrings().plain, 'np.frobnicate')):
        with pytest.raises(astad.AstadError) as info:
            astad.grad(fn)(np.ones(2))
        e = info.value
        lines, first = inspect.getsourcelines(fn)
        want = next((first + k, line.index(snippet) + 1) for k, line in enumerate(lines) if snippet in line)
        assert (e.loc.line, e.loc.col) == want, str(e)
        quoted, caret = str(e).splitlines()[1:3]
        assert quoted[caret.index("^"):].startswith(snippet), str(e)


# --------------------------------------------------------------------------- 3. derivatives in a 0-d array


def scalar_function(x):
    return np.sin(x) * x


def scalar_and_vector(x, v):
    return np.sum(np.sin(x) * v)


def _derivatives(x):
    """Every derivative astad takes of ``scalar_function`` at ``x``, by name."""
    unit = np.ones_like(x) if isinstance(x, np.ndarray) else type(x)(1.0)
    return {
        "grad": astad.grad(scalar_function)(x),
        "value_and_grad": astad.value_and_grad(scalar_function)(x)[1],
        "vjp": astad.vjp(scalar_function, x)[1](1.0)[0],
        "pullback": astad.reverse(scalar_function)(x)[1](1.0)[0],
        "jacfwd": astad.jacfwd(scalar_function)(x),
        "jacrev": astad.jacrev(scalar_function)(x),
        "jacobian": astad.jacobian(scalar_function)(x),
        "hessian": astad.hessian(scalar_function)(x),
        "grad_grad": astad.grad(astad.grad(scalar_function))(x),
        "hvp": astad.hvp(scalar_function, (x,), (unit,))[0],
    }


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_derivatives_in_a_0d_array_are_0d_arrays(dtype):
    x = np.array(0.7, dtype=dtype)
    first = np.cos(0.7) * 0.7 + np.sin(0.7)
    second = -np.sin(0.7) * 0.7 + 2 * np.cos(0.7)
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    for name, d in _derivatives(x).items():
        assert type(d) is np.ndarray and d.shape == () and d.dtype == dtype, (name, repr(d))
        want = second if name in ("hessian", "grad_grad", "hvp") else first
        np.testing.assert_allclose(d, want, rtol=rtol, err_msg=name)
    g = astad.grad(scalar_and_vector, argnums=(0, 1))(np.array(0.7), np.ones(2))
    assert type(g[0]) is np.ndarray and g[0].shape == () and g[1].shape == (2,)


def test_derivatives_in_a_number_stay_numbers():
    for name, d in _derivatives(0.7).items():
        assert type(d) is float, (name, repr(d))
    for name, d in _derivatives(np.float64(0.7)).items():
        assert isinstance(d, np.float64) and not isinstance(d, np.ndarray), (name, repr(d))
