"""Shared test setup: no disk cache, and a central-finite-difference gradient check."""

import os

os.environ["ASTAD_DISK_CACHE"] = "0"

import numpy as np  # noqa: E402

import astad  # noqa: E402


def _is_discrete(a):
    return isinstance(a, (bool, int, np.integer, np.bool_)) or (
        isinstance(a, np.ndarray) and a.dtype.kind in "biu")


def _random_like(rng, v):
    if isinstance(v, tuple):
        return tuple(_random_like(rng, x) for x in v)
    if np.ndim(v) == 0:
        return float(rng.standard_normal())
    return rng.standard_normal(np.shape(v))


def _inner(u, v):
    if isinstance(u, tuple):
        return sum(_inner(a, b) for a, b in zip(u, v))
    return float(np.sum(np.asarray(u) * np.asarray(v)))


def _assert_same_value(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same_value(g, w)
        return
    assert np.shape(got) == np.shape(want), (np.shape(got), np.shape(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def check_grad(fn, args, seed=0, eps=1e-6, rtol=1e-5, atol=1e-5):
    """Check ``astad.reverse(fn)`` at ``args`` against the plain function and
    central finite differences: the primal value must equal ``fn(*args)``; for a
    random output cotangent ``u`` the pullback must give, for every coordinate
    of every float argument, the FD derivative of ``<u, fn(args)>``; cotangents
    have the arguments' shapes (a float for a Python float, None for ints)."""
    rng = np.random.default_rng(seed)
    args = list(args)
    value, pullback = astad.reverse(fn)(*args)
    want = fn(*args)
    _assert_same_value(value, want)
    u = _random_like(rng, want)
    cts = pullback(u)
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


def load_program(source, directory, stem="prog"):
    """Write ``source`` to a uniquely named .py file in ``directory`` and import
    it (astad reads functions' source, so they must live in a real file)."""
    import importlib.util
    import sys
    from pathlib import Path

    name = f"astad_test_{stem}_{os.getpid()}_{next(_programs)}"
    path = Path(directory) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def check_stages(fn, args):
    """The IR of every stage, interpreted, agrees with Python and the generated code:
    the core and structural IR evaluate to ``fn(*args)``; the AD and optimised
    reverse programs give the generated code's value and cotangents (output
    cotangent 1.0, so ``fn`` returns a scalar)."""
    from astad import interp

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
