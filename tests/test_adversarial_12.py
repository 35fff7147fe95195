"""Adversarial checks of the facts the optimiser remembers on IR blocks (session 9: ``absorbed``'s outside
reads, ``dce``'s ``ops_of``/``kinds``, ``simplify``'s copies and zero-makers) and of the module tree the
frontend forgets after a module's only def is read.

- Every time a pass asks for a remembered fact (``walk._memo`` finds it on the block), the fact is checked
  against a walk of a fresh copy of the block (nothing remembered): a fact stored by a pass that made the
  block without walking it (``dce``, ``absorbed``) must be what the walk would find.
- Random programs made to give those passes work (negations and subtractions, products read by several
  statements, dead code, zeros, loops and branches whose bodies copy values, nested functions, lambdas),
  differentiated in reverse, forward and second order: against central finite differences in float64,
  forward against reverse, and the generated code and second derivatives the same with the switches of the
  work left out (``test_optimise_work.SWITCHES``) turned off.
- Threads reading functions of modules whose only def holds a nested def, a lambda, ... at once.
"""

import threading
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings, strategies as st

import astad
import astad.ir.walk as walk
from astad.api_forward import forward_of
from astad.ir import Block
from conftest import fuzz_examples, load_program
from test_optimise_work import SWITCHES


def _plain(value):
    if isinstance(value, Counter):
        return dict(+value)  # (a count of 0 and none are the same count)
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v}
    return list(value) if isinstance(value, (list, tuple)) else value


@pytest.fixture
def checked_memos(monkeypatch):
    """``walk._memo`` checking each fact it finds remembered against a walk of a fresh copy; the counts."""
    real, hits, depth = walk._memo, Counter(), [0]

    def checking(block, key, compute):
        if key in block.__dict__ and depth[0] < 2:
            depth[0] += 1
            try:
                fresh = compute(Block(block.binds, block.result))
            finally:
                depth[0] -= 1
            hits[key] += 1
            assert _plain(block.__dict__[key]) == _plain(fresh), (key, block.pretty())
        return real(block, key, compute)

    monkeypatch.setattr(walk, "_memo", checking)
    return hits


_UNARY = ["-{a}", "np.cos({a})", "{a} * 0.0", "{a} * 0.5", "-0.3 * {a}", "np.sin(-{a})", "-(-{a})",
          "np.zeros_like({a})", "{a} - {a}", "np.tanh({a})", "np.cumsum(-{a})", "-{a}[::-1]"]
_BINARY = ["{a} - {b}", "{a} * {b}", "-{a} - {b}", "{b} - -{a}", "({a} - {b}) / (1.0 + {b} * {b})",
           "{a} * {b} + {a} * {b}", "-({a} * {b})", "{a} * 0.0 + {b}", "{b} - {a} * {b}", "M @ -{a} - {b}",
           "np.sum({a}) * -{b}", "np.where({a} > 0.0, -{a}, {b})", "np.concatenate([-{a}[:1], {b}[1:]])"]
_STATEMENTS = [
    "    {v} = {e}",
    "    if np.sum({a}) > 0.0:\n        {v} = {e}\n        dead_{v} = -{b} * {b}\n    else:\n        {v} = -{b}",
    "    {v} = {a} * 1.0\n    for i in range(3):\n        c = {v}\n        {v} = -c * 0.9 + 0.1 * {a} - c * 0.0",
    "    {v} = {a} * 1.0\n    for i in range(2):\n        t = -{v} * {b}\n        u = {v} * {b}\n        {v} = t + u * 0.5",
    "    acc = {a} - {a}\n    for w in ({a}, {b}):\n        acc = acc - w * {b}\n    {v} = acc",
    "    def h_{v}(z, w):\n        q = -z * w\n        return q - z, q * w\n    s_{v}, r_{v} = h_{v}({a}, {b})\n"
    "    {v} = s_{v} - r_{v}",
    "    g_{v} = lambda z: -(z * {a})\n    {v} = g_{v}({b}) + {a}",
    "    {v} = {a}\n    while np.sum({v} * {v}) > 100.0:\n        {v} = -{v} * 0.5",
]
_RETURNS = ["np.sum({a} * {b})", "np.sum({a}) - np.sum({b} * {b})", "np.sum(-{a} * -{b})", "np.sum(np.sin({a}) * -{b})"]


@st.composite
def programs(draw):
    """A function ``f(x, y)`` of two float vectors of 3 returning a float: negations, zeros, dead code,
    products read twice, loops, branches, nested functions."""
    names, lines = ["x", "y"], []
    for k in range(draw(st.integers(2, 6))):
        a, b, c = (draw(st.sampled_from(names)) for _ in range(3))
        e = draw(st.sampled_from(_UNARY + _BINARY)).format(a=a, b=c)
        lines.append(draw(st.sampled_from(_STATEMENTS)).format(v=f"v{k}", a=a, b=b, e=e))
        names.append(f"v{k}")
    lines.append("    return " + draw(st.sampled_from(_RETURNS)).format(a=names[-1], b=draw(st.sampled_from(names))))
    return ("import numpy as np\n\nM = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0], [2.0, 0.0, 1.5]])\n\n\n"
            "def f(x, y):\n" + "\n".join(lines) + "\n")


def _fd_grad(f, args, j, eps):
    out = np.zeros_like(args[j])
    for i in range(args[j].size):
        up, down = [a.copy() for a in args], [a.copy() for a in args]
        up[j].flat[i] += eps
        down[j].flat[i] -= eps
        out.flat[i] = (f(*up) - f(*down)) / (2 * eps)
    return out


def _derived(f, args, v):
    """The generated reverse and forward code, the Hessian, a Hessian-vector product and the mixed second
    derivatives by reverse over reverse and forward over reverse."""
    astad.clear_caches(disk=False)
    wrt = frozenset({0, 1})
    return (astad.reverse(f).derivative(args, wrt).source, forward_of(f).derivative(args, wrt).source,
            astad.hessian(f)(*args), astad.hvp(f, args, v),
            astad.jacrev(astad.grad(f, argnums=1), argnums=0)(*args),
            astad.jacfwd(astad.grad(f, argnums=0), argnums=1)(*args))


@settings(max_examples=fuzz_examples(5, long=12), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs(), st.integers(0, 2**16))
def test_remembered_facts_of_random_programs(tmp_path_factory, checked_memos, source, seed):
    note(source)
    f = load_program(source, tmp_path_factory.mktemp("adv12"), "adv12").f
    rng = np.random.default_rng(seed)
    args, v = (rng.standard_normal(3), rng.standard_normal(3)), (rng.standard_normal(3), rng.standard_normal(3))
    on = _derived(f, args, v)
    with pytest.MonkeyPatch.context() as monkeypatch:
        for module, attr in SWITCHES:
            monkeypatch.setattr(module, attr, False)
        off = _derived(f, args, v)
    assert on[:2] == off[:2]  # (the work left out changes no generated code)
    for a, b in zip(on[2:], off[2:]):  # (nor any second derivative, to the bit)
        assert all(np.array_equal(p, q) for p, q in zip(a, b))
    grads = astad.grad(f, argnums=(0, 1))(*args)
    for j in range(2):
        np.testing.assert_allclose(grads[j], _fd_grad(f, args, j, 1e-6), rtol=1e-5, atol=1e-6)
    assert np.isclose(astad.jvp(f, args, v)[1], sum(np.dot(g, t) for g, t in zip(grads, v)), rtol=1e-9, atol=1e-9)
    mixed = np.array([_fd_grad(lambda x, y: astad.grad(f, argnums=1)(x, y)[i], args, 0, 1e-5) for i in range(3)])
    np.testing.assert_allclose(on[4], mixed, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(on[5], mixed.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(on[3][0], on[2] @ v[0] + on[4].T @ v[1], rtol=1e-8, atol=1e-9)  # (H v)


def test_the_checks_see_remembered_facts(tmp_path_factory, checked_memos):
    """The facts the session's changes remember are asked for, and checked, in these programs."""
    source = ("import numpy as np\n\n\ndef f(x, y):\n    a = -x * y\n    b = a - -y\n    c = x * y\n"
              "    d = c * 0.0 + b\n    return np.sum(-d * c)\n")
    f = load_program(source, tmp_path_factory.mktemp("adv12"), "adv12_seen").f
    astad.clear_caches(disk=False)
    astad.grad(f, argnums=(0, 1))(np.ones(3), np.arange(3.0))
    assert checked_memos["_outside_reads"] and checked_memos["_ops"] and checked_memos["_kinds"]


_MODULES = [
    "import numpy as np\n\n\ndef f(x):\n    def inner(z):\n        return z * {k}.0\n    return np.sum(np.sin(inner(x)) * x)\n",
    "import numpy as np\n\n\ndef f(x):\n    g = lambda z: z * {k}.0\n    return np.sum(np.sin(g(x)) * x)\n",
    "import numpy as np\n\n\ndef f(x):\n    return np.sum(np.sin(x * {k}.0) * x)\n",
]


def test_threads_read_functions_of_single_def_modules_at_once(tmp_path_factory):
    """Each module's only def read (its tree then forgotten) while other threads read other modules' and
    clear the caches: each derivative is its own function's."""
    where = tmp_path_factory.mktemp("adv12_threads")
    fns = [(k, load_program(text.format(k=k), where, f"adv12_t{i}_{k}").f)
           for i, text in enumerate(_MODULES) for k in (2, 3)]
    x = np.array([0.3, -0.7, 1.1])
    errors = []

    def work(t):
        for r in range(4):
            k, fn = fns[(t + r) % len(fns)]
            try:
                if r % 2 == 0:
                    astad.clear_caches(disk=False)
                want = k * np.cos(k * x) * x + np.sin(k * x)
                got = astad.grad(fn)(x)
                if not np.allclose(got, want, rtol=1e-12):
                    errors.append((t, r, k, got))
            except Exception as e:  # (any: reported below)
                errors.append((t, r, k, repr(e)))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
