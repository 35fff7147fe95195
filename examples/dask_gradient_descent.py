"""Gradient descent on a dataset that never exists in one process.

The least-squares loss below is plain numpy code.  Its data ``A`` (n x d) and
``b`` are Dask arrays made chunk by chunk by ``da.random`` on the workers of a
``dask.distributed`` cluster of processes: no process ever holds all of ``A``.
``astad.grad`` of the loss, called with Dask arrays, runs the generated derivative
code on them (numpy's functions dispatch to Dask; nothing is computed while it
runs) and returns a lazy Dask array; each step computes that gradient on the
cluster, chunk by chunk, and takes a step with the small weight vector.

    python examples/dask_gradient_descent.py           # small (CI): 40 000 x 8, seconds
    python examples/dask_gradient_descent.py --large   # A is 4x the cluster's memory limit

With ``--large`` the cluster's one worker process may use 512 MiB (``memory_limit``)
and ``A`` is 2 GiB (float64, 16 Mi rows x 16, chunks of 16 MiB): four times the limit.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import astad

try:
    import dask
    import dask.array as da
    from dask.distributed import Client, LocalCluster
except ImportError:
    print("dask[array] and distributed are not installed (pip install 'astad[distributed]'): nothing to run")
    sys.exit(0)


def loss(w, A, b):
    r = A @ w - b
    return np.sum(r * r) / A.shape[0]


def dataset(n: int, d: int, chunk: int, seed: int = 0) -> tuple:
    """``A`` and ``b = A @ w_true + noise``, as Dask graphs: each chunk is drawn where it is used."""
    rng = da.random.default_rng(seed)
    A = rng.standard_normal((n, d), chunks=(chunk, d))
    w_true = np.linspace(-1.0, 1.0, d)
    b = A @ w_true + 0.1 * rng.standard_normal(n, chunks=chunk)
    return A, b, w_true


def _peak_rss_mib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main(large: bool) -> None:
    # large: one worker process that may use 512 MiB, and A of 2 GiB (in chunks of 16 MiB)
    n, d, chunk, limit, workers, steps = (2**24, 16, 2**17, "512MiB", 1, 3) if large else \
        (40_000, 8, 5_000, "1GiB", 2, 6)
    with LocalCluster(processes=True, n_workers=workers, threads_per_worker=2 // workers, memory_limit=limit,
                      dashboard_address=None, silence_logs=30 if large else 50) as cluster, Client(cluster) as client:
        A, b, w_true = dataset(n, d, chunk)
        print(f"A: {n} x {d} float64 = {A.nbytes / 2**20:.0f} MiB in {A.npartitions} chunks; "
              f"{workers} worker process(es), memory_limit {limit} each")
        grad = astad.grad(loss)
        w = np.zeros(d)
        g = grad(w, A, b)
        assert isinstance(g, da.Array), type(g)  # lazy: nothing has been computed yet
        start = time.perf_counter()
        for step in range(steps):
            g, value = dask.compute(grad(w, A, b), loss(w, A, b))  # one pass over the chunks, on the cluster
            w = w - 0.4 * g
            print(f"step {step:2d}: loss {value:.5f}, |grad| {np.linalg.norm(g):.2e}")
        print(f"{steps} steps in {time.perf_counter() - start:.1f} s")
        if not large:  # small enough to check: the gradient equals numpy's, w approaches least squares
            A_np, b_np = dask.compute(A, b)
            np.testing.assert_allclose(grad(w, A_np, b_np), dask.compute(grad(w, A, b))[0], rtol=1e-10, atol=1e-12)
            w_ls = np.linalg.lstsq(A_np, b_np, rcond=None)[0]
            assert np.linalg.norm(w - w_ls) < 1e-3 * np.linalg.norm(w_ls), (w, w_ls)
            print(f"w within {np.linalg.norm(w - w_ls):.1e} of the least-squares solution")
        else:
            assert np.linalg.norm(w - w_true) < 0.05, w
            print(f"w within {np.linalg.norm(w - w_true):.1e} of the weights the data was made from")
            peaks = client.run(_peak_rss_mib)  # each worker process's largest resident memory so far
            print(f"worker peak resident memory: {', '.join(f'{p:.0f} MiB' for p in peaks.values())} "
                  f"(limit {limit}; A is {A.nbytes / 2**20:.0f} MiB)")
        del client


if __name__ == "__main__":
    main("--large" in sys.argv[1:])
