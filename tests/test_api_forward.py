"""The forward-mode and higher-order API against independent oracles: central
finite differences in float64, jacfwd == jacrev, symmetric Hessians equal to
FD of the gradient, hvp == hessian @ v, derivatives of derivatives vs FD."""

import numpy as np
import pytest

import astad
from astad.errors import AstadError, AstadTypeError

RNG = np.random.default_rng(3)
X = RNG.standard_normal(3)
W = RNG.standard_normal((2, 3))


def f(x, w):
    return np.tanh(w @ x) * np.sum(x)


def loss(x, w):
    h = np.tanh(w @ x)
    return np.sum(h * h) + np.sum(x ** 3) * 0.1


def scalar_loop(x):
    s = 0.0
    for i in range(4):
        s = s + np.sin(x * s + x)
    if x > 0:
        s = s * x
    else:
        s = s - x * x
    return s


def poly(x):
    return 2.0 * x ** 4 - 3.0 * x ** 3 + x


def with_int(x, n):
    return np.sum(x * x) * n


def fd(fn, args, i, eps=1e-6):
    """Central differences of ``fn`` in argument ``i``: shape out.shape + in.shape."""
    a = np.asarray(args[i], dtype=float)
    cols = []
    for k in range(a.size):
        e = np.zeros(a.size)
        e[k] = eps
        e = e.reshape(a.shape)
        plus = list(args)
        minus = list(args)
        plus[i], minus[i] = a + e, a - e
        if np.ndim(args[i]) == 0:
            plus[i], minus[i] = float(plus[i]), float(minus[i])
        cols.append((np.asarray(fn(*plus)) - np.asarray(fn(*minus))) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(fn(*args)) + a.shape)


def test_forward_value_and_pushforward():
    step = astad.forward(f)
    value, push = step(X, W)
    np.testing.assert_allclose(value, f(X, W), rtol=1e-14)
    tx, tw = RNG.standard_normal(3), RNG.standard_normal((2, 3))
    want = fd(f, (X, W), 0) @ tx + np.einsum("oij,ij->o", fd(f, (X, W), 1), tw)
    np.testing.assert_allclose(push(tx, tw), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(push(tx, None), fd(f, (X, W), 0) @ tx, rtol=1e-6, atol=1e-8)


def test_pushforward_reads_copies_of_the_arguments():
    x = X.copy()
    _, push = astad.forward(f)(x, W)
    before = push(np.ones(3), None)
    x[:] = 100.0
    np.testing.assert_array_equal(push(np.ones(3), None), before)


def test_forward_inspection():
    step = astad.forward(f)
    step(X, W)
    assert "_jvp(" in step.source
    for stage in ("core", "structural", "forward", "optimised"):
        assert step.ir(stage)
    assert "astad.forward" in repr(step) and "astad.forward" in step._repr_markdown_()
    assert "astad.forward" in step._repr_html_()


def test_jvp_as_jax():
    tx = RNG.standard_normal(3)
    value, tangent = astad.jvp(f, (X, W), (tx, None))
    np.testing.assert_allclose(value, f(X, W))
    np.testing.assert_allclose(tangent, fd(f, (X, W), 0) @ tx, rtol=1e-6, atol=1e-8)


def test_jvp_of_a_discrete_argument_takes_none_or_zero():
    value, t = astad.jvp(with_int, (X, 3), (np.ones(3), None))
    np.testing.assert_allclose(t, 6 * np.sum(X))
    _, t0 = astad.jvp(with_int, (X, 3), (np.ones(3), 0))
    assert t0 == t
    with pytest.raises(AstadTypeError, match="`n`"):
        astad.jvp(with_int, (X, 3), (np.ones(3), 1))


@pytest.mark.parametrize("bad, match", [
    ((np.ones(4), None), "shape"),
    ((np.ones(3, dtype=np.float32), None), "dtype"),
    ((np.ones(3, dtype=np.int64), None), "dtype"),
    (("x", None), "float"),
])
def test_bad_tangents_name_the_parameter(bad, match):
    with pytest.raises(AstadTypeError, match=match) as e:
        astad.jvp(f, (X, W), bad)
    assert "`x`" in str(e.value)
    with pytest.raises(AstadTypeError, match="`x`"):
        astad.forward(f)(X, W)[1](*bad)


def test_bad_tangent_structure():
    def g(p):
        return np.sum(p["a"] * p["b"])
    p = {"a": X, "b": X * 2}
    with pytest.raises(AstadTypeError, match="`p`"):
        astad.jvp(g, (p,), ((X, X),))
    with pytest.raises(AstadTypeError, match="tangents"):
        astad.jvp(f, (X, W), (X,))


def test_jacfwd_equals_jacrev_and_fd():
    for i in (0, 1):
        jf = astad.jacfwd(f, i)(X, W)
        jr = astad.jacrev(f, i)(X, W)
        np.testing.assert_allclose(jf, jr, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(jf, fd(f, (X, W), i), rtol=1e-6, atol=1e-8)
    both = astad.jacrev(f, argnums=(0, 1))(X, W)
    assert isinstance(both, tuple) and both[0].shape == (2, 3) and both[1].shape == (2, 2, 3)
    np.testing.assert_allclose(both[1], astad.jacfwd(f, 1)(X, W), rtol=1e-12)


def test_jacobian_picks_a_mode_and_agrees():
    np.testing.assert_allclose(astad.jacobian(f)(X, W), fd(f, (X, W), 0), rtol=1e-6, atol=1e-8)
    assert astad.jacobian(f)._pick((X, W)).mode == "rev"  # 3 inputs, 2 outputs

    def wide(x):
        return np.outer(x, x).ravel()
    assert astad.jacobian(wide)._pick((X,)).mode == "fwd"
    np.testing.assert_allclose(astad.jacobian(wide)(X), fd(wide, (X,), 0), rtol=1e-6, atol=1e-8)


def test_pytrees_in_and_out():
    def g(p, x):
        return (np.sum(p["w"] @ x), p["b"] * x)
    p = {"w": W, "b": 0.5}
    jf = astad.jacfwd(g)(p, X)
    jr = astad.jacrev(g)(p, X)
    assert isinstance(jf, tuple) and set(jf[0]) == {"w", "b"}
    for a, b in zip(jf, jr):
        for k in ("w", "b"):
            np.testing.assert_allclose(a[k], b[k], rtol=1e-12, atol=1e-14)
    assert jf[1]["w"].shape == (3, 2, 3) and jf[0]["w"].shape == (2, 3)
    value, tangent = astad.jvp(g, (p, X), ({"w": np.ones_like(W), "b": 0.0}, None))
    np.testing.assert_allclose(tangent[0], np.sum(np.ones_like(W) @ X))


def test_hessian_symmetric_and_fd_of_the_gradient():
    H = astad.hessian(loss)(X, W)
    assert H.shape == (3, 3)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-14)
    g = astad.grad(loss)
    np.testing.assert_allclose(H, fd(lambda x, w: g(x, w), (X, W), 0), rtol=1e-6, atol=1e-7)
    Hw = astad.hessian(loss, 1)(X, W)
    assert Hw.shape == (2, 3, 2, 3)


def test_hvp_equals_hessian_times_v():
    v = RNG.standard_normal(3)
    hv, none = astad.hvp(loss, (X, W), (v, None))
    assert none is None
    np.testing.assert_allclose(hv, astad.hessian(loss)(X, W) @ v, rtol=1e-10, atol=1e-12)
    vw = RNG.standard_normal((2, 3))
    hx, hw = astad.hvp(loss, (X, W), (v, vw))
    g = astad.grad(loss, (0, 1))
    eps = 1e-6
    plus, minus = g(X + eps * v, W + eps * vw), g(X - eps * v, W - eps * vw)
    np.testing.assert_allclose(hx, (plus[0] - minus[0]) / (2 * eps), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(hw, (plus[1] - minus[1]) / (2 * eps), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("x", [1.3, -0.7])
def test_grad_of_grad_of_a_loop_and_an_if(x):
    g1 = astad.grad(scalar_loop)
    g2 = astad.grad(g1)
    eps = 1e-5
    np.testing.assert_allclose(g2(x), (g1(x + eps) - g1(x - eps)) / (2 * eps), rtol=1e-6, atol=1e-8)
    g3 = astad.grad(g2)
    np.testing.assert_allclose(g3(x), (g2(x + eps) - g2(x - eps)) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_third_and_fourth_derivatives_of_a_polynomial_exactly():
    x = 1.7
    assert astad.grad(astad.grad(poly))(x) == pytest.approx(24 * x * x - 18 * x, rel=1e-14)
    assert astad.grad(astad.grad(astad.grad(poly)))(x) == pytest.approx(48 * x - 18, rel=1e-14)
    assert astad.grad(astad.grad(astad.grad(astad.grad(poly))))(x) == pytest.approx(48.0, rel=1e-14)


def test_jacfwd_of_jacrev_is_the_second_derivative():
    J2 = astad.jacfwd(astad.jacrev(f))(X, W)
    assert J2.shape == (2, 3, 3)
    jr = astad.jacrev(f)
    np.testing.assert_allclose(J2, fd(lambda x, w: jr(x, w), (X, W), 0), rtol=1e-5, atol=1e-7)
    for i in range(2):
        np.testing.assert_allclose(J2[i], J2[i].T, rtol=1e-10, atol=1e-12)


def test_second_order_callables_are_inspectable():
    g2 = astad.grad(astad.grad(scalar_loop))
    g2(0.4)
    assert "_forward(" in g2.source or "_jvp(" in g2.source
    assert g2.ir("core") and g2.ir("optimised")
    assert "grad(grad(scalar_loop))" in repr(g2)
    prog, extras = g2.__astad_program__((0.4,))
    assert prog.n_user == 1


def test_foreign_wrappers_are_still_refused():
    import functools

    @functools.wraps(poly)
    def wrapper(x):
        return poly(x)
    with pytest.raises(AstadError):
        astad.grad(wrapper)(1.0)


def test_grad_of_a_non_scalar_derivative_is_refused():
    with pytest.raises(AstadError):
        astad.grad(astad.jacfwd(f))(X, W)


def test_value_and_grad_of_a_gradient():
    g1 = astad.grad(scalar_loop)
    value, g2 = astad.value_and_grad(g1)(0.8)
    assert value == pytest.approx(g1(0.8), rel=1e-14)
    assert g2 == pytest.approx(astad.grad(g1)(0.8), rel=1e-14)


def test_a_pushforward_returns_an_array_of_its_own():
    def ident(x):
        return x
    tx = np.ones(3)
    out = astad.forward(ident)(X)[1](tx)
    np.testing.assert_array_equal(out, tx)
    assert not np.shares_memory(out, tx)


def test_a_bad_tangent_of_a_derivative_names_the_parameter():
    with pytest.raises(AstadTypeError, match="`x`"):
        astad.jvp(astad.grad(loss), (X, W), (np.ones(4), None))
    with pytest.raises(AstadTypeError, match="`x`"):
        astad.hvp(loss, (X, W), (np.ones(2), None))


def test_jvp_of_a_gradient_is_a_hessian_vector_product():
    v = RNG.standard_normal(3)
    g, hv = astad.jvp(astad.grad(loss), (X, W), (v, None))
    np.testing.assert_allclose(g, astad.grad(loss)(X, W), rtol=1e-12)
    np.testing.assert_allclose(hv, astad.hessian(loss)(X, W) @ v, rtol=1e-10, atol=1e-12)


def test_hessian_of_a_float32_program_stays_float32():
    x = X.astype(np.float32)
    w = W.astype(np.float32)
    H = astad.hessian(loss)(x, w)
    assert H.dtype == np.float32
    np.testing.assert_allclose(H, astad.hessian(loss)(X, W), rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------- random programs: jacfwd == jacrev

from hypothesis import HealthCheck, given, note, settings  # noqa: E402

import test_random_programs  # noqa: E402
from conftest import fuzz_examples, load_program  # noqa: E402


@pytest.fixture(scope="module")
def api_program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("api_forward_random")


@settings(max_examples=fuzz_examples(6, long=15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(test_random_programs.programs())
def test_random_programs_jacfwd_equals_jacrev(api_program_dir, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, api_program_dir, "api_forward_random").f
    args = test_random_programs._arguments(params, seed)
    real = tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")
    if not real:
        return
    jf = astad.jacfwd(fn, real)(*args)
    jr = astad.jacrev(fn, real)(*args)
    leaves_f, leaves_r = _leaves(jf), _leaves(jr)
    assert len(leaves_f) == len(leaves_r)
    for a, b in zip(leaves_f, leaves_r):
        assert (a is None) == (b is None)
        if a is not None:
            assert np.shape(a) == np.shape(b)
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def _leaves(v):
    if isinstance(v, (tuple, list)):
        return [x for item in v for x in _leaves(item)]
    if isinstance(v, dict):
        return [x for item in v.values() for x in _leaves(item)]
    return [v]


SCALE = 2.0


def scaled_cube(x):
    return SCALE * x ** 3


def test_derivatives_of_derivatives_follow_a_changed_global(monkeypatch):
    g2 = astad.grad(astad.grad(scaled_cube))
    assert g2(1.5) == pytest.approx(6 * 2.0 * 1.5, rel=1e-14)
    assert astad.hessian(scaled_cube)(1.5) == pytest.approx(18.0, rel=1e-14)
    monkeypatch.setitem(globals(), "SCALE", 3.0)
    assert g2(1.5) == pytest.approx(6 * 3.0 * 1.5, rel=1e-14)
    assert astad.hessian(scaled_cube)(1.5) == pytest.approx(27.0, rel=1e-14)
    assert astad.jvp(scaled_cube, (1.5,), (1.0,))[1] == pytest.approx(3 * 3.0 * 2.25, rel=1e-14)


def test_clear_caches_forgets_forward_derivatives_and_programs():
    astad.hessian(loss)(X, W)
    astad.clear_caches(disk=False)
    np.testing.assert_allclose(astad.hessian(loss)(X, W), astad.hessian(loss)(X, W))


def dict_loss(p, x):
    h = np.tanh(p["w"] @ x + p["b"])
    return np.sum(h * h) * p["s"]


def test_hvp_and_hessian_of_a_dict_of_parameters():
    p = {"w": W, "b": RNG.standard_normal(2), "s": 0.7}
    v = {"w": RNG.standard_normal((2, 3)), "b": RNG.standard_normal(2), "s": 0.3}
    hv, none = astad.hvp(dict_loss, (p, X), (v, None))
    assert none is None and set(hv) == {"w", "b", "s"}
    g = astad.grad(dict_loss)
    eps = 1e-6
    shift = lambda e: {k: p[k] + e * v[k] for k in p}  # noqa: E731
    plus, minus = g(shift(eps), X), g(shift(-eps), X)
    for k in p:
        np.testing.assert_allclose(hv[k], (np.asarray(plus[k]) - minus[k]) / (2 * eps), rtol=1e-5, atol=1e-7)
    H = astad.hessian(dict_loss)(p, X)
    assert H["w"]["b"].shape == (2, 3, 2) and H["b"]["w"].shape == (2, 2, 3)
    np.testing.assert_allclose(H["w"]["b"], np.moveaxis(H["b"]["w"], 0, -1), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H["b"]["b"] @ v["b"] + H["b"]["w"].reshape(2, 6) @ v["w"].ravel()
                               + H["b"]["s"] * v["s"], hv["b"], rtol=1e-10, atol=1e-12)


def test_third_derivative_tensor_of_a_vector_function():
    def cubic(x):
        return np.sum(np.sin(x) * x[0]) + x[1] ** 3
    x = np.array([0.3, -0.4, 0.9])
    T = astad.jacfwd(astad.hessian(cubic))(x)
    assert T.shape == (3, 3, 3)
    h = astad.hessian(cubic)
    np.testing.assert_allclose(T, fd(lambda y: h(y), (x,), 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(T, np.transpose(T, (1, 0, 2)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(T, np.transpose(T, (0, 2, 1)), rtol=1e-10, atol=1e-12)


def test_a_jacobian_for_an_int_argument_is_refused():
    with pytest.raises(AstadTypeError, match="argument 1"):
        astad.jacfwd(with_int, 1)(X, 3)
    with pytest.raises(AstadTypeError, match="argument 1"):
        astad.jacrev(with_int, 1)(X, 3)
    with pytest.raises(AstadTypeError, match="by position"):
        astad.grad(astad.grad(poly))(x=1.0)


def test_hvp_of_a_non_scalar_function_is_refused():
    with pytest.raises(astad.NonScalarOutputError):
        astad.hvp(f, (X, W), (np.ones(3), None))
    with pytest.raises(AstadTypeError, match="`n`"):
        astad.hvp(with_int, (X, 3), (np.ones(3), 1))


def test_a_derivative_keeps_no_reference_to_the_arguments():
    import weakref
    x = np.linspace(0.1, 1.0, 3)
    ref = weakref.ref(x)
    h = astad.hessian(loss)
    h(x, W)
    del x
    assert ref() is None
    assert "def " in h.source and h.ir("core")


@pytest.mark.parametrize("make", [astad.jacobian, astad.jacfwd, astad.jacrev])
def test_jacobians_show_their_code(make):
    j = make(f)
    j(X, W)
    assert "def " in j.source and j.ir("optimised")
    assert "<astad." in repr(j)


def test_a_gradient_shows_its_program_after_a_call():
    g = astad.grad(dict_loss)
    g({"w": W, "b": np.zeros(2), "s": 0.5}, X)
    assert "def " in g.source and "dict_loss" in g.ir("core")
    g2 = astad.grad(with_int)
    g2(X, 3)
    assert "def " in g2.source


def test_repeated_jvps_are_checked_and_correct_on_the_fast_path(monkeypatch):
    """The second call of a kind takes the cached path (api_forward.fast_key): a
    tangent of another kind is still checked, a discrete one still must be None or
    zero, an identity still returns an array of its own, a changed global is seen."""
    tx = RNG.standard_normal(3)
    want = astad.jvp(f, (X, W), (tx, None))[1]
    for _ in range(3):
        np.testing.assert_allclose(astad.jvp(f, (X, W), (tx, None))[1], want, rtol=1e-14)
        with pytest.raises(AstadTypeError, match="shape"):
            astad.jvp(f, (X, W), (np.ones(4), None))
        with pytest.raises(AstadTypeError, match="dtype"):
            astad.jvp(f, (X, W), (np.ones(3, dtype=np.float32), None))
        _, t0 = astad.jvp(with_int, (X, 3), (np.ones(3), 0))
        assert t0 == pytest.approx(6 * np.sum(X))
        with pytest.raises(AstadTypeError, match="`n`"):
            astad.jvp(with_int, (X, 3), (np.ones(3), 1))

    def ident(x):
        return x
    for _ in range(2):
        out = astad.jvp(ident, (X,), (tx,))[1]
        assert not np.shares_memory(out, tx) and not np.shares_memory(out, X)
    for _ in range(2):
        assert astad.jvp(scaled_cube, (1.5,), (1.0,))[1] == pytest.approx(3 * SCALE * 2.25, rel=1e-14)
    monkeypatch.setitem(globals(), "SCALE", 5.0)
    assert astad.jvp(scaled_cube, (1.5,), (1.0,))[1] == pytest.approx(3 * 5.0 * 2.25, rel=1e-14)


def test_repeated_hvps_are_checked_and_correct():
    v = RNG.standard_normal(3)
    eps = 1e-6
    g = astad.grad(loss)
    fd = (g(X + eps * v, W) - g(X - eps * v, W)) / (2 * eps)
    for _ in range(3):
        np.testing.assert_allclose(astad.hvp(loss, (X, W), (v, None))[0], fd, rtol=1e-6, atol=1e-8)
        with pytest.raises(AstadTypeError, match="`x`"):
            astad.hvp(loss, (X, W), (np.ones(2), None))


def test_in_place_updates_never_touch_arguments_or_tangents():
    """Large arrays (in-place updates of temporaries in the generated code): the
    arguments and tangents are unchanged and the JVP equals central differences."""
    def g(x, y):
        a = -(x * x)
        b = 1.0 - np.tanh(y) * np.tanh(y)
        c = 2.0 / (1.0 + x * x)
        return np.sum(a * b + c - y) + np.sum(-y)

    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(5000), rng.standard_normal(5000)
    tx, ty = rng.standard_normal(5000), rng.standard_normal(5000)
    saved = [a.copy() for a in (x, y, tx, ty)]
    for _ in range(2):
        _, t = astad.jvp(g, (x, y), (tx, ty))
        for a, s in zip((x, y, tx, ty), saved):
            np.testing.assert_array_equal(a, s)
    eps = 1e-6
    fd = (g(x + eps * tx, y + eps * ty) - g(x - eps * tx, y - eps * ty)) / (2 * eps)
    assert t == pytest.approx(fd, rel=1e-6)
