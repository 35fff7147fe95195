"""Session 13 round 2 (adv2): attacks on the round's changes; none found a wrong result, these keep them.

* fast.py/core.emit (cbcf914): an assignment's binary operation named when bound: user names shaped like
  temporaries or astad's suffixes, names reassigned and read in their own assignment, parameters
  reassigned, folds, powers that may be complex, refusals in the middle (same IR, names and errors as the
  general lowering; derivatives against central differences);
* rules/linalg (6369492): matmul's result type cached by operand type ids (many shapes past the cache's
  clearing, 1-d/2-d/batched, dtypes, errors on a repeat, threads, hessians, forward mode);
* optimise/cse (5e1828a): repeated subexpressions whose arguments are renamed by earlier hits, constants
  keyed by type and sign;
* ad/activity (d089685): several targets (decompositions, a user function's tuple), inactive and integer
  values, values active in one branch only."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import astad
from conftest import check_grad
from test_frontend_s12 import _lowering, _program

X = np.linspace(-0.9, 0.8, 4)
W = np.linspace(-0.5, 0.7, 16).reshape(4, 4)
ARGS = [X, W, 1.5, 3]


@pytest.mark.parametrize("body", [
    ["t2_ct = x * s", "ct = t2_ct * t2_ct", "d_t1 = ct - x", "return np.sum(d_t1 * ct) + s"],
    ["t1_1 = x * 2", "t1 = t1_1 * x", "t1_1 = t1 + t1_1", "return np.sum(t1_1 * t1) + s"],
    ["x = x * 2", "x = x * x", "s = s * s", "return np.sum(x * x) + s"],
    ["a = x", "b = a * a", "a = b * a", "b = a", "return np.sum(a * b) + s"],
    ["c = 2.0 * 3.0", "k = n * n", "a = x * k", "b = a ** n", "return np.sum(a * b) + c"],
    ["a = s ** 0.5", "b = (s * s) ** 1.5", "k = x * a", "return np.sum(k * x) + b"],
    ["a = n // 2", "b = n % 2 * x", "c = True + x", "return np.sum(b * c) + a * s"],
    ["np_ = x @ W", "a_1 = W @ np_", "a = a_1 @ a_1", "return np.sum(np_ * a_1) + a"],
    ["a = x * s", "b = a @ s", "c = a * a", "return np.sum(c)"],  # refused in the middle
    ["a = x * s", "b = x + (1, 2)", "return np.sum(b)"],  # declined in the middle
    ["a = x * s", "b = np.sum([a, x])", "c = a * b", "return np.sum(c)"],
    ["a = x * s", "b = (-2.0) ** 0.5", "return np.sum(a) * b"],  # refused where it is
])
def test_names_given_when_bound(tmp_path, body):
    f = _program(tmp_path, body, params="x, W, s=1.5, n=3")
    straight, _ = _lowering(f, ARGS, True)
    general, _ = _lowering(f, ARGS, False)
    assert straight == general
    if straight[0] != "error":
        check_grad(f, ARGS)


def _mm(A, B):
    C = A @ B
    D = C @ np.swapaxes(C, -1, -2) if C.ndim >= 2 else C * C
    return np.sum(np.tanh(D))


def test_matmul_types_past_the_cache_clearing_and_in_threads():
    from astad.ir.types import Num
    from astad.rules import linalg
    rng = np.random.default_rng(0)
    shapes = [((3,), (3, 4)), ((4, 3), (3,)), ((5,), (5,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 2)),
              ((1, 3, 4), (2, 4, 2)), ((2, 3), (3, 2))]
    for sa, sb in shapes:
        check_grad(_mm, [rng.standard_normal(sa), rng.standard_normal(sb)])
    for i in range(4200):  # (past 4096: the cache cleared)
        t = linalg._matmul_infer([Num((i % 7 + 1, 3), "float64"), Num((3, i % 11 + 1), "float64")], {})
        assert t == Num((i % 7 + 1, i % 11 + 1), "float64")
    astad.clear_caches()
    for sa, sb in shapes:
        check_grad(_mm, [rng.standard_normal(sa), rng.standard_normal(sb)])
    errors = []

    def worker(i):
        r = np.random.default_rng(i)
        try:
            for j in range(4):
                m, k, n = (i + j) % 4 + 1, (i * j) % 3 + 1, j % 5 + 1
                A, B = r.standard_normal((m, k)), r.standard_normal((k, n))
                g = astad.grad(_mm)(A, B)
                E = np.zeros_like(A)
                E[-1, 0] = 1e-6
                fd = (_mm(A + E, B) - _mm(A - E, B)) / 2e-6
                if abs(fd - g[-1, 0]) > 1e-5 * (1 + abs(fd)):
                    errors.append((i, j, fd, g[-1, 0]))
        except Exception as e:  # pragma: no cover (reported)
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("da, db", [("float32", "float64"), ("int64", "float64"), ("float32", "float32"),
                                    ("float64", "int32")])
def test_matmul_dtypes(da, db):
    rng = np.random.default_rng(1)
    A = (rng.standard_normal((3, 4)) * 3).astype(da)
    B = (rng.standard_normal((4, 2)) * 3).astype(db)

    def g(A, B):
        return np.sum(np.sin(A @ B))

    value, pullback = astad.reverse(g)(A, B)
    assert np.asarray(value).dtype == np.asarray(g(A, B)).dtype
    cts = pullback(1.0)
    for a, ct in zip((A, B), cts):
        assert (ct is None) == (a.dtype.kind == "i")
        if ct is not None:
            assert ct.dtype == a.dtype and ct.shape == a.shape
    if da == db == "float32":
        return
    check_grad(g, [A.astype(np.float64) if da != "int64" else A, B.astype(np.float64) if db != "int32" else B])


def test_matmul_refusals_repeat():
    for _ in range(2):
        with pytest.raises(astad.AstadError, match="not aligned"):
            astad.grad(_mm)(np.ones((3, 4)), np.ones((3, 4)))
        with pytest.raises(astad.AstadError, match="at least one dimension"):
            astad.grad(lambda x, s: np.sum(x @ s))(np.ones(3), 2.0)


def test_matmul_hessian_and_forward():
    rng = np.random.default_rng(2)
    x, M = rng.standard_normal(4), rng.standard_normal((4, 4))

    def q(x, M):
        y = M @ x
        return np.sum(np.sin(y) * (x @ M))

    H = astad.hessian(q)(x, M)
    g = astad.grad(q)
    Hfd = np.stack([(g(x + 1e-5 * e, M) - g(x - 1e-5 * e, M)) / 2e-5 for e in np.eye(4)])
    np.testing.assert_allclose(H, Hfd, atol=1e-7)
    np.testing.assert_allclose(astad.jacfwd(q)(x, M), g(x, M), atol=1e-12)


def _pair(v):
    return v * 2.0, np.int64(3), v.sum()


def p_eigh_values(A, x):
    w, V = np.linalg.eigh(A)
    return np.sum(w * w) + np.sum(x)


def p_eigh_both(A, x):
    w, V = np.linalg.eigh(A)
    return np.sum((V @ x) ** 2 * w)


def p_slogdet(A, x):
    sign, ld = np.linalg.slogdet(A)
    return sign * ld + np.sum(x * x)


def p_qr(A, x):
    Q, R = np.linalg.qr(A)
    return np.sum(np.abs(np.diag(R))) + np.sum(Q @ x * 0.0)


def p_user_tuple(A, x):
    a, n, s = _pair(x)
    b = a * n
    return np.sum(b) + s * n


def p_branch(A, x, flag=True):
    if flag:
        y = x * 2.0
    else:
        y = np.ones(4)
    return np.sum(y * x)


def p_loop_branch(A, x):
    y = np.ones(4)
    for i in range(3):
        if i == 1:
            y = y * x
    return np.sum(y * A[0])


def p_integers(A, x):
    k = x.shape[0] * 2
    i = np.argmax(x)
    return np.sum(x * k) + x[i] * k


def p_cse_renamed(A, x):
    a = x * x
    b = x * x
    c = a + b
    d = b + a
    e = a + a
    f = c * d
    h = np.sin(a) * np.sin(b) + np.sin(c) * np.sin(d)
    return np.sum(f * e + h + x * A[0] + A[0] * x)


def p_cse_loop(A, x):
    t = 0.0
    for i in range(3):
        a = x * x
        b = x * x
        t = t + np.sum(a * b) + np.sum(b * a)
        if i > 0:
            t = t + np.sum(np.exp(x * x))
    return t


def p_svd(A, x):
    U, s, Vt = np.linalg.svd(A)
    return np.sum(s) + np.sum(x)


def p_eigh_twice(A, x):
    w, V = np.linalg.eigh(A)
    w2, V2 = np.linalg.eigh(A)
    return np.sum(w * w2) + np.sum(V[:, 0] ** 2 * V2[:, 0] ** 2 * x)


@pytest.mark.parametrize("p", [p_eigh_values, p_eigh_both, p_slogdet, p_qr, p_user_tuple, p_branch, p_loop_branch,
                               p_integers, p_cse_renamed, p_cse_loop, p_svd, p_eigh_twice])
def test_several_targets_inactive_values_and_shared_subexpressions(p):
    rng = np.random.default_rng(1)
    A0 = rng.standard_normal((4, 4))
    S, x = A0 @ A0.T + 4 * np.eye(4), rng.standard_normal(4)
    check_grad(p, [S, x])
    T, u = rng.standard_normal((4, 4)), rng.standard_normal(4)
    T = T + T.T
    _, pullback = astad.reverse(p)(S, x)
    gA, gx = pullback(1.0)
    _, tangent = astad.jvp(p, (S, x), (T, u))
    np.testing.assert_allclose(tangent, np.sum(gA * T) + gx @ u, rtol=1e-8, atol=1e-10)


def test_cse_keys_constants_by_type_and_sign():
    def f(x, xi):
        a = 1.0 / (x * 0.0)
        b = 1.0 / (x * -0.0)
        c, d = xi * 2, xi * 2.0
        e, g = xi + True, xi + 1
        h, k = xi // 2, xi / 2
        return (np.sum(np.sign(a) * x) + 2 * np.sum(np.sign(b) * x) + np.sum(x * c) + np.sum(x * d)
                + np.sum(e * x) + np.sum(g * x) + np.sum(h * x) + np.sum(k * x))

    x, xi = np.array([0.5, -0.25, 1.5]), np.array([3, -4, 5])
    with np.errstate(divide="ignore"):
        value, _ = astad.reverse(f)(x, xi)
        assert value == f(x, xi)
        check_grad(f, [x, xi])


@pytest.mark.parametrize("body", [
    ["t2_ct = x * s", "t1 = W @ t2_ct", "t2_ct = t1 * t2_ct", "return np.sum(t2_ct) * s"],
    ["x = x * 2.0", "s = s * x[0]", "x = x @ W", "return np.sum(x * x) + s"],
    ["a = s ** 0.5", "b = x @ x", "c = a * b", "return c * np.sum(x)"],
])
def test_fast_named_programs_forward_reverse_and_hessian(tmp_path, body):
    f = _program(tmp_path, body, params="x, W, s=1.5")
    rng = np.random.default_rng(3)
    u, V, w = rng.standard_normal(4), rng.standard_normal((4, 4)), 0.7
    _, pullback = astad.reverse(f)(X, W, 1.5)
    gx, gW, gs = pullback(1.0)
    _, tangent = astad.jvp(f, (X, W, 1.5), (u, V, w))
    np.testing.assert_allclose(tangent, gx @ u + np.sum(gW * V) + gs * w, rtol=1e-9)
    H = astad.hessian(lambda x: f(x, W, 1.5))(X)
    g = astad.grad(lambda x: f(x, W, 1.5))
    Hfd = np.stack([(g(X + 1e-5 * e) - g(X - 1e-5 * e)) / 2e-5 for e in np.eye(4)])
    np.testing.assert_allclose(H, Hfd, rtol=1e-5, atol=1e-6)
