"""A function returning a list literal gives a list, as plain Python does: the value, its tangent
in forward mode and its Jacobians (structured by the output, as in JAX), through every entry point
and a disk-cache hit in a fresh process; a pullback takes a list or a tuple cotangent."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import astad
from conftest import _inner, _random_like, check_grad, fuzz_examples, load_program


def two(x):
    return [x * 2.0, np.sin(x)]


def nested(x, y):
    return (np.sum(x * y), [x * y, np.cos(x)])


def inner_list(x):
    return [[x, x * x], 3.0 * x]


def of_floats(a, b):
    return [a * b, a + b]


def list_param(xs):
    return [xs[0] * xs[1], xs]


def branches(x):
    if np.sum(x) > 0:
        return [np.exp(x), x]
    return [x, x * x]


def a_tuple(x):
    return (x * 2.0, [np.sin(x)], (np.cos(x),))


def with_an_int(x):
    return [x * 2.0, 3]


def appended(x, n):
    out = []
    for i in range(n):
        out.append(x * i)
    return out


X = np.array([0.3, -0.7, 1.1])
Y = np.array([1.5, 0.2, -0.4])
CASES = [
    (two, (X,)),
    (nested, (X, Y)),
    (inner_list, (X,)),
    (of_floats, (0.7, -1.3)),
    (list_param, ([X, Y],)),
    (branches, (X,)),
    (branches, (-X,)),
    (a_tuple, (X,)),
    (with_an_int, (X,)),
]
IDS = [f"{f.__name__}{i}" for i, (f, _) in enumerate(CASES)]


def same(got, want):
    """The same structure (a list where ``want`` has one, a tuple where a tuple) and values."""
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want), (type(got), type(want))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    elif want is None:
        assert got is None
    else:
        assert type(got) is not list and type(got) is not tuple
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


def template(v):
    """The list/tuple structure of ``v`` (leaves as None)."""
    return (type(v), [template(i) for i in v]) if isinstance(v, (list, tuple)) else None


def leaves(v):
    return [x for i in v for x in leaves(i)] if isinstance(v, (list, tuple)) else [v]


def direction(rng, a):
    return [direction(rng, i) for i in a] if isinstance(a, list) else (
        float(rng.standard_normal()) if np.ndim(a) == 0 else rng.standard_normal(np.shape(a)))


def shifted(a, t, h):
    return [shifted(i, ti, h) for i, ti in zip(a, t)] if isinstance(a, list) else a + h * t


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_reverse_value_and_pullback(fn, args):
    want = fn(*args)
    value, pullback = astad.reverse(fn)(*args)
    same(value, want)
    same(astad.vjp(fn, *args)[0], want)
    if fn is not with_an_int:  # (check_grad's random cotangent of the int is a float: refused, rightly)
        check_grad(fn, args)  # a list cotangent against central differences
    u = _random_like(np.random.default_rng(1), want)
    as_tuples = tuple(tuple(i) if isinstance(i, list) else i for i in u)
    if fn is with_an_int:
        u, as_tuples = [u[0], 0.0], (u[0], 0.0)
    for a, b in zip(pullback(u), pullback(as_tuples)):  # a tuple cotangent for a list: the same
        if a is not None:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_forward_value_and_tangent(fn, args):
    rng = np.random.default_rng(2)
    want = fn(*args)
    ts = tuple(direction(rng, a) for a in args)
    value, tangent = astad.jvp(fn, args, ts)
    same(value, want)
    assert template(tangent) == template(want)
    h = 1e-6
    fd = [(p - m) / (2 * h) for p, m in zip(leaves(fn(*[shifted(a, t, h) for a, t in zip(args, ts)])),
                                          leaves(fn(*[shifted(a, t, -h) for a, t in zip(args, ts)])))]
    for got, w in zip(leaves(tangent), fd):
        if got is None:  # a discrete output's tangent
            assert w == 0
            continue
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-8)
    value2, pushforward = astad.forward(fn)(*args)
    same(value2, want)
    same(pushforward(*ts), tangent)
    if fn is not with_an_int:  # forward vs reverse: <u, J v> = <J^T u, v>
        u = _random_like(rng, want)
        cts = astad.vjp(fn, *args)[1](u)
        np.testing.assert_allclose(_inner(u, tangent), sum(_inner(c, t) for c, t in zip(cts, ts)), rtol=1e-10)


@pytest.mark.parametrize("fn, args", [c for c in CASES if not isinstance(c[1][0], list)],
                         ids=[i for i, c in zip(IDS, CASES) if not isinstance(c[1][0], list)])
def test_jacobians_are_structured_by_the_output(fn, args):
    want = fn(*args)
    rev, fwd = astad.jacrev(fn)(*args), astad.jacfwd(fn)(*args)
    assert template(rev) == template(want) == template(fwd)
    for r, f, w in zip(leaves(rev), leaves(fwd), leaves(want)):
        if isinstance(w, int):
            assert r is None and f is None  # a discrete output has no derivative
            continue
        np.testing.assert_allclose(r, f, rtol=1e-12, atol=1e-14)
    x, h = args[0], 1e-6  # the first argument's columns against central differences
    for k in range(np.size(x)):
        e = np.zeros(np.shape(x)) if np.ndim(x) else 1.0
        if np.ndim(x):
            e[k] = 1.0
        plus, minus = fn(x + h * e, *args[1:]), fn(x - h * e, *args[1:])
        for r, p, m in zip(leaves(rev), leaves(plus), leaves(minus)):
            if r is not None:
                col = np.asarray(r)[..., k] if np.ndim(x) else r
                np.testing.assert_allclose(col, (np.asarray(p) - m) / (2 * h), rtol=1e-6, atol=1e-8)


def test_a_run_time_list_and_a_tuple_are_unchanged():
    same(astad.reverse(appended)(X, 3)[0], appended(X, 3))
    same(astad.jvp(appended, (X, 3), (Y, None))[1], [Y * 0.0, Y * 1.0, Y * 2.0])
    same(astad.reverse(a_tuple)(X)[0], a_tuple(X))


def test_value_and_grad_of_a_function_of_the_list():
    def total(x):
        out = two(x)
        return np.sum(out[0] * out[1])

    value, g = astad.value_and_grad(total)(X)
    np.testing.assert_allclose(value, total(X))
    check_grad(total, (X,))
    same(astad.jacrev(astad.grad(total))(X), astad.hessian(total)(X))


# --------------------------------------------------------------------------- the disk cache

MODULE = """\
import numpy as np


def f(x):
    return (np.sum(x), [x * 2.0, np.sin(x)])
"""

SCRIPT = """\
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import astad, astad.pipeline, listed_mod
calls = []
original = astad.pipeline.transform
astad.pipeline.transform = lambda *a, **k: calls.append(1) or original(*a, **k)
x = np.array([0.3, -0.7, 1.1])
value, pullback = astad.reverse(listed_mod.f)(x)
jac = astad.jacrev(listed_mod.f)(x)
print(json.dumps({"transforms": len(calls), "value": [type(value).__name__, type(value[1]).__name__],
                  "jac": [type(jac).__name__, type(jac[1]).__name__],
                  "same": bool(np.array_equal(value[1][1], np.sin(x))),
                  "ct": np.asarray(pullback((1.0, (x, x)))[0]).tolist()}))
"""


def test_disk_cache_hit_in_a_fresh_process_keeps_the_lists(tmp_path):
    (tmp_path / "listed_mod.py").write_text(MODULE)
    root = os.path.dirname(os.path.dirname(os.path.abspath(astad.__file__)))
    env = dict(os.environ, ASTAD_DISK_CACHE="1", ASTAD_CACHE_DIR=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))

    def run():
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), str(tmp_path)], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert first["transforms"] >= 1 and second["transforms"] == 0  # the second is a disk hit
    for out in (first, second):
        assert out["value"] == ["tuple", "list"] and out["jac"] == ["tuple", "list"] and out["same"]
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(second["ct"], 1.0 + 2.0 * x + x * np.cos(x), rtol=1e-12)
    assert second["ct"] == first["ct"]


# --------------------------------------------------------------------------- random output structures

_LEAVES = ["x * 2.0", "np.sin(x)", "np.sum(x * y)", "y", "x * y - 1.5", "3"]


def _structures():
    leaf = st.sampled_from(_LEAVES)
    return st.recursive(leaf, lambda inner: st.tuples(st.booleans(), st.lists(inner, min_size=1, max_size=3)),
                        max_leaves=6).filter(lambda s: not isinstance(s, str))


def _text(s):
    if isinstance(s, str):
        return s
    items = ", ".join(_text(i) for i in s[1])
    return f"[{items}]" if s[0] else f"({items}{',' if len(s[1]) == 1 else ''})"


@settings(max_examples=fuzz_examples(20), deadline=None, suppress_health_check=list(HealthCheck))
@given(_structures())
def test_random_output_structures(tmp_path_factory, structure):
    text = _text(structure)
    source = f"import numpy as np\n\n\ndef f(x, y):\n    out = {text}\n    return out\n"
    fn = load_program(source, tmp_path_factory.mktemp("lists"), "list_outputs").f
    args = (X, Y)
    want = fn(*args)
    same(astad.reverse(fn)(*args)[0], want)
    value, tangent = astad.jvp(fn, args, (Y, X))
    same(value, want)
    assert template(tangent) == template(want)
    h = 1e-6
    for t, p, m in zip(leaves(tangent), leaves(fn(X + h * Y, Y + h * X)), leaves(fn(X - h * Y, Y - h * X))):
        if t is None:
            assert p == m  # the int
        else:
            np.testing.assert_allclose(t, (p - m) / (2 * h), rtol=1e-6, atol=1e-8)
    jac = astad.jacrev(fn)(*args)
    assert template(jac) == template(want)
    u = _random_like(np.random.default_rng(3), want)
    u = _ints_zero(u, want)
    cts = astad.vjp(fn, *args)[1](u)  # forward vs reverse: <u, J v> = <J^T u, v>
    np.testing.assert_allclose(_inner(u, _nones_zero(tangent)), _inner(cts[0], Y) + _inner(cts[1], X), rtol=1e-10)


def _ints_zero(u, want):
    if isinstance(want, (list, tuple)):
        return type(want)(_ints_zero(a, b) for a, b in zip(u, want))
    return 0.0 if isinstance(want, int) else u


def _nones_zero(t):
    if isinstance(t, (list, tuple)):
        return type(t)(_nones_zero(a) for a in t)
    return 0.0 if t is None else t


def test_zero_tangents_and_repeated_calls_keep_the_lists():
    for _ in range(3):  # (the later calls take astad.jvp's checked fast path)
        same(astad.jvp(two, (X,), (None,)), ([X * 2.0, np.sin(X)], [X * 0.0, X * 0.0]))
        same(astad.jvp(of_floats, (0.7, -1.3), (None, None)), ([0.7 * -1.3, 0.7 - 1.3], [0.0, 0.0]))
        same(astad.jvp(of_floats, (0.7, -1.3), (1.0, 0.0)), ([0.7 * -1.3, 0.7 - 1.3], [-1.3, 1.0]))
        same(astad.jvp(two, (X,), (Y,)), ([X * 2.0, np.sin(X)], [Y * 2.0, np.cos(X) * Y]))
