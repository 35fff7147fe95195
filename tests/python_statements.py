"""Functions with ``raise`` and ``assert`` for tests/test_python_builtins.py, in a
module pytest does not rewrite (it rewrites the ``assert`` statements of test
modules, so their code would not be the code of their source)."""

from __future__ import annotations

import numpy as np


def r_guard(x):
    if x < 0.0:
        raise ValueError(f"negative x: {x!r}")
    assert x < 10.0, f"too large: {x:.1f}"
    return np.sqrt(x) * x


def r_else(x):
    if x > 1.0:
        y = x * 3.0
    elif x > 0.0:
        raise ArithmeticError("in (0, 1]", x)
    else:
        y = x * x
    return y


def r_assert_plain(x):
    assert x != 2.0
    return x * x


def r_after_return(x):
    if x > 0.0:
        return x * x
    print("bad", x)
    raise ValueError(f"x = {x}")


def r_elif(x):
    if x > 1.0:
        return x * 3.0
    elif x > 0.0:
        return np.sin(x) * x
    else:
        raise ValueError("neg")


def r_in_loop(x, n):
    y = x
    for i in range(n):
        if y > 10.0:
            raise RuntimeError(f"diverged at {i}")
        y = y * 2.0 + np.cos(y)
    return y
