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

import math
import warnings

import numpy as np
import pytest

import astad
from conftest import _inner, _random_like, central_differences, check_correct_or_refused, check_grad


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


# ---- 3. a zero tangent (or cotangent) where the partial is infinite ---------------------------------------
# (s10-adv2: 0 * inf is nan again, not 0: a zero computed by the chain rule is the other factor of an indeterminate
# product, np.sqrt(x) ** 2 and np.cbrt(x ** 3) at 0 had the derivative 0 where it is 1; test_adversarial_18.  The
# tests below check the nan where the comment says 0.)
# sqrt at 0, x ** 0.5 at 0, arcsin and arccos at ±1 are finite where their derivative is infinite: a tangent
# that is zero there (an input not varied, a zero seed, a column of jacfwd) and a cotangent that is zero (an output
# not selected by jacrev, a masked entry) contribute 0, not 0 * inf = nan; a nonzero one meets the infinite
# partial (inf, as reverse mode's partial says).  JAX's convention before jax-ml/jax#2447 (its `_safe_mul`,
# jax-ml/jax#383: "a zero in the gradient should win out over an inf in the Jacobian"); JAX itself now gives nan
# unless the zero is symbolic (an input jvp is not given a tangent for).

def np_sqrt(x):
    return np.sqrt(x)


def py_half_power(x):
    return x ** 0.5


def np_half_power(x):
    return np.power(x, 0.5)


def cube_root_power(x):
    return x ** (1.0 / 3.0)


def np_arcsin(x):
    return np.arcsin(x)


def np_cbrt(x):
    return np.cbrt(x)


def np_arccosh(x):
    return np.arccosh(x)


def np_arccos(x):
    return np.arccos(x)


def math_sqrt(x):
    return math.sqrt(x)


def math_asin(x):
    return math.asin(x)


def math_acos(x):
    return math.acos(x)


_EDGE = [(np_sqrt, 0.0, 0.25), (py_half_power, 0.0, 0.25), (np_half_power, 0.0, 0.25), (cube_root_power, 0.0, 0.3),
         (np_arcsin, 1.0, 0.3), (np_arcsin, -1.0, -0.3), (np_arccos, 1.0, 0.3), (np_arccos, -1.0, -0.3),
         (np_cbrt, 0.0, -0.4), (np_arccosh, 1.0, 1.3)]
_MATH_EDGE = [(math_sqrt, 0.0, 0.25), (math_asin, 1.0, 0.3), (math_asin, -1.0, 0.3), (math_acos, -1.0, 0.3)]


def _quiet(thunk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return thunk()


@pytest.mark.parametrize("fn,edge,inside", _EDGE + _MATH_EDGE)
def test_a_zero_tangent_at_an_infinite_partial_gives_nan(fn, edge, inside):
    """Forward mode: ``jvp`` with a zero tangent at the edge is nan (0 * inf; see test_adversarial_18);
    a nonzero one is the infinite derivative; inside the domain the tangent is the central difference."""
    value, tangent = _quiet(lambda: astad.jvp(fn, (edge,), (0.0,)))
    assert value == fn(edge) and math.isnan(tangent)
    _, tangent = _quiet(lambda: astad.jvp(fn, (edge,), (1.0,)))
    assert math.isinf(tangent)
    _, tangent = astad.jvp(fn, (inside,), (1.0,))
    assert tangent == pytest.approx(central_differences(fn, inside), rel=1e-7)
    g = _quiet(lambda: astad.grad(fn)(edge))
    assert math.isinf(g) and type(g) is float


@pytest.mark.parametrize("fn,edge,inside", _EDGE)
def test_arrays_with_an_infinite_partial_and_a_zero_tangent_or_cotangent(fn, edge, inside):
    """Elementwise over ``[edge, inside]``: jacfwd's and jacrev's off-diagonal entries are 0 or nan (each column of
    jacfwd has a zero tangent at the other entry; each row of jacrev a zero cotangent); the diagonal is the infinite
    partial at the edge and the central difference inside; forward and reverse agree entry by entry."""
    x = np.array([edge, inside])
    jf = _quiet(lambda: astad.jacfwd(fn)(x))
    jr = _quiet(lambda: astad.jacrev(fn)(x))
    for j in (jf, jr):
        assert j.shape == (2, 2) and all(np.isnan(e) or e == 0.0 for e in (j[0, 1], j[1, 0]))  # (0 * inf: nan)
        assert np.isinf(j[0, 0]) and j[1, 1] == pytest.approx(central_differences(fn, inside), rel=1e-7)
    _, tangent = _quiet(lambda: astad.jvp(fn, (x,), (np.array([0.0, 1.0]),)))
    assert np.isnan(tangent[0]) and tangent[1] == pytest.approx(jr[1, 1], rel=1e-12)
    # reverse mode, an unselected output: the cotangent of the edge's entry is 0
    _, pullback = _quiet(lambda: astad.vjp(fn, x))
    (ct,) = _quiet(lambda: pullback(np.array([0.0, 1.0])))
    assert np.isnan(ct[0]) and ct[1] == pytest.approx(jr[1, 1], rel=1e-12)


def sqrt_of_sum_then_pick(x, y):
    return np.sqrt(x * x + y)[1:]


def sqrt_unselected(x, y):
    return np.sqrt(x) * 0.0 + y, np.sqrt(y)


def test_an_input_not_varied_and_an_output_not_used():
    """``sqrt(x * x + y)[1:]`` at a zero first entry: its cotangent there is 0 (the entry is not returned); jvp in
    y alone at ``x = 0``: ``sqrt(x)`` is not varied.  Nan nowhere; each against central differences where smooth."""
    x, y = np.array([0.0, 0.3, -0.5]), np.array([0.0, 0.2, 0.1])
    gx, gy = _quiet(lambda: astad.vjp(sqrt_of_sum_then_pick, x, y)[1](np.array([1.0, -2.0])))
    assert np.isnan(gx[0]) and np.isnan(gy[0]) and not np.isnan(gx[1:]).any() and not np.isnan(gy[1:]).any()
    check_grad(lambda_free_pick, (x[1:], y[1:]))
    _, (tx, ty) = _quiet(lambda: astad.jvp(sqrt_unselected, (0.0, 0.25), (0.0, 1.0)))
    assert np.isnan(tx) and ty == pytest.approx(1.0, rel=1e-12)


def lambda_free_pick(x, y):
    return np.sqrt(x * x + y)


def sqrt_loop(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sqrt(x[i]) * c
    return s


def test_a_loop_of_square_roots_keeps_its_scalar_path():
    """The guard is printed ``(d if v != 0.0 else np.float64(0.0))`` for scalars (np.where of scalars costs a
    microsecond): the loop still runs on Python floats (``x.tolist()``); a zero entry's partial is inf, times the
    zero tangent of jvp's direction there 0; a zero output cotangent gives zeros, not nans."""
    x = np.array([0.0, 0.3, 1.7])
    gx, gc = _quiet(lambda: astad.grad(sqrt_loop, argnums=(0, 1))(x, 2.0))
    assert np.isinf(gx[0]) and gx[1:] == pytest.approx(2.0 * 0.5 / np.sqrt(x[1:]), rel=1e-12)
    assert gc == pytest.approx(np.sum(np.sqrt(x)), rel=1e-12) and type(gc) is float
    assert "x.tolist()" in astad.reverse(sqrt_loop).source and "np.where" not in astad.reverse(sqrt_loop).source
    _, tangent = _quiet(lambda: astad.jvp(sqrt_loop, (x, 2.0), (np.array([0.0, 1.0, -1.0]), 0.5)))
    assert np.isnan(tangent)
    _, pullback = _quiet(lambda: astad.vjp(sqrt_loop, x, 2.0))
    zx, zc = _quiet(lambda: pullback(0.0))
    assert np.isnan(zx[0]) and np.array_equal(zx[1:], np.zeros(2)) and zc == 0.0


def sum_of_roots(x):
    return np.sum(np.sqrt(x) + np.arcsin(x * 0.5) + np.arccos(x * 0.25) + x ** 0.5)


def test_second_derivatives_through_the_guard():
    """Hessian (forward over reverse) and jacfwd of the gradient through the guarded rules, inside the domain,
    against central differences of the gradient; the guard's own tangent is the guarded tangent."""
    x = np.array([0.3, 1.1, 1.6])
    h = astad.hessian(sum_of_roots)(x)
    fd = np.array([central_differences(lambda t: astad.grad(sum_of_roots)(t)[k], x) for k in range(3)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(astad.jacfwd(astad.grad(sum_of_roots))(x), h, rtol=1e-10)
    np.testing.assert_allclose(astad.jacrev(astad.grad(sum_of_roots))(x), h, rtol=1e-10)


# ---- 2. a number that is a Python float on one path and a numpy float64 on another --------------------------
# Python's float and np.float64 differ in ``x ** 0.5`` of a negative x (complex vs nan), ``y / 0.0``
# (ZeroDivisionError vs inf with a warning), ``math.sqrt(-1.0)`` (ValueError vs np.sqrt's nan).  A join of the two
# (an ``if``/``else``, a loop that may run no iteration, ``sum`` of an empty masked selection, 0) is typed a numpy
# float64; astad must match plain Python (value, type, exception) or refuse.  Found here: a loop on the scalar fast
# path (``acc = 0.0; for i in range(n): acc = acc + x[i]``) left ``np.float64(acc)`` even where it ran no
# iteration, so ``y / acc`` gave inf where Python raises, and ``(acc - 1.0) ** 0.5`` nan where Python gives a
# complex (astad/codegen/loops.py ``_out``; a ``while`` loop so started keeps the array path, scalars.py).

def join_pow(x, flag):
    v = float(x[0]) if flag else x[1]
    return v ** 0.5


def join_pow_tail(x, flag):
    v = float(x[0]) if flag else x[1]
    w = v * 2.0 - 1.0
    return w ** 0.5 + x[2]


def loop_pow(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + x[i]
    return acc ** 0.5 + x[0]


def empty_sum_pow(x):
    s = sum(x[x > 10.0]) - 1.0
    return s ** 0.5 + x[0]


def join_div(x, flag):
    v = float(x[0]) if flag else x[1]
    return x[2] / v


def join_div_py(x, y, flag):
    v = y * 0.0 if flag else x[1] * 0.0
    return y / v


def loop_div(x, y, n):
    acc = 0.0
    for i in range(n):
        acc = acc + x[i]
    return y / acc


def empty_sum_div(x, y):
    s = sum(x[x > 10.0])
    return y / s


def join_math_sqrt(x, flag):
    v = float(x[0]) if flag else x[1]
    return math.sqrt(v)


def join_np_sqrt(x, flag):
    v = float(x[0]) if flag else x[1]
    return np.sqrt(v) + v


def join_mod(x, y, flag):
    v = y * 0.0 if flag else x[1] * 0.0
    return x[0] % v + y // (v + 1.0)


def while_div(x, y, n):
    acc = 0.0
    i = 0
    while i < n:
        acc = acc + x[i]
        i = i + 1
    return y / acc


def while_pow(x, n):
    acc = 0.0
    i = 0
    while i < n:
        acc = acc - x[i]
        i = i + 1
    return (acc - 1.0) ** 0.5 + x[0]


def loop_pow_range2(x, m, n):
    acc = 0.0
    for i in range(m, n):
        acc = acc - x[i]
    return (acc - 1.0) ** 0.5 + x[0]


def join_div_numpy_numerator(x, flag):
    v = x[2] * 0.0 if flag else float(x[0]) * 0.0
    return (x[1] + 1.0) / v + np.sin(v)


def join_mod_numpy(x, flag):
    v = float(x[0]) if flag else x[0]
    return x[2] % v + x[2] // (v + 0.5) + v % 1.5


def join_math_log(x, flag):
    v = float(x[0]) if flag else x[0]
    return math.log(v + 1.0) + np.log(v) * 0.0


def max_pick(x):
    v = max(x[0], 0.25) - 1.0
    return v ** 0.5 + x[1]


def row_sums(x):
    v = sum(x[x > 10.0]) * 1.5 - 1.0
    return abs(v) ** 0.5 + v / (v + 1.0)


def join_numpy_then_pow(x, flag):
    v = float(x[0]) if flag else x[1]
    return np.sin(v) ** 0.5 + np.float64(v) ** 0.5


_ZERO, _NEG, _POS = np.array([0.0, 0.0, 1.0]), np.array([-4.0, -9.0, 1.0]), np.array([4.0, 9.0, 1.0])
_X = np.array([0.0, 2.0, 1.0])
_JOINS = [(join_pow, (_NEG, True)), (join_pow, (_NEG, False)), (join_pow, (_POS, True)),
          (join_pow_tail, (_NEG, True)), (join_pow_tail, (_NEG, False)), (join_pow_tail, (_POS, True)),
          (loop_pow, (_NEG, 0)), (loop_pow, (_NEG, 1)), (loop_pow, (_POS, 2)), (empty_sum_pow, (_NEG,)),
          (join_div, (_ZERO, True)), (join_div, (_ZERO, False)), (join_div_py, (_ZERO, 2.0, True)),
          (join_div_py, (_ZERO, 2.0, False)), (loop_div, (_ZERO, 2.0, 0)), (loop_div, (_ZERO, 2.0, 1)),
          (loop_div, (_POS, 2.0, 2)), (empty_sum_div, (_POS, 2.0)), (join_math_sqrt, (_NEG, True)),
          (join_math_sqrt, (_NEG, False)), (join_np_sqrt, (_NEG, True)), (join_np_sqrt, (_POS, False)),
          (join_mod, (_ZERO, 2.0, True)), (join_mod, (_ZERO, 2.0, False)), (while_div, (_X, 2.0, 0)),
          (while_div, (_X, 2.0, 1)), (while_div, (_X, 2.0, 3)), (while_pow, (_X, 0)), (while_pow, (_X, 2)),
          (loop_pow_range2, (_X, 2, 1)), (loop_pow_range2, (_X, 0, 2)), (loop_pow_range2, (-_X, 0, 3)),
          (join_div_numpy_numerator, (_ZERO, True)), (join_div_numpy_numerator, (_ZERO, False)),
          (join_mod_numpy, (_ZERO, True)), (join_mod_numpy, (_ZERO, False)), (join_mod_numpy, (_POS, True)),
          (join_math_log, (_ZERO, True)), (join_math_log, (_ZERO, False)), (join_math_log, (_NEG, True)),
          (max_pick, (_NEG,)), (max_pick, (_POS,)), (row_sums, (_POS,)), (row_sums, (_POS * 10.0 + 1.0,)),
          (join_numpy_then_pow, (_NEG, True)), (join_numpy_then_pow, (_NEG, False)), (join_numpy_then_pow, (_POS, True))]


def _outcome(thunk):
    try:
        return "value", _quiet(thunk)
    except astad.AstadError as e:
        assert not isinstance(e, astad.InternalError), e
        return "refused", e
    except Exception as e:  # noqa: BLE001 - what plain Python raises, compared by class
        return "raised", type(e)


@pytest.mark.parametrize("fn,args", _JOINS)
def test_a_join_of_a_python_float_and_a_numpy_float_matches_python_or_is_refused(fn, args):
    kind, want = _outcome(lambda: fn(*args))
    floats = tuple(i for i, a in enumerate(args) if isinstance(a, np.ndarray) or type(a) is float)
    for mode in ("grad", "jvp"):
        if mode == "grad":
            got_kind, got = _outcome(lambda: astad.value_and_grad(fn, argnums=floats)(*args))
        else:
            tangents = tuple(np.ones_like(a) if isinstance(a, np.ndarray) else (1.0 if type(a) is float else None)
                             for a in args)
            got_kind, got = _outcome(lambda: astad.jvp(fn, args, tangents))
        if got_kind == "refused":
            assert kind == "value" and isinstance(want, complex) or kind == "raised", (mode, want, got)
            continue
        assert got_kind == kind, (mode, want, got)
        if kind == "raised":
            assert got is want, (mode, want, got)
            continue
        value = got[0]
        assert type(value) is type(want), (mode, type(value), type(want))
        assert value == want or (np.isnan(want) and np.isnan(value)), (mode, value, want)
    if kind == "value" and isinstance(want, (float, np.floating)) and np.isfinite(want):  # the gradient where smooth: central differences
        g = _quiet(lambda: astad.grad(fn, argnums=0)(*args))
        fd = central_differences(lambda x: fn(x, *args[1:]), args[0])
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_the_type_says_a_numpy_scalar_may_be_a_python_number():
    """``Num.weak``: set by a join of a Python float and an np.float64, by ``max``/``min`` of them and by a sum that
    may be its Python start; kept by what Python numbers make of it (``* 2.0``, ``abs``, ``- 1``), dropped by numpy's
    functions and ``np.float64(...)`` (a numpy scalar whatever it reads).  The power rule asks it: a numpy float's
    power needs no run-time test (``np.float64(v) ** 0.5``, ``np.sin(v) ** 0.5``), a weak one's does."""
    from astad import rules
    from astad.ir import ListT, Num
    weak, f64, py = Num((), "float64", weak=True), Num((), "float64"), Num((), "float64", py=True)
    assert rules.infer("mul", [weak, py], {}).weak and rules.infer("sub", [py, weak], {}).weak
    assert rules.infer("py_abs", [weak], {}).weak and rules.infer("neg", [weak], {}).weak
    assert not rules.infer("sin", [weak], {}).weak and not rules.infer("mul", [weak, f64], {}).weak
    assert not rules.infer("mul", [f64, py], {}).weak
    assert rules.infer("py_max", [f64, py], {}).weak and not rules.infer("py_max", [f64, f64], {}).weak
    assert rules.infer("py_sum_rows", [Num((None,), "float64")], {}).weak
    assert not rules.infer("py_sum_rows", [Num((3,), "float64")], {}).weak  # (three rows: never the start alone)
    assert rules.infer("py_sum", [ListT(f64)], {}).weak
    source = astad.reverse(join_numpy_then_pow).source_for(_POS, True)
    assert "complex_power(" not in source
    assert "complex_power(" in astad.reverse(join_pow).source_for(_POS, True)
