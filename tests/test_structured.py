"""Structured parameters (pytrees): tuples, lists, dicts and NamedTuples of
arrays and floats, nested.  Each leaf becomes a parameter of the generated
code; the cotangent comes back with the argument's structure (a dict for a
dict, the NamedTuple class for a NamedTuple, a float for a float leaf).

The oracle is independent of astad: the tests flatten and rebuild structures
themselves and take central finite differences leaf by leaf."""

import itertools
import textwrap
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad
from conftest import _leaves, load_program


class Layer(NamedTuple):
    w: np.ndarray
    b: np.ndarray


class Pair(NamedTuple):
    first: object
    second: object


# --------------------------------------------------------------------------- an independent pytree oracle


leaves = _leaves  # the leaves of a pytree, in order


def rebuild(tree, it):
    if isinstance(tree, dict):
        return {k: rebuild(v, it) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*[rebuild(v, it) for v in tree])
    if isinstance(tree, (tuple, list)):
        return type(tree)(rebuild(v, it) for v in tree)
    return next(it)


def fd_grads(fn, args, eps=1e-6):
    """Central finite differences of a scalar ``fn`` for every float leaf of every argument."""
    out = []
    for i, arg in enumerate(args):
        flat = leaves(arg)
        grads = []
        for j, leaf in enumerate(flat):
            if isinstance(leaf, int) or (isinstance(leaf, np.ndarray) and leaf.dtype.kind in "iub"):
                grads.append(None)
                continue
            base = np.asarray(leaf, dtype=float)
            g = np.zeros_like(base)
            for idx in np.ndindex(base.shape):
                vals = []
                for sign in (1, -1):
                    moved = base.copy()
                    moved[idx] += sign * eps
                    new_leaf = float(moved) if isinstance(leaf, float) else moved
                    new_flat = flat[:j] + [new_leaf] + flat[j + 1:]
                    new_args = list(args)
                    new_args[i] = rebuild(arg, iter(new_flat))
                    vals.append(fn(*new_args))
                g[idx] = (vals[0] - vals[1]) / (2 * eps)
            grads.append(float(g) if isinstance(leaf, float) else g)
        out.append(rebuild(arg, iter(grads)))
    return tuple(out)


def assert_same_structure(got, want):
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            assert_same_structure(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_structure(g, w)
    elif want is None:
        assert got is None
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def check(fn, *args):
    value, pullback = astad.reverse(fn)(*args)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    got = pullback(1.0)
    assert_same_structure(got, fd_grads(fn, args))
    for i in range(len(args)):  # grad with argnums: only that argument's cotangent, same structure
        assert_same_structure(astad.grad(fn, argnums=i)(*args), got[i])


# --------------------------------------------------------------------------- programs


def dict_params(params, x):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.sum(h * h) * params["scale"]


def namedtuple_layers(layers, x):
    h = x
    for layer in layers:
        h = np.tanh(h @ layer.w + layer.b)
    return np.sum(h)


def nested(p, x):
    (a, b), d = p["pair"], p["deep"]
    s = np.sum(a * x) + b * d["k"][0] - np.sum(np.sin(d["k"][1]))
    for i, v in enumerate(p["seq"]):
        s = s + (i + 1.0) * np.sum(v * v)
    return s + p["count"] * 0.0


def over_keys(p, x):
    s = 0.0
    for k in p:
        s = s + np.sum(p[k] * x[: p[k].shape[0]])
    return s


def tuple_and_list(t, l):
    x, y = t
    return np.sum(x * y) + l[0] * np.sum(l[1])


RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 3))


@pytest.mark.parametrize("fn, args", [
    (dict_params, ({"w": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(4), "scale": 0.7}, X)),
    (namedtuple_layers, ([Layer(RNG.standard_normal((3, 4)), RNG.standard_normal(4)),
                          Layer(RNG.standard_normal((4, 2)), RNG.standard_normal(2))], X)),
    (nested, ({"pair": (RNG.standard_normal(3), 0.3), "deep": {"k": [1.5, RNG.standard_normal(2)]},
               "seq": [RNG.standard_normal(2), RNG.standard_normal((2, 2))], "count": 3}, RNG.standard_normal(3))),
    (over_keys, ({"a": RNG.standard_normal(2), "b": RNG.standard_normal(3)}, RNG.standard_normal(3))),
    (tuple_and_list, ((RNG.standard_normal(3), RNG.standard_normal(3)), [0.5, RNG.standard_normal(2)])),
], ids=lambda a: getattr(a, "__name__", ""))
def test_structured_parameters(fn, args):
    check(fn, *args)


def test_grad_of_a_dict_is_a_dict_and_the_code_names_the_leaves():
    params = {"w": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(4), "scale": 0.7}
    g = astad.grad(dict_params)(params, X)
    assert isinstance(g, dict) and list(g) == ["w", "b", "scale"] and type(g["scale"]) is float
    source = astad.reverse(dict_params).transform(params, X).source
    assert "def dict_params_forward(params_w, params_b, params_scale, x):" in source


def test_another_structure_is_another_derivative():
    a = {"w": np.ones((3, 4)), "b": np.ones(4), "scale": 1.0}
    b = {"w": np.ones((3, 2)), "b": np.ones(2), "scale": 1.0}
    assert astad.grad(dict_params)(a, X)["w"].shape == (3, 4)
    assert astad.grad(dict_params)(b, X)["w"].shape == (3, 2)


def test_a_missing_key_is_a_clear_error():
    with pytest.raises(astad.AstadTypeError, match="has no key 'scale'; its keys are 'w', 'b'"):
        astad.reverse(dict_params)({"w": np.ones((3, 4)), "b": np.ones(4)}, X)


def test_a_dict_used_as_a_number_is_a_clear_error():
    def whole(p):
        return np.sum(p)

    src = "import numpy as np\n\ndef whole(p):\n    return np.sum(p)\n"
    import tempfile
    mod = load_program(src, tempfile.mkdtemp(), "whole")
    with pytest.raises(astad.AstadTypeError, match="a dict is used where a number or an array is expected"):
        astad.reverse(mod.whole)({"a": np.ones(2)})


# --------------------------------------------------------------------------- random structures


def structures(depth=0):
    leaf = st.one_of(st.just("f"), st.sampled_from([(2,), (3,), (2, 2)]))
    if depth >= 2:
        return leaf
    inner = structures(depth + 1)
    return st.one_of(
        leaf,
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: ("tuple", xs)),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: ("list", xs)),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: ("dict", xs)),
        st.tuples(inner, inner).map(lambda xs: ("pair", list(xs))),
    )


def build(spec, rng):
    """A value of the structure ``spec`` and the paths (source text) of its leaves."""
    if spec == "f":
        return float(rng.uniform(-1, 1)), [""]
    if isinstance(spec, tuple) and spec and isinstance(spec[0], int):
        return rng.uniform(-1, 1, spec), [""]
    kind, items = spec
    built = [build(s, rng) for s in items]
    values = [v for v, _ in built]
    if kind == "dict":
        keys = [f"k{i}" for i in range(len(items))]
        return dict(zip(keys, values)), [f"[{k!r}]{p}" for k, (_, ps) in zip(keys, built) for p in ps]
    if kind == "pair":
        return Pair(*values), [f".{f}{p}" for f, (_, ps) in zip(Pair._fields, built) for p in ps]
    value = tuple(values) if kind == "tuple" else list(values)
    return value, [f"[{i}]{p}" for i, (_, ps) in enumerate(built) for p in ps]


@settings(max_examples=25, deadline=None)
@given(spec=structures(), seed=st.integers(0, 2 ** 16))
def test_random_structures(tmp_path_factory, spec, seed):
    rng = np.random.default_rng(seed)
    value, paths = build(spec, rng)
    terms = [f"np.sum(np.sin(p{path}) * {k + 1.0})" for k, path in enumerate(paths)]
    source = "import numpy as np\n\n\ndef f(p, c):\n    return c * (" + " + ".join(terms) + ")\n"
    mod = load_program(source, tmp_path_factory.mktemp("structured"), "structured")
    mod.Pair = Pair
    check(mod.f, value, 0.5)


def chain_sum(t, w):
    if isinstance(t, tuple):
        return np.sum(np.sin(t[0]) * w) + chain_sum(t[1], w)
    return np.sum(t * w)


@pytest.mark.parametrize("depth", [3, 45])
def test_a_deep_structure_is_flattened_and_rebuilt(depth):
    """Deeper than the compiled rebuilder nests (40): the rest is rebuilt by recursion."""
    t = RNG.standard_normal(2)
    for _ in range(depth):
        t = (RNG.standard_normal(2), t)
    check(chain_sum, t, RNG.standard_normal(2))
    g = astad.grad(chain_sum)(t, np.ones(2))
    for _ in range(depth):
        assert type(g) is tuple and len(g) == 2
        g = g[1]
    assert g.shape == (2,)


def test_the_unpacker_gives_the_flatteners_leaves():
    """The derivative's unpacker (each container unpacked once) against the subscripting flattener."""
    from astad.frontend import abstract
    from astad.ir.types import _flattener, unpacker

    value = (RNG.standard_normal(2), {"x": 1.0, "y": [RNG.standard_normal(1), Pair(2.0, (3.0,))]}, (), [()],
             {"z": (), "w": Layer(RNG.standard_normal(1), RNG.standard_normal(2))})
    t = abstract(value, "value")
    got, want = unpacker(t)(value), _flattener(t)(value)
    assert len(got) == len(want) == 7 and all(a is b for a, b in zip(got, want))
