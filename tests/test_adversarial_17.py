"""Adversarial checks, session 10 (s10-left): problems the previous session left.

1. A function value's backward map is built once for the cotangent of its result typed as that result
   (a Python float); inlined where the call gives it a numpy float64 (the cotangent of an ``if``'s join,
   of ``np.sin(v)``), or where the map itself makes one of a Python float (``np.sin(y)`` read by the
   closure), its bindings and the call's cotangents kept the types of the map as built: the gradient
   of a Python float came back a numpy float64 (``finish`` converts by static type).
   (astad/optimise/retype.py, called by astad/optimise/copowers.py.)

Oracles: central finite differences in float64, forward mode against reverse mode
(``<u, J v> == <J^T u, v>``), the IR interpreter at every stage, and the plain call's types.
"""

import numpy as np
import pytest

import astad
from conftest import _inner, _random_like, check_correct_or_refused, check_grad


def _forward_matches_reverse(fn, args, seed=1):
    """``<u, J v>`` from ``jvp`` equals ``<J^T u, v>`` from the pullback, for random ``u`` and ``v`` over
    the float arguments (Python floats and float arrays)."""
    rng = np.random.default_rng(seed)
    floats = [i for i, a in enumerate(args) if isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")]
    tangents = tuple(float(rng.normal()) if isinstance(args[i], float) else rng.normal(size=np.shape(args[i]))
                     for i in floats)
    it = iter(tangents)
    value, jv = astad.jvp(fn, tuple(args), tuple(next(it) if i in floats else None for i in range(len(args))))
    u = _random_like(rng, value)
    _, pullback = astad.reverse(fn)(*args)
    cts = pullback(u)
    lhs = _inner(u, jv)
    rhs = sum(_inner(cts[i], t) for i, t in zip(floats, tangents))
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-12)


# ---- 1. the cotangent of a Python float a closure reads ----------------------------------------------

def closure_then_branch(x, y, flag):
    def g(t):
        return y * y
    v = g(x)
    if flag:
        v = np.sin(v)
    return v


def closure_then_numpy(x, y):
    def g(t):
        return y * y
    v = g(x)
    return np.sin(v)


def closure_makes_numpy(x, y):
    def g(t):
        return np.sin(y) * 2.0 + y
    return g(x) * 3.0


def closure_called_twice(x, y):
    def g(t):
        return y * 3.0
    return g(x) + g(x) * np.float64(2.0)


def closure_in_a_loop(x, y):
    def g(t):
        return y * t
    acc = 0.0
    for i in range(3):
        acc = acc + np.cos(g(float(x[i])))
    return acc


def closure_divides(x, y):
    def g(t):
        return y / (y * y + 1.0)
    v = g(x)
    if v > 0.0:
        v = np.exp(v)
    return v * y


@pytest.mark.parametrize("fn,args", [
    (closure_then_branch, (np.array([0.41, -0.69]), -1.45, True)),
    (closure_then_branch, (np.array([0.41, -0.69]), -1.45, False)),
    (closure_then_numpy, (np.array([0.41, -0.69]), 0.83)),
    (closure_makes_numpy, (np.array([0.41, -0.69]), 0.83)),
    (closure_called_twice, (np.array([0.41, -0.69]), 0.83)),
    (closure_in_a_loop, (np.array([0.41, -0.69, 1.3]), 0.83)),
    (closure_divides, (np.array([0.41, -0.69]), 0.83)),
    (closure_divides, (np.array([0.41, -0.69]), -0.83)),
])
def test_the_cotangent_of_a_python_float_a_closure_reads_is_a_float(fn, args):
    check_grad(fn, args)  # (a float for a Python float argument, against central differences)
    check_correct_or_refused(fn, args)  # (and the IR interpreter at every stage)
    _forward_matches_reverse(fn, args)
    g = astad.grad(fn, argnums=1)(*args)
    assert type(g) is float


def test_the_papers_fig2_gives_a_float_for_its_python_float():
    """CHAD's Fig. 2 (a closure mapped over an array, summed): the cotangent of the Python float ``x1`` is
    summed from ``ct * x2[i]``, numpy float64s; it came back one (tests/golden/fig2_source.py now ends
    ``return float(x1_ct_2_2), ...``)."""
    from paper_fig2 import fig2
    args = (1.5, np.array([1.0, -2.0, 3.5]))
    check_grad(fig2, args)
    _forward_matches_reverse(fig2, args)
    assert type(astad.grad(fig2)(*args)) is float
