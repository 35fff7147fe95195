"""Adversarial cases of the fourth round: reverse mode and the API.

Each derivative is checked against central finite differences in float64 (or forward mode), each
value against the plain function; where astad cannot be sure it must refuse with its own error."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from conftest import fuzz_examples, load_program

TALLY: Counter = Counter()


def _fd(fn, args, k, eps=1e-6):
    """Central finite differences of the scalar ``fn`` in argument ``k`` (an array or a float), steps
    relative to the coordinates."""
    x = np.array(args[k], dtype=float)
    g = np.zeros(x.shape)
    for j in np.ndindex(x.shape):
        h = eps * max(1.0, abs(x[j])) if np.isfinite(x[j]) else eps
        plus, minus = x.copy(), x.copy()
        plus[j] += h
        minus[j] -= h
        a, b = list(args), list(args)
        a[k], b[k] = (plus, minus) if x.shape else (float(plus), float(minus))
        g[j] = (fn(*a) - fn(*b)) / (plus[j] - minus[j])
    return g


# --------------------------------------------------------------------------- the scalar fast path

FAST = '''
import numpy as np


def bools_added(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + ((x[i] > 0) + (x[i] > -1)) * x[i]
    return s


def bools_multiplied_then_added(x):
    s = 0.0
    for i in range(x.shape[0]):
        b = x[i] > 0
        s = s + (b * b + b) * np.sin(x[i])
    return s


def compared_with_a_large_int(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + (x[i] == 9007199254740993) * y[i] + y[i] * y[i]
    return s
'''


@pytest.mark.parametrize("name, args", [
    ("bools_added", (np.array([1.0, 2.0, 0.5, -0.5, -2.0]),)),
    ("bools_multiplied_then_added", (np.array([1.0, 2.0, 0.5, -0.5]),)),
    ("compared_with_a_large_int", (np.array([9007199254740992.0, 1.0]), np.array([1.0, 2.0]))),
])
def test_the_scalar_fast_path_keeps_numpys_semantics(tmp_path, name, args):
    """A loop over a float64 vector runs on Python floats; numpy's bools add as ``or`` (Python's as
    ints) and numpy compares a float with an int beyond 2**53 as two floats (Python exactly)."""
    fn = getattr(load_program(FAST, tmp_path), name)
    want = fn(*args)
    for _ in range(2):
        value, pullback = astad.reverse(fn)(*args)
        assert value == want
        cts = pullback(1.0)
        for k, a in enumerate(args):
            if k == 0 and name == "compared_with_a_large_int":
                continue  # (2**53: no room for a finite difference)
            np.testing.assert_allclose(cts[k], _fd(fn, args, k), rtol=1e-6, atol=1e-6)
        assert astad.grad(fn)(*args) == pytest.approx(cts[0])


# --------------------------------------------------------------------------- a Python float typed as numpy's

JOINED = '''
import numpy as np


def power_after_a_join(x, y):
    s = x
    if y > 0.0:
        s = np.float64(x)
    return s ** -1 + s ** 0.5 + y


def np_power_after_a_join(x, y):
    s = x
    if y > 0.0:
        s = np.float64(x)
    return np.power(s, 2.5) + y


def carried_through_a_loop(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + 1e-300
        if y[i] < 0:
            s = s * x[i]
        else:
            s = s - s ** -1
    return s
'''


@pytest.mark.parametrize("name, args, want", [
    ("power_after_a_join", (1e-300, -1.0), -np.inf),
    ("power_after_a_join", (2.0, -1.0), -0.25 + 0.5 * 2.0 ** -0.5),
    ("np_power_after_a_join", (-2.0, -1.0), np.nan),
    ("carried_through_a_loop", (np.array([0.0]), np.array([0.0])), np.array([0.0])),
])
def test_a_python_float_joined_with_a_numpy_one_is_raised_to_a_power_as_numpy_does(tmp_path, name, args, want):
    """An ``if`` joins a Python float and an np.float64 as an np.float64, but the Python float is what
    runs: the derivative ``s ** -2`` of ``s ** -1`` raised OverflowError at ``s = 1e-300`` (numpy: inf),
    and ``s ** 1.5`` of ``np.power(s, 2.5)`` was complex at ``s = -2.0`` (numpy: nan, as the primal)."""
    fn = getattr(load_program(JOINED, tmp_path), name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value, pullback = astad.reverse(fn)(*args)
        assert _same(value, fn(*args))
        dx = pullback(1.0)[0]
        assert np.all(np.isreal(dx))
        np.testing.assert_allclose(dx, want, rtol=1e-12)


# --------------------------------------------------------------------------- NamedTuples of their own

NAMED = '''
import collections
from typing import NamedTuple

import numpy as np


class P(NamedTuple):
    a: float
    b: float = 1.0

    def total(self):
        return self.a + self.b


class Sub(P):
    """A subclass with a docstring and a repr of its own: read as P."""

    def __repr__(self):
        return "Sub"


N = collections.namedtuple("N", "a b")


class Reversed(NamedTuple):
    a: float
    b: float

    def __getitem__(self, i):
        return tuple.__getitem__(self, 1 - i)

    def __iter__(self):
        return iter((self.b, self.a))


class Swapped(P):
    a = P.b


class Property(P):
    @property
    def a(self):
        return 99.0


class New(P):
    def __new__(cls, a, b):
        return super().__new__(cls, b, a)


class Long(P):
    def __len__(self):
        return 7


def by_name(p):
    return p.a * p.b + 2.0 * p.a


def by_index(p):
    return p[0] * 2.0 + p[1] * 3.0


def unpacked(p):
    x, y = p
    return x * 2.0 + y * 3.0 + len(p)
'''


@pytest.mark.parametrize("cls", ["P", "Sub", "N"])
@pytest.mark.parametrize("name", ["by_name", "by_index", "unpacked"])
def test_plain_namedtuples_are_read_as_their_fields(tmp_path, cls, name):
    prog = load_program(NAMED, tmp_path)
    fn, p = getattr(prog, name), getattr(prog, cls)(1.5, 2.5)
    for _ in range(2):
        g = astad.grad(fn)(p)
        assert type(g) is type(p)
        for k in range(2):
            plus, minus = list(tuple(p)), list(tuple(p))
            plus[k] += 1e-6
            minus[k] -= 1e-6
            want = (fn(type(p)(*plus)) - fn(type(p)(*minus))) / 2e-6
            assert tuple.__getitem__(g, k) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("cls, words", [("Reversed", "__getitem__"), ("Swapped", "`.a`"), ("Property", "`.a`"),
                                        ("New", "__new__"), ("Long", "__len__")])
@pytest.mark.parametrize("name", ["by_name", "by_index", "unpacked"])
def test_a_namedtuple_that_reads_its_items_otherwise_is_refused(tmp_path, cls, words, name):
    """astad reads ``p[0]``, ``p.a``, unpacking and ``len`` as the fields in order; a class whose
    ``__getitem__``, ``__iter__``, ``__len__``, field or ``__new__`` differs gave the gradient of
    another function (and rebuilt the cotangent through its ``__new__``)."""
    prog = load_program(NAMED, tmp_path)
    fn, p = getattr(prog, name), getattr(prog, cls)(1.5, 2.5)
    for entry in (lambda: astad.grad(fn)(p), lambda: astad.vjp(fn, p), lambda: astad.jvp(fn, (p,), (p,))):
        with pytest.raises(astad.AstadTypeError, match="NamedTuple") as info:
            entry()
        assert words in str(info.value) and "argument `p`" in str(info.value)


# --------------------------------------------------------------------------- the output cotangent's type

DIVIDED = '''
import numpy as np


def by_int(x, n):
    return np.sin(x[0]) / n + x[1]


def by_float(x, d):
    return x[0] / d + x[1]


def scalar_by_int(x, n):
    return np.float64(x) / n


def pair_by_int(x, n):
    return x[0] / n, x[1] * 2.0


def loop_by_index(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] / i
    return s
'''

_ENTRY = {
    "grad": lambda fn, args: astad.grad(fn)(*args),
    "value_and_grad": lambda fn, args: astad.value_and_grad(fn)(*args)[1],
    "reverse": lambda fn, args: astad.reverse(fn)(*args)[1](1.0)[0],
    "reverse int ct": lambda fn, args: astad.reverse(fn)(*args)[1](1)[0],
    "vjp": lambda fn, args: astad.vjp(fn, *args)[1](1.0)[0],
}


@pytest.mark.parametrize("entry", list(_ENTRY))
@pytest.mark.parametrize("name, args, want", [
    ("by_int", (np.array([0.5, 2.0]), 0), np.array([np.inf, 1.0])),
    ("by_float", (np.array([0.5, 2.0]), 0.0), np.array([np.inf, 1.0])),
    ("scalar_by_int", (0.5, 0), np.inf),
    ("loop_by_index", (np.array([0.5, 2.0, 4.0]), np.zeros(3)), np.array([np.inf, 1.0, 0.5])),
])
def test_the_output_cotangent_is_a_numpy_scalar_where_the_value_is_one(tmp_path, entry, name, args, want):
    """``np.sin(x[0]) / n`` at ``n = 0`` is inf (numpy warns); the derivative ``ct / n`` must be too,
    not a ZeroDivisionError because grad's cotangent 1.0 (or the caller's) is a Python float."""
    fn = getattr(load_program(DIVIDED, tmp_path), name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert fn(*args) == np.inf
        for _ in range(3):  # (the later calls take the fused and checked fast paths)
            np.testing.assert_array_equal(_ENTRY[entry](fn, args), want)


def test_a_tuple_outputs_float_cotangents_are_its_numpy_scalars(tmp_path):
    fn = load_program(DIVIDED, tmp_path).pair_by_int
    x = np.array([0.5, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value, pullback = astad.reverse(fn)(x, 0)
        np.testing.assert_array_equal(pullback((1.0, 1.0))[0], [np.inf, 2.0])
        np.testing.assert_array_equal(pullback([1.0, 0.5])[0], [np.inf, 1.0])
        np.testing.assert_array_equal(astad.vjp(fn, x, 0)[1]((1.0, 1.0))[0], [np.inf, 2.0])



def test_second_derivatives_seed_the_numpy_scalar_too(tmp_path):
    """The gradient inside hessian, grad(grad(.)) and jvp(grad(.)) starts from the output's
    cotangent of the output's type too: -sin(x0) / 0 is -inf (finite differences of the
    gradient cos(x0) / n at n = 0 are not defined; the IEEE value is the oracle)."""
    prog = load_program(DIVIDED, tmp_path)
    x = np.array([0.5, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(2):
            assert astad.hessian(prog.by_int)(x, 0)[0, 0] == -np.inf
            assert astad.grad(astad.grad(prog.scalar_by_int))(0.5, 0) == 0.0  # d/dx of 1 / n (a ZeroDivisionError)
            value, tangent = astad.jvp(astad.grad(prog.by_int), (x, 0), (np.array([1.0, 0.0]), None))
            np.testing.assert_array_equal(value, [np.inf, 1.0])
            assert tangent[0] == -np.inf


def test_the_fast_backward_loop_reads_a_numpy_cotangent_as_a_python_float(tmp_path):
    """grad's seed is an np.float64 where the output is one: the backward loop on the fast path reads
    it as a Python float (``float(ct)`` once, exact), its fallback (after a division by zero) as numpy's,
    so the fast path keeps its speed and ``x[i] / i`` at ``i = 0`` still gives inf."""
    src = """
import numpy as np

def loop(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * y[i] + 0.5 * x[i] * x[i]
    return s
"""
    fn = load_program(src, tmp_path).loop
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(7), rng.standard_normal(7)
    source = astad.reverse(fn).transform(x, y).source
    backward = source[source.index("def loop_backward"):]
    assert "_float = float(" in backward
    fast_loop = backward[:backward.index("except")]
    assert "s_5_ct *" not in fast_loop and "_float *" in fast_loop
    for _ in range(3):
        gx, gy = astad.grad(fn, (0, 1))(x, y)
        np.testing.assert_allclose(gx, np.cos(x) * y + x, rtol=1e-13)
        np.testing.assert_allclose(gy, np.sin(x), rtol=1e-13)

# random loops over float64 vectors: elements, bools of comparisons, constants of every kind

_FLOAT_CONSTS = ["0.5", "2.0", "-1.5", "0.0", "-0.0", "3", "1e300", "9007199254740993"]
_FUNCS = ["np.sin", "np.cos", "np.exp", "np.log", "np.sqrt", "np.tanh", "np.abs", "np.arctan", "np.log1p"]


@st.composite
def _floats(draw, depth=0):
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(["x[i]", "y[i]", "x[i]", "s", "i"] + _FLOAT_CONSTS))
    kind = draw(st.sampled_from(["bin", "bin", "fn", "bool_times", "bools_times", "pow", "neg"]))
    if kind == "bin":
        op = draw(st.sampled_from(["+", "-", "*", "/"]))
        return f"({draw(_floats(depth + 1))} {op} {draw(_floats(depth + 1))})"
    if kind == "fn":
        return f"{draw(st.sampled_from(_FUNCS))}({draw(_floats(depth + 1))})"
    if kind == "bool_times":
        return f"({draw(_bools(depth + 1))}) * {draw(_floats(depth + 1))}"
    if kind == "bools_times":
        op = draw(st.sampled_from(["+", "*", "==", "!="]))
        return f"(({draw(_bools(depth + 1))}) {op} ({draw(_bools(depth + 1))})) * {draw(_floats(depth + 1))}"
    if kind == "pow":
        return f"{draw(_floats(depth + 1))} ** {draw(st.sampled_from(['2', '3', '-1', '0', '2.0']))}"
    return f"-{draw(_floats(depth + 1))}"


@st.composite
def _bools(draw, depth=0):
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
    right = draw(st.sampled_from(["0", "3", "-1", "9007199254740993"]) | _floats(depth + 1))
    return f"{draw(_floats(depth + 1))} {op} {right}"


@st.composite
def _fast_loops(draw):
    body = [f"        s = s + {draw(_floats())}"]
    if draw(st.booleans()):
        body += [f"        if {draw(_bools())}:", f"            s = s * {draw(_floats(2))}",
                 "        else:", f"            s = s - {draw(_floats(2))}"]
    if draw(st.booleans()):
        body.append(f"        t = {draw(_floats())}")
        body.append("        s = s + t * x[i]")
    values = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 9007199254740992.0, 1e300, np.inf, np.nan])
    quarters = st.integers(-12, 12).map(lambda k: k / 4)  # (no 1e-120: finite differences of 1 / y)
    xs = draw(st.lists(values | quarters, min_size=1, max_size=4))
    ys = draw(st.lists(quarters, min_size=len(xs), max_size=len(xs)))
    src = "import numpy as np\n\n\ndef f(x, y):\n    s = 0.0\n    for i in range(x.shape[0]):\n" + "\n".join(body) \
        + "\n    return s\n"
    return src, np.array(xs), np.array(ys)


def _same(got, want):
    if np.isnan(want):
        return np.isnan(got)
    return got == pytest.approx(want, rel=1e-12, abs=1e-300)


@settings(max_examples=fuzz_examples(25, long=60), deadline=None, suppress_health_check=list(HealthCheck))
@given(_fast_loops())
def test_random_fast_loops_compute_what_numpy_computes(tmp_path_factory, case):
    """The value of the generated code is the plain function's (numpy's scalar semantics: bools,
    ints, inf, nan, -0.0), and where the function is smooth its gradient the finite differences'."""
    src, x, y = case
    note(src)
    fn = load_program(src, tmp_path_factory.mktemp("fast")).f
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = fn(x, y)
        except (ArithmeticError, ValueError, TypeError):
            return
        if not np.isfinite(want):
            TALLY["not finite"] += 1
        rev = astad.reverse(fn)
        try:
            value, pullback = rev(x, y)
        except astad.AstadError:
            TALLY["refused"] += 1
            return
        assert _same(value, want), (value, want)
        TALLY["fast" if "tolist" in rev.source else "array path"] += 1
        pullback(1.0)  # (at ties of the special values, a kink: the two modes may pick other subgradients)
        if not np.all(np.isfinite(x)):
            return
        # off the ties of the special values (``(x == y) * x`` at 0 is the branch's derivative, 1)
        x, y = x + 0.0123 * np.arange(1, x.size + 1), y - 0.0071 * np.arange(1, y.size + 1)
        want = fn(x, y)
        value, pullback = rev(x, y)
        assert _same(value, want), (value, want)
        dx, dy = pullback(1.0)
        vx, vy = np.linspace(0.5, 1.5, x.size), np.linspace(-1.0, 1.0, y.size)
        dot = np.sum(dx * vx) + np.sum(dy * vy)
        _, tangent = astad.jvp(fn, (x, y), (vx, vy))  # forward mode: no fast path for loops
        scale = np.sum(np.abs(dx * vx)) + np.sum(np.abs(dy * vy))
        if np.isfinite(dot) and np.isfinite(tangent):  # (inf or nan: the two modes' orders of inf * 0)
            assert abs(dot - tangent) <= 1e-9 * (1.0 + scale), (dot, tangent)
        if "1e300" in src or "9007" in src or not (np.all(np.abs(x) < 1e3) and abs(want) < 1e6):
            return  # (finite differences lose a step of 1e-6 next to 1e300 or 2**53)
        for k, d in zip((0, 1), pullback(1.0)):
            central, left, right = _one_sided(fn, (x, y), k, want)
            smooth = np.isfinite(central) & np.isclose(left, right, rtol=1e-4, atol=1e-4) \
                & np.isclose(left, central, rtol=1e-4, atol=1e-4) & (np.abs(central) < 1e6) \
                & np.isfinite(d)  # (nan: an intermediate at a kink, ``np.sqrt(x - x)``: inf * 0)
            np.testing.assert_allclose(np.asarray(d)[smooth], central[smooth], rtol=1e-4, atol=1e-4)


def _one_sided(fn, args, k, value, eps=1e-6):
    """Central, left and right differences of ``fn`` (whose value at ``args`` is ``value``) in
    argument ``k``: where the two one-sided ones disagree, ``fn`` has a kink or a jump there."""
    x = np.array(args[k], dtype=float)
    central, left, right = (np.full(x.shape, np.nan) for _ in range(3))
    for j in np.ndindex(x.shape):
        if not np.isfinite(x[j]):
            continue
        h = eps * max(1.0, abs(x[j]))
        plus, minus = x.copy(), x.copy()
        plus[j] += h
        minus[j] -= h
        a, b = list(args), list(args)
        a[k], b[k] = plus, minus
        fp, fm = fn(*a), fn(*b)
        central[j] = (fp - fm) / (plus[j] - minus[j])
        right[j] = (fp - value) / (plus[j] - x[j])
        left[j] = (value - fm) / (x[j] - minus[j])
    return central, left, right


def test_zz_tally_of_random_fast_loops():
    """How the random loops went (``-s`` prints it): most must run on the fast path."""
    print("\nrandom fast loops:", dict(TALLY))
