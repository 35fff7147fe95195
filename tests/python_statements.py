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
