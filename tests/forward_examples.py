"""Programs whose forward-mode code is pinned in tests/golden (their lines are part of it)."""

import numpy as np


def design_example(x1, x2, x3, x4):
    y = x1 * x4 + 2.0 * x2
    z = y * x3
    w = z + x4
    return np.sin(w)


def for_loop(x, w):
    s = 0.0
    for i in range(6):
        s = s + np.tanh(x * w + s) * i
    return s
