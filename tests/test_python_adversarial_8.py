"""Adversarial tests of Python semantics, threads and caches (session 8): each was a wrong result
(or a crash) before its fix; each checks values against the plain call and derivatives against
central differences in float64, or a refusal with astad's own error."""

from __future__ import annotations

import itertools
import os
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from conftest import central_differences, fuzz_examples, import_file, load_program

_ids = itertools.count()


def _write(path, text, bump):
    """Write ``text`` to ``path`` with a later mtime (``linecache`` sees the change)."""
    path.write_text(text)
    t = time.time() + bump
    os.utime(path, (t, t))


# ------------------------------------------------------------------ disk cache: an edited helper's file

HELPER_SQUARES = "import numpy as np\n\n\ndef h(x):\n    return np.sum(x * x)\n\n\ndef f(x):\n    return h(x) + np.sum(x)\n"
HELPER_CUBES = HELPER_SQUARES.replace("x * x)", "x * x * x)")


def test_disk_cache_entry_of_a_helper_whose_file_text_is_not_its_code(tmp_path, disk_cache):
    """A disk-cache entry recorded a called function by a hash of its source *text* (inspect.getsource),
    not of its code.  A process that imported the helper's file when it said `x * x * x`, after which the
    file went back to `x * x` (an undo in the editor, a `git checkout`), loaded the entry another process
    made for `x * x`: the value and the gradient of a function that is not the one Python runs.  Without
    the disk cache astad refuses (the text is not the code: reload the module); with it, it must too."""
    path = tmp_path / f"astad_edited_{os.getpid()}_{next(_ids)}.py"
    x = np.array([1.5, -2.0, 0.5])
    _write(path, HELPER_SQUARES, 0)
    first = import_file(path, f"{path.stem}_first")
    np.testing.assert_allclose(astad.grad(first.f)(x), 2 * x + 1)  # stored on disk
    _write(path, HELPER_CUBES, 5)
    second = import_file(path, f"{path.stem}_second")  # h is x * x * x in this module
    _write(path, HELPER_SQUARES, 10)  # the file says x * x again; `second` was not reloaded
    try:
        value, g = astad.value_and_grad(second.f)(x)
    except astad.AstadError as e:
        assert "reload" in str(e)
        return
    assert value == pytest.approx(second.f(x))
    np.testing.assert_allclose(g, central_differences(second.f, x), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ disk cache: a global rebound while an entry loads

NORM_OF_P = "import numpy as np\n\nP = 2\n\n\ndef f(x):\n    return np.linalg.norm(x, ord=P) + np.sum(x)\n"


def test_disk_cache_load_reads_each_global_once(tmp_path, disk_cache, monkeypatch):
    """Loading an entry read each global three times: to check its fingerprint, for the generated code's
    constants and for the names the derivative records (the ones each later call checks).  A thread that
    rebound `P = 1` between the check and the other reads left a derivative made for `ord=2` recorded as
    made for `P = 1`: every later call (nothing racing any more) gave the 2-norm's gradient.  Simulated
    here by a fingerprint that rebinds P right after reading it, as the other thread would."""
    from astad import cache

    mod = load_program(NORM_OF_P, tmp_path, "load_race")
    x = np.array([1.0, -2.0, 0.5])
    astad.grad(mod.f)(x)  # the entry, on disk
    astad.clear_caches(memory=True, disk=False)  # as in a fresh process
    fingerprint = cache.fingerprint

    def racing(obj):
        found = fingerprint(obj)
        if type(obj) is int and obj == 2 and mod.P == 2:
            mod.P = 1  # another thread, just after the check
        return found

    monkeypatch.setattr(cache, "fingerprint", racing)
    astad.grad(mod.f)(x)  # (this call may give either P's gradient: it raced)
    monkeypatch.setattr(cache, "fingerprint", fingerprint)
    assert mod.P == 1
    np.testing.assert_allclose(astad.grad(mod.f)(x), central_differences(mod.f, x), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ disk cache: defaults assigned while a derivative is made

HELPER_DEFAULTS = """\
import numpy as np


def helper(v, k=2.0, n=2):
    for i in range(n):
        v = np.sin(v) * k
    return v


def other(v, k=2.0, n=2):
    return np.cos(v) * k * n


def loss(x):
    return np.sum(helper(x) ** 2)
"""


@pytest.mark.parametrize("change", ["defaults", "code"])
def test_disk_cache_entry_records_the_defaults_the_transformation_read(tmp_path, disk_cache, monkeypatch, change):
    """An entry's fingerprint of a called function was taken when the entry was written, from the
    function's defaults at that time, and its `__defaults__` (read when transforming) by type only
    ("obj:.tuple"). Another thread assigning `helper.__defaults__ = (5.0, 3)` between the transformation
    and the write left an entry of the code for (2.0, 2) that said (5.0, 3): the next call (and every
    fresh process with those defaults) loaded it: a gradient of 7.07 for -28.18.  So with its `__code__`
    ("obj:.code").  Simulated by a transformation that assigns them as it returns, as the other thread would."""
    import astad.pipeline

    mod = load_program(HELPER_DEFAULTS, tmp_path, "defaults_race")
    x = np.array([0.3, 0.9])
    transform = astad.pipeline.transform

    def racing(*args, **kwargs):
        d = transform(*args, **kwargs)
        if change == "defaults":  # another thread, after the transformation read them
            mod.helper.__defaults__ = (5.0, 3)
        else:
            mod.helper.__code__ = mod.other.__code__
        return d

    monkeypatch.setattr(astad.pipeline, "transform", racing)
    astad.grad(mod.loss)(x)  # (this call raced: either defaults' gradient)
    monkeypatch.setattr(astad.pipeline, "transform", transform)
    np.testing.assert_allclose(astad.grad(mod.loss)(x), central_differences(mod.loss, x), rtol=1e-6, atol=1e-8)
    astad.clear_caches(memory=True, disk=False)  # a fresh process, with the disk cache
    np.testing.assert_allclose(astad.grad(mod.loss)(x), central_differences(mod.loss, x), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ defaults assigned while a call is inlined


@pytest.mark.parametrize("change", ["defaults", "kwdefaults", "kwdefaults in place"])
def test_inlined_call_records_the_defaults_it_was_made_with(tmp_path, monkeypatch, change):
    """Inlining a call read the called function's defaults twice: for the signature its missing arguments
    take their values from, and (later) for the names the derivative records.  A thread assigning
    `helper.__defaults__` between the two left a derivative of the old defaults recorded as made for
    the new ones: every later call (nothing racing any more) was wrong.  Simulated by a signature that
    assigns them as it returns, as the other thread would."""
    from astad.frontend import calls

    source = HELPER_DEFAULTS.replace("def helper(v, k=2.0, n=2):", "def helper(v, k=2.0, *, n=2):")
    mod = load_program(source, tmp_path, "inline_race")
    x = np.array([0.3, 0.9])
    signature = calls._code_signature

    def racing(fn, *rest):
        found = signature(fn, *rest)
        if fn is mod.helper and fn.__defaults__ == (2.0,) and fn.__kwdefaults__ == {"n": 2}:  # once
            if change == "defaults":  # another thread, between the two reads
                fn.__defaults__ = (5.0,)
            elif change == "kwdefaults":
                fn.__kwdefaults__ = {"n": 3}
            else:
                fn.__kwdefaults__["n"] = 3
        return found

    monkeypatch.setattr(calls, "_code_signature", racing)
    astad.config.disk_cache, old = False, astad.config.disk_cache
    try:
        astad.grad(mod.loss)(x)  # (this call raced: either defaults' gradient)
        monkeypatch.setattr(calls, "_code_signature", signature)
        np.testing.assert_allclose(astad.grad(mod.loss)(x), central_differences(mod.loss, x), rtol=1e-6, atol=1e-8)
    finally:
        astad.config.disk_cache = old


# ------------------------------------------------------------------ a constant array's shape assigned while it is read

ROW_TIMES_COLUMN = "import numpy as np\n\nA = np.array([1.0, 2.0, 3.0])\n\n\ndef f(x):\n    return np.sum((A * x) ** 2)\n"


def test_constant_array_kind_recorded_is_the_one_typed(tmp_path, monkeypatch):
    """A module-level array's type (its shape) was made from one read of `A.shape` and the kind the
    derivative records (checked on each call: `A.shape = (3, 1)` keeps the object) from a later one.
    A thread assigning the shape between them left code for shape (3,) recorded as made for (3, 1):
    `A * x` broadcasts to (3, 3) in Python, and every later call was wrong.  Simulated by an abstract
    type that assigns the shape as it returns, as the other thread would."""
    from astad.frontend import lookup

    mod = load_program(ROW_TIMES_COLUMN, tmp_path, "kind_race")
    x = np.array([0.5, -1.0, 2.0])
    abstract = lookup.abstract

    def racing(obj, *rest):
        found = abstract(obj, *rest)
        if obj is mod.A and obj.shape == (3,):
            obj.shape = (3, 1)  # another thread, between the two reads
        return found

    monkeypatch.setattr(lookup, "abstract", racing)
    astad.config.disk_cache, old = False, astad.config.disk_cache
    try:
        try:
            astad.grad(mod.f)(x)  # (this call raced)
        except Exception:  # noqa: BLE001 - either shape's outcome (numpy's error for the old code) is allowed
            pass
        monkeypatch.setattr(lookup, "abstract", abstract)
        np.testing.assert_allclose(astad.grad(mod.f)(x), central_differences(mod.f, x), rtol=1e-6, atol=1e-8)
    finally:
        astad.config.disk_cache = old


# ------------------------------------------------------------------ disk cache: an object whose __getattr__ raises

SETTINGS_OBJECT = """\
import numpy as np


class Settings:
    def __init__(self):
        self.scale = 2.0

    def __getattr__(self, name):
        raise RuntimeError(f"no setting {name}")


settings = Settings()


def f(x):
    return np.sum(np.sin(x) * settings.scale)
"""


def test_disk_cache_fingerprint_of_an_object_whose_getattr_raises(tmp_path, disk_cache):
    """Writing the entry fingerprinted `settings` (read for `settings.scale`) by its `__qualname__`,
    which an instance has not: its class's `__getattr__` was asked and its RuntimeError came out of
    astad.grad as a bare traceback.  (A module-level object's attributes are read as constants.)"""
    mod = load_program(SETTINGS_OBJECT, tmp_path, "getattr_raises")
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(astad.grad(mod.f)(x), 2.0 * np.cos(x))
    astad.clear_caches(memory=True, disk=False)  # a fresh process: from the entry
    np.testing.assert_allclose(astad.grad(mod.f)(x), 2.0 * np.cos(x))


# ------------------------------------------------------------------ random sequences of changes to what a derivative reads

GLOBALS_PROGRAM = """\
import numpy as np

K = 2.0
N = 2
A = np.array([0.5, -1.0, 2.0])


def h1(v, k=1.5):
    return np.sin(v) * k


def h2(v, k=1.5):
    return v * v * k


H = h1


def f(x, y):
    s = 0.0
    for i in range(N):
        s = s + np.sum(H(x * K) * A) * y
    return s + K * y * y


def fs(x, y):
    s = x
    for i in range(N):
        s = H(s * K) * y + K
    return s
"""

_CHANGES = ["K", "N", "A rebound", "A in place", "A reshaped", "H swapped", "h1 defaults", "h1 kwdefaults", "forget"]
_CALLS = ["grad f", "value_and_grad f", "vjp f", "grad fs", "value_and_grad fs", "jvp fs", "pullback kept"]


def _fd_partial(f, args, i, eps=1e-6):
    return central_differences(lambda v: f(*[v if j == i else a for j, a in enumerate(args)]), args[i], eps)


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=1e-5, atol=1e-6)


@settings(max_examples=fuzz_examples(3, long=6), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                               HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_CHANGES), st.floats(-1.5, 1.5), st.sampled_from(_CALLS)),
                min_size=3, max_size=6), st.booleans())
def test_random_changes_between_calls(tmp_path, monkeypatch, steps, disk):
    """Module-level floats, loop bounds, arrays (rebound, changed in place, reshaped), a called function
    (swapped, its defaults assigned): after each change, each way of calling a derivative against the
    plain function (value) and central differences (derivative) at the state of that moment; a pullback
    made before the change is the derivative at the state of its forward call.  With the disk cache on,
    "forget" is a fresh process (the memory caches emptied)."""
    monkeypatch.setenv("ASTAD_DISK_CACHE", "1" if disk else "0")
    monkeypatch.setenv("ASTAD_CACHE_DIR", str(tmp_path / "cache"))
    mod = load_program(GLOBALS_PROGRAM, tmp_path, "changes")
    x, y, s = np.array([0.3, -0.2, 0.4]), 0.7, 0.4
    kept = None  # (pullback, the gradient at its forward call)
    for change, r, call in steps:
        note(f"{change} {r} then {call}")
        if change == "K":
            mod.K = r
        elif change == "N":
            mod.N = int(abs(r) * 2)
        elif change == "A rebound":
            mod.A = np.array([r, 1.0, -r])
        elif change == "A in place":
            mod.A[...] = mod.A * r
        elif change == "A reshaped":
            mod.A.shape = (3,) if mod.A.shape == (3, 1) else (3, 1)
        elif change == "H swapped":
            mod.H = mod.h2 if mod.H is mod.h1 else mod.h1
        elif change == "h1 defaults":
            mod.h1.__defaults__ = (r,)
        elif change == "forget":
            astad.clear_caches(memory=True, disk=False)
        else:
            mod.h1.__defaults__ = None
            mod.h1.__kwdefaults__ = {"k": r}
            mod.h1.__code__ = (lambda v, *, k: np.sin(v) * k).__code__  # (not its source: refused, below)
        if kept is not None:
            _close(kept[0](1.0)[0], kept[1])
            kept = None
        want_f = [_fd_partial(mod.f, (x, y), i) for i in (0, 1)]
        want_fs = [_fd_partial(mod.fs, (s, y), i) for i in (0, 1)]
        try:
            if call == "grad f":
                g = astad.grad(mod.f, argnums=(0, 1))(x, y)
                _close(g[0], want_f[0]), _close(g[1], want_f[1])
            elif call == "value_and_grad f":
                v, g = astad.value_and_grad(mod.f)(x, y)
                _close(v, mod.f(x, y)), _close(g, want_f[0])
            elif call in ("vjp f", "pullback kept"):
                v, pullback = astad.vjp(mod.f, x, y)
                _close(v, mod.f(x, y)), _close(pullback(1.0)[1], want_f[1])
                if call == "pullback kept":
                    kept = (pullback, want_f[0])
            elif call == "grad fs":
                _close(astad.grad(mod.fs, argnums=1)(s, y), want_fs[1])
                _close(astad.grad(mod.fs)(s, y), want_fs[0])
            elif call == "value_and_grad fs":
                v, g = astad.value_and_grad(mod.fs, argnums=(0, 1))(s, y)
                _close(v, mod.fs(s, y)), _close(g[0], want_fs[0]), _close(g[1], want_fs[1])
            else:
                v, t = astad.jvp(mod.fs, (s, y), (1.0, 0.0))
                _close(v, mod.fs(s, y)), _close(t, want_fs[0])
        except astad.AstadError as e:
            assert change == "h1 kwdefaults" or mod.h1.__code__.co_kwonlyargcount, e  # the replaced code: refused


# ------------------------------------------------------------------ generator expressions and map(...) are lazy

LAZY = """\
import numpy as np


def read_after_rebinding(x):
    g = (x * i for i in range(3))
    x = x * 10.0
    return sum(g)


def list_grown_before_consumed(x):
    xs = [x, 2.0 * x]
    it = map(lambda v: v * v, xs)
    xs.append(3.0 * x)
    return sum(it)


def consumed_twice(x):
    g = (x * i for i in range(3))
    a = sum(g)
    b = sum(g)
    return a + b


def captured_rebound(x):
    it = map(lambda v: v * x, [1.0, 2.0])
    x = 10.0 * x
    return sum(it)


def array_changed_before_consumed(x):
    a = np.array([x, 2.0 * x])
    it = (v * v for v in a)
    a[0] = 7.0 * x
    return sum(it)


def loop_body_rebinds(x):
    s = 0.0
    for v in (x * i for i in range(3)):
        x = x * 2.0
        s = s + v
    return s


def one_object_array(x):
    return np.sum(np.array(x * i for i in range(3)))


def summed(x):
    return sum(x * i for i in range(3)) + max(np.sin(x * i) for i in range(3))


def mapped_then_summed(x):
    f = lambda v: x * v
    ys = map(f, [1.0, 2.0, 3.0])
    w = sum(ys)
    return w


def comprehension_over_map(x):
    return sum([v * v for v in map(lambda u: u * x, [1.0, 2.0])])


def unpacked(x):
    a, b = (x * k for k in (1.0, 2.0))
    return a * b + list(map(lambda v: v * x, [3.0]))[0]
"""

REFUSED_LAZY = ["read_after_rebinding", "list_grown_before_consumed", "consumed_twice", "captured_rebound",
                "array_changed_before_consumed", "loop_body_rebinds", "one_object_array"]


@pytest.fixture(scope="module")
def lazy_module(tmp_path_factory):
    return load_program(LAZY, tmp_path_factory.mktemp("lazy"), "lazy")


@pytest.mark.parametrize("name", REFUSED_LAZY)
def test_lazy_iterators_read_where_they_are_not_consumed_at_once_are_refused(lazy_module, name):
    """A generator expression or map(...) was lowered as the list it yields, evaluated where it is written;
    Python evaluates it when consumed, with the values its names have then, once: `g = (x * i ...)`,
    then `x = 10 * x`, then `sum(g)` is 30 x in Python and was 3 x (gradient 3 for 30); consumed twice, the
    second sum is 0 in Python; a `for` body that rebinds what the generator reads; np.array of a generator
    is an object array.  Now refused where it is not consumed at once."""
    f = getattr(lazy_module, name)
    with pytest.raises(astad.UnsupportedSyntaxError, match="consumed"):
        astad.grad(f)(0.7)
    with pytest.raises(astad.UnsupportedSyntaxError, match="consumed"):
        astad.jvp(f, (0.7,), (1.0,))


@pytest.mark.parametrize("name", ["summed", "mapped_then_summed", "comprehension_over_map", "unpacked"])
def test_lazy_iterators_consumed_at_once_are_differentiated(lazy_module, name):
    f = getattr(lazy_module, name)
    for x in (0.7, -1.3):
        value, g = astad.value_and_grad(f)(x)
        assert value == pytest.approx(f(x), rel=1e-12)
        assert g == pytest.approx(central_differences(f, x), rel=1e-6, abs=1e-8)
        assert astad.jvp(f, (x,), (1.0,))[1] == pytest.approx(g, rel=1e-9)
