"""Adversarial checks, session 11 (s11-adv2): a second round on what session 11 merged (api_parts'
Jacobians of Jacobians, slices of run-time lists, ``~``, row unpacking, repeated lists, ``list(x)``,
reductions of lists, the speed changes).  No wrong value or derivative was found; these pin the
strongest probes against independent oracles (central differences in float64, plain Python's values
and side effects, forward against reverse)."""

import copy

import numpy as np
import pytest

import astad


def _fd(f, x, h=1e-6):
    x = np.asarray(x, float)
    y0 = np.asarray(f(x.copy()))
    J = np.zeros(y0.shape + x.shape)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        J[(Ellipsis,) + i] = (np.asarray(f(xp)) - np.asarray(f(xm))) / (2 * h)
    return J


def runtime_slices(x):
    ys = []
    v = x[0]
    while v < 3.0:  # a length known only when running
        ys.append(v * x[1])
        v = v + 0.5
    s = 0.0
    for i, y in enumerate(ys[::-2]):
        s = s + y * (i + 1.0)
    zs = ys[-1::-3]
    return s + sum(zs) * len(zs) + sum(ys[1:100]) + sum(ys[-100:2]) * 2.0


def slices_of_slices(x):
    ys = [v * 1.5 for v in x]
    zs = ys[::-1][1:3]
    ws = ys[1:]
    ws.append(x[0])
    return zs[0] * zs[1] + sum(ws) * len(ys)


def repeated_then_rebound(x):
    acc = [x * 0.0] * 2
    acc[0] = acc[0] + x
    acc[1] = acc[1] * 2.0
    base = [x[0], x[1] * 2.0]
    ys = base * 2
    ys[0] = ys[0] * 3.0
    a, b, c, d = (x[0], x[1]) * 2
    return np.sum(acc[0] * acc[1]) + np.sum(acc[0]) + ys[0] * ys[2] + base[0] + a * b + c * d * c


def rows_and_lists(x):
    y = x[:4] * 1.0
    rows = list(y)  # numpy scalars: an update of y after does not change them
    y[0] = 7.0 * x[1]
    m = x.reshape(3, 2) * 1.0
    s = 0.0
    for i, (a, b) in enumerate(reversed(m)):
        s = s + a * b * (i + 1)
    l1 = [x[0], x[1]]
    l2 = list(l1)
    l2[0] = x[2] * 5.0
    return rows[0] * x[2] + y[0] + s + l1[0] * l2[0] + np.sum(sum(list(m)) ** 2)


def generated_names(x):
    t1 = x * 2.0
    t2 = t1 * x
    t12 = np.sin(t2)
    v_ct = t12 * t1
    x_ct = v_ct + x
    x_1_ct = x_ct * x_ct
    t3 = x_1_ct
    ys = [t3 * (k + 1.0) for k in range(3)]
    out_ct = ys[::-1]
    return np.sum(t3 * t12 + v_ct) + np.sum(out_ct[0] * t1)


def inverted(x):
    m = x > 0.5
    k = 3
    return np.sum(x[~m] ** 2) + np.sum(np.where(~m, x, 2.0 * x)) + x[~k] * x[~0] + np.sum(x * ~m)


PROGRAMS = [runtime_slices, slices_of_slices, repeated_then_rebound, rows_and_lists, generated_names, inverted]
X = np.array([0.7, -0.4, 1.3, 0.2, 0.9, 0.4])


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_values_gradients_and_hessians_against_python_and_differences(f):
    x1, x2 = X.copy(), X.copy()
    want = f(x1)
    value, g = astad.value_and_grad(f)(x2)
    np.testing.assert_allclose(value, want, rtol=1e-12)
    np.testing.assert_array_equal(x1, x2)  # the same side effects on the argument (none)
    np.testing.assert_allclose(g, _fd(f, X), atol=1e-5)
    v = np.random.RandomState(0).randn(*X.shape)
    _, jv = astad.jvp(f, (X.copy(),), (v,))
    np.testing.assert_allclose(jv, np.dot(g, v), atol=1e-10)  # <J v> == <J^T 1, v>
    H = _fd(lambda z: astad.grad(f)(z), X)
    for second in (astad.hessian(f), astad.jacfwd(astad.grad(f)), astad.jacrev(astad.grad(f))):
        np.testing.assert_allclose(second(X.copy()), H, atol=1e-4)


def _cubic(x, *, k):
    return np.sum(np.sin(x * k)) * x[0] + (x[1] ** 3 if k > 2.5 else x[1] ** 2)


@pytest.mark.parametrize("k", [2.0, 3.0])
def test_third_derivatives_with_a_keyword_in_both_orders(k):
    x = np.array([0.7, -0.4, 1.3])
    want = _fd(lambda z: astad.hessian(_cubic)(z, k=k), x)
    np.testing.assert_allclose(astad.jacrev(astad.hessian(_cubic))(x, k=k), want, atol=1e-4)
    np.testing.assert_allclose(astad.jacfwd(astad.jacfwd(astad.jacfwd(_cubic)))(x, k=k), want, atol=1e-4)


def _vec(x):
    return np.sin(x) * np.sum(x * x)


def test_one_nested_jacobian_object_at_several_shapes():
    J = astad.jacfwd(astad.jacfwd(_vec))
    for x in (np.array([0.7, -0.4, 1.3]), np.array([0.7, -0.4]), np.array([[0.7], [-0.4], [1.3]]), np.array([1.4, 0.2, 0.1])):
        np.testing.assert_allclose(J(x), _fd(lambda z: astad.jacfwd(_vec)(z), x), atol=1e-4)
