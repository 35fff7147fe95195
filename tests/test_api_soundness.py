"""Soundness at the API boundary (issue 9 items 3, 4, 7, 9, 13, 18).

Every gradient is checked against central finite differences of the plain
Python function (``fd``) or against ``check_grad``; refusals must be astad's own
errors (never an InternalError or a bare TypeError).
"""

from __future__ import annotations

import collections
import enum
import functools
import importlib
import sys
import textwrap
import threading
import types
import typing
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad
from astad import api, ir
from conftest import check_grad, known_to_inspect


def fd(fn, args, i, eps=1e-6):
    """Central finite differences of a real-scalar fn in its array argument i."""
    a = np.array(args[i], dtype=float)
    out = np.zeros(a.shape)
    for idx in np.ndindex(*a.shape):
        plus, minus = a.copy(), a.copy()
        plus[idx] += eps
        minus[idx] -= eps
        hi = list(args); hi[i] = plus
        lo = list(args); lo[i] = minus
        out[idx] = (fn(*hi) - fn(*lo)) / (2 * eps)
    return out


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def not_internal(e):
    assert isinstance(e, astad.AstadError) and not isinstance(e, astad.InternalError), repr(e)


@pytest.fixture
def write_module(tmp_path, monkeypatch):
    """Write a module file in tmp_path and import it (a fresh name each time)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made = []

    def write(text, name=None):
        name = name or f"astad_mod_{len(made)}_{id(made)}"
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        importlib.invalidate_caches()
        module = importlib.import_module(name)
        known_to_inspect(module)
        made.append(name)
        return module, path

    yield write
    for name in made:
        sys.modules.pop(name, None)


def edit(path, text):
    """Rewrite a module's file (with a later mtime, so that linecache sees it)."""
    import os

    stat = path.stat()
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    os.utime(path, (stat.st_atime + 10, stat.st_mtime + 10))


# --------------------------------------------------------------------------- 3: wrappers


def times_ten(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 10 * fn(x)
    return wrapper


@times_ten
def wrapped_square(x):
    return np.sum(x * x)


def calls_wrapped(x):
    return wrapped_square(x) + 1.0


def square(x):
    return np.sum(x * x)


grad_of_square = astad.grad(square)
value_and_grad_of_square = astad.value_and_grad(square)


def calls_grad(x):
    return np.sum(grad_of_square(x))


def calls_value_and_grad(x):
    return value_and_grad_of_square(x)[0]


@times_ten
@astad.reverse
def wrapped_reverse(x):
    return np.sum(x * x)


def calls_wrapped_reverse(x):
    return np.sum(wrapped_reverse(x))


def no_wraps(fn):
    def wrapper(x):
        return 10 * fn(x)
    return wrapper


@no_wraps
def closure_wrapped(x):
    return np.sum(x * x)


X3 = np.array([0.3, -1.2, 0.7])


@pytest.mark.parametrize("make", [astad.reverse, astad.grad, astad.value_and_grad, lambda f: functools.partial(
    astad.vjp, f)])
def test_a_functools_wraps_wrapper_is_refused_not_unwrapped(make):
    with pytest.raises(astad.SourceUnavailableError) as info:
        make(wrapped_square)(X3)
    assert "wrapper" in str(info.value)


@pytest.mark.parametrize("fn, words", [
    (calls_wrapped, "wrapper"),
    (calls_grad, "higher-order"),
    (calls_value_and_grad, "higher-order"),
    (calls_wrapped_reverse, "wrapper"),
])
def test_a_wrapped_helper_is_refused_at_its_call(fn, words):
    with pytest.raises(astad.SourceUnavailableError) as info:
        astad.grad(fn)(X3)
    assert words in str(info.value)
    assert info.value.loc is not None and info.value.loc.line > 0  # points at the call


def test_a_wrapper_without_wraps_is_a_closure():
    """A decorator's wrapper made without functools.wraps is a closure: the function it
    captures is read as a global is, and inlined."""
    close(astad.grad(closure_wrapped)(X3), fd(closure_wrapped, [X3], 0))


@astad.reverse
def rev_helper(x):
    return np.sin(x) * x


def calls_rev_helper(x):
    return np.sum(rev_helper(x)[0] * 2.0)  # (value, pullback), as in Python


def calls_rev_helper_as_its_function(x):
    return np.sum(rev_helper(x) * 2.0)  # Python: TypeError (a pair times a float)


def test_an_astad_reverse_helper_is_inlined_and_its_value_differentiated():
    close(astad.grad(calls_rev_helper)(X3), fd(calls_rev_helper, [X3], 0))


def test_an_astad_reverse_helper_is_not_taken_for_its_function():
    with pytest.raises(TypeError):
        calls_rev_helper_as_its_function(X3)
    with pytest.raises(astad.UnsupportedFunctionError, match=r"returns a pair \(value, pullback\)") as info:
        astad.grad(calls_rev_helper_as_its_function)(X3)
    assert "rev_helper(...)[0]" in info.value.hint and info.value.loc.line > 0


# --------------------------------------------------------------------------- 4: argument types and keys


def mean_square(x):
    return np.mean(x * x)


def test_memmap_batches_of_two_sizes_give_their_own_gradients(tmp_path):
    rng = np.random.default_rng(0)
    g = astad.grad(mean_square)
    for rows in (32, 8, 32, 8):
        mm = np.memmap(tmp_path / f"batch{rows}.dat", dtype="float64", mode="w+", shape=(rows, 3))
        mm[:] = rng.standard_normal((rows, 3))
        close(g(mm), fd(mean_square, [np.asarray(mm)], 0))
        value, pullback = astad.reverse(mean_square)(mm)
        close(value, mean_square(np.asarray(mm)))
        close(pullback(1.0)[0], 2 * np.asarray(mm) / mm.size)


def dict_mean(d):
    return np.mean(d["w"] * d["w"]) + d["b"]


class Pair(typing.NamedTuple):
    w: np.ndarray
    b: float


def leaf_mean(p):
    return np.mean(p[0] * p[0]) + p[1]


CONTAINERS = {
    "dict": (dict_mean, lambda w, b: {"w": w, "b": b}, lambda g: (g["w"], g["b"])),
    "OrderedDict": (dict_mean, lambda w, b: collections.OrderedDict(w=w, b=b), lambda g: (g["w"], g["b"])),
    "tuple": (leaf_mean, lambda w, b: (w, b), tuple),
    "list": (leaf_mean, lambda w, b: [w, b], tuple),
    "NamedTuple": (leaf_mean, Pair, tuple),
}


def leaf(kind, w, directory):
    """``w`` as an ndarray, a float32 ndarray, or a memmap in ``directory``."""
    if kind == "memmap":
        mm = np.memmap(directory / f"leaf{next(_LEAVES)}.dat", dtype=w.dtype, mode="w+", shape=w.shape)
        mm[:] = w
        return mm
    return w.astype(np.float32) if kind == "float32" else w


_LEAVES = __import__("itertools").count()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(CONTAINERS)), st.integers(1, 6),
                          st.sampled_from(["ndarray", "float32", "memmap"])), min_size=2, max_size=5))
def test_any_container_with_arrays_of_changing_shape_gives_the_fd_gradient(calls):
    """Calls through every accepted container type with every accepted leaf
    type, alternating shapes: each gives the gradient of its own shape."""
    import pathlib
    import tempfile

    rng = np.random.default_rng(len(calls))
    with tempfile.TemporaryDirectory() as directory:
        for kind, n, leaf_kind in calls:
            fn, make, leaves = CONTAINERS[kind]
            w = leaf(leaf_kind, rng.standard_normal(n), pathlib.Path(directory))
            arg = make(w, 0.5)
            gw, gb = leaves(astad.grad(fn)(arg))
            want = fd(lambda v: fn(make(v, 0.5)), [np.asarray(w, dtype=float)], 0)
            np.testing.assert_allclose(gw, want, rtol=1e-4, atol=1e-6)
            assert gb == 1.0
            assert np.asarray(gw).dtype == w.dtype


def test_the_cotangent_of_a_namedtuple_is_its_own_class():
    def make_class():
        class Pair(typing.NamedTuple):  # same name and fields, another class
            w: np.ndarray
            b: float
        Pair.__qualname__ = "Pair"
        return Pair

    first, second = Pair, make_class()
    for cls in (first, second, first):
        g = astad.grad(leaf_mean)(cls(np.ones(2), 1.0))
        assert type(g) is cls


def scalar_fn(x):
    return x * x * 3.0


@pytest.mark.parametrize("values", [
    [2.0, np.float64(2.0), np.array(2.0), np.float32(2.0), 2.0],
    [np.array(1.5), 1.5, np.array(1.5)],
])
def test_scalars_of_every_kind_alternate(values):
    for v in values:
        value, pullback = astad.reverse(scalar_fn)(v)
        np.testing.assert_allclose(value, scalar_fn(v), rtol=1e-6)
        np.testing.assert_allclose(pullback(1.0)[0], 6.0 * float(v), rtol=1e-6)


def int_scale(x, n):
    return np.sum(x) * n


def test_int_and_numpy_int_alternate():
    for n in (2, np.int64(3), 4, np.int32(5)):
        close(astad.grad(int_scale)(X3, n), np.full(3, float(n)))


class Color(enum.IntEnum):
    RED = 1


class MyFloat(float):
    def __mul__(self, other):
        return 0.0


class MyArray(np.ndarray):
    pass


class Evil(str):
    def __repr__(self):  # never evaluated: astad must not eval text built from user objects
        raise AssertionError("repr of a key was used")


def matrix(rows):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix(rows)


@pytest.mark.parametrize("arg", [
    lambda: matrix([[1.0, 2.0], [3.0, 4.0]]),
    lambda: np.ma.masked_array([1.0, 2.0], mask=[False, True]),
    lambda: np.ones(3).view(MyArray),
    lambda: Color.RED,
    lambda: MyFloat(2.0),
    lambda: collections.defaultdict(float, {"w": np.ones(2)}),
    lambda: {Color.RED: np.ones(2)},
    lambda: {1.5: np.ones(2)},
    lambda: {True: np.ones(2)},
    lambda: [np.ones(2), matrix([[1.0]])],
    lambda: {Evil("w"): np.ones(2), "b": 1.0},
], ids=["matrix", "masked", "ndarray subclass", "IntEnum", "float subclass", "defaultdict", "enum key",
        "float key", "bool key", "matrix in a list", "str subclass key"])
def test_types_astad_cannot_run_as_their_base_are_refused(arg):
    arg = arg()

    def anything(a):
        return 1.0

    for _ in range(2):  # and the refusal is not cached into an acceptance
        with pytest.raises(astad.AstadTypeError) as info:
            astad.reverse(anything)(arg)
        not_internal(info.value)


def test_the_flattener_never_evaluates_key_text():
    t = ir.StructT("dict", (Evil("a"), "b", 3), (ir.FLOAT, ir.StructT("dict", (Evil("c"),), (ir.FLOAT,)), ir.FLOAT))
    value = {Evil("a"): 1.0, "b": {Evil("c"): 2.0}, 3: 4.0}
    assert t.flatten(value) == [1.0, 2.0, 4.0]


# --------------------------------------------------------------------------- 7: stale or mismatched source


MODULE = """
import numpy as np

def helper(x):
    return x * 2.0

def f(x):
    return np.sum(helper(x) * x)
"""


def test_an_edited_file_is_refused_until_the_module_is_reloaded(write_module):
    mod, path = write_module(MODULE)
    edit(path, MODULE.replace("x * 2.0", "x * 3.0"))  # same lines, another constant
    with pytest.raises(astad.SourceUnavailableError) as info:
        astad.grad(mod.f)(X3)
    assert "reload" in str(info.value)
    mod = importlib.reload(mod)
    close(astad.grad(mod.f)(X3), fd(mod.f, [X3], 0))
    close(astad.grad(mod.f)(X3), 6.0 * X3)


def test_shifted_lines_do_not_parse_another_function(write_module):
    mod, path = write_module(MODULE + "\ndef other(x):\n    return np.sum(x * 4.0)\n")
    f = mod.f
    astad.grad(f)(X3)  # parsed before the edit: still right afterwards (the code did not change)
    edit(path, "import numpy as np\n\ndef g(x):\n    return np.sum(x)\n\n\n" + MODULE +
         "\ndef other(x):\n    return np.sum(x * 4.0)\n")
    close(astad.grad(f)(X3), 4.0 * X3)
    with pytest.raises(astad.SourceUnavailableError):  # its line now holds other text
        astad.grad(mod.other)(X3)
    mod2, path2 = write_module(MODULE)
    edit(path2, "import numpy as np\n\ndef f(x):\n    return np.sum(x)\n\n\n" + MODULE)
    with pytest.raises(astad.SourceUnavailableError):  # the `def f` at its line is not its code
        astad.grad(mod2.f)(X3)


def test_an_edited_helper_is_refused_at_its_call(write_module):
    lib, lib_path = write_module("def helper(x):\n    return x * 2.0\n")
    main, _ = write_module(f"import numpy as np\nfrom {lib.__name__} import helper\n\n"
                           "def f(x):\n    return np.sum(helper(x) * x)\n")
    edit(lib_path, "def helper(x):\n    return x * 5.0\n")
    with pytest.raises(astad.SourceUnavailableError) as info:
        astad.grad(main.f)(X3)
    assert info.value.loc is not None and info.value.loc.line == 5


def test_nfkc_identifiers_are_refused(write_module):
    mod, _ = write_module("import numpy as np\n\ndef f(x):\n    \ufb01 = x * 2.0\n    fi = \ufb01 * 3.0\n"
                          "    return np.sum(\ufb01 * x)\n")
    assert np.allclose(mod.f(X3), np.sum(6.0 * X3 * X3))  # Python: one variable
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.grad(mod.f)(X3)
    assert "fi" in str(info.value)


def test_a_builtin_shadowed_after_the_first_call_is_seen(write_module):
    mod, _ = write_module("import numpy as np\n\ndef twice(v):\n    return v * 2.0\n\n"
                          "def f(x):\n    return np.sum(abs(x) * x)\n")
    g = astad.grad(mod.f)
    close(g(X3), fd(mod.f, [X3], 0))
    mod.abs = mod.twice  # Python now calls twice
    close(g(X3), fd(mod.f, [X3], 0))
    close(g(X3), 4.0 * X3)
    del mod.abs
    close(g(X3), fd(mod.f, [X3], 0))


def test_the_same_code_with_other_globals_reads_its_own_globals(write_module):
    mod, _ = write_module("import numpy as np\nC = 2.0\n\ndef f(x):\n    return np.sum(x * C)\n")
    other = types.FunctionType(mod.f.__code__, {**mod.f.__globals__, "C": 5.0}, "f")
    close(astad.grad(mod.f)(X3), np.full(3, 2.0))
    close(astad.grad(other)(X3), np.full(3, 5.0))
    close(astad.grad(mod.f)(X3), np.full(3, 2.0))


VARIED = '''
from __future__ import annotations

import numpy as np
import numpy as xp
from numpy import tanh


def square(v: np.ndarray) -> np.ndarray:
    return v * v


class Holder:
    @staticmethod
    def method(x):
        return np.sum(x * 2.0)


def outer():
    def inner(x):
        def nested(v: float) -> float:
            return v * 3.0
        ys = [nested(a) for a in x]
        return np.sum(np.stack(ys)) + xp.sum(x * x) + np.sum(tanh(x)) + np.sum((lambda t: t * t)(x))
    return inner


inner = outer()


def main(x):
    """A docstring; -0.0 and 1e-300 constants."""
    z = x * -0.0 + 1e-300
    return np.sum(square(x) * (z + 1.0))
'''


def test_functions_of_every_shape_match_their_code(write_module):
    """No false refusal: annotations under __future__, imports of modules and
    functions, nested defs, lambdas, comprehensions, methods, docstrings."""
    mod, _ = write_module(VARIED)
    for fn in (mod.inner, mod.Holder.method, mod.main):
        close(astad.grad(fn)(X3), fd(fn, [X3], 0))


# --------------------------------------------------------------------------- 9: aliasing of results


def add(x, y):
    return x + y


def weighted(w, x):
    h = np.tanh(x @ w)
    return h


def test_mutating_arguments_or_the_value_after_the_forward_call_does_not_change_the_pullback():
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    ct = rng.standard_normal((4, 2))
    want = astad.reverse(weighted)(w.copy(), x.copy())[1](ct)
    value, pullback = astad.reverse(weighted)(w, x)
    w *= 7.0
    x[:] = 0.0
    value *= -3.0
    for got, expected in zip(pullback(ct), want):
        np.testing.assert_array_equal(got, expected)


def test_cotangents_are_arrays_of_their_own():
    x, y = np.ones(3), np.ones(3)
    ct = np.array([1.0, 2.0, 3.0])
    _, pullback = astad.reverse(add)(x, y)
    gx, gy = pullback(ct)
    assert not np.shares_memory(gx, gy)
    assert not np.shares_memory(gx, ct) and not np.shares_memory(gy, ct)
    gx *= 10.0
    np.testing.assert_array_equal(gy, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ct, [1.0, 2.0, 3.0])
    gx2, gy2 = pullback(ct)  # the same again: nothing the first results held was changed
    np.testing.assert_array_equal(gx2, ct)
    np.testing.assert_array_equal(gy2, ct)


def sum_of_product(x, y):
    return np.sum(x * y) + np.sum(x)


def test_gradients_do_not_share_memory_with_each_other_or_the_arguments():
    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    gs = astad.grad(sum_of_product, argnums=(0, 1, 0))(x, y)
    for i, g in enumerate(gs):
        assert not np.shares_memory(g, x) and not np.shares_memory(g, y)
        for h in gs[i + 1:]:
            assert not np.shares_memory(g, h)
    close(gs[0], y + 1.0)
    close(gs[1], x)


# --------------------------------------------------------------------------- 13: internal errors


def defaults_helper(x, s=np.float32(2.0), w=np.array([1.0, -2.0, 0.5]), k=np.int64(3), b=np.bool_(True)):
    return np.sum(x * s * w) * k if b else 0.0


def uses_defaults(x):
    return defaults_helper(x) + defaults_helper(x, 1.0)


def test_numpy_defaults_of_helpers():
    check_grad(uses_defaults, [X3])


@pytest.mark.parametrize("argnums", [1.0, "0", None, True, (0, 1.0), [0, None]])
def test_argnums_of_the_wrong_type_is_refused_when_grad_is_made(argnums):
    for make in (astad.grad, astad.value_and_grad):
        with pytest.raises(astad.AstadTypeError) as info:
            make(int_scale, argnums=argnums)
        assert "argnums" in str(info.value)


def test_numpy_int_argnums():
    close(astad.grad(int_scale, argnums=np.int64(0))(X3, 2), np.full(3, 2.0))


def test_defaults_of_the_top_function_are_filled_in():
    def scaled(x, s=3.0):
        return np.sum(x) * s

    close(astad.grad(scaled)(X3), np.full(3, 3.0))
    _, pullback = astad.reverse(scaled)(X3)
    (gx,) = pullback(1.0)  # as in JAX: one cotangent per argument passed by position
    close(gx, np.full(3, 3.0))
    _, pullback = astad.reverse(scaled)(X3, 3.0)
    gx, gs = pullback(1.0)
    close(gs, np.sum(X3))


# --------------------------------------------------------------------------- 18: bounded caches


@pytest.fixture
def small_cache(monkeypatch):
    monkeypatch.setattr(astad.config, "memory_cache_size", 4)
    yield
    astad.clear_caches(disk=False)


def test_memory_caches_keep_their_size(small_cache):
    rev = astad.reverse(mean_square)
    g = astad.grad(mean_square)
    for n in list(range(1, 13)) + [1, 2]:
        x = np.linspace(-1.0, 1.0, n)
        close(g(x), 2 * x / n)
        close(rev(x)[1](1.0)[0], 2 * x / n)
        assert len(api._MEMORY) <= 4 and len(rev._derivatives) <= 4


def test_memory_caches_are_thread_safe(small_cache):
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(15):
                n = int(rng.integers(1, 9))
                x = rng.standard_normal(n)
                np.testing.assert_allclose(astad.grad(mean_square)(x), 2 * x / n, rtol=1e-10)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(api._MEMORY) <= 4


def test_an_argument_that_contains_itself_is_refused():
    loop = [np.ones(2)]
    loop.append(loop)
    with pytest.raises(astad.AstadTypeError):
        astad.reverse(leaf_mean)(loop)


def test_closures_of_one_code_read_their_own_captures():
    def make(c):
        def scaled(x):
            return np.sum(x * c)
        return scaled

    for c in (2.0, 3.0, 2.0):  # one code object, captured values read as constants of each closure
        close(astad.grad(make(c))(X3), np.full(3, c))


@pytest.mark.parametrize("make", [astad.reverse, astad.forward])
def test_reverse_of_a_gradient_is_refused(make):
    """astad.reverse and astad.forward read source; a gradient has none (astad.grad takes it)."""
    with pytest.raises(astad.SourceUnavailableError) as info:
        make(grad_of_square)(X3)
    assert "higher-order" in str(info.value)


@pytest.mark.parametrize("make", [astad.grad, astad.value_and_grad])
def test_the_gradient_of_a_non_scalar_gradient_is_refused(make):
    with pytest.raises(astad.NonScalarOutputError):
        make(grad_of_square)(X3)


POSONLY = """
import numpy as np

def helper(a, b=2.0, /):
    return a * b

def calls_helper(x):
    return np.sum(helper(x) + helper(x, 3.0))

def top(x, /, y):
    return np.sum(x * y)

def nested(x):
    def k(a, /, b):
        return a * b
    return np.sum(k(x, 3.0))

def in_lambda(x):
    k = lambda a, /, b: a * b
    return np.sum(k(x, 3.0))
"""


def test_positional_only_parameters(write_module):
    """A module-level helper is inlined by its signature; elsewhere `/` is refused, not misread."""
    mod, _ = write_module(POSONLY)
    close(astad.grad(mod.calls_helper)(X3), np.full(3, 5.0))
    for fn, args in ((mod.top, (X3, X3)), (mod.nested, (X3,)), (mod.in_lambda, (X3,))):
        with pytest.raises(astad.UnsupportedSyntaxError) as info:
            astad.grad(fn)(*args)
        assert "positional-only" in str(info.value)


def test_a_builtin_shadowed_in_a_helpers_module_is_seen(write_module):
    lib, _ = write_module("def twice(v):\n    return v * 2.0\n\ndef helper(x):\n    return abs(x) * x\n")
    main, _ = write_module(f"import numpy as np\nfrom {lib.__name__} import helper\n\n"
                           "def f(x):\n    return np.sum(helper(x))\n")
    g = astad.grad(main.f)
    close(g(X3), fd(main.f, [X3], 0))
    lib.abs = lib.twice
    close(g(X3), 4.0 * X3)
    close(astad.value_and_grad(main.f)(X3)[1], 4.0 * X3)


IMPORTS = '''
import numpy as np
import numpy.linalg
import os.path as osp
from numpy import linalg as la, sum as npsum
try:
    import math
except ImportError:
    math = None
if True:
    from functools import reduce
np2 = np


def calls_of_imported_names(x, f):
    a = la.norm(x) + numpy.linalg.norm(x) + npsum(x) + math.sqrt(2.0) + np2.sum(x)
    b = np.add.reduce(x) + reduce(lambda s, t: s + t, x) + len(osp.join("a", "b"))
    c = np.linalg.norm(x, ord=2) + f(np.sum)(x) + np.float64(2.0).item() + np.add(*[x, x]) + la.norm(*[x])
    d = np.vectorize(f)(*[x]) + np.frompyfunc(f, 1, 1)(x)
    with open(os.devnull) if False else nothing() as handle:
        pass
    return a + b + c + d + sum(np.sum(v) for v in [x, x])
'''


def test_the_source_check_knows_which_names_were_imported(write_module):
    """CPython compiles `name.attr(...)` differently for an imported `name`; the
    check must not refuse such functions (no false refusal), here or in the
    benchmark programs and examples."""
    import importlib.util
    import pathlib

    from astad import source

    mod, _ = write_module(IMPORTS)
    source.read(mod.calls_of_imported_names)
    root = pathlib.Path(__file__).resolve().parent.parent
    for path in [root / "bench" / "programs.py", *sorted((root / "examples").glob("*.py"))]:
        spec = importlib.util.spec_from_file_location(f"astad_scan_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fns = [f for f in vars(module).values() if isinstance(f, types.FunctionType) and f.__module__ == module.__name__]
        assert fns
        for f in fns:
            source.read(f)
