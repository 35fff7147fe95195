"""Adversarial tests of replayed calls (astad/frontend/replay.py): a call whose
arguments have the static key of an earlier call is not lowered again; the
earlier call's bindings are replayed.  Each program here calls helpers several
times with arguments that share the key but differ in what the key leaves out
(the argument itself or another variable, literals and computed values, -0.0
and 0.0, True and 1, keywords and defaults, views and fresh arrays, a temporary
held by the caller or not, calls in loops, branches, lambdas and recursions).
Oracles: central finite differences (grad, jvp, hessian), and the same
transformation with replay switched off, whose core IR must be the same (a
replay lowers to what a lowering would, names included) and which must refuse
exactly what the replayed one refuses."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import astad
from astad.frontend import replay
from conftest import fuzz_examples, load_program

G = np.array([1.0, 2.0, 3.0])
C1 = 2.0
C2 = 2.0


# --------------------------------------------------------------------------- helpers called repeatedly


def h_sq(a, b):
    return a * b + np.sin(a)


def h_ret(a, b):
    return a


def h_glob(a):
    return a * G


def h_default(a, s=2.0):
    return a * s


def h_kw(a, b):
    return a - 2.0 * b


def h_tuple(t):
    return t[0] * t[1]


def h_pow(a, n):
    return a ** n


def h_shape(a):
    return a.reshape(a.shape[0], 1) * 2.0


def h_sign(a, z):
    return a * np.copysign(1.0, z)


def h_isinstance(a):
    if isinstance(a, tuple):
        return a[0] + a[1]
    return a * 5.0


def h_reshape(a):
    return np.reshape(a, (3,))


def h_pair(a, b):
    return np.reshape(a, (3,)), b * 1.0


def h_rebind(a):
    """Assigns its argument to a new name once nothing else in it holds the argument: the argument's
    binding is renamed where the caller does not hold it either (so whether it does is read)."""
    a, b = 1.0, a
    return b * a + b


def step(a, b):
    return np.tanh(a * b) + a


def rec(v, n):
    if n <= 0:
        return v
    return rec(step(v, 0.5), n - 1)


def rec_tree(t, acc):
    if isinstance(t, tuple):
        return rec_tree(t[1], rec_tree(t[0], acc) * 0.5)
    return acc + np.sin(t)


# --------------------------------------------------------------------------- callers (x: 3 floats)


def swapped_and_same_arguments(x):
    return h_sq(x[0], x[1]) + h_sq(x[1], x[0]) + h_sq(x[0], x[0]) + h_sq(h_sq(x[0], x[2]), x[1])


def result_is_the_argument(x):
    y = h_ret(x, x[0])
    z = h_ret(x * 2.0, x[1])
    z[0] = 5.0 * x[2]
    return np.sum(y * z)


def global_array(x):
    return np.sum(h_glob(x) + h_glob(x * 2.0))


def defaults_and_constants(x):
    return (h_default(x[0]) + h_default(x[1], 3.0) + h_default(x[2]) + h_default(x[0], s=2.0)
            + h_default(x[1], C1) + h_default(x[2], C2))


def keywords(x):
    return h_kw(x[0], x[1]) + h_kw(b=x[0], a=x[1]) + h_kw(x[1], b=x[0])


def tuples(x):
    t = (x[0], x[1])
    return h_tuple(t) + h_tuple((x[1], x[1])) + h_tuple((x[2], x[0]))


def known_ints_and_bools(x):
    n = x.shape[0]
    return h_pow(x[0], 2) + h_pow(x[1], 3) + h_pow(x[2], 2) + h_pow(x[0], 2.0) + h_pow(x[1], True) + h_pow(x[2], n)


def shapes(x):
    return np.sum(h_shape(x)) + np.sum(h_shape(x[:2])) + np.sum(h_shape(x[1:]))


def signed_zeros(x):
    return h_sign(x[0], 0.0) + h_sign(x[1], -0.0) + h_sign(x[2], 0.0)


def isinstance_of_argument(x):
    return h_isinstance((x[0], x[1])) + h_isinstance(x[2]) + h_isinstance((x[1], x[2])) + h_isinstance(x[0])


def in_loop_and_branch(x):
    s = h_sq(x[0], x[1])
    for i in range(3):
        s = s + h_sq(x[i], s)
    if x[0] > 0.0:
        y = h_sq(x[0], x[1])
    else:
        y = h_sq(x[1], x[0])
    return s + y + h_sq(x[0], x[1])


def in_lambdas(x):
    g = lambda v: h_sq(v, x[1])  # noqa: E731
    return g(x[0]) + h_sq(x[0], x[1]) + g(x[2])


def in_nested_def(x):
    def inner(v):
        return h_sq(v, x[2]) * 2.0
    return inner(x[0]) + h_sq(x[0], x[2]) + inner(x[1])


def update_replayed_views(x):
    u = h_reshape(x * 1.0)
    w = h_reshape(x * 2.0)
    w[0] = 5.0 * x[1]
    u += w
    return np.sum(u * w)


def update_replayed_tuple(x):
    a = x * 1.0
    p, q = h_pair(a, x)
    r, s = h_pair(x * 2.0, x)
    r[0] = 1.0
    s[1] = 2.0 * x[0]
    return np.sum(p * q) + np.sum(r * s)


def argument_held_or_not(x):
    p = (x[0] * 2.0, x[1])
    u = h_rebind(p[0])
    w = h_rebind(x[2] * 3.0)
    return u + w


def recursions(x):
    k = int(x[2] > 0.0) + 2
    return (step(x[0], 0.5) + rec(x[0], k) + rec(step(x[1], 0.5), 3)
            + rec_tree(((x[0], x[1]), (x[2], x[0])), 1.0) + rec_tree((x[1], (x[2], x[0])), x[1]))


CORRECT = [swapped_and_same_arguments, result_is_the_argument, global_array, defaults_and_constants, keywords,
           tuples, known_ints_and_bools, shapes, signed_zeros, isinstance_of_argument, in_loop_and_branch, in_lambdas,
           in_nested_def, update_replayed_views, update_replayed_tuple, argument_held_or_not, recursions]


def update_view_of_live_base(x):
    a = x * 1.0
    b = x * 2.0
    u = h_reshape(a)
    w = h_reshape(b)  # replayed: a view of b, which is read below
    w[0] = 5.0 * x[1]
    return np.sum(u) + np.sum(b * b)


def update_replayed_tuple_of_live_base(x):
    a = x * 1.0
    p, q = h_pair(x * 2.0, x)
    r, s = h_pair(a, x)  # replayed: r is a view of a, read below
    r[0] = 1.0
    return np.sum(p * q) + np.sum(r * s) + np.sum(a)


def update_argument_through_replay(x):
    u = h_reshape(x * 1.0)
    w = h_reshape(x)  # replayed: a view of the argument
    w[0] = 1.0
    return np.sum(u * w)


REFUSED = [update_view_of_live_base, update_replayed_tuple_of_live_base, update_argument_through_replay]


# --------------------------------------------------------------------------- oracles


class _Off:
    """Replay switched off: no call has a key, each is lowered."""

    def __enter__(self):
        self.old, replay.key_of = replay.key_of, lambda *a, **k: None

    def __exit__(self, *exc):
        replay.key_of = self.old


class _Inlined:
    """Every replayed call inlined: no recursion's call made a function of its own (tests/test_key_functions.py)."""

    def __enter__(self):
        self.old, replay.FUNCTIONS = replay.FUNCTIONS, False

    def __exit__(self, *exc):
        replay.FUNCTIONS = self.old


def _core(fn, x, off=False):
    astad.clear_caches(disk=False)
    if off:
        with _Off():
            d = astad.reverse(fn)
            d.transform(x)
            return d.ir("core", x)
    with _Inlined():
        d = astad.reverse(fn)
        d.transform(x)
        return d.ir("core", x)


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _count_replays(monkeypatch):
    count = [0]
    real = replay.replay

    def counting(*a, **k):
        count[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(replay, "replay", counting)
    return count


X = np.array([0.3, -0.7, 1.1])


@pytest.mark.parametrize("fn", CORRECT, ids=lambda f: f.__name__)
def test_replayed_calls_against_finite_differences(fn):
    """grad and the Hessian against central differences, jvp against grad (forward vs reverse)."""
    astad.clear_caches(disk=False)
    g = astad.grad(fn)(X)
    np.testing.assert_allclose(g, _fd_grad(fn, X), rtol=1e-5, atol=1e-6)
    v = np.array([0.4, -0.3, 0.8])
    value, jv = astad.jvp(fn, (X,), (v,))
    assert value == pytest.approx(fn(X))
    assert jv == pytest.approx(g @ v, rel=1e-8, abs=1e-10)
    hess = astad.hessian(fn)(X)
    want = np.array([_fd_grad(lambda z: astad.grad(fn)(z)[i], X) for i in range(3)])
    np.testing.assert_allclose(hess, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn", CORRECT, ids=lambda f: f.__name__)
def test_replay_lowers_as_a_lowering_would(fn):
    """The core IR with replay on is the IR with replay off, names included."""
    assert _core(fn, X) == _core(fn, X, off=True)


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_replayed_views_refused_as_lowered(monkeypatch, fn):
    """An update of a replayed call's view of something still read is refused, as with replay off."""
    count = _count_replays(monkeypatch)
    for off in (False, True):
        astad.clear_caches(disk=False)
        with pytest.raises(astad.UnsupportedSyntaxError, match="in place"):
            if off:
                with _Off():
                    astad.grad(fn)(X)
            else:
                astad.grad(fn)(X)
    assert count[0] >= 1  # the call whose result is updated was replayed


def test_an_argument_a_caller_holds_is_not_replayed_where_it_is_not(monkeypatch):
    """`h_rebind` names its argument `b` where nothing holds it (its binding renamed): whether the caller
    holds it is not in the key, so a call recorded where the caller held it would leave the second
    argument's binding unnamed. Such a call is not recorded; the code reads as if lowered."""
    count = _count_replays(monkeypatch)
    on = _core(argument_held_or_not, X)
    assert count[0] == 0
    assert re.search(r"let b = mul\(t\d+, 3\.0\)", on)  # the second call's argument, named as lowered


# --------------------------------------------------------------------------- random programs

HELPERS = '''
import numpy as np

W = np.array([[1.0, 0.5], [-0.5, 2.0], [0.25, 1.0]])


def zN(a, n):
    return np.sum(a) * np.ones(n)


def sAx(m, axis):
    return np.sum(np.sin(m), axis=axis)


def kIdx(a, k):
    return a[k] * 2.0 + a[-1]


def tT(m):
    return m.T @ m[:, 0]


def shp(a):
    return a * a.shape[0]


def kw(a, b=2.0, c=0.0):
    return a * b + c


def flag(a, f):
    return a * 2.0 if f else np.cos(a)


def tup(a, b):
    return (a, (b, a * b))


def nest(a, b):
    p, (q, r) = tup(a, b)
    return flag(p, True) + flag(q, False) * r


def mat(m, v):
    return W.T @ v + np.sum(m) * 0.1


def axis2(m):
    return np.mean(m, axis=0) * np.max(m, axis=1)[0]


def chain(a):
    return a.reshape(-1)[::-1] * 1.0


def rebind(a):
    a, b = 0.5, a
    return b * a
'''

CALLS = ["zN({v}, {n})", "sAx({m}, {ax})", "kIdx({v}, {k})", "tT({m})", "shp({v})", "shp({m})", "kw({s})",
         "kw({s}, {s})", "kw({s}, c={s})", "kw({v}, {s}, {s})", "kw(b={s}, a={v})", "flag({s}, {b})", "flag({v}, {b})",
         "nest({s}, {s})", "mat({m}, v3)", "axis2({m})", "chain({m})", "chain({v})", "tup({s}, {s})[1][1]",
         "kIdx({m}, {k})", "rebind({s})", "rebind({v})"]
VECTORS = ["v", "v * 2.0", "np.sin(v)", "x[:2]", "x[1:]", "v[::-1][:2]"]
MATRICES = ["m", "m * 0.5", "m.T.T", "np.cos(m)"]
SCALARS = ["x[0]", "x[1]", "s", "s * 2.0", "1.5", "-0.0", "0.0", "2", "p[0]"]


@st.composite
def programs(draw):
    lines = ["    v = x[:2] * 1.0", "    v3 = x[:3] * 1.0", "    m = np.reshape(x, (3, 2))", "    s = x[2] + 0.0",
             "    p = (x[3] * 2.0, x[4])", "    acc = 0.0"]
    for i in range(draw(st.integers(3, 8))):
        call = draw(st.sampled_from(CALLS)).format(
            v=draw(st.sampled_from(VECTORS)), m=draw(st.sampled_from(MATRICES)), s=draw(st.sampled_from(SCALARS)),
            n=draw(st.sampled_from(["2", "3", "len(v)", "v.shape[0]"])), ax=draw(st.sampled_from(["0", "1", "-1"])),
            k=draw(st.sampled_from(["0", "1", "-1", "len(v) - 1"])),
            b=draw(st.sampled_from(["True", "False", "1", "0", "len(v) > 1"])))
        where = draw(st.integers(0, 3))
        if where == 0:
            lines.append(f"    acc = acc + np.sum({call})")
        elif where == 1:
            lines += ["    for i in range(2):", f"        acc = acc + np.sum({call}) * (i + 1)"]
        elif where == 2:
            lines += ["    if x[0] > 0.0:", f"        acc = acc + np.sum({call})", "    else:",
                      f"        acc = acc - np.sum({call})"]
        else:
            lines += [f"    g{i} = lambda q: np.sum({call}) * q", f"    acc = acc + g{i}(x[1]) + g{i}(x[2])"]
    return HELPERS + "\n\ndef f(x):\n" + "\n".join(lines) + "\n    return acc\n"


@settings(max_examples=fuzz_examples(5, long=12), deadline=None, suppress_health_check=list(HealthCheck))
@given(source=programs())
def test_random_programs_of_repeated_calls(tmp_path_factory, source):
    """Random programs calling helpers again and again (in loops, branches, lambdas, with literals,
    keywords, views, known ints and bools): the same core IR with replay on and off, and grad against
    central differences, jvp against grad."""
    fn = load_program(source, tmp_path_factory.mktemp("replay")).f
    x = np.array([0.3, -0.7, 1.1, 0.4, -0.2, 0.9])
    try:
        with np.errstate(all="raise"):
            fn(x)
    except (FloatingPointError, ValueError, IndexError):
        return
    assert _core(fn, x) == _core(fn, x, off=True), source
    astad.clear_caches(disk=False)
    g = astad.grad(fn)(x)
    np.testing.assert_allclose(g, _fd_grad(fn, x), rtol=1e-5, atol=1e-6, err_msg=source)
    v = np.linspace(-0.5, 0.5, 6)
    _, jv = astad.jvp(fn, (x,), (v,))
    assert jv == pytest.approx(g @ v, rel=1e-7, abs=1e-9), source


def scalar_repeats(z):
    return h_sq(z, 0.5) + h_sq(z * 2.0, 0.5) + h_sq(h_sq(z, 0.5), 0.5)


def test_grad_of_grad_of_replayed_calls():
    astad.clear_caches(disk=False)
    e = 1e-4
    want = (scalar_repeats(0.7 + e) - 2 * scalar_repeats(0.7) + scalar_repeats(0.7 - e)) / e ** 2
    assert astad.grad(astad.grad(scalar_repeats))(0.7) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("fn", [swapped_and_same_arguments, tuples, recursions], ids=lambda f: f.__name__)
def test_jacobians_of_gradients_of_replayed_calls(fn):
    """jacfwd and jacrev of grad, and hessian: the same matrix (forward over reverse, reverse over reverse)."""
    astad.clear_caches(disk=False)
    hess = astad.hessian(fn)(X)
    np.testing.assert_allclose(astad.jacfwd(astad.grad(fn))(X), hess, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(astad.jacrev(astad.grad(fn))(X), hess, rtol=1e-8, atol=1e-10)
