"""An object whose class defines ``__getattr__`` (Python asks it only for a name the object and its class
lack) read as a global (``g.b``): astad asked it for ``__astad_function__`` when checking a call's
dependencies, got its answer (5.0) and raised TypeError from ``vars(5.0)``.  Oracles: Python's own
value, the derivative written out, forward mode, after the attributes change."""

from __future__ import annotations

import numpy as np

import astad


class AnswersAnything:
    w = 3.0

    def __init__(self) -> None:
        self.b = np.array([1.0, 2.0])

    def __getattr__(self, name):
        return 5.0


g = AnswersAnything()


def scaled(x):
    return np.sum(x * g.b) * g.w


def test_an_object_with_getattr_is_read_as_python_reads_it():
    x = np.array([0.5, 1.5])
    r = astad.reverse(scaled)
    try:
        for _ in range(3):
            value, pullback = r(x)
            assert value == scaled(x)
            np.testing.assert_array_equal(pullback(1.0)[0], g.b * g.w)
            value, tangent = astad.jvp(scaled, (x,), (np.array([1.0, -1.0]),))
            assert value == scaled(x) and tangent == (g.b[0] - g.b[1]) * g.w
            g.b = g.b + 1.0
            g.w = g.w * 2.0
    finally:
        del g.w
        g.b = np.array([1.0, 2.0])
