"""Hand-written JVPs of the programs of programs.py: the floor for ``astad.jvp``.

Each ``<program>_jvp(*args, *tangents)`` takes the program's arguments, then one
tangent per differentiated argument (the ``argnums`` of ``programs.PROGRAMS``),
and returns ``(value, tangent)``, written as a person would in plain numpy, in
the program's own style (a loop stays a loop, recursion stays recursion): the
primal's operations once, tangents without zeros, identities a person would
use (the tangent of a max that a logsumexp subtracts cancels; ``tanh' = 1 - y * y``
from the value; ``(n / d)' = (n' - q d') / d``).  bench/forward_mode.py times
them in the JVP table's ``hand/primal`` column and warns where astad.jvp
disagrees with them.
"""

from __future__ import annotations

import numpy as np


def mlp_jvp(W1, b1, W2, b2, x, y_onehot, W1_t, b1_t, W2_t, b2_t):
    h = np.tanh(x @ W1 + b1)
    h_t = (x @ W1_t + b1_t) * (1.0 - h * h)
    logits = h @ W2 + b2
    logits_t = h_t @ W2 + h @ W2_t + b2_t
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    e = np.exp(shifted)
    s = np.sum(e, axis=1, keepdims=True)
    logp = shifted - np.log(s)
    logp_t = logits_t - np.sum(logits_t * e, axis=1, keepdims=True) / s  # the max's tangent cancels
    return np.mean(-np.sum(y_onehot * logp, axis=1)), np.mean(-np.sum(y_onehot * logp_t, axis=1))


def logsumexp_jvp(x, x_t):
    m = np.max(x)
    e = np.exp(x - m)
    s = np.sum(e)
    return m + np.log(s), np.dot(x_t, e) / s


def least_squares_jvp(w, A, b, w_t):
    r = A @ w - b
    n = A.shape[0]
    return np.sum(r**2) / n, 2.0 * np.dot(A @ w_t, r) / n


def scalar_loop_jvp(x, y, x_t, y_t):
    s = 0.0
    s_t = 0.0
    for i in range(x.shape[0]):
        xi = x[i]
        sin = np.sin(xi)
        s = s + sin * y[i] + 0.5 * xi * xi
        s_t = s_t + (np.cos(xi) * y[i] + xi) * x_t[i] + sin * y_t[i]
    return s, s_t


def huber_jvp(pred, target, delta, pred_t):
    r = pred - target
    total = 0.0
    total_t = 0.0
    for i in range(r.shape[0]):
        a = r[i]
        if a < -delta:
            total = total + delta * (-a - 0.5 * delta)
            total_t = total_t - delta * pred_t[i]
        elif a > delta:
            total = total + delta * (a - 0.5 * delta)
            total_t = total_t + delta * pred_t[i]
        else:
            total = total + 0.5 * a * a
            total_t = total_t + a * pred_t[i]
    return total / r.shape[0], total_t / r.shape[0]


def newton_jvp(a, a_t):
    x = a
    x_t = a_t
    step = 1.0
    it = 0
    while np.abs(step) > 1e-12 and it < 50:
        xx = x * x
        d = 3.0 * xx
        step = (xx * x - a) / d
        step_t = (d * x_t - a_t - step * 6.0 * x * x_t) / d
        x = x - step
        x_t = x_t - step_t
        it = it + 1
    return x, x_t


def gmm_jvp(means, log_stds, logits, x, means_t, log_stds_t, logits_t):
    d = x.shape[1]
    lmax = np.max(logits)
    e = np.exp(logits - lmax)
    s = np.sum(e)
    log_w = logits - (lmax + np.log(s))
    log_w_t = logits_t - np.dot(logits_t, e) / s  # the max's tangent cancels
    cols = []
    cols_t = []
    for j in range(means.shape[0]):
        inv = np.exp(-log_stds[j])
        diff = x - means[j]
        z = diff * inv
        # z_t = -(means_t[j] + diff * log_stds_t[j]) * inv: sum(z * z_t, axis=1) = -(z * (...)) @ inv
        u = diff * log_stds_t[j]
        u += means_t[j]
        u *= z
        cols.append(log_w[j] - (np.sum(log_stds[j]) + 0.5 * d * 1.8378770664093453) - 0.5 * np.sum(z * z, axis=1))
        cols_t.append(log_w_t[j] - np.sum(log_stds_t[j]) + u @ inv)
    L = np.stack(cols, axis=1)
    L_t = np.stack(cols_t, axis=1)
    m = np.max(L, axis=1, keepdims=True)
    e = np.exp(L - m)
    s = np.sum(e, axis=1, keepdims=True)
    return np.sum(m + np.log(s)), np.sum(np.sum(L_t * e, axis=1, keepdims=True) / s)


def lstm_jvp(Wx, Wh, b, Wout, bout, h0, c0, seq, Wx_t, Wh_t, b_t, Wout_t, bout_t):
    H = Wh.shape[1]
    layers = Wx.shape[0]
    hs, cs = list(h0), list(c0)
    hs_t = [None] * layers  # the initial states are constants: no tangents yet
    cs_t = [None] * layers
    total = 0.0
    total_t = 0.0
    for t in range(seq.shape[0] - 1):
        x, x_t = seq[t], None
        for l in range(layers):
            gates = x @ Wx[l] + hs[l] @ Wh[l] + b[l]
            gates_t = x @ Wx_t[l] + hs[l] @ Wh_t[l] + b_t[l]
            if x_t is not None:
                gates_t += x_t @ Wx[l]
            if hs_t[l] is not None:
                gates_t += hs_t[l] @ Wh[l]
            ifo = 1.0 / (1.0 + np.exp(-gates[:, : 3 * H]))
            ifo_t = ifo * (1.0 - ifo) * gates_t[:, : 3 * H]
            cand = np.tanh(gates[:, 3 * H :])
            c = ifo[:, H : 2 * H] * cs[l] + ifo[:, :H] * cand
            c_t = ifo_t[:, H : 2 * H] * cs[l] + ifo_t[:, :H] * cand + ifo[:, :H] * (1.0 - cand * cand) * gates_t[:, 3 * H :]
            if cs_t[l] is not None:
                c_t += ifo[:, H : 2 * H] * cs_t[l]
            tc = np.tanh(c)
            h = ifo[:, 2 * H : 3 * H] * tc
            h_t = ifo_t[:, 2 * H : 3 * H] * tc + ifo[:, 2 * H : 3 * H] * (1.0 - tc * tc) * c_t
            hs[l], cs[l], hs_t[l], cs_t[l] = h, c, h_t, c_t
            x, x_t = h, h_t
        ypred = x @ Wout + bout
        ypred_t = x_t @ Wout + x @ Wout_t + bout_t
        e = np.exp(ypred)
        s = np.sum(e, axis=1, keepdims=True)
        logp = ypred - np.log(s)
        logp_t = ypred_t - np.sum(ypred_t * e, axis=1, keepdims=True) / s
        total = total + np.sum(seq[t + 1] * logp)
        total_t = total_t + np.sum(seq[t + 1] * logp_t)
    n = (seq.shape[0] - 1) * seq.shape[1]
    return -total / n, -total_t / n


def rk4_jvp(y0, k, dt, y0_t, k_t):
    y, y_t = y0, y0_t

    def f(y, y_t):
        return -k * y + np.sin(y), -k_t * y + (np.cos(y) - k) * y_t

    for step in range(10):
        k1, k1_t = f(y, y_t)
        k2, k2_t = f(y + 0.5 * dt * k1, y_t + 0.5 * dt * k1_t)
        k3, k3_t = f(y + 0.5 * dt * k2, y_t + 0.5 * dt * k2_t)
        k4, k4_t = f(y + dt * k3, y_t + dt * k3_t)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        y_t = y_t + dt / 6.0 * (k1_t + 2.0 * (k2_t + k3_t) + k4_t)
    return np.sum(y**2), 2.0 * np.dot(y, y_t)


def closure_map_jvp(a, xs, a_t, xs_t):
    den = 1.0 + a * a
    den_t_over = 2.0 * a * a_t / den  # den' / den
    values = []
    tangents = []
    for z, z_t in zip(xs, xs_t):
        sin = np.sin(z)
        q = z * z / den
        values.append(a * sin + q)
        tangents.append(a_t * sin + (a * np.cos(z) + 2.0 * z / den) * z_t - q * den_t_over)
    return np.sum(np.array(values)), np.sum(np.array(tangents))


def horner_jvp(cs, x, cs_t, x_t):
    if len(cs) == 0:
        return 0.0, 0.0
    v, v_t = horner_jvp(cs[1:], x, cs_t[1:], x_t)
    return cs[0] + x * v, cs_t[0] + x_t * v + x * v_t


def tree_jvp(W, b, tree, W_t, b_t):
    def node(t):
        if isinstance(t, tuple):
            (left, left_t), (right, right_t) = node(t[0]), node(t[1])
            c = np.concatenate([left, right])
            y = np.tanh(W @ c + b)
            pre_t = W_t @ c + b_t
            if left_t is not None:  # the leaves are constants
                pre_t += W @ np.concatenate([left_t, right_t])
            return y, pre_t * (1.0 - y * y)
        return t, None

    y, y_t = node(tree)
    return np.sum(y), np.sum(y_t)


def horner_llsq_jvp(c, y, c_t):
    n = y.shape[0]
    t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)
    p = np.zeros(n)
    p_t = np.zeros(n)
    for j in range(c.shape[0]):
        p = p * t + c[j]
        p_t = p_t * t + c_t[j]
    r = p - y
    return np.sum(r * r), 2.0 * np.dot(r, p_t)


def tiny_scalar_jvp(x, y, x_t, y_t):
    d = x - 2.0 * y
    q = (x * y + 1.0) / d
    return q, (x_t * y + x * y_t - q * (x_t - 2.0 * y_t)) / d


#: the tangent of each step of programs.straight_line_source, as a person writes it
#: ({a}, {b}: the last two values, {y}: the step's value; `e` and `d` name a step's temporaries)
_STEPS = [
    ("{y} = np.sin({a}) * 0.5 + {b}",
     "{y}_t = np.cos({a}) * (0.5 * {a}_t) + {b}_t"),
    ("{y} = np.tanh({a} + 0.3 * {b})",
     "{y}_t = ({a}_t + 0.3 * {b}_t) * (1.0 - {y} * {y})"),
    ("e = np.exp(-{b} * {b}); {y} = {a} * e",
     "{y}_t = e * {a}_t - ({b} + {b}) * {y} * {b}_t"),
    ("{y} = W @ {a} * 0.1 + np.cos({b})",
     "{y}_t = (W_t @ {a} + W @ {a}_t) * 0.1 - np.sin({b}) * {b}_t"),
    ("d = 1.0 + {a} * {a}; q = 0.2 * {b} / d; {y} = {a} - q",
     "{y}_t = {a}_t - (0.2 * {b}_t - ({a} + {a}) * {a}_t * q) / d"),
]


def straight_line_jvp_source(n: int) -> str:
    """The hand-written JVP of programs.straight_line_source(n): its statements, each followed by its tangent."""
    lines = [f"def straight_line_{n}_jvp(v, W, v_t, W_t):", "    v0, v0_t = v, v_t",
             "    v1 = np.sin(v)", "    v1_t = np.cos(v) * v_t"]
    for k in range(2, n):
        primal, tangent = _STEPS[k % len(_STEPS)]
        names = {"a": f"v{k - 1}", "b": f"v{k - 2}", "y": f"v{k}"}
        lines += ["    " + primal.format(**names), "    " + tangent.format(**names)]
    a, b = f"v{n - 1}", f"v{n - 2}"
    lines.append(f"    return np.sum({a} * {b}), {a}_t @ {b} + {a} @ {b}_t")
    return "\n".join(lines) + "\n"


def _define(source: str, name: str):
    namespace = {"np": np}
    exec(compile(source, f"<bench/hand_jvp.py: generated {name}>", "exec"), namespace)
    return namespace[name]


straight_line_500_jvp = _define(straight_line_jvp_source(500), "straight_line_500_jvp")


HAND = {
    "mlp": mlp_jvp, "logsumexp": logsumexp_jvp, "least_squares": least_squares_jvp,
    "scalar_loop_1000": scalar_loop_jvp, "scalar_loop_4000": scalar_loop_jvp, "scalar_loop_16000": scalar_loop_jvp,
    "huber": huber_jvp, "newton": newton_jvp, "gmm": gmm_jvp, "lstm": lstm_jvp, "rk4": rk4_jvp,
    "closure_map": closure_map_jvp, "horner": horner_jvp, "tree": tree_jvp, "horner_llsq": horner_llsq_jvp,
    "logsumexp_1e6": logsumexp_jvp, "tiny_scalar": tiny_scalar_jvp, "gmm_64_100": gmm_jvp,
    "straight_line_500": straight_line_500_jvp,
}
