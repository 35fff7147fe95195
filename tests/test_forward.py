"""Forward mode (the CHAD forward macro, astad/ad/forward.py): JVPs checked against
independent oracles — central finite differences in float64, reverse mode
(``<u, J v>`` from forward mode equals ``<J^T u, v>`` from ``astad.reverse``),
and the IR interpreter on the forward and optimised stages — on straight-line
code, branches, for and while loops, function values, lists, recursion,
structured arguments and tuple outputs; the tangent is carried through a loop
in O(1) memory."""

import tracemalloc

import numpy as np
import pytest

import astad
from astad import frontend, pipeline
from astad.ir import interp
from astad.errors import AstadError
from astad.ir import StructT

from forward_examples import design_example, for_loop
import test_conditionals
import test_functions
import test_list_tapes
import test_loops
import test_recursion
import test_structured


# ---------------------------------------------------------------- helpers

def derivative(fn, args, wrt=None):
    """The forward-mode derivative of ``fn`` at the signature of ``args`` (through the pipeline)."""
    parsed = frontend.parse(fn)
    types = [frontend.abstract(a, f"argument {i}") for i, a in enumerate(args)]
    return pipeline.transform_forward(parsed, types, None if wrt is None else frozenset(wrt))


def _discrete(a):
    return isinstance(a, (bool, int, np.integer, np.bool_)) or (isinstance(a, np.ndarray) and a.dtype.kind in "biu")


def _random_leaf(rng, a):
    if _discrete(a):
        return None
    if isinstance(a, float):
        return float(rng.standard_normal())
    return rng.standard_normal(np.shape(a))


def random_tangent(rng, t, a):
    """A tangent like the argument ``a`` of type ``t`` (a structure's has its structure)."""
    if isinstance(t, StructT):
        return t.unflatten(iter([_random_leaf(rng, leaf) for leaf in t.flatten(a)]))
    return _random_leaf(rng, a)


def shifted(t, a, tangent, s):
    if tangent is None:
        return a
    if isinstance(t, StructT):
        return t.unflatten(iter([x if _discrete(x) or d is None else x + s * d
                                 for x, d in zip(t.flatten(a), t.flatten(tangent))]))
    return type(a)(a + s * tangent) if isinstance(a, float) else a + s * tangent


def leaves(v):
    """The float leaves of a value (tuples, lists, dicts, NamedTuples, arrays), as arrays."""
    if isinstance(v, dict):
        return [x for k in v for x in leaves(v[k])]
    if isinstance(v, (tuple, list)):
        return [x for item in v for x in leaves(item)]
    if v is None or _discrete(v):
        return []
    return [np.asarray(v, dtype=float)]


def inner(us, vs):
    return sum(float(np.sum(u * v)) for u, v in zip(us, vs))


def check_jvp(fn, args, seed=0, wrt=None, eps=1e-6, rtol=1e-5, atol=1e-6, reverse=True):
    """The JVP of ``fn`` at ``args`` in a random direction: the value is ``fn(*args)``, the
    tangent equals central FD, the interpreted stages, and (``reverse``) ``<u, J v> == <J^T u, v>``."""
    rng = np.random.default_rng(seed)
    d = derivative(fn, args, wrt)
    order = sorted(d.wrt)
    tangents = [random_tangent(rng, d.arg_types[i], args[i]) for i in order]
    value, tangent = d.jvp(*args, *tangents)
    want = fn(*args)
    for g, w in zip(leaves(value), leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    full = [None] * len(args)
    for i, tv in zip(order, tangents):
        full[i] = tv

    def at(s):
        return fn(*[shifted(d.arg_types[i], a, full[i], s) for i, a in enumerate(args)])

    fd = [(p - m) / (2 * eps) for p, m in zip(leaves(at(eps)), leaves(at(-eps)))]
    got = leaves(tangent)
    assert len(got) == len(fd), (tangent, fd)
    for g, f in zip(got, fd):
        assert np.shape(g) == np.shape(f)
        np.testing.assert_allclose(g, f, rtol=rtol, atol=atol)
    flat_args = [x for t, a in zip(d.arg_types, args) for x in (t.flatten(a) if isinstance(t, StructT) else [a])]
    flat_t = [x for i, tv in zip(order, tangents)
              for x, leaf in zip(d.arg_types[i].flatten(tv) if isinstance(d.arg_types[i], StructT) else [tv],
                                 d.arg_types[i].flatten(args[i]) if isinstance(d.arg_types[i], StructT) else [args[i]])
              if not _discrete(leaf)]
    for stage in (d.stages.forward, d.stages.optimised):
        v, t = interp.run(stage, *flat_args, *flat_t)
        for g, w in zip(leaves(t), got):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    if reverse and wrt is None:
        _, pullback = astad.reverse(fn)(*args)
        u = [rng.standard_normal(np.shape(x)) for x in leaves(want)]
        cts = pullback(_rebuild(want, iter(u)))
        rhs = sum(inner(leaves(c), leaves(tv)) for c, tv in zip(cts, full) if c is not None and tv is not None)
        lhs = inner(u, got)
        np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-11)
    return d, value, tangent


def _rebuild(like, it):
    """A cotangent with the structure of the output ``like`` from the arrays ``it``."""
    if isinstance(like, dict):
        return {k: _rebuild(v, it) for k, v in like.items()}
    if isinstance(like, (tuple, list)):
        items = [_rebuild(v, it) for v in like]
        return type(like)(items) if not hasattr(like, "_fields") else type(like)(*items)
    if like is None or _discrete(like):
        return None
    u = next(it)
    return float(u) if isinstance(like, float) else (np.float64(u) if np.ndim(like) == 0 and not isinstance(like, np.ndarray) else u)


def _cases(test):
    """The (fn, args) cases of a parametrised test of another module."""
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize" and mark.args[0] == "fn, args":
            return [tuple(c.values) if hasattr(c, "values") else c for c in mark.args[1]]
    raise LookupError(test)


def _id(case):
    return getattr(case, "__name__", "")


# ---------------------------------------------------------------- programs of its own

X = np.array([0.3, -0.7, 1.1, 0.4])
W = np.random.default_rng(1).standard_normal((3, 4))


def mlp(W, b, x):
    h = np.tanh(W @ x + b)
    return np.sum(h ** 2) / h.shape[0]


def tuple_output(W, x):
    h = np.tanh(W @ x)
    return np.sum(h), h * 2.0, 3


def while_loop(x, limit):
    while x < limit:
        x = x * 1.5 + 0.1
    return x


def branch(x, y):
    if x > 0:
        z = x * y
    else:
        z = 2.0
    return z + y


def closure(x, y):
    f = lambda a: a * x + y
    return f(x) + f(y * 2.0)


def list_in_a_loop(x, n):
    hs = [x]
    for i in range(n):
        hs.append(np.sin(hs[-1]) * x)
    return np.stack(hs).sum()


def list_from_a_constant(x, n):
    hs = [1.0]
    for i in range(n):
        hs.append(np.sin(hs[-1]) * x)
    return np.stack(hs).sum()


def arrays(W, x):
    y = (W @ x).reshape(3, 1) * x[:2].reshape(1, 2)
    z = np.where(y > 0, y, 0.1 * y)
    return np.maximum(z, 0.05).T.mean(axis=0) + np.exp(-x[1]) - np.log(1.5 + x[0] ** 2) + np.sqrt(np.abs(x) + 1.0).sum()


def dict_argument(p, x):
    return np.tanh(p["W"] @ x + p["b"]).sum() * p["scale"]


def constant_output(x, n):
    return n * 2.0


OWN = [
    (design_example, (0.3, 0.5, 0.7, 1.1)),
    (mlp, (W, np.array([0.1, -0.2, 0.3]), X)),
    (tuple_output, (W, X)),
    (for_loop, (0.3, 0.5)),
    (while_loop, (0.3, 4.0)),
    (while_loop, (5.0, 4.0)),
    (branch, (0.3, 0.5)),
    (branch, (-0.3, 0.5)),
    (closure, (0.3, 0.5)),
    (list_in_a_loop, (0.4, 5)),
    (list_from_a_constant, (0.4, 5)),
    (arrays, (W, X)),
    (dict_argument, ({"W": W, "b": np.array([0.1, 0.2, 0.3]), "scale": 1.5}, X)),
]


@pytest.mark.parametrize("fn, args", OWN, ids=_id)
def test_jvp(fn, args):
    check_jvp(fn, args)


@pytest.mark.parametrize("fn, args", test_loops.CASES + test_conditionals.CASES + test_list_tapes.CASES, ids=_id)
def test_jvp_of_loops_branches_and_lists(fn, args):
    check_jvp(fn, args)


@pytest.mark.parametrize("fn, args", _cases(test_functions.test_functions_as_values)
                         + _cases(test_recursion.test_recursion_is_unrolled) + _cases(test_structured.test_structured_parameters),
                         ids=_id)
def test_jvp_of_function_values_recursion_and_structures(fn, args):
    check_jvp(fn, args)


def test_wrt_holds_the_other_arguments_constant():
    d, value, tangent = check_jvp(mlp, (W, np.array([0.1, -0.2, 0.3]), X), wrt={2})
    assert "W_t" not in d.source and "x_t" in d.source
    d = derivative(mlp, (W, np.array([0.1, -0.2, 0.3]), X), wrt=set())
    assert "_t" not in d.source.split('"""')[2]
    value, tangent = d.jvp(W, np.array([0.1, -0.2, 0.3]), X)
    assert tangent == 0.0 and value == mlp(W, np.array([0.1, -0.2, 0.3]), X)


def test_a_constant_output_has_a_zero_tangent_and_an_int_none():
    d = derivative(constant_output, (0.5, 3))
    assert d.jvp(0.5, 3, 1.0, None) == (6.0, 0.0)
    d = derivative(tuple_output, (W, X))
    value, tangent = d.jvp(W, X, np.ones_like(W), np.zeros_like(X))
    assert isinstance(tangent, tuple) and tangent[2] is None and np.shape(tangent[1]) == (3,)


def test_a_dict_argument_takes_a_dict_tangent():
    p = {"W": W, "b": np.zeros(3), "scale": 2.0}
    d = derivative(dict_argument, (p, X), wrt={0})
    tp = {"W": np.zeros_like(W), "b": np.ones(3), "scale": 0.0}
    value, tangent = d.jvp(p, X, tp)
    h = np.tanh(W @ X)
    np.testing.assert_allclose(tangent, 2.0 * np.sum(1 - h ** 2), rtol=1e-12)


def test_stages_are_printable():
    d = derivative(design_example, (0.3, 0.5, 0.7, 1.1))
    for stage in pipeline.FORWARD_STAGES:
        assert d.stages.text(stage)
    assert "x4_t" in d.stages.text("forward")
    with pytest.raises(AstadError):
        d.stages.text("backward")


def long_loop(x, w):
    for i in range(16000):
        x = np.sin(x) * w + 0.1
    return x


def _peak(f):
    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_forward_mode_memory_is_constant_in_the_number_of_iterations():
    d = derivative(long_loop, (0.3, 0.9))
    assert "append" not in d.source  # no tape
    d.jvp(0.3, 0.9, 1.0, 0.0)
    primal = _peak(lambda: long_loop(0.3, 0.9))
    forward = _peak(lambda: d.jvp(0.3, 0.9, 1.0, 0.0))
    _, pullback = astad.reverse(long_loop)(0.3, 0.9)
    reverse = _peak(lambda: astad.reverse(long_loop)(0.3, 0.9))
    assert forward < primal + 20_000, (forward, primal)  # O(1): a few floats more than the primal
    assert reverse > 20 * forward, (reverse, forward)  # reverse mode's tape is O(n)


# ---------------------------------------------------------------- golden files (for review of readability)

GOLDEN = __import__("pathlib").Path(__file__).parent / "golden"


@pytest.mark.parametrize("name, fn, args", [
    ("design_example_forward", design_example, (0.3, 0.5, 0.7, 1.1)),
    ("loop_forward", for_loop, (0.3, 0.5)),
])
def test_golden_forward_source(name, fn, args):
    """The forward code of the design example and of a loop, pinned; the derivatives
    themselves are checked against FD above."""
    import os
    import forward_examples
    got = derivative(fn, args).source.replace(forward_examples.__file__, "<file>").replace(astad.__version__, "VERSION")
    golden = GOLDEN / f"{name}.py"
    if os.environ.get("ASTAD_UPDATE_GOLDEN") == "1":
        golden.write_text(got)
    assert golden.exists(), f"{golden} is missing: run with ASTAD_UPDATE_GOLDEN=1 to create it"
    assert got == golden.read_text(), (f"the forward code of {name} changed; if intended, regenerate with "
                                       f"ASTAD_UPDATE_GOLDEN=1\n--- now\n{got}")


# The random programs of the existing generators are checked in forward mode in their own test
# modules (tests/test_random_*.py, with tests/forward_oracle.py), refusals included.
