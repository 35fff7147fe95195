"""Benchmark programs for astad, written in plain numpy.

The first programs (mlp, logsumexp, least_squares) are straight-line code:
no loops, if, comprehensions, closures or in-place mutation; only
``+ - * / ** @``, unary minus,
``np.exp/log/tanh/sum/mean/max/maximum/matmul/dot/transpose/reshape``,
``.T``, ``.shape``, ``axis=`` and ``keepdims=``.

The control-flow programs after them (scalar_loop_*, huber, newton, gmm, lstm,
rk4) add explicit Python ``for``/``while`` loops, ``if``/``elif``/``else`` on
values, scalar indexing ``x[i]``, slices, and lists built with ``.append``
and read by ``np.stack`` or ``[i]``. They still never mutate an array in place
(no ``x[i] = v``).

The next programs (closure_map, horner, tree) use a lambda mapped by a list
comprehension, recursion on a shrinking slice, and recursion over a tree of
nested tuples with ``isinstance``.

Then issue 12's programs: ``horner_llsq`` (a loop of Horner steps over
nodes made from ``np.arange``, values that depend on no input), logsumexp at
10**6, ``tiny_scalar`` (five float operations), the GMM at d = 64, k = 100,
and ``straight_line_500``, generated (``straight_line_source``) and defined
in this module's namespace by ``define``, its text kept in ``linecache``.

At the end, the programs of bench/forward_mode.py's sections: a logistic
loss of 30 weights (Hessian) and a vector-valued two-layer map (Jacobians,
R^10 -> R^1000 and R^1000 -> R^10), in ``HESSIANS``, ``JACOBIANS``, ``HVPS``
and ``MEMORY``.

``bench/run.py`` execs this module's source a second time with ``np`` rebound
to ``autograd.numpy`` or ``jax.numpy``, so the very same functions run under
autograd and JAX. Always refer to numpy as ``np.<name>`` in program bodies,
and only call ``np`` functions that autograd.numpy and jax.numpy have too.

To add a program: define it and a ``make_*_inputs(rng)`` returning float64
inputs, then add a ``PROGRAMS`` entry ``name: (fn, make_inputs, argnums)``.
"""

import linecache
from collections.abc import Callable
from functools import partial
from typing import Any

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


def make_logsumexp_inputs(rng: np.random.Generator, n: int = 10**5) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal(n),)


# --- least squares, A: (1000, 100) ------------------------------------------


def least_squares(w, A, b):
    r = A @ w - b
    return np.sum(r**2) / A.shape[0]


def make_least_squares_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    n, d = 1000, 100
    return rng.standard_normal(d), rng.standard_normal((n, d)), rng.standard_normal(n)


# --- control flow -------------------------------------------------------------
# Explicit Python loops and branches, on purpose: they are what astad has to
# handle here. Sizes are fixed so that JAX's jit can unroll them too.


# --- scalar_loop: a scalar loop over n = 1000, 4000, 16000 elements ------------


def scalar_loop(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * y[i] + 0.5 * x[i] * x[i]
    return s


def make_scalar_loop_inputs(rng: np.random.Generator, n: int = 1000) -> tuple[np.ndarray, ...]:
    return rng.standard_normal(n), rng.standard_normal(n)


# --- huber: Huber loss, if/elif/else per element of 1000 residuals --------------


def huber_loss(pred, target, delta):
    r = pred - target
    total = 0.0
    for i in range(r.shape[0]):
        a = r[i]
        if a < -delta:
            total = total + delta * (-a - 0.5 * delta)
        elif a > delta:
            total = total + delta * (a - 0.5 * delta)
        else:
            total = total + 0.5 * a * a
    return total / r.shape[0]


def make_huber_inputs(rng: np.random.Generator) -> tuple[np.ndarray | float, ...]:
    n = 1000  # residuals have std sqrt(2): about 48% of them are beyond delta = 1
    return rng.standard_normal(n), rng.standard_normal(n), 1.0


# --- newton: cube root of a by Newton's method, a while loop -----------------


def newton_cbrt(a):
    x = a  # from above for a > 1: Newton on x**3 - a decreases monotonically
    step = 1.0
    it = 0
    while np.abs(step) > 1e-12 and it < 50:
        step = (x * x * x - a) / (3.0 * x * x)
        x = x - step
        it = it + 1
    return x


def make_newton_inputs(rng: np.random.Generator) -> tuple[float, ...]:
    return (7.3,)  # 9 iterations; d root / d a = 1 / (3 * 7.3 ** (2/3)) = 0.0889


# --- gmm: GMM log-likelihood, a loop over k = 25 components (d = 10, n = 1000) ---


def gmm_loglik(means, log_stds, logits, x):
    d = x.shape[1]
    lmax = np.max(logits)
    log_w = logits - (lmax + np.log(np.sum(np.exp(logits - lmax))))
    cols = []
    for j in range(means.shape[0]):
        z = (x - means[j]) * np.exp(-log_stds[j])
        log_norm = np.sum(log_stds[j]) + 0.5 * d * 1.8378770664093453  # log(2 pi)
        cols.append(log_w[j] - log_norm - 0.5 * np.sum(z * z, axis=1))
    L = np.stack(cols, axis=1)  # (n, k): log(w_j N(x_i | mean_j, std_j))
    m = np.max(L, axis=1, keepdims=True)
    return np.sum(m + np.log(np.sum(np.exp(L - m), axis=1, keepdims=True)))


def make_gmm_inputs(rng: np.random.Generator, n: int = 1000, d: int = 10, k: int = 25) -> tuple[np.ndarray, ...]:
    means = rng.standard_normal((k, d))
    log_stds = 0.1 * rng.standard_normal((k, d))
    logits = 0.1 * rng.standard_normal(k)
    x = rng.standard_normal((n, d))
    return means, log_stds, logits, x


# --- lstm: two-layer LSTM, 20 steps, hidden = input = 32, batch 1 (ADBench) ----


def lstm_loss(Wx, Wh, b, Wout, bout, h0, c0, seq):
    # Layer l: gates = x @ Wx[l] + h @ Wh[l] + b[l], in the order
    # input, forget, output (sigmoids), then the candidate (tanh).
    # seq: (steps + 1, batch, n_in); step t reads seq[t] and predicts seq[t + 1].
    H = Wh.shape[1]
    hs = []
    cs = []
    for l in range(Wx.shape[0]):
        hs.append(h0[l])
        cs.append(c0[l])
    total = 0.0
    for t in range(seq.shape[0] - 1):
        x = seq[t]
        new_hs = []
        new_cs = []
        for l in range(Wx.shape[0]):
            gates = x @ Wx[l] + hs[l] @ Wh[l] + b[l]
            ifo = 1.0 / (1.0 + np.exp(-gates[:, : 3 * H]))
            c = ifo[:, H : 2 * H] * cs[l] + ifo[:, :H] * np.tanh(gates[:, 3 * H :])
            h = ifo[:, 2 * H : 3 * H] * np.tanh(c)
            new_hs.append(h)
            new_cs.append(c)
            x = h
        hs = new_hs
        cs = new_cs
        ypred = x @ Wout + bout
        logp = ypred - np.log(np.sum(np.exp(ypred), axis=1, keepdims=True))
        total = total + np.sum(seq[t + 1] * logp)
    return -total / ((seq.shape[0] - 1) * seq.shape[1])


def make_lstm_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    layers, steps, batch, n_in, H = 2, 20, 1, 32, 32
    Wx = rng.standard_normal((layers, n_in, 4 * H)) / np.sqrt(n_in)
    Wh = rng.standard_normal((layers, H, 4 * H)) / np.sqrt(H)
    b = 0.1 * rng.standard_normal((layers, 4 * H))
    Wout = rng.standard_normal((H, n_in)) / np.sqrt(H)
    bout = 0.1 * rng.standard_normal(n_in)
    h0 = np.zeros((layers, batch, H))
    c0 = np.zeros((layers, batch, H))
    seq = rng.random((steps + 1, batch, n_in))
    return Wx, Wh, b, Wout, bout, h0, c0, seq


# --- rk4: 10 RK4 steps of dy/dt = -k * y + sin(y), 1000 states ----------------


def rk4_loss(y0, k, dt):
    y = y0
    for step in range(10):
        k1 = -k * y + np.sin(y)
        y2 = y + 0.5 * dt * k1
        k2 = -k * y2 + np.sin(y2)
        y3 = y + 0.5 * dt * k2
        k3 = -k * y3 + np.sin(y3)
        y4 = y + dt * k3
        k4 = -k * y4 + np.sin(y4)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return np.sum(y**2)


def make_rk4_inputs(rng: np.random.Generator) -> tuple[np.ndarray | float, ...]:
    n = 1000
    return rng.standard_normal(n), rng.uniform(0.5, 2.0, n), 0.05


# --- functions as values and recursion (issue 4) -------------------------------


def closure_map(a, xs):
    """A closure over a scalar, mapped over 500 elements by a comprehension."""
    g = lambda z: a * np.sin(z) + z * z / (1.0 + a * a)  # noqa: E731
    return np.sum(np.array([g(z) for z in xs]))


def make_closure_map_inputs(rng: np.random.Generator) -> tuple[float | np.ndarray, ...]:
    return 0.7, rng.standard_normal(500)


def horner(cs, x):
    """Horner's rule, recursively: cs[0] + x * (cs[1] + x * (...))."""
    if len(cs) == 0:
        return 0.0
    return cs[0] + x * horner(cs[1:], x)


def make_horner_inputs(rng: np.random.Generator) -> tuple[np.ndarray | float, ...]:
    return rng.standard_normal(30) / 30.0, 0.9


def tree_node(t, W, b):
    """A tree of nested pairs, leaves 8-vectors: a dense layer at each node."""
    if isinstance(t, tuple):
        return np.tanh(W @ np.concatenate([tree_node(t[0], W, b), tree_node(t[1], W, b)]) + b)
    return t


def tree_loss(W, b, tree):
    return np.sum(tree_node(tree, W, b))


def _random_tree(rng: np.random.Generator, depth: int):
    if depth == 0:
        return rng.standard_normal(8)
    return (_random_tree(rng, depth - 1), _random_tree(rng, depth - 1))


def make_tree_inputs(rng: np.random.Generator) -> tuple:
    return rng.standard_normal((8, 16)) * 0.3, 0.1 * rng.standard_normal(8), _random_tree(rng, 8)


# --- issue 12: inactive values, scalar fast path, memory traffic, transform time ---


def horner_llsq(c, y):
    """Horner's rule over 128 coefficients (highest degree first) at n nodes
    t in [-1, 1] made from np.arange: t and y are inactive (llsq-style)."""
    n = y.shape[0]
    t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)
    p = np.zeros(n)
    for j in range(c.shape[0]):
        p = p * t + c[j]
    r = p - y
    return np.sum(r * r)


def make_horner_llsq_inputs(rng: np.random.Generator, n: int = 16392, k: int = 128) -> tuple[np.ndarray, ...]:
    t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)
    return rng.standard_normal(k) / k, np.sign(t)


def tiny_scalar(x, y):
    """Five float operations (* + - * /): the "tiny scalar function" of issue 12."""
    return (x * y + 1.0) / (x - 2.0 * y)


def make_tiny_scalar_inputs(rng: np.random.Generator) -> tuple[float, ...]:
    return 2.0, 3.0


def straight_line_source(n: int) -> str:
    """A generated straight-line function of n statements on a 32-vector (``v``)
    and a 32 x 32 matrix (``W``), cycling through bounded elementwise updates
    and matrix products: the "500 statements" transform-time program."""
    steps = [
        "np.sin({a}) * 0.5 + {b}",
        "np.tanh({a} + 0.3 * {b})",
        "{a} * np.exp(-{b} * {b})",
        "W @ {a} * 0.1 + np.cos({b})",
        "{a} - 0.2 * {b} / (1.0 + {a} * {a})",
    ]
    lines = ["def straight_line_%d(v, W):" % n, "    v0 = v", "    v1 = np.sin(v)"]
    for k in range(2, n):
        lines.append(f"    v{k} = " + steps[k % len(steps)].format(a=f"v{k - 1}", b=f"v{k - 2}"))
    lines.append(f"    return np.sum(v{n - 1} * v{n - 2})")
    return "\n".join(lines) + "\n"


def define(source: str, name: str) -> Callable[..., Any]:
    """Define the function ``name`` from generated ``source`` in this module's
    namespace (so that the np-swapping trick reaches it too), its text kept in
    linecache as a notebook cell's is, where inspect (and astad) read it."""
    filename = f"<bench/programs.py: generated {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), globals())
    return globals()[name]


straight_line_500 = define(straight_line_source(500), "straight_line_500")


def make_straight_line_inputs(rng: np.random.Generator, d: int = 32) -> tuple[np.ndarray, ...]:
    return rng.standard_normal(d), rng.standard_normal((d, d)) / np.sqrt(d)


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
    "scalar_loop_1000": (scalar_loop, partial(make_scalar_loop_inputs, n=1000), (0, 1)),
    "scalar_loop_4000": (scalar_loop, partial(make_scalar_loop_inputs, n=4000), (0, 1)),
    "scalar_loop_16000": (scalar_loop, partial(make_scalar_loop_inputs, n=16000), (0, 1)),
    "huber": (huber_loss, make_huber_inputs, 0),
    "newton": (newton_cbrt, make_newton_inputs, 0),
    "gmm": (gmm_loglik, make_gmm_inputs, (0, 1, 2)),
    "lstm": (lstm_loss, make_lstm_inputs, (0, 1, 2, 3, 4)),
    "rk4": (rk4_loss, make_rk4_inputs, (0, 1)),
    "closure_map": (closure_map, make_closure_map_inputs, (0, 1)),
    "horner": (horner, make_horner_inputs, (0, 1)),
    "tree": (tree_loss, make_tree_inputs, (0, 1)),
    "horner_llsq": (horner_llsq, make_horner_llsq_inputs, 0),
    "logsumexp_1e6": (logsumexp, partial(make_logsumexp_inputs, n=10**6), 0),
    "tiny_scalar": (tiny_scalar, make_tiny_scalar_inputs, (0, 1)),
    "gmm_64_100": (gmm_loglik, partial(make_gmm_inputs, d=64, k=100), (0, 1, 2)),
    "straight_line_500": (straight_line_500, make_straight_line_inputs, (0, 1)),
}
TRANSFORM_COLD = (thirty_lines, make_thirty_lines_inputs)
CALL_OVERHEAD = (tiny, make_tiny_inputs)


# --- forward mode and second order (bench/forward.py) ---------------------------


def logistic_loss(w, X, y):
    """L2-regularised logistic regression: 30 weights, 200 samples, labels +-1."""
    margins = y * (X @ w)
    return np.mean(np.log(1.0 + np.exp(-margins))) + 0.01 * np.sum(w * w)


def make_logistic_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    n, d = 200, 30
    X = rng.standard_normal((n, d))
    y = np.sign(X @ rng.standard_normal(d) + rng.standard_normal(n))
    return 0.1 * rng.standard_normal(d), X, y


def two_layer_map(x, W1, W2):
    """A vector-valued two-layer network x -> tanh(W2 @ tanh(W1 @ x))."""
    return np.tanh(W2 @ np.tanh(W1 @ x))


def make_two_layer_inputs(rng: np.random.Generator, n_in: int, n_out: int) -> tuple[np.ndarray, ...]:
    hidden = 50
    return (rng.standard_normal(n_in), rng.standard_normal((hidden, n_in)) / np.sqrt(n_in),
            rng.standard_normal((n_out, hidden)) / np.sqrt(hidden))


# name -> (function, make_inputs(rng), argnums), for bench/forward.py's sections
HESSIANS = {"hessian_logistic_30": (logistic_loss, make_logistic_inputs, 0)}
JACOBIANS = {
    "jacobian_10_to_1000": (two_layer_map, partial(make_two_layer_inputs, n_in=10, n_out=1000), 0),
    "jacobian_1000_to_10": (two_layer_map, partial(make_two_layer_inputs, n_in=1000, n_out=10), 0),
}
HVPS = {"hvp_mlp": (mlp_loss, make_mlp_inputs, (0, 1, 2, 3))}
# peak memory of one call of scalar_loop at these lengths (O(1) in forward mode)
MEMORY = (scalar_loop, make_scalar_loop_inputs, (1000, 16000), (0, 1))
