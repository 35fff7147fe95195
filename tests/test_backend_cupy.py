"""CuPy arrays as arguments (astad/backends.py): the bench programs' gradients on the
GPU equal numpy's to 1e-12, stay CuPy arrays, and a CuPy call gets its own cached
derivative.  Skipped where CuPy or a CUDA device is missing (CI has none)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import astad


def _gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


pytestmark = pytest.mark.skipif(not _gpu(), reason="CuPy with a CUDA device is not available")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import programs  # noqa: E402

CASES = {
    "mlp": (programs.mlp_loss, programs.make_mlp_inputs, (0, 1, 2, 3)),
    "logsumexp": (programs.logsumexp, programs.make_logsumexp_inputs, 0),
    "least_squares": (programs.least_squares, programs.make_least_squares_inputs, 0),
    "gmm": (programs.gmm_loglik, lambda rng: programs.make_gmm_inputs(rng, n=60, d=3, k=3), (0, 1, 2)),
    "rk4": (programs.rk4_loss, lambda rng: (rng.standard_normal(200), 0.7, 0.05), (0, 1)),
    "horner_llsq": (programs.horner_llsq, lambda rng: (rng.standard_normal(5), rng.standard_normal(40)), 0),
}


def as_tuple(g):
    return g if isinstance(g, tuple) else (g,)


@pytest.mark.parametrize("name", list(CASES))
def test_bench_gradients_on_cupy_equal_numpy(name):
    import cupy

    fn, make, argnums = CASES[name]
    args = make(np.random.default_rng(1))
    value, grads = astad.value_and_grad(fn, argnums=argnums)(*args)
    gargs = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    gvalue, ggrads = astad.value_and_grad(fn, argnums=argnums)(*gargs)
    for g, a in zip(as_tuple(ggrads), np.atleast_1d(argnums)):
        if isinstance(gargs[a], cupy.ndarray):
            assert isinstance(g, cupy.ndarray), (name, a, type(g))  # on the GPU, not copied back
    np.testing.assert_allclose(cupy.asnumpy(gvalue), value, rtol=1e-12, atol=1e-12)
    for mine, want in zip(as_tuple(ggrads), as_tuple(grads)):
        np.testing.assert_allclose(cupy.asnumpy(mine), want, rtol=1e-12, atol=1e-12)


def test_cupy_call_gets_its_own_derivative():
    import cupy

    f = astad.reverse(programs.least_squares)
    args = programs.make_least_squares_inputs(np.random.default_rng(2))
    numpy_d = f.transform(*args)
    cupy_d = f.transform(*(cupy.asarray(a) for a in args))
    assert cupy_d is not numpy_d
    assert "from astad.backends import cupy_numpy as np" in cupy_d.source
    assert f.transform(*args) is numpy_d
