"""numpy arguments astad refused before: ``np.diff(x, prepend=..., append=...)`` (joined along the axis
first, a number broadcast to length 1 there), ``np.sum/np.prod/np.max/np.min(x, initial=..., where=mask)``
(also as methods: the reduction of ``np.where(mask, x, identity)`` combined with ``initial``) and
``np.add.at(y, idx, v)`` (a scatter-add in place: ``add_at(y, v, idx)``, checked as an in-place update:
refused where another name, a view or the caller sees ``y``).  Derivatives against central finite
differences in float64 and forward vs reverse ``<u, J v> == <J^T u, v>``, over drawn shapes, axes,
masks and indices."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import astad
from conftest import check_correct_or_refused, fuzz_examples, load_program
from forward_oracle import check_forward
from test_errors import check_located

_FEW = dict(deadline=None)


def _accepted(fn, args, data):
    check_correct_or_refused(fn, list(args))  # (raises Refused, failing the test, where astad refuses)
    check_forward(fn, tuple(args), data)


def _values(draw, shape):
    """Values away from one another (no ties for max/min) and from the masks' threshold."""
    n = int(np.prod(shape))
    ranks = np.array(draw(st.permutations(range(n))), dtype=float)
    return (ranks.reshape(shape) - n / 2 + 0.25) * 0.37


# ---------------------------------------------------------------- np.diff with prepend / append


@settings(max_examples=fuzz_examples(10), **_FEW)
@given(st.data())
def test_diff_prepend_append(tmp_path_factory, data):
    ndim = data.draw(st.integers(1, 2))
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    axis = data.draw(st.integers(-ndim, ndim - 1))
    n = data.draw(st.integers(0, 2))
    k = axis % ndim
    edge = tuple(1 if i == k else d for i, d in enumerate(shape))
    pre = data.draw(st.sampled_from(["None", "0.5", "x0", f"np.sin(x).sum(axis={k}, keepdims=True)", "c"]))
    app = data.draw(st.sampled_from(["None", "-1.5", "c * 2.0", f"np.take(x, [0], axis={k})"]))
    ends = "".join(f", {name}={v}" for name, v in (("prepend", pre), ("append", app)) if v != "None")
    source = (f"import numpy as np\n\n\ndef f(x, c):\n    x0 = float(x.ravel()[0])\n"
              f"    d = np.diff(x * c, n={n}, axis={axis}{ends})\n"
              f"    return np.sum(np.sin(d) * d)\n")
    fn = load_program(source, tmp_path_factory.mktemp("diff")).f
    x, c = _values(data.draw, shape), data.draw(st.floats(0.5, 1.5))
    if n > shape[k] + (pre != "None") + (app != "None"):
        return  # (numpy's empty result along the axis: np.diff gives an empty array)
    del edge
    _accepted(fn, (x, c), data)


# ---------------------------------------------------------------- reductions with initial= and where=


@settings(max_examples=fuzz_examples(8, long=16), **_FEW)
@given(st.data())
def test_reductions_with_initial_and_where(tmp_path_factory, data):
    op = data.draw(st.sampled_from(["sum", "prod", "max", "min"]))
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    ndim = len(shape)
    axis = data.draw(st.sampled_from([None, *range(-ndim, ndim)]))
    keep = data.draw(st.booleans())
    method = data.draw(st.booleans())
    extreme = op in ("max", "min")
    where = data.draw(st.sampled_from(["x > 0.1", "x < 0.3", "True", f"np.ones({shape[-1]}, bool)",
                                       "mask"] + ([] if extreme else ["True"])))
    initial = data.draw(st.sampled_from(["-2.0", "c", "1.5"] + ([] if extreme else ["None"])))
    keywords = f"axis={axis}, keepdims={keep}, where={where}" + ("" if initial == "None" else f", initial={initial}")
    call = f"x.{op}({keywords})" if method else f"np.{op}(x, {keywords})"
    source = f"import numpy as np\n\n\ndef f(x, c, mask):\n    r = {call}\n    return np.sum(r * np.cos(r))\n"
    fn = load_program(source, tmp_path_factory.mktemp("masked")).f
    x = _values(data.draw, shape)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=shape[-1], max_size=shape[-1])))
    c = data.draw(st.sampled_from([-0.9, 0.6, 2.7]))
    _accepted(fn, (x, c, mask), data)


def max_without_initial(x):
    return np.max(x, where=x > 0)


def sum_int_initial_float(k):
    return float(np.sum(k, initial=1.5))


def sum_float_mask(x):
    return np.sum(x, where=x)


def min_of_a_selection(x):
    v = x[x > 5.0]  # empty here: numpy gives initial, the reduction before it raised (ValueError, no identity)
    return np.min(v, initial=x[0] * 2.0, where=v > 0.1)


@pytest.mark.parametrize("fn, args, snippet, words", [
    (min_of_a_selection, (np.ones(3),), "np.min(v, initial=x[0] * 2.0, where=v > 0.1)", ["may be empty"]),
    (max_without_initial, (np.ones(3),), "np.max(x, where=x > 0)", ["needs `initial=`", "initial=-np.inf"]),
    (sum_int_initial_float, (np.arange(3),), "np.sum(k, initial=1.5)", ["`initial=`", "Python number"]),
    (sum_float_mask, (np.ones(3),), "np.sum(x, where=x)", ["boolean mask"]),
])
def test_refused_reductions(fn, args, snippet, words):
    with pytest.raises(astad.AstadError) as e:
        astad.value_and_grad(fn)(*args) if args[0].dtype.kind == "f" else astad.reverse(fn)(*args)
    check_located(e.value, fn, snippet)
    for w in words:
        assert w in str(e.value), str(e.value)


# ---------------------------------------------------------------- np.add.at


@settings(max_examples=fuzz_examples(8, long=16), **_FEW)
@given(st.data())
def test_add_at(tmp_path_factory, data):
    """``np.add.at`` with repeated integer indices, one index per axis, a scalar index, a mask, broadcast
    values, in a loop; against Python's own ``np.add.at`` (the value) and finite differences."""
    rows = data.draw(st.integers(1, 4))
    cols = data.draw(st.integers(1, 3))
    k = data.draw(st.integers(1, 6))
    idx = data.draw(st.lists(st.integers(-rows, rows - 1), min_size=k, max_size=k))
    jdx = data.draw(st.lists(st.integers(0, cols - 1), min_size=k, max_size=k))
    form = data.draw(st.sampled_from(["rows", "pairs", "scalar", "mask", "broadcast", "loop", "twice", "grid"]))
    grid = data.draw(st.lists(st.lists(st.integers(-rows, rows - 1), min_size=2, max_size=2), min_size=2, max_size=2))
    grid_values = data.draw(st.sampled_from(["v[:4].reshape(2, 2) * c", "v[:2] * c", "(v[:2] * c).reshape(2, 1)",
                                             "v[:1] * c", "c * 1.5"]))
    stmt = {
        "rows": f"np.add.at(y, np.array({idx}), np.tanh(v[:{k}]).reshape({k}, 1) * x[:1])",
        "pairs": f"np.add.at(y, (np.array({idx}), np.array({jdx})), v[:{k}] * c)",
        "scalar": f"np.add.at(y, {idx[0]}, x[0] * c)",
        "mask": "np.add.at(y, x > 0.1, v[0] * c)",
        "broadcast": f"np.add.at(y, np.array({idx}), c * 2.0)",
        "loop": f"for i in range({k}):\n        np.add.at(y, np.array([i % {rows}, 0]), v[i:i + 1] * x[0, :1])",
        "twice": f"np.add.at(y, [{idx[0]}, {idx[-1]}], x[:2] * c)\n    np.add.at(y, np.array({idx}), 0.5 * y[:{k}] "
                 f"if {k} <= {rows} else c)",
        # an index array of two dimensions into a 1-D array (numpy 2.4 adds garbage where values of shape (2,)
        # are broadcast over it: refused)
        "grid": f"z = np.cos(x[:, 0]) * c\n    np.add.at(z, np.array({grid}), {grid_values})\n"
                f"    y = y * z.reshape({rows}, 1)",
    }[form]
    source = (f"import numpy as np\n\n\ndef f(x, v, c):\n    y = np.sin(x) * c\n    {stmt}\n"
              f"    return np.sum(y * y * x)\n")
    fn = load_program(source, tmp_path_factory.mktemp("add_at")).f
    x = _values(data.draw, (rows, cols))
    v = data.draw(st.lists(st.floats(-1.5, 1.5), min_size=6, max_size=6)).copy()
    v = np.array(v)
    c = data.draw(st.sampled_from([-0.8, 0.7, 1.3]))
    try:
        fn(x.copy(), v.copy(), c)
    except (IndexError, ValueError):
        assume(False)  # numpy itself refuses the drawn combination (shapes)
    if form == "grid" and grid_values in ("v[:2] * c", "(v[:2] * c).reshape(2, 1)", "v[:1] * c"):
        with pytest.raises(astad.AstadError, match="broadcast over indices of more than one dimension"):
            astad.grad(fn)(x, v, c)
        return
    _accepted(fn, (x, v, c), data)


def add_at_argument(x):
    np.add.at(x, [0, 0], 1.0)
    return np.sum(x)


def add_at_alias(x):
    y = x * 2.0
    z = y[1:]
    np.add.at(y, [1, 1], x[0])
    return np.sum(z)


def add_at_int_into_float(x):
    k = np.zeros(3, dtype=np.int64)
    np.add.at(k, [0], x[0])
    return float(k[0])


def add_at_grid_broadcast(x):
    y = x * 2.0
    np.add.at(y, np.array([[0, 1], [1, 1]]), x[:2])  # numpy 2.4: y[1] += 3 * x[0] (memory past x[:2] read)
    return np.sum(y * y)


@pytest.mark.parametrize("fn, snippet, words", [
    (add_at_grid_broadcast, "x[:2])",
     ["more than one dimension", "np.broadcast_to(v, (2, 2))"]),
    (add_at_argument, "np.add.at(x, [0, 0], 1.0)", ["argument", "x = x.copy()"]),
    (add_at_alias, "np.add.at(y, [1, 1], x[0])", ["`z`"]),
    (add_at_int_into_float, "np.add.at(k, [0], x[0])", ["same_kind"]),
])
def test_refused_add_at(fn, snippet, words):
    with pytest.raises(astad.AstadError) as e:
        astad.grad(fn)(np.array([0.5, 1.0, -0.3]))
    check_located(e.value, fn, snippet)
    for w in words:
        assert w in str(e.value), str(e.value)
