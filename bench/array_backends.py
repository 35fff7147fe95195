"""``bench/run.py --backend dask|cupy``: the bench programs' inputs on another array
library, and each timed call carried to the end (Dask: computed; CuPy: synchronised).

With a backend other than numpy, the table has the primal and astad's gradient only
(autograd and JAX take no Dask or CuPy arrays; forward-mode cells are left out) and no
results file is written.  Dask arrays are chunked in ``CHUNKS`` pieces along their
first axis; each timed call is ``dask.compute`` of what the call returns, on the
threaded scheduler.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

BACKENDS = ("numpy", "dask", "cupy")
CHUNKS = 4
#: the programs run without --only: array code (a Python loop over a Dask array's
#: elements makes a task per element, which Dask is not for)
DEFAULT = ("mlp", "logsumexp", "least_squares", "gmm", "rk4", "logsumexp_1e6")


def available(backend: str) -> str | None:
    """Why ``backend`` cannot run here (None: it can)."""
    try:
        if backend == "dask":
            import dask.array  # noqa: F401
        elif backend == "cupy":
            import cupy
            if cupy.cuda.runtime.getDeviceCount() < 1:
                return "no CUDA device"
    except Exception as e:  # ImportError, or CuPy without a driver
        return f"{backend} is not available: {type(e).__name__}: {e}"
    return None


def convert(args: tuple[Any, ...], backend: str) -> tuple[Any, ...]:
    """The numpy arrays of ``args`` as arrays of ``backend`` (numbers unchanged)."""
    if backend == "numpy":
        return args
    if backend == "dask":
        import dask.array as da

        def to(a: np.ndarray) -> Any:
            return da.from_array(a, chunks=(max(1, -(-a.shape[0] // CHUNKS)),) + a.shape[1:])
    else:
        import cupy
        to = cupy.asarray
    return tuple(to(a) if isinstance(a, np.ndarray) and a.ndim else a for a in args)


def finished(call: Callable[[], Any], backend: str) -> Callable[[], Any]:
    """``call`` and the work it leaves pending: Dask's graph computed, CuPy's kernels done."""
    if backend == "dask":
        import dask

        return lambda: dask.compute(call())
    if backend == "cupy":
        import cupy

        def synchronised() -> Any:
            out = call()
            cupy.cuda.get_current_stream().synchronize()
            return out

        return synchronised
    return call
