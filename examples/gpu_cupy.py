"""The MLP loss's gradient on a GPU with CuPy: the same numpy function, CuPy arrays in.

astad's generated code runs on CuPy arrays unchanged: numpy's functions dispatch
to CuPy (``__array_ufunc__``, ``__array_function__``), and the arrays the
derivative creates (zeros to accumulate into) are made by CuPy, on the device.
Compares the gradient with numpy's and the time of both.  Without CuPy or a CUDA
device it says so and exits 0.

    python examples/gpu_cupy.py [--batch N]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import astad


def mlp_loss(W1, b1, W2, b2, x, y_onehot):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return np.mean(-np.sum(y_onehot * logp, axis=1))


def inputs(batch: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    n_in, n_hidden, n_out = 256, 512, 10
    return (rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in), 0.1 * rng.standard_normal(n_hidden),
            rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden), 0.1 * rng.standard_normal(n_out),
            rng.standard_normal((batch, n_in)), np.eye(n_out)[rng.integers(0, n_out, size=batch)])


def best_of(call, n: int = 5) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as e:  # not installed, or no driver / device
        print(f"CuPy with a CUDA device is not available here ({type(e).__name__}: {e}); nothing to run")
        return 0
    batch = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv[:-1] else 65536
    args = inputs(batch, np.random.default_rng(0))
    gargs = tuple(cupy.asarray(a) for a in args)
    grad = astad.grad(mlp_loss, argnums=(0, 1, 2, 3))
    want = grad(*args)
    got = grad(*gargs)
    assert all(isinstance(g, cupy.ndarray) for g in got)
    for g, w in zip(got, want):
        np.testing.assert_allclose(cupy.asnumpy(g), w, rtol=1e-10, atol=1e-12)

    def on_gpu():
        grad(*gargs)
        cupy.cuda.get_current_stream().synchronize()

    cpu, gpu = best_of(lambda: grad(*args)), best_of(on_gpu)
    print(f"MLP gradient, batch {batch}: numpy {cpu * 1e3:.1f} ms, CuPy {gpu * 1e3:.1f} ms ({cpu / gpu:.1f}x); "
          "gradients agree to 1e-10")
    return 0


if __name__ == "__main__":
    sys.exit(main())
