"""Session 11, helper advA: the API, forward mode and derivatives of derivatives.

Every derivative here is checked against central finite differences in float64 or against the
other mode (<u, J v> == <J^T u, v>), never against astad's own output."""

import itertools
import math

import numpy as np
import pytest

import astad


def _fd(fn, x, eps=1e-5):
    """The Jacobian of ``fn`` at the array ``x`` by central differences: out.shape + x.shape."""
    x = np.asarray(x, np.float64)
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append((np.asarray(fn(x + e), np.float64) - np.asarray(fn(x - e), np.float64)) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(fn(x)) + x.shape)


def cubic(x):
    return np.sin(x) * x[0] + x[1] ** 3


def cubic_sum(x):
    return np.sum(np.sin(x) ** 3) + x[0] * x[1] ** 2


# --------------------------------------------------------------------------- 1. Jacobians of Jacobians

_MAKERS = {"jacfwd": astad.jacfwd, "jacrev": astad.jacrev, "jacobian": astad.jacobian}


@pytest.mark.parametrize("combo", list(itertools.product(_MAKERS, repeat=2)), ids="-".join)
def test_second_jacobians_of_a_vector_function_have_source_and_a_vjp(combo):
    # before: .source raised NoProgram ("assembled from several derivatives") and so did astad.vjp
    x = np.array([0.3, 0.7])
    d = _MAKERS[combo[1]](_MAKERS[combo[0]](cubic))
    want = _fd(lambda y: _fd(cubic, y, 1e-5), x, 1e-4)
    got = d(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert "def " in d.source
    value, pullback = astad.vjp(d, x)
    np.testing.assert_allclose(value, got, rtol=1e-12)
    u = np.random.default_rng(0).normal(size=got.shape)
    (ct,) = pullback(u)
    v = np.array([0.4, -1.1])
    _, jv = astad.jvp(d, (x,), (v,))  # <u, J v> == <J^T u, v>
    np.testing.assert_allclose(np.sum(u * jv), np.sum(ct * v), rtol=1e-10)
    np.testing.assert_allclose(ct, np.tensordot(u, _fd(lambda y: d(y), x, 1e-5), axes=u.ndim), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("combo", [("jacfwd",) * 3, ("jacrev", "jacfwd", "jacrev"), ("jacobian",) * 3],
                         ids="-".join)
def test_third_jacobians_of_a_vector_function(combo):
    # before: calling any third Jacobian of a function of a vector raised NoProgram
    x = np.array([0.3, 0.7])
    d = cubic
    for name in combo:
        d = _MAKERS[name](d)
    got = d(x)
    second = astad.jacfwd(astad.jacfwd(cubic))
    np.testing.assert_allclose(got, _fd(second, x, 1e-5), rtol=1e-6, atol=1e-7)
    assert got.shape == (2, 2, 2, 2)
    assert "def " in d.source


def test_third_derivative_of_a_scalar_function_by_hessian():
    x = np.array([0.3, 0.7, -0.2])
    got = astad.jacfwd(astad.hessian(cubic_sum))(x)
    np.testing.assert_allclose(got, _fd(astad.hessian(cubic_sum), x, 1e-5), rtol=1e-6, atol=1e-7)
    got_rev = astad.jacrev(astad.hessian(cubic_sum))(x)
    np.testing.assert_allclose(got_rev, got, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", [astad.jacfwd, astad.jacrev, lambda f: astad.hessian(lambda x: np.sum(f(x)))],
                         ids=["jacfwd", "jacrev", "hessian"])
def test_a_jacobian_of_one_element_keeps_its_shape_when_differentiated_again(make):
    # before: at x of shape (1,), vjp(jacfwd(f), x) gave a value of shape (1,) (the column, not the
    # Jacobian (1, 1)) and a zero cotangent; jacrev(jacfwd(f))(x) had shape (1, 1), not (1, 1, 1)
    def f(x):
        return np.sin(x) ** 3 * x[0]

    x = np.array([0.3])
    d = make(f)
    got = d(x)
    assert got.shape == (1, 1)
    value, pullback = astad.vjp(d, x)
    assert np.shape(value) == (1, 1)
    np.testing.assert_allclose(value, got, rtol=1e-12)
    third = _fd(d, x, 1e-5)
    np.testing.assert_allclose(pullback(np.ones((1, 1)))[0], third.reshape(1), rtol=1e-6)
    for outer in (astad.jacrev, astad.jacfwd):
        j = outer(d)(x)
        assert j.shape == (1, 1, 1)
        np.testing.assert_allclose(j, third, rtol=1e-6)


def _tanh_layer(p, x):
    return np.tanh(p["w"] @ x) * p["b"]


def test_jacobians_of_jacobians_of_structured_arguments():
    p = {"w": np.array([[0.3, -0.2], [0.5, 0.1]]), "b": np.array([1.2, -0.4])}
    x = np.array([0.7, -0.3])
    d = astad.jacrev(astad.jacfwd(_tanh_layer, 0), 1)  # d/dx of the dict of Jacobians in p
    got = d(p, x)
    for key in p:
        def block(y, key=key):
            return astad.jacfwd(_tanh_layer, 0)(p, y)[key]
        np.testing.assert_allclose(got[key], _fd(block, x, 1e-5), rtol=1e-6, atol=1e-8)
    value, pullback = astad.vjp(d, p, x)
    rng = np.random.default_rng(1)
    u = {k: rng.normal(size=v.shape) for k, v in value.items()}
    ct_p, ct_x = pullback(u)
    t_x = np.array([0.3, 0.9])
    _, jv = astad.jvp(d, (p, x), (None, t_x))
    np.testing.assert_allclose(sum(np.sum(u[k] * jv[k]) for k in u), np.sum(ct_x * t_x), rtol=1e-10)
    t_w = rng.normal(size=(2, 2))
    _, jw = astad.jvp(d, (p, x), ({"w": t_w, "b": np.zeros(2)}, None))
    np.testing.assert_allclose(sum(np.sum(u[k] * jw[k]) for k in u), np.sum(ct_p["w"] * t_w), rtol=1e-10)


def test_float32_jacobians_of_jacobians_keep_float32():
    x = np.array([0.3, 0.7], np.float32)
    for inner in (astad.jacfwd, astad.jacrev):
        d = astad.jacfwd(inner(cubic))
        value, pullback = astad.vjp(d, x)
        assert value.dtype == np.float32 and pullback(np.ones_like(value))[0].dtype == np.float32
        np.testing.assert_allclose(value, astad.jacfwd(astad.jacfwd(cubic))(x.astype(np.float64)), rtol=1e-5)


# --------------------------------------------------------------------------- 2. .source and .source_for


def sin_times(t):
    return np.sin(t) * t


def scaled(x, y=2.0, *, k=1.5):
    return np.sum(np.sin(x)) * y * k


def test_grad_source_with_memory_caches_off(monkeypatch):
    # before: "grad(sin_times) has not been called yet" right after a call
    monkeypatch.setattr(astad.config, "memory_cache_size", 0)
    g = astad.grad(sin_times)
    assert g(1.3) == pytest.approx(np.cos(1.3) * 1.3 + np.sin(1.3), rel=1e-12)
    assert "sin_times_jvp" in g.source


@pytest.mark.parametrize("make", [astad.reverse, astad.forward, astad.grad, astad.jacfwd, astad.jacrev, astad.hessian],
                         ids=lambda m: m.__name__)
def test_source_for_takes_keywords_as_a_call_does(make):
    # before: TypeError: source_for() got an unexpected keyword argument 'y'
    x = np.array([0.3, 0.7])
    d = make(scaled)
    out = d(x, y=3.0, k=2.0)
    if make is astad.forward:  # tangents of the arguments passed by position, as the pushforward's
        np.testing.assert_allclose(out[1](np.ones(2)), 6.0 * np.sum(np.cos(x)), rtol=1e-12)
        assert "def scaled_jvp(x, y, k, x_t):" in d.source_for(x, y=3.0, k=2.0)
    else:
        assert d.source_for(x, y=3.0, k=2.0) == d.source
    assert "k: float" in d.ir("core", x, k=2.0)


def test_source_for_counts_negative_argnums_from_the_last_argument_passed():
    # before: grad(f, argnums=-1).source_for(x) showed the derivative in y (the default), while a call
    # grad(f, argnums=-1)(x) differentiates x, the last argument passed by position
    x = np.array([0.3, 0.7])
    g = astad.grad(scaled, argnums=-1)
    np.testing.assert_allclose(g(x), 3.0 * np.cos(x), rtol=1e-12)
    shown = g.source
    assert g.source_for(x) == shown
    assert shown.rstrip().splitlines()[-1].strip() == "return x_ct, None, None"


# --------------------------------------------------------------------------- 4. tangents of numpy scalars


def clipped(x):
    return np.clip(x, 0.0, 1.0)


def floored_at(x):
    return np.maximum(x, 0.2)


def capped(x):
    return np.minimum(x, 0.9)


def finite(x):
    return np.nan_to_num(x)


def squared(x):
    return np.power(x, 2)


def pair_of(x):
    return np.clip(x, 0.0, 1.0), np.maximum(x, 0.2) * 2.0


def clipped_sum(v):
    return np.clip(np.sum(v), 0.0, 5.0)


@pytest.mark.parametrize("fn", [clipped, floored_at, capped, finite, squared], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [np.float64(0.4), np.float32(0.4), 0.4], ids=["f64", "f32", "float"])
def test_the_tangent_of_a_numpy_scalar_is_a_numpy_scalar(fn, x):
    # before: np.clip, np.maximum, np.minimum and np.nan_to_num of a scalar gave a 0-d ndarray tangent
    # (np.where in the JVP), np.power of a Python float a Python float, where the value is a numpy scalar
    value = fn(x)
    want = (fn(np.float64(x) + 1e-6) - fn(np.float64(x) - 1e-6)) / 2e-6
    for _ in range(3):  # (the first call, then the remembered and the checked code)
        v, t = astad.jvp(fn, (x,), (type(x)(1.0),))
        assert type(v) is type(value) and type(t) is type(value), (type(v), type(t))
        assert t == pytest.approx(want, rel=1e-5)
        _, pushforward = astad.forward(fn)(x)
        assert type(pushforward(type(x)(1.0))) is type(value)


def test_the_tangents_of_a_tuple_of_numpy_scalars_and_of_a_sum():
    x = np.float64(0.4)
    for _ in range(3):
        v, t = astad.jvp(pair_of, (x,), (np.float64(1.0),))
        assert [type(a) for a in t] == [np.float64, np.float64] and t == (1.0, 2.0)
        v, t = astad.jvp(clipped_sum, (np.array([0.5, 1.5]),), (np.array([1.0, 2.0]),))
        assert type(t) is np.float64 and t == 3.0


# --------------------------------------------------------------------------- structures with discrete leaves


def powered(p):
    return np.sum(p["w"] ** 3 * p["n"])


def middle_int(t):
    a, n, b = t
    return np.sum(np.sin(a) * b ** n)


def test_a_jacobian_of_a_jacobian_in_a_structure_with_an_int_leaf():
    # before: jacfwd(jacfwd(f))(p) with p = {"w": array, "n": int} raised Python's TypeError
    # "f_jvp() takes 5 positional arguments but 6 were given" (the tangent of the int leaf was passed)
    p = {"w": np.array([0.5, 2.0]), "n": 2}
    want = np.diag(6.0 * p["w"] * p["n"])
    for d in (astad.jacfwd(astad.jacfwd(powered)), astad.jacrev(astad.jacfwd(powered)), astad.hessian(powered)):
        got = d(p)
        assert got["n"] is None and got["w"]["n"] is None
        np.testing.assert_allclose(got["w"]["w"], want, rtol=1e-12)
        value, pullback = astad.vjp(d, p)
        np.testing.assert_allclose(value["w"]["w"], want, rtol=1e-12)
        ct = pullback({"w": {"w": np.eye(2), "n": None}, "n": None})[0]
        np.testing.assert_allclose(ct["w"], [12.0, 12.0], rtol=1e-12)  # d trace(H) / dw = 6 n


def test_a_third_derivative_in_a_tuple_with_an_int_in_the_middle():
    a, b = np.array([0.3, 0.9]), np.array([1.2, 0.7])
    t = (a, 3, b)
    h = astad.hessian(middle_int)
    third = astad.jacfwd(h)(t)
    # d/da of the (a, a) block of the Hessian: the Hessian of a alone, by differences
    def block(y):
        return astad.hessian(middle_int)((y, 3, b))[0][0]
    np.testing.assert_allclose(third[0][0][0], _fd(block, a, 1e-5), rtol=1e-6, atol=1e-8)
    assert third[1] is None and third[0][1] is None


def _two(x, y):
    return np.sin(x) * y[0] + y * x[1]


def test_the_pullback_of_an_assembled_jacobian_gives_arrays_of_their_own():
    x, y = np.array([0.3, 0.8]), np.array([1.1, -0.4])
    d = astad.jacfwd(_two, (0, 1))
    value, pullback = astad.vjp(d, x, y)
    x[:] = 5.0  # (the pullback is the derivative at the call's values)
    u = (np.ones((2, 2)), np.eye(2))
    cx, cy = pullback(u)
    assert not np.shares_memory(cx, cy)
    x0 = np.array([0.3, 0.8])
    for k, (arg, ct) in enumerate(((x0, cx), (y, cy))):
        def contracted(z, k=k):
            a = (z, y) if k == 0 else (x0, z)
            jx, jy = astad.jacfwd(_two, (0, 1))(*a)
            return np.sum(u[0] * jx) + np.sum(u[1] * jy)
        np.testing.assert_allclose(ct, _fd(contracted, arg, 1e-6), rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- 0-d arrays through derivatives of derivatives


def cube(t):
    return t ** 3


def cube_sum(t, u):
    return np.sum(t ** 3) * u


def test_a_jvp_or_vjp_of_a_gradient_at_a_0d_array_gives_0d_arrays_as_the_gradient_does():
    # before: grad(cube)(array(0.5)) is a 0-d array (as JAX's), but jvp(grad(cube), ...) gave numpy floats for
    # its value and tangent, and vjp(grad(cube), a) a numpy float for its value
    a = np.array(0.5)
    g = astad.grad(cube)
    assert type(g(a)) is np.ndarray
    value, tangent = astad.jvp(g, (a,), (np.array(1.0),))
    assert type(value) is np.ndarray and value.shape == () and value == 0.75
    assert type(tangent) is np.ndarray and tangent.shape == () and tangent == pytest.approx(3.0)
    value, pullback = astad.vjp(g, a)
    assert type(value) is np.ndarray and value.shape == ()
    (ct,) = pullback(np.array(1.0))
    assert type(ct) is np.ndarray and ct == pytest.approx(3.0)
    value, tangent = astad.jvp(astad.grad(cube_sum, (0, 1)), (a, 2.0), (np.array(1.0), None))
    assert [type(v) for v in value] == [np.ndarray, float] and [type(t) for t in tangent] == [np.ndarray, float]
    np.testing.assert_allclose(tangent[0], 6.0 * 0.5 * 2.0)
    np.testing.assert_allclose(tangent[1], 3.0 * 0.5 ** 2)  # d(sum t^3)/dt


# --------------------------------------------------------------------------- astad.config


@pytest.mark.parametrize("name, value", [("memory_cache_size", "abc"), ("memory_cache_size", None),
                                         ("memory_cache_size", -1), ("memory_cache_size", 2.5),
                                         ("disk_cache", "no"), ("disk_cache_max_entries", -5),
                                         ("disk_cache_max_bytes", "x"), ("memory_cache", 0)])
def test_a_setting_of_the_wrong_kind_is_refused_when_set(name, value):
    # before: the next call failed with Python's ValueError or TypeError from inside astad
    # (memory_cache_size "abc" or None), or the setting silently did something else
    # (disk_cache = "no" left the disk cache on; memory_cache = 0, a typo, did nothing)
    before = {k: getattr(astad.config, k) for k in ("disk_cache", "memory_cache_size", "disk_cache_max_entries",
                                                    "disk_cache_max_bytes")}
    with pytest.raises(astad.AstadError, match="astad.config"):
        setattr(astad.config, name, value)
    assert {k: getattr(astad.config, k) for k in before} == before
    np.testing.assert_allclose(astad.grad(cube_sum)(np.array([0.5, 1.0]), 2.0), [1.5, 6.0])


def test_settings_of_the_right_kind_are_kept(monkeypatch):
    monkeypatch.setattr(astad.config, "memory_cache_size", np.int64(3))
    assert type(astad.config.memory_cache_size) is int and astad.config.memory_cache_size == 3
    monkeypatch.setattr(astad.config, "disk_cache", np.bool_(False))
    assert astad.config.disk_cache is False


@pytest.mark.parametrize("make", [astad.jacfwd, astad.jacrev, astad.jacobian,
                                  lambda f: astad.jacfwd(astad.jacfwd(f))], ids=["jacfwd", "jacrev", "jacobian", "jacfwd2"])
def test_source_of_a_jacobian_at_an_empty_array(make):
    # (an IndexError from inside astad in this session's first version of api_parts: no column, no program)
    x = np.zeros(0)
    d = make(clipped)
    got = d(x)
    assert got.shape == (0,) * got.ndim and got.ndim >= 2
    assert "def " in d.source


@pytest.mark.parametrize("how", ["vjp", "jacfwd", "hessian"])
def test_a_derivative_of_value_and_grad_is_refused_naming_grad(how):
    # before: vjp(value_and_grad(f), x) and hessian(value_and_grad(f)) said value_and_grad(f) "is assembled
    # from several derivatives" and hinted "differentiate with respect to one scalar at a time"
    x = np.array([0.3, 0.5])
    vg = astad.value_and_grad(clipped_sum)
    with pytest.raises(astad.AstadError, match=r"returns a pair[\s\S]*differentiate grad\(clipped_sum\)"):
        if how == "vjp":
            astad.vjp(vg, x)
        else:
            getattr(astad, how)(vg)(x)


def _empty_and_cube(x):
    return np.zeros(0) * x[0], np.sum(x ** 3)


def test_a_vjp_of_a_jacrev_whose_output_has_an_empty_leaf():
    x = np.array([0.5, 2.0])
    d = astad.jacrev(_empty_and_cube)
    value, pullback = astad.vjp(d, x)
    assert value[0].shape == (0, 2)
    np.testing.assert_allclose(value[1], 3.0 * x ** 2)
    (ct,) = pullback((np.zeros((0, 2)), np.ones(2)))
    np.testing.assert_allclose(ct, 6.0 * x)


# --------------------------------------------------------------------------- found by the random programs (test_render)


def _kept_division_in_a_loop(x, y, n):
    v1 = -x
    k = 0
    while k < n:
        k = k + 1
        if k % 2 == 0:
            return v1 - 1.0
        elif -1.0 < v1 < -1.0 + 2.0 * math.sqrt(v1 + 1.0):
            v10 = y / (y * y + 1.0)  # noqa: F841 (unread, kept: it may raise)
    return x * x


@pytest.mark.parametrize("n", [1, 3])
def test_an_unread_division_in_a_branch_of_a_loop_with_a_return(n):
    # before: InternalError "IndexError: tuple index out of range" from optimise/scalars.py (_recomputed read
    # the target of a keep, which has none)
    x, y = 0.3, 0.2
    got = astad.grad(_kept_division_in_a_loop, (0, 1))(x, y, n)
    for i, want in enumerate(got):
        e = 1e-6
        up = _kept_division_in_a_loop(*(x + e * (i == 0), y + e * (i == 1), n))
        down = _kept_division_in_a_loop(*(x - e * (i == 0), y - e * (i == 1), n))
        assert want == pytest.approx((up - down) / (2 * e), abs=1e-7)
