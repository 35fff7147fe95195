"""Adversarial checks of the reverse macro's shortcuts of session 9 (VJP rule applications replayed,
astad/ad/replay.py; cotangents named where they are made, ``Cotangents.take``), and what the attack on them found.

- ``to_float`` (``float(x)``, which ``like_scalar`` makes of the cotangent of a Python float) was typed a Python
  float of its argument's dtype: a Python float typed float32 where a float32 0-d value's cotangent went to a
  Python float (``np.where(x > 0, x, np.float32(2.0))`` of a Python float ``x``).  Differentiated again in
  reverse (``vjp`` of ``grad``, ``jacrev`` of ``grad``), the transpose of the conversion asked for a Python
  float32: an internal KeyError.  ``float(x)`` is a float64 whatever ``x`` is.
- Repeated applications of each replayed primitive whose keys differ subtly (dtypes, Python floats, numpy
  scalars and 0-d arrays, literals ``2``/``2.0``/``True``/``np.float32(2)``/``-0.0``, ``keepdims=1`` and
  ``True``, broadcasting, an argument twice, user names like the macro's (``x_ct``, ``t3``, ``x0_1_ct``)):
  against central finite differences in float64, and the same generated code with the switches off.
"""

import numpy as np
import pytest

import astad
from astad.ad import replay, reverse
from conftest import load_program

SQRT = """import numpy as np


def f(x):
    y = np.where(x > 0, x, np.float32(2.0))
    return np.sqrt(y * y + 1.0)
"""

SQUARE = """import numpy as np


def f(x):
    y = np.where(x > 0, x, np.float32(2.0))
    return y * y
"""


def _second(source, x):
    """d/dx of d/dx f at x (for x > 0, y = x): 1 / (x^2 + 1)^1.5 of sqrt(x^2 + 1), 2 of x^2."""
    return (1.0 / (x * x + 1.0) ** 1.5) if "sqrt" in source else 2.0


@pytest.mark.parametrize("source", [SQRT, SQUARE], ids=["sqrt", "square"])
@pytest.mark.parametrize("how", ["vjp", "jacrev", "hessian"])
def test_reverse_over_reverse_of_a_python_float_meeting_a_float32(tmp_path, source, how):
    f = load_program(source, tmp_path, "adv13").f
    x = 0.7
    if how == "vjp":
        _, pullback = astad.vjp(astad.grad(f), x)
        (got,) = pullback(1.0)
    elif how == "jacrev":
        got = astad.jacrev(astad.grad(f))(x)
    else:
        got = astad.hessian(f)(x)
    # y is float32 (numpy's where of a Python float and a float32): float32 precision
    assert np.allclose(float(got), _second(source, x), rtol=1e-5)


def test_to_float_is_a_float64():
    from astad.ir import Num
    from astad.rules import TABLE

    for dtype in ("float32", "float16", "float64", "int64"):
        assert TABLE["to_float"].infer([Num((), dtype)], {}) == Num((), "float64", py=True)


REPEATED = """import numpy as np


def f(x, s, p, h):
    x_ct = x * 2
    t3 = x * 2.0
    x0_1_ct = x * np.float32(2.0)
    a = x * True
    b = s * 2
    c = s * 2.0
    d = p * 2
    e = p * 2.0
    g = h * 2
    k = h * 2.0
    m = x_ct ** 2 + t3 ** 2.0 + x0_1_ct ** True + a ** 2
    n = np.sum(x * x, axis=0, keepdims=1) + np.sum(x * x, axis=0, keepdims=True) + np.sum(x + x, axis=0)
    q = np.where(x > 0, x, 0) + np.where(x > 0, x, False) + np.where(x > 0, x, -0.0) + np.where(x > 0, x, 0.0)
    r = np.maximum(x, 0.5) + np.maximum(x, x) + np.maximum(x, s) + np.maximum(x, p)
    return np.sum(m) + np.sum(n) + np.sum(q) + np.sum(r) + b * c + d * e + g * k
"""


def _repeated_args(dtype):
    x = np.array([[0.3, -0.4, 0.9], [1.1, 0.2, -0.7]], dtype=dtype)
    return [x, np.float32(0.6) if dtype == "float32" else np.float64(0.6), np.array(-0.8, dtype=dtype), 0.45]


def _fd(f, args, i, eps=1e-6):
    up = [np.asarray(a, dtype=np.float64) if not isinstance(a, float) or type(a) is not float else a for a in args]
    x = np.array(up[i], dtype=np.float64)
    g = np.zeros_like(x)
    for k in range(x.size):
        for sign in (1, -1):
            moved = x.copy().reshape(-1)
            moved[k] += sign * eps
            shifted = list(up)
            shifted[i] = float(moved[0]) if type(args[i]) is float else moved.reshape(x.shape)
            g.reshape(-1)[k] += sign * float(f(*shifted)) / (2 * eps)
    return g


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_repeated_applications_with_subtly_different_keys(tmp_path, dtype):
    f = load_program(REPEATED, tmp_path, "adv13").f
    args = _repeated_args(dtype)
    with np.errstate(all="ignore"):
        grads = astad.grad(f, argnums=(0, 1, 2, 3))(*args)
        if dtype == "float64":  # (the others: numpy computes in their precision, finite differences cannot tell)
            for i, g in enumerate(grads):
                assert np.allclose(np.asarray(g, dtype=np.float64), _fd(f, args, i), rtol=1e-5, atol=1e-6), i
    for a, g in zip(args, grads):  # a cotangent has its value's dtype (a Python float's: a Python float)
        if type(a) is float:
            assert type(g) is float
        else:
            assert np.asarray(g).dtype == np.asarray(a).dtype
    astad.clear_caches(disk=False)
    fast = astad.reverse(f).derivative(args).source
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay, "REPLAY", False)
        mp.setattr(reverse, "NAME_COTANGENTS", False)
        astad.clear_caches(disk=False)
        assert astad.reverse(f).derivative(args).source == fast


CLOSURE_THEN_BRANCH = """import numpy as np


def f(x, y, flag=True):
    def g(t):
        return y * y
    v = g(x)
    if flag:
        v = np.sin(v)
    return v
"""


@pytest.mark.parametrize("flag", [True, False])
def test_the_cotangent_of_a_python_float_read_by_a_closure_is_a_float(tmp_path, flag):
    f = load_program(CLOSURE_THEN_BRANCH, tmp_path, "adv13").f
    g = astad.grad(f, argnums=1)(np.array([0.41, -0.69]), -1.45, flag=flag)
    assert np.isclose(g, np.cos(1.45 ** 2) * -2.9 if flag else -2.9)
    assert type(g) is float
