"""Forward mode and derivatives of derivatives, attacked (issue 10, items 1, 3, 6).

Each test is an attack an adversary would try: names that look generated,
globals changed between the call and the pushforward, aliases between primals,
tangents and results, tangents of the wrong dtype or structure, deep nesting,
long programs, huge loops, threads.  Each either gives the derivative of an
independent oracle (central finite differences in float64, reverse mode) or is
refused with astad's own error, naming the parameter.
"""

from __future__ import annotations

import threading
import tracemalloc

import numpy as np
import pytest

import astad
from astad.errors import AstadError, AstadTypeError
from conftest import load_program

EPS = 1e-6


def fd(f, args, i, t=1.0, eps=EPS):
    """Central finite difference of ``f`` at ``args`` along ``t`` in argument ``i``."""
    up, down = list(args), list(args)
    up[i] = args[i] + eps * t
    down[i] = args[i] - eps * t
    return (np.asarray(f(*up)) - np.asarray(f(*down))) / (2 * eps)


def fd_hessian(f, args):
    """The Hessian of a function of scalars: central differences of its reverse-mode gradient."""
    n = len(args)
    grad = astad.grad(f, argnums=tuple(range(n)))
    return np.stack([fd(lambda *a: np.array(grad(*a), float), args, i, eps=1e-5) for i in range(n)], 1)


# --------------------------------------------------------------------------- names that look generated

scaled_jvp = 3.0
scaled_forward = 2.0


def scaled(x):
    return x * x * scaled_jvp * scaled_forward


def test_a_constant_named_like_the_generated_function():
    """Was: the generated ``scaled_jvp`` replaced the module constant ``scaled_jvp``
    it reads (TypeError: float * function)."""
    assert astad.jvp(scaled, (2.0,), (1.0,)) == pytest.approx((24.0, 24.0))
    value, pushforward = astad.forward(scaled)(2.0)
    assert pushforward(1.0) == pytest.approx(24.0)
    assert astad.hessian(scaled)(2.0) == pytest.approx(12.0)
    assert astad.grad(astad.grad(scaled))(2.0) == pytest.approx(12.0)


def unused_ct(nothing, no_ct):
    ct = nothing * no_ct
    ct1 = np.sin(ct) * nothing
    return ct1 * no_ct


def test_parameters_named_like_the_pipelines_own():
    """Was: forward over reverse passed None for the unused cotangent under the name
    ``no_ct``, which shadowed the user's parameter ``no_ct`` (TypeError in hessian,
    grad(grad), jacfwd(jacrev))."""
    args = (0.7, 1.3)
    want = fd_hessian(unused_ct, args)
    assert np.allclose(np.array(astad.hessian(unused_ct, argnums=(0, 1))(*args), float), want, atol=1e-6)
    assert astad.grad(astad.grad(unused_ct))(*args) == pytest.approx(want[0, 0], abs=1e-6)
    jj = astad.jacfwd(astad.jacrev(unused_ct, argnums=(0, 1)), argnums=(0, 1))(*args)
    assert np.allclose(np.array(jj, float), want, atol=1e-6)


def lookalikes(x, x_t, t1):
    x_t_t = x * x_t
    t3 = np.sin(x_t_t) + t1
    out_t = t3 * x
    for i in range(3):
        x_t_t = x_t_t * t1 + np.cos(out_t)
        out_t = out_t + x_t_t
    return out_t + x_t


def test_names_that_look_generated_forward_and_second_order():
    args = (0.4, 0.9, 0.3)
    for i in range(3):
        tangents = tuple(1.0 if j == i else 0.0 for j in range(3))
        assert astad.jvp(lookalikes, args, tangents)[1] == pytest.approx(fd(lookalikes, args, i), rel=1e-6)
    assert np.allclose(np.array(astad.hessian(lookalikes, argnums=(0, 1, 2))(*args), float),
                       fd_hessian(lookalikes, args), atol=1e-5)


# --------------------------------------------------------------------------- globals and the pushforward

K = 2.0
W = np.array([1.0, 2.0])


def reads_k(x):
    return K * x * x


def reads_w(x):
    return np.sum(W * x * x)


def test_a_pushforward_refuses_a_global_rebound_since_the_call():
    """Was: the pushforward differentiated the function with the new global (15.0 for 9.0)."""
    global K
    K = 3.0
    try:
        value, pushforward = astad.forward(reads_k)(1.5)
        assert pushforward(1.0) == pytest.approx(9.0)
        K = 5.0
        with pytest.raises(AstadError, match="global K that reads_k reads changed"):
            pushforward(1.0)
        assert astad.jvp(reads_k, (1.5,), (1.0,))[1] == pytest.approx(15.0)  # a new call sees the new K
        assert astad.hessian(reads_k)(1.5) == pytest.approx(10.0)
    finally:
        K = 2.0


def test_a_pushforward_refuses_a_global_array_changed_in_place():
    value, pushforward = astad.forward(reads_w)(np.ones(2))
    try:
        W[:] = 10.0
        with pytest.raises(AstadError, match="global W"):
            pushforward(np.ones(2))
    finally:
        W[:] = [1.0, 2.0]
    assert pushforward(np.ones(2)) == pytest.approx(6.0)  # the same values again: allowed


# --------------------------------------------------------------------------- aliases

def square(x):
    return x * x


def first(x, y):
    return x


def product(x, y):
    return x * y


def test_the_pushforward_uses_the_arguments_at_call_time():
    x = np.array([1.0, 2.0])
    value, pushforward = astad.forward(square)(x)
    x[:] = 10.0
    assert np.allclose(pushforward(np.ones(2)), [2.0, 4.0])


def test_tangents_aliased_with_primals_and_each_other():
    x, t = np.array([3.0, 4.0]), np.array([1.0, 2.0])
    y = np.array([5.0, 6.0])
    assert np.allclose(astad.jvp(product, (x, y), (t, t))[1], t * y + x * t)
    assert np.allclose(astad.jvp(product, (x, x), (x, x))[1], 2 * x * x)
    value, pushforward = astad.forward(product)(x, x)
    assert np.allclose(pushforward(x, x), 2 * x * x)
    assert np.allclose(x, [3.0, 4.0])


def test_a_returned_tangent_is_an_array_of_its_own():
    x, tx = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    value, tangent = astad.jvp(first, (x, x), (tx, tx))
    tangent[:] = 99.0
    assert np.allclose(tx, [3.0, 4.0])
    value, pushforward = astad.forward(first)(x, x)
    pushforward(tx, tx)[:] = 5.0
    assert np.allclose(pushforward(tx, None), [3.0, 4.0])
    hv = astad.hvp(lambda_free_quadratic, (x,), (tx,))[0]  # H v = v: not v itself
    hv[:] = 0.0
    assert np.allclose(tx, [3.0, 4.0])


def lambda_free_quadratic(x):
    return 0.5 * np.sum(x * x)


# --------------------------------------------------------------------------- bad tangents

def of_dict(d):
    return d["a"] * d["b"]


def of_nested(d):
    return d["a"][0] * d["a"][1]


@pytest.mark.parametrize("tangent", [
    {"a": 1.0, "b": 2.0, "c": 1.0},  # was accepted: the extra key was ignored
    {"a": 1.0, "c": 2.0},
    {"a": 1.0},
])
def test_a_dict_tangent_with_other_keys_is_refused(tangent):
    with pytest.raises(AstadTypeError, match="argument `d` of of_dict"):
        astad.jvp(of_dict, ({"a": 1.0, "b": 2.0},), (tangent,))


def test_a_nested_container_of_another_length_is_refused():
    with pytest.raises(AstadTypeError, match="argument `d` of of_nested"):  # was accepted
        astad.jvp(of_nested, ({"a": [1.0, 2.0]},), ({"a": [1.0, 0.0, 5.0]},))
    assert astad.jvp(of_dict, ({"a": 1.0, "b": 2.0},), ({"b": 1.0, "a": 0.0},))[1] == 1.0  # key order is free


def big_slope(x):
    return x * x + 1e9 * x


@pytest.mark.parametrize("primal, tangent", [
    (1.0, np.float32(1.0)),  # was: the tangent 1e9 (float32) for 1000000002
    (1.0, np.float16(1.0)),  # was: inf
    (np.array(1.0), np.array(1.0, np.float32)),
    (np.array(1.0, np.float32), np.array(1.0)),
    (np.ones(2), np.ones(2, np.float32)),
    (1.0, 1), (1.0, True), (1.0, 1j), (np.ones(2), np.ones(2, complex)),
])
def test_a_tangent_of_another_dtype_is_refused(primal, tangent):
    with pytest.raises(AstadTypeError, match="argument `x` of big_slope"):
        astad.jvp(big_slope, (primal,), (tangent,))


def test_a_python_float_tangent_takes_the_arguments_dtype():
    value, tangent = astad.jvp(big_slope, (1.0,), (np.float64(1.0),))
    assert tangent == 1000000002.0
    assert astad.jvp(square, (np.float32(2.0),), (1.0,))[1] == 4.0


@pytest.mark.parametrize("tangent", [(1.0,), [1.0, 0.0], (1.0, 0.0, 0.0)])
def test_a_tuple_tangent_of_another_structure_is_refused(tangent):
    with pytest.raises(AstadTypeError, match="argument `p`"):
        astad.jvp(pair_product, ((1.0, 2.0),), (tangent,))


def pair_product(p):
    return p[0] * p[1]


def test_nan_inf_and_empty():
    assert np.isnan(astad.jvp(square, (2.0,), (np.nan,))[1])
    assert astad.jvp(square, (np.inf,), (1.0,))[1] == np.inf
    assert astad.jvp(lambda_free_quadratic, (np.ones(0),), (np.ones(0),))[1] == 0.0
    with pytest.raises(AstadTypeError, match="shape"):
        astad.jvp(lambda_free_quadratic, (np.ones(0),), (np.ones(1),))


# --------------------------------------------------------------------------- size and depth

def _nested_ifs(n):
    lines = ["def deep(x):", "    y = x"]
    for i in range(n):
        lines.append("    " * (i + 1) + f"if x > {-i - 1}.0:")
        lines.append("    " * (i + 2) + f"y = y * 1.01 + {i % 5}.0 * x * x")
    return "\n".join(lines) + "\n    return y\n"


def test_deep_nesting_and_long_programs(tmp_path):
    deep = load_program(_nested_ifs(90), tmp_path, "deep").deep
    assert astad.jvp(deep, (0.5,), (1.0,))[1] == pytest.approx(fd(deep, (0.5,), 0), rel=1e-6)
    assert astad.grad(astad.grad(deep))(0.5) == pytest.approx(fd(astad.grad(deep), (0.5,), 0, eps=1e-5), rel=1e-5)
    body = "".join(f"    y = np.sin(y) * 0.5 + x * {i % 7}.0 * 0.01\n" for i in range(500))
    long = load_program(f"import numpy as np\n\ndef long(x):\n    y = x\n{body}    return y\n", tmp_path, "long").long
    assert astad.jvp(long, (0.3,), (1.0,))[1] == pytest.approx(fd(long, (0.3,), 0), rel=1e-6)


def huge(x, n):
    y = x
    for i in range(n):
        y = y * 0.999999 + 1e-6 * np.sin(y)
    return y


def test_forward_mode_memory_is_constant_in_the_iterations():
    value, pushforward = astad.forward(huge)(0.3, 10)
    pushforward(1.0, None)
    peaks = []
    for n in (10 ** 3, 2 * 10 ** 5):
        value, pushforward = astad.forward(huge)(0.3, n)
        tracemalloc.start()
        pushforward(1.0, None)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < peaks[0] + 10_000, peaks


def grad4_loop(x):
    y = x
    for i in range(3):
        y = np.sin(y) * x
    return y


def test_fourth_derivative_of_a_loop():
    g3 = astad.grad(astad.grad(astad.grad(grad4_loop)))
    g4 = astad.grad(g3)
    assert g4(0.6) == pytest.approx(fd(g3, (0.6,), 0, eps=1e-4), rel=1e-5)


def while_vector(x):
    y = x
    k = 0
    while k < 3:
        y = np.sin(y) * x[::-1] + y
        k = k + 1
    return y


def test_jacfwd_of_jacrev_of_a_while_loop():
    x = np.array([0.3, 0.5, 0.9])
    want = np.stack([fd(astad.jacrev(while_vector), (x,), 0, np.eye(3)[i], eps=1e-5) for i in range(3)], -1)
    assert np.allclose(astad.jacfwd(astad.jacrev(while_vector))(x), want, atol=1e-6)
    assert np.allclose(astad.jacrev(astad.jacfwd(while_vector))(x), want, atol=1e-6)


# --------------------------------------------------------------------------- threads

def sin_dot(x):
    return np.sum(np.sin(x) * x)


def cos_dot(x):
    return np.sum(np.cos(x) * x * x)


def test_threads_compute_jvps_and_hessians_at_once():
    xs = [np.linspace(0.0, 1.0, 4) + i for i in range(4)]
    fns = (sin_dot, cos_dot)
    want = {(f, i): (astad.jvp(f, (x,), (np.ones(4),))[1], astad.hessian(f)(x)) for f in fns for i, x in enumerate(xs)}
    errors, got = [], []

    def work(k):
        try:
            for f in (fns if k % 2 else fns[::-1]):
                for i, x in enumerate(xs):
                    got.append(((f, i), astad.jvp(f, (x,), (np.ones(4),))[1], astad.hessian(f)(x)))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(got) == 4 * 2 * 4
    for key, jv, h in got:
        assert np.allclose(jv, want[key][0]) and np.allclose(h, want[key][1])


def test_a_pushforward_refuses_keywords():
    value, pushforward = astad.forward(square)(2.0)
    with pytest.raises(AstadTypeError, match="by position"):  # was Python's own TypeError
        pushforward(x=1.0)


class _ZeroTimes(np.ndarray):
    def __mul__(self, other):
        return np.asarray(self) * 0.0

    __rmul__ = __mul__


class _MyFloat(float):
    pass


def cube_sum(x):
    return np.sum(x * x * x)


@pytest.mark.parametrize("make", [
    np.matrix,  # was: x * t a matrix product (the tangent [7, 9, 11, 13] for [2, 4, 6, 8])
    lambda a: np.ma.masked_array(a, mask=[[1, 0], [0, 0]]),  # was: the masked entry's tangent 1 for 2
    lambda a: a.view(_ZeroTimes),  # was: the tangent 0
])
def test_a_tangent_of_an_ndarray_subclass_is_refused(make):
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    t = make(np.ones((2, 2)))
    for call in (lambda: astad.jvp(square, (x,), (t,)), lambda: astad.forward(square)(x)[1](t),
                 lambda: astad.hvp(cube_sum, (x,), (t,)), lambda: astad.grad(cube_sum).jvp((x,), (t,))):
        with pytest.raises(AstadTypeError, match="tangent of argument `x` .* a subclass of ndarray"):
            call()


def test_a_tangent_of_a_float_subclass_is_refused():
    with pytest.raises(AstadTypeError, match="a subclass of float"):
        astad.jvp(square, (2.0,), (_MyFloat(1.0),))
    assert astad.jvp(square, (2.0,), (np.float64(1.0),))[1] == 4.0


# --------------------------------------------------------------------------- a function's code replaced

def _code_square(x):
    return x * x


def _code_cube(x):
    return x * x * x


def test_a_function_whose_code_was_replaced():
    """Was: astad kept the derivative of the old code (grad 4.0, jvp (4.0, 4.0)
    where Python's f(2) is 8 and f'(2) 12), in reverse and forward mode."""
    import types

    f = types.FunctionType(_code_square.__code__, globals(), "f")
    x = 2.0
    held = [astad.forward(f), astad.grad(f), astad.hessian(f), astad.jacfwd(f), astad.jacrev(f)]
    value, pushforward = held[0](x)
    for h in held[1:]:
        h(x)
    f.__code__ = _code_cube.__code__
    assert astad.grad(f)(x) == pytest.approx(12.0)
    assert astad.jvp(f, (x,), (1.0,)) == pytest.approx((8.0, 12.0))
    assert astad.forward(f)(x)[1](1.0) == pytest.approx(12.0)
    assert astad.hessian(f)(x) == pytest.approx(12.0)
    assert astad.grad(astad.grad(f))(x) == pytest.approx(12.0)
    # the objects made before: the derivative of the new code, or refused
    for call, want in [(lambda: pushforward(1.0), 12.0), (lambda: held[0](x)[1](1.0), 12.0)] + \
            [(lambda h=h: h(x), w) for h, w in zip(held[1:], (12.0, 12.0, 12.0, 12.0))]:
        try:
            got = call()
        except AstadError as e:
            assert "was replaced" in str(e)
        else:
            assert got == pytest.approx(want)
