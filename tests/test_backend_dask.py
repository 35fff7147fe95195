"""Dask arrays as arguments (astad/backends.py): the bench programs' gradients on
chunked Dask arrays equal numpy's (an independent run on numpy arrays) to 1e-12,
stay lazy Dask arrays until computed (a scheduler that refuses to run checks that
nothing is computed behind the user's back), get their own cached derivative
beside the numpy one, and compute on a ``dask.distributed`` cluster of processes."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import astad
from astad import backends

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import programs  # noqa: E402


def _refuse(*args, **kwargs):
    raise AssertionError("astad computed a Dask array")


def small_lstm(rng):
    layers, steps, batch, n_in, H = 2, 2, 3, 3, 3  # layer 2 reads layer 1: n_in == H
    return (rng.standard_normal((layers, n_in, 4 * H)), rng.standard_normal((layers, H, 4 * H)),
            rng.standard_normal((layers, 4 * H)), rng.standard_normal((H, n_in)), rng.standard_normal(n_in),
            rng.standard_normal((layers, batch, H)), rng.standard_normal((layers, batch, H)),
            rng.random((steps + 1, batch, n_in)))


#: the bench programs at sizes that keep Dask's graphs small (a Python loop over a
#: Dask array builds a task per element: loops get small inputs here)
CASES = {
    "mlp": (programs.mlp_loss, programs.make_mlp_inputs, (0, 1, 2, 3)),
    "logsumexp": (programs.logsumexp, lambda rng: (rng.standard_normal(1000),), 0),
    "least_squares": (programs.least_squares, programs.make_least_squares_inputs, 0),
    "gmm": (programs.gmm_loglik, lambda rng: programs.make_gmm_inputs(rng, n=60, d=3, k=3), (0, 1, 2)),
    "lstm": (programs.lstm_loss, small_lstm, (0, 1, 2, 3, 4, 5, 6)),
    "rk4": (programs.rk4_loss, lambda rng: (rng.standard_normal(200), 0.7, 0.05), (0, 1)),
    "horner": (programs.horner, lambda rng: (rng.standard_normal(6), 0.3), (0, 1)),
    "horner_llsq": (programs.horner_llsq, lambda rng: (rng.standard_normal(5), rng.standard_normal(40)), 0),
    # loops that read a vector element by element: on numpy, the scalar fast path reads `x.tolist()`,
    # which on Dask would compute the array; there the loop stays on arrays (huber's `if` on an element
    # computes it, as the user's own code does: test_branch_on_a_lazy_value_computes_as_numpy_code_would)
    "scalar_loop": (programs.scalar_loop, lambda rng: programs.make_scalar_loop_inputs(rng, 6), (0, 1)),
}


def chunked(args, chunks):
    """Each numpy argument as a Dask array of first-axis chunks of ``chunks`` (1: one chunk)."""
    return tuple(da.from_array(a, chunks=(max(1, -(-a.shape[0] // chunks)),) + a.shape[1:])
                 if isinstance(a, np.ndarray) and a.ndim else a for a in args)


def as_tuple(g):
    return g if isinstance(g, tuple) else (g,)


@pytest.mark.parametrize("chunks", [1, 3])
@pytest.mark.parametrize("name", list(CASES))
def test_bench_gradients_on_dask_equal_numpy(name, chunks):
    fn, make, argnums = CASES[name]
    args = make(np.random.default_rng(1))
    value, grads = astad.value_and_grad(fn, argnums=argnums)(*args)
    dargs = chunked(args, chunks)
    with dask.config.set(scheduler=_refuse), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # a numpy function Dask lacks would compute
        dvalue, dgrads = astad.value_and_grad(fn, argnums=argnums)(*dargs)
    assert any(isinstance(g, da.Array) for g in as_tuple(dgrads))
    for g, a in zip(as_tuple(dgrads), np.atleast_1d(argnums)):
        if isinstance(dargs[a], da.Array):
            assert isinstance(g, da.Array), (name, a, type(g))  # lazy until computed
    computed = dask.compute(dvalue, *as_tuple(dgrads), scheduler="sync")
    np.testing.assert_allclose(computed[0], value, rtol=1e-12, atol=1e-12)
    for mine, want in zip(computed[1:], as_tuple(grads)):
        np.testing.assert_allclose(mine, want, rtol=1e-12, atol=1e-12)


def _least_squares(w, A, b):
    r = A @ w - b
    return np.sum(r * r) / A.shape[0]


def test_dask_call_gets_its_own_derivative():
    rng = np.random.default_rng(2)
    w, A, b = rng.standard_normal(3), rng.standard_normal((8, 3)), rng.standard_normal(8)
    f = astad.reverse(_least_squares)
    numpy_d = f.transform(w, A, b)
    assert "import numpy as np\n" in numpy_d.source
    dask_d = f.transform(w, da.from_array(A, chunks=(4, 3)), da.from_array(b, chunks=4))
    assert dask_d is not numpy_d
    assert "from astad.backends import dask_numpy as np" in dask_d.source
    assert "out=" not in dask_d.source and "+=" not in dask_d.source
    assert f.transform(w, A, b) is numpy_d  # the numpy derivative found again in the cache


def test_in_place_predicate():
    assert backends.allows_in_place("numpy") and backends.allows_in_place("cupy")
    assert not backends.allows_in_place("dask")
    with backends.target("dask"):
        assert not backends.allows_in_place()
    assert backends.allows_in_place()


def test_mixed_libraries_and_unknown_shapes_refused():
    x = da.from_array(np.arange(6.0), chunks=3)
    unknown = x[x > 2]  # chunk sizes unknown until computed
    with pytest.raises(astad.AstadTypeError, match="compute_chunk_sizes"):
        astad.grad(lambda v: np.sum(v * v))(unknown)


def test_branch_on_a_lazy_value_computes_as_numpy_code_would():
    def f(x):
        if np.sum(x) > 0:
            return np.sum(x * x)
        return np.sum(-x)

    x = np.linspace(-1.0, 2.0, 7)
    g = astad.grad(f)(da.from_array(x, chunks=3))
    np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-12)


def test_least_squares_on_a_local_cluster():
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(3)
    n, d = 4000, 5
    A, b, w = rng.standard_normal((n, d)), rng.standard_normal(n), rng.standard_normal(d)
    want = astad.grad(_least_squares)(w, A, b)
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        dA, db = da.from_array(A, chunks=(500, d)), da.from_array(b, chunks=500)
        g = astad.grad(_least_squares)(w, dA, db)
        assert isinstance(g, da.Array)
        got = client.compute(g).result()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _tanh_fit(w, A, b):
    r = np.tanh(A @ w) - b
    return np.sum(r * r)


def test_forward_mode_on_dask_is_lazy_and_matches_reverse():
    rng = np.random.default_rng(4)
    w, A, b, t = rng.standard_normal(3), rng.standard_normal((10, 3)), rng.standard_normal(10), rng.standard_normal(3)
    dA, db = da.from_array(A, chunks=(4, 3)), da.from_array(b, chunks=4)
    with dask.config.set(scheduler=_refuse):
        value, tangent = astad.jvp(_tanh_fit, (w, dA, db), (t, da.zeros_like(dA), da.zeros_like(db)))
        g = astad.grad(_tanh_fit)(w, dA, db)
    assert isinstance(tangent, da.Array) and isinstance(g, da.Array)
    value, tangent, g = dask.compute(value, tangent, g, scheduler="sync")
    np.testing.assert_allclose(value, _tanh_fit(w, A, b), rtol=1e-12)
    np.testing.assert_allclose(tangent, np.dot(g, t), rtol=1e-12)  # <J t> == <J^T 1, t>
    eps = 1e-6  # and a central difference in float64
    fd = (_tanh_fit(w + eps * t, A, b) - _tanh_fit(w - eps * t, A, b)) / (2 * eps)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)


_IDX = np.array([0, 2, 2, 5])


def _gather_rows(x):
    return np.sum(np.tanh(x[_IDX]) ** 2)


def _gather_columns(x):
    return np.sum(x[:, _IDX] ** 2)


@pytest.mark.parametrize("shape", [(8,), (8, 3)])
def test_integer_array_index_on_dask_repeats_added(shape):
    x = np.random.default_rng(5).standard_normal(shape)
    want = astad.grad(_gather_rows)(x)
    with dask.config.set(scheduler=_refuse):
        g = astad.grad(_gather_rows)(da.from_array(x, chunks=3))
    np.testing.assert_allclose(g.compute(scheduler="sync"), want, rtol=1e-12)
    assert want[2].any() and not want[1].any()  # index 2 read twice, 1 never


def test_integer_array_index_off_the_first_axis_refused_on_dask():
    x = da.from_array(np.ones((3, 8)), chunks=2)
    with pytest.raises(astad.AstadError, match="np.add.at"):
        astad.grad(_gather_columns)(x)


def test_hessian_of_dask_arrays_refused_with_astads_error():
    x = da.from_array(np.ones(4), chunks=2)
    with pytest.raises(astad.AstadTypeError, match="numpy arrays"):
        astad.hessian(_gather_rows)(x)
