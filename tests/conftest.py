"""Shared test setup: no disk cache, fewer garbage collections, and a central-finite-difference
gradient check."""

import gc
import os

os.environ["ASTAD_DISK_CACHE"] = "0"
# The IR's nodes raise when a pass changes one (astad.ir.types.fast_init): the suite runs every transform with
# that check on; tests/test_ir_nodes_fixed.py runs programs without it, as users get them.
os.environ.setdefault("ASTAD_FROZEN_IR", "1")

# A test process holds a large heap (hypothesis, libcst trees and the bounded caches of astad:
# about a million objects after a few hundred tests), and with Python's default thresholds
# (700, 10, 10) the collector scanned all of it again and again: a quarter of the suite's CPU
# time. Collecting the youngest generation every 10000 allocations instead of 700 lets the
# tests' short-lived objects die young and cut that to a fifth; what the tests check is unchanged
# (no test relies on the collector running at a given moment).
gc.set_threshold(10_000, 10, 10)



def _compiled_package():
    """astad's modules compiled once, into the package's own ``__pycache__`` (git-ignored), before a
    test process imports them.  Where ``PYTHONDONTWRITEBYTECODE`` is set (this machine, CI) Python
    never writes bytecode but still reads it: without this every process the suite starts (each
    xdist worker, and the fresh interpreters of the cache, CLI, example and hash-seed tests, about a
    hundred) compiled astad's 33 thousand lines again, about 0.9 s of CPU each.  The bytecode is
    what Python itself writes when allowed (``compileall``: checked by the sources' mtimes, only stale
    or missing files compiled); what runs is the same code."""
    if os.environ.get("PYTEST_XDIST_WORKER"):  # (the controlling process has done it)
        return
    import compileall
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "astad"
    if package.is_dir():
        try:
            compileall.compile_dir(str(package), quiet=2)
        except OSError:  # (a read-only checkout: every process compiles, as before)
            pass


_compiled_package()

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import astad  # noqa: E402


def _is_discrete(a):
    return isinstance(a, (bool, int, np.integer, np.bool_)) or (
        isinstance(a, np.ndarray) and a.dtype.kind in "biu")


def _random_like(rng, v):
    if isinstance(v, (tuple, list)):
        return type(v)(_random_like(rng, x) for x in v)
    if np.ndim(v) == 0:
        return float(rng.standard_normal())
    return rng.standard_normal(np.shape(v))


def _inner(u, v):
    if isinstance(u, (tuple, list)):
        return sum(_inner(a, b) for a, b in zip(u, v))
    return float(np.sum(np.asarray(u) * np.asarray(v)))


def _assert_same_value(got, want):
    if isinstance(want, (tuple, list)):  # a list where Python gives one, a tuple where a tuple
        assert isinstance(got, (tuple, list)) and isinstance(got, list) == isinstance(want, list), (type(got), type(want))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same_value(g, w)
        return
    assert np.shape(got) == np.shape(want), (np.shape(got), np.shape(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def check_grad(fn, args, seed=0, eps=1e-6, rtol=1e-5, atol=1e-5, between=None):
    """Check ``astad.reverse(fn)`` at ``args`` against the plain function and
    central finite differences: the primal value must equal ``fn(*args)``; for a
    random output cotangent ``u`` the pullback must give, for every coordinate
    of every float argument, the FD derivative of ``<u, fn(args)>``; cotangents
    have the arguments' shapes (a float for a Python float, None for ints).
    ``between``: called after the forward call, before the pullback (it changes what
    the function reads, say), returns what undoes that before the finite differences:
    the pullback is the derivative at the values the forward call used."""
    rng = np.random.default_rng(seed)
    args = list(args)
    value, pullback = astad.reverse(fn)(*args)
    want = fn(*args)
    _assert_same_value(value, want)
    u = _random_like(rng, want)
    undo = between() if between is not None else None
    try:
        cts = pullback(u)
    finally:
        if undo is not None:
            undo()
    assert isinstance(cts, tuple) and len(cts) == len(args)

    def g(i, x):
        shifted = list(args)
        shifted[i] = x
        return _inner(u, fn(*shifted))

    for i, (a, ct) in enumerate(zip(args, cts)):
        if _is_discrete(a):
            assert ct is None, f"argument {i} is discrete but has cotangent {ct!r}"
            continue
        if isinstance(a, float):
            assert isinstance(ct, float) and np.ndim(ct) == 0, f"argument {i}: {type(ct)} {np.shape(ct)}"
            fd = (g(i, a + eps) - g(i, a - eps)) / (2 * eps)
            np.testing.assert_allclose(ct, fd, rtol=rtol, atol=atol, err_msg=f"argument {i}")
            continue
        assert ct is not None and np.shape(ct) == np.shape(a), f"argument {i}: shape {np.shape(ct)} != {np.shape(a)}"
        fd = np.zeros(np.shape(a))
        for idx in np.ndindex(*np.shape(a)):
            plus, minus = np.array(a, dtype=float), np.array(a, dtype=float)
            plus[idx] += eps
            minus[idx] -= eps
            fd[idx] = (g(i, plus) - g(i, minus)) / (2 * eps)
        np.testing.assert_allclose(ct, fd, rtol=rtol, atol=atol, err_msg=f"argument {i}")
    return value, cts


_programs = __import__("itertools").count()


def central_differences(f, x, eps=1e-6):
    """The derivative of scalar ``f`` at ``x`` by central differences: a number at a number, an array
    of x's shape at an array (every element)."""
    if np.ndim(x) == 0:
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    out = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = eps
        out[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


def check_scalar_function(f, xs):
    """``f`` of one float at each of ``xs``: value as the plain call's, gradient as central differences,
    ``jvp`` as the gradient."""
    for x in xs:
        value, g = astad.value_and_grad(f)(x)
        assert value == pytest.approx(f(x), rel=1e-12, abs=1e-12)
        assert g == pytest.approx(central_differences(f, x), rel=1e-6, abs=1e-8)
        assert astad.jvp(f, (x,), (1.0,))[1] == pytest.approx(g, rel=1e-9, abs=1e-12)


def check_refused_both_modes(f, match):
    """``f`` of one float is refused, with astad's error matching ``match``, by ``grad`` (its message
    pointing at a line) and by ``jvp``."""
    with pytest.raises(astad.AstadError, match=match) as info:
        astad.grad(f)(0.7)
    assert "line" in str(info.value) or ":" in str(info.value)
    with pytest.raises(astad.AstadError, match=match):
        astad.jvp(f, (0.7,), (1.0,))


def load_program(source, directory, stem="prog"):
    """Write ``source`` to a uniquely named .py file in ``directory`` and import
    it (astad reads functions' source, so they must live in a real file)."""
    from pathlib import Path

    name = f"astad_test_{stem}_{os.getpid()}_{next(_programs)}"
    path = Path(directory) / f"{name}.py"
    path.write_text(source)
    return import_file(path, name)


def import_file(path, name):
    """The module in the file ``path``, imported under ``name`` (another module object each time)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    known_to_inspect(module)
    return module


def known_to_inspect(module):
    """Tell ``inspect`` which module ``module``'s file is, as its own search would find it; ``module``.

    astad reads a function's source with ``inspect.findsource``, which calls ``inspect.getmodule``:
    for a file it has not seen, that walks every module in ``sys.modules`` (over a thousand in a test
    process, and a module more per program loaded), some milliseconds for each program a test loads
    and most of a tenth of the time of the tests that transform small programs.  A user's process
    meets a file once; this is the entry that walk would make, made when the module is loaded."""
    import inspect

    by_file, by_name = getattr(inspect, "modulesbyfile", None), getattr(inspect, "_filesbymodname", None)
    if isinstance(by_file, dict) and isinstance(by_name, dict):  # (else inspect walks, as it did)
        file = inspect.getabsfile(module)
        by_file[file] = by_file[os.path.realpath(file)] = module.__name__
        by_name[module.__name__] = module.__file__
    return module


def check_stages(fn, args):
    """The IR of every stage, interpreted, agrees with Python and the generated code:
    the core and structural IR evaluate to ``fn(*args)``; the AD and optimised
    reverse programs give the generated code's value and cotangents (output
    cotangent 1.0, so ``fn`` returns a scalar)."""
    from astad.ir import interp

    d = astad.reverse(fn).transform(*args)
    want = fn(*args)
    for stage in (d.stages.core, d.stages.structural):
        np.testing.assert_allclose(interp.run(stage, *args), want, rtol=1e-12)
    value, residuals = d.forward(*args)
    cts = d.backward(residuals, 1.0)
    for prog in (d.stages.ad, d.stages.optimised):
        v, c = interp.run_reverse(prog, args, 1.0)
        np.testing.assert_allclose(v, value, rtol=1e-12)
        for got, expected in zip(c, cts):
            if expected is None:
                assert got is None
            else:
                np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- random-program budget
#
# CI runs ``python -m pytest -q`` within its budget (about 3 minutes on 2 cores): each random-program
# test runs its ``fuzz_examples`` default there.  Long fuzzing is behind a flag:
#
#   ASTAD_LONG_FUZZ=1 python -m pytest -q        every test its ``long`` count (the count it ran in CI
#                                                before its default was cut, or more): the same
#                                                examples as CI, drawn the same way, and more;
#   ASTAD_FUZZ_EXAMPLES=2000 python -m pytest -q  (or ``--fuzz-examples 2000``) every test that many
#                                                fresh examples, new ones each run;
#   python -m pytest -q -k random ...            either of those on a part of the suite.
#
# Where CPU time goes, per test and per file: ``ASTAD_TEST_CPU=/tmp/cpu python -m pytest -q`` then
# ``python tests/cpu_report.py /tmp/cpu`` (see ``_TestCpu``, and ``HEAVIEST_FIRST``).

FUZZ_EXAMPLES_ENV = "ASTAD_FUZZ_EXAMPLES"


def pytest_addoption(parser):
    parser.addoption("--fuzz-examples", type=int, default=None,
                     help=f"examples per random-program test (the same as {FUZZ_EXAMPLES_ENV}=N); "
                          "the defaults keep the suite within its CI budget")


def pytest_configure(config):
    n = config.getoption("--fuzz-examples", default=None)
    if n is not None:  # before the test modules are imported: their @settings read it
        os.environ[FUZZ_EXAMPLES_ENV] = str(n)
    # The default run draws the same examples every time (CI is reproducible: a red run is a real
    # change, never the luck of the draw); a long fuzzing run draws new ones each time.
    from hypothesis import settings

    _memoise_function_digest()
    _rewritten_test_modules(config)
    _collect_harder_until_nothing_is_found()
    if hasattr(config.option, "loadscopereorder"):  # (see HEAVIEST_FIRST: the workers' order is kept)
        config.option.loadscopereorder = False
    settings.register_profile("astad-default", derandomize=True)
    settings.register_profile("astad-fuzz", derandomize=False)
    settings.load_profile("astad-fuzz" if os.environ.get(FUZZ_EXAMPLES_ENV, "").strip() else "astad-default")
    if os.environ.get(TEST_CPU_ENV, "").strip():
        config.pluginmanager.register(_TestCpu(os.environ[TEST_CPU_ENV].strip()), "astad-test-cpu")


def _rewritten_test_modules(config):
    """The test modules this run imports, their asserts rewritten by pytest, written once by the
    controlling process into ``tests/__pycache__`` (git-ignored) before its workers start.  pytest
    rewrites the asserts of each test module it imports and caches the result as a pyc, but it never
    writes that pyc where ``PYTHONDONTWRITEBYTECODE`` is set (this machine, CI) though it still reads
    one: without this, every xdist worker rewrote and compiled all the test modules again, about 4 s
    of each worker's 8 s of collection.  The pyc is what pytest itself writes when allowed (its own
    functions; checked by the source's mtime and size, so only stale or missing ones are made); what
    runs is the same code.  (Where pytest's internals differ, or assertions are not rewritten:
    left to pytest, as before.)"""
    import sys

    if os.environ.get("PYTEST_XDIST_WORKER") or not sys.dont_write_bytecode:
        return  # (pytest writes them itself where it may)
    try:
        import fnmatch
        from pathlib import Path

        from _pytest.assertion import rewrite

        if config.getoption("assertmode") != "rewrite":
            return
        state = config.stash[rewrite.assertstate_key]
        here = Path(__file__).resolve().parent
        patterns = config.getini("python_files")
        files = {here / "conftest.py"}
        for arg in config.args or [str(here)]:
            path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
            if path.is_dir() and (path == here or here in path.parents or path in here.parents):
                files.update(f for f in here.glob("*.py") if any(fnmatch.fnmatch(f.name, p) for p in patterns))
            elif path.parent == here and path.suffix == ".py":
                files.add(path)
        for fn in sorted(files):
            pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
            if not fn.is_file() or rewrite._read_pyc(fn, pyc) is not None:
                continue
            if not rewrite.try_makedirs(pyc.parent):
                return
            source_stat, co = rewrite._rewrite_test(fn, config)
            rewrite._write_pyc(state, co, source_stat, pyc)
    except (ImportError, AttributeError, KeyError, TypeError, ValueError, OSError, SyntaxError):
        return


def _collect_harder_until_nothing_is_found():
    """At the end of a session pytest collects the garbage five times over before it reports the
    exceptions raised where nothing could catch them (``__del__`` of garbage): five full collections
    of a test process's heap of a million objects, some seconds of each xdist worker.  A collection
    that finds no unreachable object ran no finalizer and freed nothing, so another one finds
    nothing either: stopped there (at most five, as pytest's), the same garbage is collected and
    the same exceptions reported.  (Where pytest has no ``gc_collect_harder``: left alone.)"""
    try:
        from _pytest import unraisableexception as unraisable
    except ImportError:
        return
    if not callable(getattr(unraisable, "gc_collect_harder", None)) or getattr(
            unraisable.gc_collect_harder, "_astad_until_nothing", False):
        return

    def gc_collect_harder(iterations):
        for _ in range(iterations):
            if gc.collect() == 0:
                break

    gc_collect_harder._astad_until_nothing = True
    unraisable.gc_collect_harder = gc_collect_harder


def _memoise_function_digest():
    """Hypothesis hashes a test function's source (``inspect.getsource``, then ``tokenize``) on every
    call of the test, twice (the database key, and the seed of a derandomized run): for each of the
    hundreds of parametrisations of one function, each time the same digest, and about a sixth of the
    time of the table-walking tests (tests/test_primitive_rules.py).  Made once per function and
    parametrisation (the pytest plugin's ``_hypothesis_internal_add_digest``) instead: the same digest,
    so the same seeds and examples.  (Where hypothesis has no ``function_digest`` to wrap: left alone.)"""
    import hypothesis.core as core

    original = getattr(core, "function_digest", None)
    if original is None or getattr(original, "_astad_memo", False):
        return
    memo = {}

    def function_digest(function):
        try:
            key = (function, getattr(function, "_hypothesis_internal_add_digest", None))
            hash(key)
        except TypeError:
            return original(function)
        if key not in memo:
            memo[key] = original(function)
        return memo[key]

    function_digest._astad_memo = True
    core.function_digest = function_digest


def pytest_collection_modifyitems(config, items):
    """Test ids must be the same in every process (pytest-xdist's workers each collect the suite and
    must agree): an id made from an object's default repr holds its address.  In an xdist worker the
    heaviest files come first (``HEAVIEST_FIRST``)."""
    import re

    moving = [item.nodeid for item in items if re.search(r" at 0x[0-9a-fA-F]+", item.nodeid)]
    if moving:
        raise __import__("pytest").UsageError(
            "test ids with an address in them (give parametrize ids=...): " + ", ".join(moving[:5]))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {name: i for i, name in enumerate(HEAVIEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0].rsplit("/", 1)[-1], len(rank)))


#: The test files that cost the most CPU time, heaviest first (measured: ``ASTAD_TEST_CPU=/tmp/cpu
#: python -m pytest -q`` then ``python tests/cpu_report.py /tmp/cpu``; the rest cost under 2 s each).
#: ``--dist loadfile`` hands each worker a whole file when it is almost out of work, in the order of
#: the workers' collection where xdist's own reordering (by the number of tests in a file) is off,
#: as ``pytest_configure`` sets it: with the heaviest files first and the many small ones after,
#: the two workers end within a small file of each other, where a heavy file with few tests (the
#: examples, the random programs) once ran alone at the end.  Only the order of whole files changes
#: (a file's tests run in its own order; ``-n 0`` keeps pytest's order); a file missing here or
#: listed but gone costs nothing but balance.
HEAVIEST_FIRST = [
    "test_from_ast.py", "test_examples.py", "test_primitive_rules.py", "test_cache.py",
    "test_rules_both_directions.py", "test_backend_dask.py", "test_gradients.py", "test_module_tree.py",
    "test_transform_work.py", "test_recursion_memory.py", "test_cli_annotations.py", "test_optimise_work.py",
    "test_lazy_stages.py", "test_random_programs.py", "test_names.py", "test_render.py",
    "test_cache_static_values.py", "test_structural_names.py", "test_random_higher.py", "test_optimise_skips.py",
    "test_program_size.py", "test_layout.py", "test_random_aliasing.py", "test_hash_seed.py",
    "test_adversarial_9.py", "test_forward_soundness.py", "test_cache_trust.py", "test_program_shapes.py",
    "test_adversarial_7.py", "test_notebook.py", "test_replay_adversarial.py", "test_forward.py",
]


LONG_FUZZ_ENV = "ASTAD_LONG_FUZZ"


def fuzz_examples(default: int, long: int | None = None) -> int:
    """How many examples a random-program test runs: ``default`` (small, for CI); ``long`` (the
    larger count of a generator whose CI count was cut to keep the suite in its budget) when
    ``ASTAD_LONG_FUZZ=1`` (the same examples, drawn the same way, as the default run, and more);
    ``N`` when ``ASTAD_FUZZ_EXAMPLES=N`` (or ``pytest --fuzz-examples N``) asks for a long run of
    fresh examples."""
    value = os.environ.get(FUZZ_EXAMPLES_ENV, "").strip()
    if value:
        return int(value)
    if long is not None and os.environ.get(LONG_FUZZ_ENV, "").strip() not in ("", "0"):
        return long
    return default


# ---------------------------------------------------------------- correct or refused

def _same_state(a, b):
    """Do ``a`` and ``b`` (arguments after a call) hold the same values, structure included?"""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same_state, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return type(a) is type(b) and (a == b or (a != a and b != b))


def _float_paths(a, path=()):
    """Paths (tuples of keys) to the float leaves (Python floats, float arrays) of an argument."""
    if isinstance(a, dict):
        return [p for k in a for p in _float_paths(a[k], path + (k,))]
    if isinstance(a, (tuple, list)):
        return [p for i, x in enumerate(a) for p in _float_paths(x, path + (i,))]
    if isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f"):
        return [path]
    return []


def _get(a, path):
    for k in path:
        a = a[k]
    return a


def _replaced(a, path, leaf):
    """A deep copy of ``a`` with the leaf at ``path`` replaced by ``leaf``."""
    import copy

    a = copy.deepcopy(a)
    if not path:
        return leaf
    parent = _get(a, path[:-1])
    if isinstance(parent, tuple):
        items = list(parent)
        items[path[-1]] = leaf
        return _replaced(a, path[:-1], type(parent)(items) if type(parent) is tuple else type(parent)(*items))
    parent[path[-1]] = leaf
    return a


class Refused(Exception):
    """``check_correct_or_refused`` found the program refused (an AstadError that is not an InternalError)."""


class user_stack:
    """The recursion limit a user calling from the top level has (Python's default 1000 frames
    above this one): hypothesis raises the limit inside a test, which hid RecursionErrors."""

    def __enter__(self):
        import sys

        self.old = sys.getrecursionlimit()
        depth, frame = 0, sys._getframe()
        while frame is not None:
            depth, frame = depth + 1, frame.f_back
        sys.setrecursionlimit(depth + 1000)

    def __exit__(self, *exc):
        import sys

        sys.setrecursionlimit(self.old)


def check_correct_or_refused(fn, args, seed=0, eps=1e-6, rtol=1e-5, atol=1e-5, stages=True):
    """See ``_check_correct_or_refused``; runs with a user's recursion limit (``user_stack``)."""
    with user_stack():
        return _check_correct_or_refused(fn, args, seed, eps, rtol, atol, stages)


def _check_correct_or_refused(fn, args, seed=0, eps=1e-6, rtol=1e-5, atol=1e-5, stages=True):
    """The oracle for a random program that may alias, update in place or be refused.

    Plain Python runs on deep copies of ``args``.  astad must either refuse, raising an
    ``astad.AstadError`` that is not an ``InternalError`` (then ``Refused`` is raised here), or,
    on other deep copies: give the same value, leave the arguments exactly as plain Python
    leaves them (changed in place, or not), and a pullback that agrees, for a random output
    cotangent, with central finite differences in float64 (each evaluation on fresh copies) and
    with the IR interpreter at every stage (``stages``).  Any other exception (NameError,
    TypeError, RecursionError from astad or its generated code) fails."""
    import copy

    from astad.ir import interp

    plain_args = copy.deepcopy(args)
    want = fn(*plain_args)
    ad_args = copy.deepcopy(args)
    try:
        d = astad.reverse(fn).transform(*copy.deepcopy(args))
        value, pullback = astad.reverse(fn)(*ad_args)
    except astad.InternalError:
        raise
    except astad.AstadError as e:
        raise Refused(str(e)) from None
    _assert_same_value(value, want)
    for i, (got, expected) in enumerate(zip(ad_args, plain_args)):
        assert _same_state(got, expected), (
            f"argument {i} after the call: astad leaves {got!r}, plain Python {expected!r}")
    rng = np.random.default_rng(seed)
    u = _random_like(rng, want)
    cts = pullback(u)
    assert isinstance(cts, tuple) and len(cts) == len(args)

    def g(i, x):
        # (``x`` is a fresh copy already: the other arguments copied, together, as a deep copy of
        # ``args`` would copy them; copying argument i too was most of the oracle's time on big programs)
        others = copy.deepcopy(args[:i] + args[i + 1:])
        return _inner(u, fn(*others[:i], x, *others[i:]))

    for i, (a, ct) in enumerate(zip(args, cts)):
        paths = _float_paths(a)
        if not paths:
            continue
        for path in paths:
            leaf, leaf_ct = _get(a, path), _get(ct, path)
            if isinstance(leaf, float):
                fd = (g(i, _replaced(a, path, leaf + eps)) - g(i, _replaced(a, path, leaf - eps))) / (2 * eps)
                np.testing.assert_allclose(leaf_ct, fd, rtol=rtol, atol=atol, err_msg=f"argument {i}{list(path)}")
                continue
            assert np.shape(leaf_ct) == np.shape(leaf), f"argument {i}{list(path)}: cotangent shape"
            fd = np.zeros(np.shape(leaf))
            for idx in np.ndindex(*np.shape(leaf)):
                plus, minus = np.array(leaf, dtype=float), np.array(leaf, dtype=float)
                plus[idx] += eps
                minus[idx] -= eps
                fd[idx] = (g(i, _replaced(a, path, plus)) - g(i, _replaced(a, path, minus))) / (2 * eps)
            np.testing.assert_allclose(leaf_ct, fd, rtol=rtol, atol=atol, err_msg=f"argument {i}{list(path)}")
    if stages:
        _check_stages_on_copies(d, interp, args, want, u, copy)
    return value, cts


def _check_stages_on_copies(d, interp, args, want, u, copy):
    """Every stage's IR, interpreted on copies of ``args``: the core and structural IR give the
    plain value; the AD and optimised reverse programs give the generated code's value and
    cotangents for the output cotangent ``u``."""
    leaves = _leaves(args)  # the IR's parameters: the leaves of structured arguments
    for stage in (d.stages.core, d.stages.structural):
        _assert_close_tree(_leaves(interp.run(stage, *copy.deepcopy(leaves))), _leaves(want), "core/structural IR")
    value, residuals = d.forward(*copy.deepcopy(args))
    cts = d.backward(residuals, u)
    for prog in (d.stages.ad, d.stages.optimised):
        v, c = interp.run_reverse(prog, copy.deepcopy(leaves), u)
        _assert_close_tree(_leaves(v), _leaves(value), "reverse program's value")
        _assert_close_tree(_leaves(c), _leaves(cts), "reverse program's cotangents")


def _leaves(tree):
    """The leaves of a cotangent, in order (the interpreter gives a structured argument's flat)."""
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _leaves(v)]
    if isinstance(tree, (tuple, list)):
        return [x for v in tree for x in _leaves(v)]
    return [tree]


def _assert_close_tree(got, want, what):
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), what
        for k in want:
            _assert_close_tree(got[k], want[k], what)
        return
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{what}: {got!r} vs {want!r}"
        for g_, w in zip(got, want):
            _assert_close_tree(g_, w, what)
        return
    if want is None:
        assert got is None, f"{what}: {got!r} is not None"
        return
    assert np.shape(got) == np.shape(want), f"{what}: shape {np.shape(got)} != {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=what)


@pytest.fixture
def disk_cache(tmp_path, monkeypatch):
    """astad's disk cache on, in a directory of the test's own (returned)."""
    d = tmp_path / "cache"
    monkeypatch.setenv("ASTAD_DISK_CACHE", "1")
    monkeypatch.setenv("ASTAD_CACHE_DIR", str(d))
    monkeypatch.setattr(astad.config, "disk_cache", True)
    return d


# ---------------------------------------------------------------- CPU time per test (opt-in)

TEST_CPU_ENV = "ASTAD_TEST_CPU"


class _TestCpu:
    """With ``ASTAD_TEST_CPU=PATH``: the CPU time (``time.process_time()``, and the CPU of the
    subprocesses a test waited for, ``os.times()``'s children fields) of each test, setup, call and
    teardown together, written by each process (an xdist worker, or the one process of ``-n 0``) to
    ``PATH.<worker>`` as lines ``seconds<TAB>child seconds<TAB>node id``, and a last line
    ``seconds<TAB>child seconds<TAB>(process)`` of the whole process (its start and collection
    included); the controlling process of an xdist run writes that line alone to ``PATH.controller``.  Wall-clock durations mean little on a loaded machine; CPU time is what the suite
    costs.  Sum per file: ``python tests/cpu_report.py PATH``."""

    def __init__(self, path):
        self.path, self.rows = path, []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        import time

        t0, c0 = time.process_time(), os.times()
        yield
        c1 = os.times()
        self.rows.append((time.process_time() - t0,
                          c1.children_user + c1.children_system - c0.children_user - c0.children_system,
                          item.nodeid))

    def pytest_sessionfinish(self, session):
        import time

        c = os.times()
        worker = os.environ.get("PYTEST_XDIST_WORKER") or ("main" if self.rows else "controller")
        with open(f"{self.path}.{worker}", "w") as out:
            for cpu, child, nodeid in self.rows:
                out.write(f"{cpu:.4f}\t{child:.4f}\t{nodeid}\n")
            out.write(f"{time.process_time():.4f}\t{c.children_user + c.children_system:.4f}\t(process)\n")
