"""Adversarial checks, session 11 (s11-advX): everyday Python + numpy code in reverse and forward mode.

1. A numpy float32 (or int32) scalar that may be a Python number when the code runs (``weak``): the join of
   ``x32[0]`` with a Python bool (``z = x32[0] * 2 if c else True``), or ``sum(x32[m])`` (the int 0 where ``m``
   selects nothing).  The type rule of the next operation sampled it as a Python number of dtype float32 and
   failed with an internal error (KeyError: 'float32').  Where the operation gives one dtype either way
   (``k32[0] if c else True`` times 1.5: float64) it is accepted; where not (``s * 2.0``: a float32 or a
   Python float) it is astad's refusal at the line.

2. ``~mask`` (and ``~k`` of ints) was refused as "this unary operator is not supported", while astad's own
   hint for ``-mask`` says "~m or np.logical_not(m) for a bool m": ordinary numpy code (``x[~b]``,
   ``np.where(~(x > 0), ...)``) falsely refused.  ``~`` is now the discrete entry ``invert`` (no derivative:
   its result is bools or ints), printed as written (``~True`` is -2 in Python, as in the generated code).

3. ``ys[a:b]`` (and ``ys[::2]``, ``ys[::-1]``) of a list built at run time (``append`` in a loop, a
   comprehension) was refused with "a list takes a single integer index", though the README lists
   slicing among what lists support (it worked only for lists known element by element).  Now the entry
   ``list_slice`` (bounds known when transforming; a new list of the same elements), whose transpose is
   ``list_unslice`` (zeros like each element, the slice's cotangents where it took them).

4. ``sum(ys)`` of a list of arrays built at run time (``ys.append(x * i)`` in ``for i in range(n)``) was typed
   as an array of the elements' shape, but where the loop runs no iteration Python's sum is the int 0:
   ``np.sum(sum(ys))`` at n = 0 crashed in the generated code (AttributeError: 'int' object has no attribute
   'sum'), and ``sum(ys).shape``, ``len(sum(ys))`` were the elements' where Python raises.  Refused now, as
   the sum of an array's rows already was, unless the start has the elements' shape (``sum(ys, zeros)``).

5. ``a, b = x`` of an array of two rows (``x`` of shape (2,) or (2, n), the first axis known when
   transforming), an everyday numpy idiom, was refused ("astad unpacks tuples and lists"); so was
   ``a, b, c = ys`` of a list made by a comprehension of known length.  Now the rows ``x[0], x[1]`` (views
   of a matrix: an update through one is refused as for ``r = m[0]``), as Python's iteration gives them; a
   number of names other than the rows is refused (Python raises ValueError).

6. ``for a, b in pts:`` over the rows of an array of shape (n, 2) (and ``for i, (a, b) in enumerate(pts)``,
   ``for (a, b), c in zip(pts, w)``) was refused ("the loop variables must be names"): each row is
   unpacked now as 5. does, in the loop's body.

7. ``[0.0] * 3`` and ``[x] * k`` (``k * [v]``, ``(v, w) * 2``) with ``k`` known when transforming were
   refused ("a list is used where a number or an array is expected"): the everyday way to start
   accumulators.  Now the same elements ``k`` times (the same objects: an in-place update of one array
   through the list is refused, as for ``[y, y]``).

8. ``a, b = pair(v)`` with ``def pair(v): return v, v`` (a tuple holding one computed value twice, nested
   too: ``a, (b, c) = v, (v, w)``) failed with an internal error ("structural pass: not linear ... unbound
   't2'"): the first name took over the temporary's binding and the second read a variable no longer
   bound.  A variable an unpacking assigns more than once keeps its name now; each name reads it.

9. ``assert x.shape == (3, 4)`` and ``if x.shape == y.shape:`` were refused ("a tuple is used where a
   number or an array is expected"): shapes are known when transforming, so the comparison of two
   tuples of known numbers (``==``, ``!=``; a tuple never equals a list, as in Python) is decided then.

10. A function whose ``assert`` statements pytest rewrote (one defined in a test module) was refused with
    "the file was edited since the module was imported ... reload the module": pytest rewrites the asserts
    of test modules as it imports them, so the bytecode is not the file's text, and reloading does not
    help.  The refusal says so now and what to do (another module, or pytest's marker against rewriting).

11. ``np.sum([a, b])``, ``np.max([x[0], x[1], 0.5])``, ``np.mean([f(v) for v in x])`` (a reduction of a list or
    tuple of numbers or of arrays of one shape, written out or made by a comprehension of known length)
    were refused ("a list is used where a number or an array is expected"): numpy reads the list as
    ``np.array(xs)``; astad now reduces its stack.  (A list whose length is known only when running is
    still refused: numpy's sum of an empty list is 0.0, a stack of it raises.)

12. ``list(x)`` of an array (``xs = list(x); xs.append(1.0)``) was refused ("list() takes one list, tuple or
    comprehension"): now the list of its rows where its length is known when transforming (numpy scalars of
    a vector, views of a matrix's rows: an in-place update through one is refused).

Oracles: the plain call (its value, its type), central finite differences in float64, forward mode.
"""

import math

import numpy as np
import pytest

import astad
from conftest import central_differences, load_program



def _checked_at(x, fn):
    """``value_and_grad(fn)(x)``'s value against ``fn(x)``, its gradient against central differences, and
    ``jvp(fn)`` at ``x`` against the gradient (forward against reverse); the value."""
    value, g = astad.value_and_grad(fn)(x)
    assert value == pytest.approx(fn(x), rel=1e-14)
    np.testing.assert_allclose(g, central_differences(fn, x), rtol=1e-7, atol=1e-9)
    t = np.array([0.3, -0.7, 1.1])
    assert astad.jvp(fn, (x,), (t,))[1] == pytest.approx(g @ t, rel=1e-12)
    return value

# ---- 1. a narrow numpy scalar that may be a Python number -------------------------------------------

def bool_or_float32(x32, c):
    z = x32[0] * 2 if c else True
    return z * 1.0


def sum_of_masked_float32(x32):
    s = sum(x32[x32 > 0])
    return s * 2.0


def bool_or_int32(k32, x, c):
    z = k32[0] if c else True
    return z * x


@pytest.mark.parametrize("fn,args", [(bool_or_float32, (np.array([1.5, 2.0], np.float32), True)),
                                     (sum_of_masked_float32, (np.array([1.0, -2.0], np.float32),))])
def test_narrow_scalar_that_may_be_a_python_number_is_refused_at_its_line(fn, args):
    with pytest.raises(astad.AstadTypeError) as e:
        astad.reverse(fn)(*args)
    message = str(e.value)
    assert "float32" in message and "Python number" in message and "^" in message
    assert e.value.loc.line == fn.__code__.co_firstlineno + 2


@pytest.mark.parametrize("c", [True, False])
def test_int32_or_bool_times_a_float_is_accepted(c):
    k32 = np.array([3], np.int32)
    value, g = astad.value_and_grad(bool_or_int32, argnums=1)(k32, 1.5, c)
    want = bool_or_int32(k32, 1.5, c)
    assert value == want and type(value) is type(want)
    assert g == pytest.approx(central_differences(lambda x: bool_or_int32(k32, x, c), 1.5), rel=1e-8)
    assert astad.jvp(bool_or_int32, (k32, 1.5, c), (None, 1.0, None))[1] == pytest.approx(g, rel=1e-12)


# ---- 2. ~mask -------------------------------------------------------------------------------------

def masked_by_invert(x, b):
    return np.sum(x[b] ** 2) + np.sum(x[~b]) + np.sum(np.where(~(x > 0), x, 2.0 * x))


def times_inverted_int(x, k, c):
    return np.sum(x * ~k) + (~c) * x[0]


@pytest.mark.parametrize("fn,other", [(masked_by_invert, (np.array([True, False, True]),)),
                                      (times_inverted_int, (np.array([1, -2, 0]), 3)),
                                      (times_inverted_int, (np.array([1, -2, 0], np.int32), True))])
def test_invert_of_masks_and_ints(fn, other):
    x = np.array([0.5, -1.25, 2.0])
    value, g = astad.value_and_grad(fn)(x, *other)
    want = fn(x, *other)
    assert value == want and type(value) is type(want)
    np.testing.assert_allclose(g, central_differences(lambda v: fn(v, *other), x), rtol=1e-7, atol=1e-9)
    t = np.array([0.3, -0.7, 1.1])
    assert astad.jvp(fn, (x, *other), (t,) + (None,) * len(other))[1] == pytest.approx(g @ t, rel=1e-12)


def test_invert_of_a_float_is_refused_at_its_line():
    def inverted_float(x):
        return np.sum(~x)

    with pytest.raises(astad.AstadTypeError) as e:
        astad.grad(inverted_float)(np.ones(2))
    assert "invert" in str(e.value) and "^" in str(e.value)


# ---- 3. slices of run-time lists --------------------------------------------------------------------

def sum_of_list_slices(x, n):
    ys = []
    for i in range(n):
        ys.append(x * (i + 1.0))
    return np.sum(sum(ys[1:3], x * 0.0)) * 2.0 + np.sum(np.stack(ys[::2])) + np.sum(sum(ys[-1:], x * 0.0))


def slice_then_update(x):
    ys = [x * (i + 1.0) for i in range(4)]
    zs = ys[1:][::-1]
    zs[0] = x * 7.0
    zs.append(x * x)
    return np.sum(np.stack(zs) * np.arange(4.0)[:, None]) + np.sum(np.stack(ys) ** 2)


def fold_over_a_reversed_slice(x, n):
    ys = []
    for i in range(n):
        ys.append(x * i)
    out = x * 0.0
    for y in ys[::-1][1:]:
        out = out * 0.5 + y
    return np.sum(out ** 2)


@pytest.mark.parametrize("fn,rest", [(sum_of_list_slices, (5,)), (sum_of_list_slices, (1,)), (slice_then_update, ()),
                                     (fold_over_a_reversed_slice, (5,)), (fold_over_a_reversed_slice, (0,))])
def test_slices_of_run_time_lists(fn, rest):
    x = np.array([0.5, -1.25])
    want = fn(x, *rest)
    value, pullback = astad.reverse(fn)(x, *rest)
    assert value == pytest.approx(want, rel=1e-13)
    (dx, *_) = pullback(1.0)
    np.testing.assert_allclose(dx, central_differences(lambda v: fn(v, *rest), x), rtol=1e-7, atol=1e-9)
    t = np.array([0.3, -0.7])
    assert astad.jvp(fn, (x, *rest), (t,) + (None,) * len(rest))[1] == pytest.approx(dx @ t, rel=1e-12, abs=1e-14)


# ---- 4. sum of a run-time list of arrays ------------------------------------------------------------

def sum_of_appended_arrays(x, n):
    ys = []
    for i in range(n):
        ys.append(x * (i + 1.0))
    return np.sum(sum(ys)) + x[0]


def sum_of_appended_arrays_from_zeros(x, n):
    ys = []
    for i in range(n):
        ys.append(x * (i + 1.0))
    return np.sum(sum(ys, np.zeros(2)) ** 2) + x[0]


def test_sum_of_a_list_of_arrays_that_may_be_empty_is_refused():
    with pytest.raises(astad.AstadTypeError) as e:
        astad.grad(sum_of_appended_arrays)(np.ones(2), 0)
    assert "known only when it runs" in str(e.value) and "^" in str(e.value)


@pytest.mark.parametrize("n", [0, 3])
def test_sum_of_a_list_of_arrays_with_a_start(n):
    x = np.array([0.5, -1.25])
    value, g = astad.value_and_grad(sum_of_appended_arrays_from_zeros)(x, n)
    assert value == pytest.approx(sum_of_appended_arrays_from_zeros(x, n), rel=1e-13)
    np.testing.assert_allclose(g, central_differences(lambda v: sum_of_appended_arrays_from_zeros(v, n), x),
                               rtol=1e-7, atol=1e-9)


# ---- 5. unpacking an array's rows ------------------------------------------------------------------

def unpack_vector(x):
    a, b = x
    return a * b ** 2


def unpack_matrix_rows(x):
    r0, r1 = np.outer(x, x)
    return np.sum(r0 * 3.0 + r1 ** 2)


def unpack_list_of_known_length(x):
    a, b, c = [x * i for i in range(3)]
    return np.sum(a + b * c)


def unpack_then_update_the_base(x):
    y = x.copy()
    a, b = y
    y[0] = 10.0
    return a * b


@pytest.mark.parametrize("fn", [unpack_vector, unpack_matrix_rows, unpack_list_of_known_length,
                                unpack_then_update_the_base])
def test_unpacking_an_arrays_rows(fn):
    x = np.array([0.5, -1.25])
    value, g = astad.value_and_grad(fn)(x)
    want = fn(x)
    assert value == pytest.approx(want, rel=1e-14) and type(value) is type(want)
    np.testing.assert_allclose(g, central_differences(fn, x), rtol=1e-7, atol=1e-9)
    t = np.array([0.3, -0.7])
    assert astad.jvp(fn, (x,), (t,))[1] == pytest.approx(g @ t, rel=1e-12)


def test_unpacking_into_another_number_of_names_is_refused():
    def three_names(x):
        a, b, c = x
        return a

    def rows_updated_through_a_name(x):
        m = np.outer(x, x) * 1.0
        r0, r1 = m
        r0 += 1.0
        return np.sum(m)

    with pytest.raises(astad.AstadTypeError, match="2 rows into 3 names"):
        astad.grad(three_names)(np.ones(2))
    with pytest.raises(astad.AstadError, match="shares its memory"):
        astad.grad(rows_updated_through_a_name)(np.ones(2))


# ---- 6. for a, b in pts ----------------------------------------------------------------------------

def loop_over_pairs(pts, w):
    s = 0.0
    for a, b in pts:
        s = s + a * b ** 2
    for i, (a, b) in enumerate(pts):
        s = s * 0.5 + a * w[i] + b
    for (a, b), c in zip(pts, w):
        if a > 0:
            continue
        s = s + a * c - b
    return s


def loop_over_pairs_of_rows(m):
    s = np.zeros(2)
    for r0, r1 in reversed(m):
        s = s * 0.5 + r0 * r1
    return np.sum(s)


@pytest.mark.parametrize("fn,args", [(loop_over_pairs, (np.arange(6.0).reshape(3, 2) * 0.3 - 0.5,
                                                         np.array([0.3, -0.2, 1.1]))),
                                     (loop_over_pairs_of_rows, (np.arange(12.0).reshape(3, 2, 2) * 0.1 - 0.4,))])
def test_loops_over_rows_unpacked_into_names(fn, args):
    value, g = astad.value_and_grad(fn)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-14)
    np.testing.assert_allclose(g, central_differences(lambda v: fn(v, *args[1:]), args[0]), rtol=1e-7, atol=1e-9)
    t = np.linspace(-1.0, 1.0, args[0].size).reshape(args[0].shape)
    tangent = astad.jvp(fn, args, (t,) + (None,) * (len(args) - 1))[1]
    assert tangent == pytest.approx(np.sum(g * t), rel=1e-12)


# ---- 8. a, b = v, v ----------------------------------------------------------------------------------

def _pair(v):
    return v, v


def _nested(v):
    return v, (v, v * 2.0)


def unpack_a_pair_of_one_value(x):
    a, b = _pair(x[1] * 2.0)
    c, (d, e) = _nested(np.cos(x))
    return a * b + np.sum(c * d + e)


def test_unpacking_one_value_twice():
    _checked_at(np.array([0.5, -1.25, 2.0]), unpack_a_pair_of_one_value)

# ---- 7. [v] * k -------------------------------------------------------------------------------------

def accumulators_from_a_repeated_list(x):
    acc = [0.0] * len(x)
    for i in range(len(x)):
        acc[i] = acc[i] + x[i] * i
    ys = 2 * [x[0], x[1] * x[0]]
    a, b, c, d = (x[1], 2.0) * 2
    return sum(acc) * len(ys) + sum(ys) + a * b + c * d


def repeated_array_updated_in_place(x):
    ys = [x * 1.0] * 2
    ys[0] += 1.0
    return np.sum(ys[1] * x)


def test_repeated_lists():
    x = np.array([0.5, -1.25, 2.0])
    _checked_at(x, accumulators_from_a_repeated_list)
    with pytest.raises(astad.AstadError, match="another element of the list holds it"):
        astad.grad(repeated_array_updated_in_place)(x)


# ---- 9. x.shape == (3, 4) -----------------------------------------------------------------------------

CHECKED_SHAPES = """
import numpy as np


def checked_shapes(x, y):
    assert x.shape == (3, 4), "shape"
    assert x.shape != (4, 3) and x.shape != [3, 4]
    if x.shape == y.shape:
        return np.sum(x * y)
    return np.sum(x ** 2)
"""


@pytest.mark.parametrize("other", [np.ones((3, 4)) * 0.5, np.ones((4, 3))])
def test_comparisons_of_shapes(other, tmp_path):
    checked_shapes = load_program(CHECKED_SHAPES, tmp_path, "shapes").checked_shapes  # (pytest rewrites asserts here)
    x = np.arange(12.0).reshape(3, 4) * 0.1
    value, g = astad.value_and_grad(checked_shapes)(x, other)
    assert value == pytest.approx(checked_shapes(x, other), rel=1e-14)
    np.testing.assert_allclose(g, central_differences(lambda v: checked_shapes(v, other), x), rtol=1e-7, atol=1e-9)
    with pytest.raises(AssertionError, match="shape"):
        astad.grad(checked_shapes)(x.T.copy(), other)


# ---- 10. asserts rewritten by pytest -----------------------------------------------------------------

def asserting_in_a_test_module(x):
    assert x > 0.0, "positive"
    return x * 2.0


def test_asserts_rewritten_by_pytest_are_named_in_the_refusal():
    # (this module is a test module: pytest rewrote the assert above, unless it was told not to)
    if "@pytest_ar" not in asserting_in_a_test_module.__code__.co_names:
        pytest.skip("pytest's assertion rewriting is off")
    with pytest.raises(astad.SourceUnavailableError, match="rewritten by pytest") as e:
        astad.grad(asserting_in_a_test_module)(1.5)
    assert "PYTEST_DONT_REWRITE" in str(e.value)


# ---- 11. reductions of lists ---------------------------------------------------------------------------

def reductions_of_lists(x):
    return (np.sum([np.sum(x), x[0] * 2.0]) + np.mean([v ** 2 for v in x]) + np.max([x[0], x[1], 0.5])
            + np.min((x[2], 1.0)) + np.sum([x, x * 2.0], axis=0) @ x + np.std([x[0], x[1], x[2]]))


def test_reductions_of_lists():
    x = np.array([0.5, -1.25, 2.0])
    value = _checked_at(x, reductions_of_lists)
    assert type(value) is type(reductions_of_lists(x))


# ---- 12. list(x) of an array ---------------------------------------------------------------------------

def list_of_an_array(x):
    xs = list(x)
    xs.append(1.0)
    rows = list(np.outer(x, x))
    rows[0] = rows[0] * 2.0
    return np.sum(np.array(xs) ** 2) + np.sum(np.stack(rows) ** 2) + sum(list(x)) * max(list(x))


def test_list_of_an_array():
    _checked_at(np.array([0.5, -1.25, 2.0]), list_of_an_array)
