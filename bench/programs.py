"""Benchmark programs for astad, written in plain numpy.

Program bodies are straight-line code only: no loops, if, comprehensions,
closures or in-place mutation; only ``+ - * / ** @``, unary minus,
``np.exp/log/tanh/sum/mean/max/maximum/matmul/dot/transpose/reshape``,
``.T``, ``.shape``, ``axis=`` and ``keepdims=``.

``bench/run.py`` execs this module's source a second time with ``np`` rebound
to ``autograd.numpy`` or ``jax.numpy``, so the very same functions run under
autograd and JAX. Always refer to numpy as ``np.<name>`` in program bodies.

To add a program: define it and a ``make_*_inputs(rng)`` returning float64
inputs, then add a ``PROGRAMS`` entry ``name: (fn, make_inputs, argnums)``.
"""

import numpy as np

# --- mlp: 256 x 64 -> 128 (tanh) -> 10, softmax cross-entropy ---------------


def mlp_loss(W1, b1, W2, b2, x, y_onehot):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return np.mean(-np.sum(y_onehot * logp, axis=1))


def make_mlp_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    batch, n_in, n_hidden, n_out = 256, 64, 128, 10
    W1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    b1 = 0.1 * rng.standard_normal(n_hidden)
    W2 = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
    b2 = 0.1 * rng.standard_normal(n_out)
    x = rng.standard_normal((batch, n_in))
    y_onehot = np.eye(n_out)[rng.integers(0, n_out, size=batch)]
    return W1, b1, W2, b2, x, y_onehot


# --- logsumexp over 10**5 elements ------------------------------------------


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def make_logsumexp_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal(10**5),)


# --- least squares, A: (1000, 100) ------------------------------------------


def least_squares(w, A, b):
    r = A @ w - b
    return np.sum(r**2) / A.shape[0]


def make_least_squares_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    n, d = 1000, 100
    return rng.standard_normal(d), rng.standard_normal((n, d)), rng.standard_normal(n)


# --- astad-only measurements --------------------------------------------------


def thirty_lines(x, W, v):
    """~30 straight-line statements: the "transform cold" benchmark."""
    a = W @ x
    b = np.tanh(a)
    c = b * v
    d = c + 1.0
    e = d**2
    f = np.exp(-e)
    g = f / (1.0 + e)
    h = np.log(1.0 + f)
    i = g - h
    j = W.T @ i
    k = np.maximum(j, 0.0)
    m = np.sum(k * x)
    n = np.mean(W, axis=0)
    o = np.dot(n * x, v)
    q = np.reshape(W, (W.shape[0] * W.shape[1],))
    r = np.sum(q**2)
    s = np.transpose(W)
    t = np.dot(s, b)
    u = np.matmul(W, t)
    w = u / (1.0 + r)
    y = w - np.max(w)
    z = np.exp(y)
    zz = z / np.sum(z, axis=0, keepdims=True)
    p = np.sum(zz * t)
    pm = np.mean(zz * -b)
    ff = m + o * p - pm
    gg = ff - np.log(1.0 + r)
    hh = gg / 2.0 + m**2 / 10.0
    return hh


def make_thirty_lines_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    d = 32
    return rng.standard_normal(d), rng.standard_normal((d, d)) / np.sqrt(d), rng.standard_normal(d)


def tiny(x, y):
    """Tiny scalar function: the "call overhead" benchmark."""
    return x * y + 1.0


def make_tiny_inputs(rng: np.random.Generator) -> tuple[float, ...]:
    return 2.0, 3.0


# name -> (function, make_inputs(rng), argnums for the gradient)
PROGRAMS = {
    "mlp": (mlp_loss, make_mlp_inputs, (0, 1, 2, 3)),
    "logsumexp": (logsumexp, make_logsumexp_inputs, 0),
    "least_squares": (least_squares, make_least_squares_inputs, 0),
}
TRANSFORM_COLD = (thirty_lines, make_thirty_lines_inputs)
CALL_OVERHEAD = (tiny, make_tiny_inputs)
