"""Indexing by integer arrays and boolean masks, steps and ``np.newaxis``, and
array updates (``y[i] = v``, ``y[a:b] = v``, ``y[mask] = v``, ``y[idx] += v``)
on arrays the function made, end to end: reverse mode against central finite
differences in float64 (``conftest.check_grad``) and the IR interpreter at
every stage; forward mode (``astad.jvp``) against finite differences and
against reverse mode (``<u, J v> == <J^T u, v>``); and the refusals (updating
an argument or a view of one)."""

import ast

import numpy as np
import pytest

import astad
from conftest import check_grad, check_stages

RNG = np.random.default_rng(7)
X = RNG.uniform(0.5, 1.5, 6)
M = RNG.uniform(-1.0, 1.0, (4, 3))
IDX = np.array([0, 2, 2, 5, 0])  # repeated on purpose: the cotangents of repeated reads add up
ROWS = np.array([3, 1, 1])
COLS = np.array([2, 0, 2])


# ---------------------------------------------------------------- reads

def gather(x, idx):
    return np.sum(x[idx] ** 2 * x[idx[::-1]])


def gather_literal(x):
    return np.sum(x[[1, 1, 4]] * x[np.array([0, 3, 3])])


def gather_rows_cols(m, rows, cols):
    return np.sum(np.sin(m[rows, cols])) + np.sum(m[:, cols] ** 2) + np.sum(m[1, cols] * m[rows, 2])


def gather_2d_index(m, rows):
    sel = m[np.stack([rows, rows[::-1]]), 1:]
    return np.sum(sel ** 3)


def masked(x):
    pos = x > 1.0
    return np.sum(x[pos] ** 2) + np.sum(x[x <= 1.0]) * np.max(x)


def masked_rows(m):
    return np.sum(np.tanh(m[m[:, 0] > 0.0]))


def masked_where(x):
    return np.sum(np.where(x > 1.0, x ** 2, 0.0))


def steps(x):
    return (np.sum(x[::2] * x[1::2]) + np.sum(x[::-1] * x) + np.sum(x[-1::-2] ** 3) + np.sum(x[4:0:-1] ** 2)
            + np.sum(x[1::3] ** 2))


def newaxis(x):
    outer = x[:, np.newaxis] * x[np.newaxis, :]
    return np.sum(outer ** 2) + np.sum(x[np.newaxis] * x[None, ::-1])


READS = [(gather, (X, IDX)), (gather_literal, (X,)), (gather_rows_cols, (M, ROWS, COLS)),
         (gather_2d_index, (M, ROWS)), (masked, (X,)), (masked_rows, (M,)), (masked_where, (X,)),
         (steps, (X,)), (newaxis, (X,))]


# ---------------------------------------------------------------- updates

def fill_loop(x):
    n = x.shape[0]
    out = np.zeros(n)
    out[0] = x[0]
    for i in range(1, n):
        out[i] = out[i - 1] * x[i]
    return np.sum(out ** 2)


def fill_loop_vector(x):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i]) * x[0]
    return out


def updates(x):
    y = np.zeros((3, 4))
    y[0] = x[:4]
    y[1:3, 1] = x[4:]
    y[:, 3] = 2.0 * x[0]
    y[2, 2] = x[5] * x[1]
    return y * x[2]


def aug_updates(x, idx):
    y = x.copy()
    y[idx] += x[0] * 2.0  # numpy: a repeated index adds once
    y[1:3] -= x[3:5] ** 2
    y[idx[:2]] *= x[5]
    y[4] /= x[1]
    return y


def repeated_write(x):
    y = np.ones(4)
    y[[0, 2, 0]] = x[:3]  # numpy keeps one write to y[0]: only that element of x reaches the result
    return y * x[3]


def masked_update(x):
    y = x ** 2
    y[x > 1.0] = 0.0
    y[y < 0.5] = x[0]
    return np.sum(y * x)


def masked_update_values(x):
    y = np.zeros(6)
    big = x > 1.0
    y[big] = np.sqrt(x[big])
    return y * x


def loop_carried_update(x):
    out = x * 1.0
    for k in range(3):
        out[k + 1] = out[k] * out[k + 1] + x[k]
        out[:2] += 0.5 * out[4:]
    return out


def update_in_branch(x):
    y = np.zeros(6)
    if x[0] > 1.0:
        y[2:4] = x[:2]
    else:
        y[::2] = x[1:4] ** 2
    return y * x


def moving_window(x):
    y = x.copy()
    for i in range(1, 6):
        y[i - 1:i + 1] = x[i] * y[i - 1]  # bounds known only at run time
    return np.sum(y * x)


def loop_needs_each_state(x):
    out = np.zeros(6)
    s = 0.0
    for i in range(6):
        out[i] = x[i] ** 2
        s = s + np.sum(np.sin(out) * x)  # the backward pass needs every iteration's `out`: not overwritten
    return s + np.sum(out[::-1] * x)


def state_kept_before_update(x):
    y = x * 1.0
    before = y * 2.0
    y[2:5] = 0.5
    after = y[1:3] + 1.0
    y[1] = before[3] * after[0]
    return np.sum(before * y) + np.sum(after)


UPDATES = [(moving_window, (X,)), (loop_needs_each_state, (X,)), (state_kept_before_update, (X,)), (fill_loop, (X,)), (fill_loop_vector, (X,)), (updates, (X,)), (aug_updates, (X, IDX[:3])),
           (repeated_write, (X,)), (masked_update, (X,)), (masked_update_values, (X,)),
           (loop_carried_update, (X,)), (update_in_branch, (X,)), (update_in_branch, (X[::-1],))]


@pytest.mark.parametrize("fn,args", READS + UPDATES, ids=lambda v: getattr(v, "__name__", ""))
def test_reverse_against_finite_differences(fn, args):
    check_grad(fn, args)
    arrays = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    if np.ndim(fn(*arrays)) == 0:
        check_stages(fn, arrays)


@pytest.mark.parametrize("fn,args", READS + UPDATES, ids=lambda v: getattr(v, "__name__", ""))
def test_forward_against_finite_differences_and_reverse(fn, args):
    rng = np.random.default_rng(1)
    floats = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
    tangents = [rng.normal(size=np.shape(a)) if i in floats else None for i, a in enumerate(args)]
    value, jv = astad.jvp(fn, list(args), tangents)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    eps = 1e-6

    def at(h):
        return fn(*[a + h * t if t is not None else a for a, t in zip(args, tangents)])

    np.testing.assert_allclose(jv, (at(eps) - at(-eps)) / (2 * eps), rtol=1e-5, atol=1e-6)
    u = rng.normal(size=np.shape(value))
    _, pullback = astad.reverse(fn)(*args)
    cts = pullback(u if np.ndim(value) else float(u))
    lhs = float(np.sum(u * jv))
    rhs = sum(float(np.sum(cts[i] * tangents[i])) for i in floats)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


def test_arguments_are_left_alone():
    x = X.copy()
    astad.grad(lambda_free_update)(x)
    np.testing.assert_array_equal(x, X)


def lambda_free_update(x):
    y = x.copy()
    y[0] = 5.0
    return np.sum(y * x)


def test_an_owned_array_is_updated_in_place_and_a_shared_one_is_copied():
    rev = astad.reverse(updates)
    rev(X)
    src = rev.source
    assert "y = np.zeros((3, 4))" in src and ".copy()" not in src.split("def updates_backward")[0]


def test_a_loop_filling_an_array_updates_it_in_place_both_ways():
    """``out[i] = ...`` in a loop: no copy of ``out`` (forward) and no one-hot array for its
    cotangent (backward) in any iteration, so the derivative takes time linear in n."""
    rev = astad.reverse(fill_loop)
    rev(X)
    loops = ["\n".join(ast.unparse(s) for s in node.body) for node in ast.walk(ast.parse(rev.source))
             if isinstance(node, ast.For)]
    assert len(loops) == 2
    for body in loops:
        assert ".copy()" not in body and "np.zeros" not in body, body


# ---------------------------------------------------------------- refusals

def update_argument(x):
    x[0] = 1.0
    return np.sum(x)


def update_view_of_argument(x):
    a = x[0:2]
    a[0] = 1.0
    return np.sum(a)


def update_aliased(x):
    y = np.zeros(3)
    z = y
    y[0] = x[0]
    return np.sum(z)


def update_through_view(x):
    y = np.zeros(4)
    v = y[1:]
    y[1] = x[0]
    return np.sum(v * x[1:])


def assign_float_into_int(x):
    y = np.zeros(3, dtype=np.int64)
    y[0] = x[0]
    return np.sum(y)


def update_list_element(x):
    xs = [x, x]
    ys = xs  # (the same list: `xs[0] = ...` alone is accepted, tests/test_list_item_assignment.py)
    xs[0] = x * 2.0
    return np.sum(ys[0])


@pytest.mark.parametrize("fn,says", [
    (update_argument, "argument"), (update_view_of_argument, "argument"), (update_aliased, "`z`"),
    (update_through_view, "`v`"), (assign_float_into_int, "truncate"), (update_list_element, "list"),
])
def test_refused_with_the_place_and_a_hint(fn, says):
    with pytest.raises(astad.AstadError) as info:
        astad.grad(fn)(X[:4].copy())
    err = info.value
    assert not isinstance(err, astad.InternalError)
    text = str(err)
    assert says in text and "test_numpy_indexing.py:" in text and "^" in text
    if fn.__name__.startswith("update_") and fn is not update_list_element:
        assert ".copy()" in text


def repeated_write_squared(x):
    y = np.ones(4)
    y[[0, 2, 0]] = x[:3] * x[3:]
    return np.sum(y ** 2 * x[3])


@pytest.mark.parametrize("fn,args", [(fill_loop, (X,)), (masked_update, (X,)), (gather, (X, IDX)),
                                     (repeated_write_squared, (X,))], ids=lambda v: getattr(v, "__name__", ""))
def test_second_derivatives_against_finite_differences_of_the_gradient(fn, args):
    """Forward over reverse: the rules of gather, scatter, setitem and last_writes have JVPs too."""
    rest = args[1:]
    hess = astad.hessian(fn)(*args)
    g = astad.grad(fn)
    eps = 1e-5
    fd = np.stack([(g(args[0] + eps * e, *rest) - g(args[0] - eps * e, *rest)) / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(hess, fd, rtol=1e-5, atol=1e-6)


PUT_IDX = np.array([[0, 2], [1, 1], [3, 0]])  # along axis 1 (row 1 writes twice at column 1)
PUT_IDX_0 = np.array([[2, 0, 1, 2], [0, 0, 2, 1]])  # along axis 0


def _put_along_1(x, v):
    y = np.zeros((3, 4))
    y[:, :] = x
    np.put_along_axis(y, PUT_IDX, v * 2.0, axis=1)
    return np.sum(np.sin(y) * np.arange(12.0).reshape(3, 4))


def _put_along_0(x, v):
    y = x * 1.0
    np.put_along_axis(y, PUT_IDX_0, np.tanh(v), axis=0)
    return np.sum(np.sin(y) * np.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize("f", [_put_along_1, _put_along_0])
def test_put_along_axis_is_an_update_of_a_made_array(f):
    """np.put_along_axis(y, idx, v, axis) is y[ix] = v (a repeated index in a row: the write numpy keeps)."""
    rng = np.random.default_rng(3)
    x, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 2) if f is _put_along_1 else (2, 4))
    gx, gv = astad.grad(f, argnums=(0, 1))(x, v)

    def fd(g, a):
        out = np.zeros(a.shape)
        for i in np.ndindex(a.shape):
            e = np.zeros(a.shape)
            e[i] = 1e-6
            out[i] = (g(a + e) - g(a - e)) / 2e-6
        return out

    rx, rv = fd(lambda a: f(a, v), x), fd(lambda b: f(x, b), v)
    np.testing.assert_allclose(gx, rx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gv, rv, rtol=1e-6, atol=1e-8)
    tx, tv = rng.normal(size=x.shape), rng.normal(size=v.shape)
    _, t = astad.jvp(f, (x, v), (tx, tv))
    assert t == pytest.approx(float(np.sum(rx * tx) + np.sum(rv * tv)), rel=1e-6, abs=1e-8)


def _put_into_argument(x):
    np.put_along_axis(x, np.array([0, 1]), 1.0, axis=0)
    return np.sum(x)


def test_put_along_axis_into_an_argument_is_refused():
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.grad(_put_into_argument)(np.ones(3))
    assert "put_along_axis" in str(info.value) and "x.copy()" in str(info.value)


PUT_IDX_LOOP = np.array([[1], [0]])


def _put_in_a_loop(x, n):
    y = np.zeros((2, 3))
    for i in range(n):
        np.put_along_axis(y, PUT_IDX_LOOP, x[i] * y[:, :1] + x[i], axis=1)
    return np.sum(y * y)


def test_put_along_axis_in_a_loop_carries_the_updated_array():
    """The loop must carry `y` (np.put_along_axis assigns it), else the update would be lost."""
    x = np.array([0.3, 0.7, -0.4])
    value, grad = astad.value_and_grad(_put_in_a_loop)(x, 3)
    assert value == pytest.approx(_put_in_a_loop(x, 3), rel=1e-14)
    fd = [(_put_in_a_loop(x + 1e-6 * e, 3) - _put_in_a_loop(x - 1e-6 * e, 3)) / 2e-6 for e in np.eye(3)]
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
