"""Calling conventions (issue 11, point 5): defaults left out, keyword arguments and
keyword-only parameters bound as Python binds them, bound methods (decorated or
not), functools.partial, lambdas and closures -- each through every transform,
checked against central finite differences of the primal in float64; what a
method, a partial or a closure fixes is read as a global is (a constant when
transforming, checked on each call); a wrong call raises Python's own TypeError."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import astad

W = np.array([0.3, -0.7, 1.1])
A = np.array([[1.0, 2.0, -0.5], [0.5, -1.0, 0.25]])
EPS = 1e-6


def fd_grad(fn, args, i):
    """Central finite differences of a real-scalar ``fn`` in its argument ``i``."""
    a = np.asarray(args[i], dtype=float)
    g = np.zeros(a.shape)
    for idx in np.ndindex(*a.shape):
        plus, minus = a.copy(), a.copy()
        plus[idx] += EPS
        minus[idx] -= EPS
        at = lambda v: fn(*args[:i], v if a.shape else float(v), *args[i + 1:])  # noqa: E731
        g[idx] = (at(plus) - at(minus)) / (2 * EPS)
    return g if a.shape else float(g)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- the functions


def with_default(w, x, scale=2.0):
    return np.sum(np.sin(A @ w) * scale) + x * np.sum(w ** 2)


def with_kwonly(w, x, *, scale=2.0, power=2):
    return np.sum(np.abs(w) ** power) * scale + np.sin(x) * np.sum(w)


class Model:
    offset = 0.25  # a class attribute, read as self's own ones are

    def __init__(self, c: float, mat: np.ndarray) -> None:
        self.c = c
        self.mat = mat

    def loss(self, w, x):
        return np.sum(np.tanh(self.mat @ w) * self.c) * x + self.offset * np.sum(w ** 2)

    @astad.reverse
    def decorated(self, w, x, scale=1.0):
        return np.sum(np.cos(self.mat @ w)) * self.c * x * scale

    @property
    def doubled(self):
        return 2.0 * self.c

    def uses_property(self, w, x):
        return np.sum(w) * self.doubled * x

    def uses_method(self, w, x):
        return self.loss(w, x)


def three(a, w, x, k=1.5):
    return np.sum(np.exp(a * w)) * x * k


def make(c):
    def closure(w, x):
        return c * np.sum(np.sin(w) * x)
    return closure


def make_settable(c):
    def closure(w, x):
        return c * np.sum(w * w) * x

    def set_c(v):
        nonlocal c
        c = v
    return closure, set_c


square_sum = lambda w, x, k=3.0: np.sum(w ** 2) * x * k  # noqa: E731

MODEL = Model(1.5, A)

# (name, the callable, positional arguments, keyword arguments, the primal as a function of the positional ones)
FORMS = [
    ("default left out", with_default, (W, 0.7), {}, lambda w, x: with_default(w, x)),
    ("keyword", with_default, (W, 0.7), {"scale": -1.5}, lambda w, x: with_default(w, x, scale=-1.5)),
    ("keyword-only", with_kwonly, (W, 0.7), {"scale": 0.5}, lambda w, x: with_kwonly(w, x, scale=0.5)),
    ("keyword-only defaults", with_kwonly, (W, 0.7), {}, lambda w, x: with_kwonly(w, x)),
    ("bound method", MODEL.loss, (W, 0.7), {}, lambda w, x: MODEL.loss(w, x)),
    ("partial", functools.partial(three, 0.5, k=2.0), (W, 0.7), {}, lambda w, x: three(0.5, w, x, k=2.0)),
    ("partial, keyword overridden", functools.partial(three, 0.5, k=2.0), (W, 0.7), {"k": -1.0},
     lambda w, x: three(0.5, w, x, k=-1.0)),
    ("partial of a method's function", functools.partial(Model.loss, MODEL), (W, 0.7), {},
     lambda w, x: MODEL.loss(w, x)),
    ("top-level lambda", square_sum, (W, 0.7), {"k": 0.5}, lambda w, x: square_sum(w, x, k=0.5)),
    ("closure of a factory", make(2.5), (W, 0.7), {}, make(2.5)),
]
IDS = [f[0] for f in FORMS]


@pytest.mark.parametrize("name, fn, args, kwargs, primal", FORMS, ids=IDS)
def test_reverse_mode(name, fn, args, kwargs, primal):
    want = [fd_grad(primal, args, i) for i in range(len(args))]
    value, g = astad.value_and_grad(fn, argnums=(0, 1))(*args, **kwargs)
    close(value, primal(*args))
    close(g[0], want[0])
    close(g[1], want[1])
    close(astad.grad(fn, argnums=1)(*args, **kwargs), want[1])
    for call in (astad.reverse(fn), functools.partial(astad.vjp, fn)):
        value, pullback = call(*args, **kwargs)
        cts = pullback(1.0)
        assert len(cts) == len(args)  # one per argument passed by position
        close(value, primal(*args))
        close(cts[0], want[0])
        close(cts[1], want[1])
    close(astad.jacrev(fn)(*args, **kwargs), want[0])


@pytest.mark.parametrize("name, fn, args, kwargs, primal", FORMS, ids=IDS)
def test_forward_mode(name, fn, args, kwargs, primal):
    want = [fd_grad(primal, args, i) for i in range(len(args))]
    rng = np.random.default_rng(1)
    tw, tx = rng.standard_normal(W.shape), 0.3
    value, pushforward = astad.forward(fn)(*args, **kwargs)
    close(value, primal(*args))
    close(pushforward(tw, tx), np.sum(want[0] * tw) + want[1] * tx)
    close(pushforward(tw, None), np.sum(want[0] * tw))
    close(astad.jacfwd(fn)(*args, **kwargs), want[0])
    close(astad.jacobian(fn, argnums=1)(*args, **kwargs), want[1])
    if not kwargs:  # jvp takes primals by position (as jax.jvp)
        value, tangent = astad.jvp(fn, args, (tw, tx))
        close(value, primal(*args))
        close(tangent, np.sum(want[0] * tw) + want[1] * tx)


@pytest.mark.parametrize("name, fn, args, kwargs, primal", FORMS[:6], ids=IDS[:6])
def test_second_order(name, fn, args, kwargs, primal):
    """hessian and grad of grad take the same calls; checked against finite differences
    of the gradient (itself checked against finite differences above)."""
    g = astad.grad(fn)
    want = np.array([fd_grad(lambda w, x: g(w, x, **kwargs)[j], args, 0) for j in range(len(W))])
    close(astad.hessian(fn)(*args, **kwargs), want)
    close(astad.jacfwd(astad.grad(fn))(*args, **kwargs), want)


# --------------------------------------------------------------------------- what is read when transforming


def test_attributes_of_self_are_checked_on_each_call():
    m = Model(2.0, A.copy())
    g, fwd = astad.grad(m.loss), astad.forward(m.loss)
    for c in (2.0, -1.0):
        m.c = c
        want = fd_grad(m.loss, (W, 0.7), 0)
        close(g(W, 0.7), want)
        close(fwd(W, 0.7)[1](W, 0.0), np.sum(want * W))
    g = astad.grad(m.loss)
    g(W, 0.7)
    m.mat = 2.0 * A  # another object
    close(g(W, 0.7), fd_grad(m.loss, (W, 0.7), 0))
    m.mat *= -1.0  # changed in place: the derivative reads the array itself, as the primal does
    close(g(W, 0.7), fd_grad(m.loss, (W, 0.7), 0))
    Model.offset = 1.0  # a class attribute
    try:
        close(g(W, 0.7), fd_grad(m.loss, (W, 0.7), 0))
        m.offset = -2.0  # now shadowed by the object's own
        close(g(W, 0.7), fd_grad(m.loss, (W, 0.7), 0))
    finally:
        Model.offset = 0.25


def test_decorated_method():
    m = Model(0.5, A)
    primal = Model.decorated.__wrapped__
    for kwargs in ({}, {"scale": 3.0}):
        value, pullback = m.decorated(W, 0.7, **kwargs)
        close(value, primal(m, W, 0.7, **kwargs))
        gw, gx = pullback(1.0)
        close(gw, fd_grad(lambda w, x: primal(m, w, x, **kwargs), (W, 0.7), 0))
        close(gx, fd_grad(lambda w, x: primal(m, w, x, **kwargs), (W, 0.7), 1))
    m.c = 4.0
    close(m.decorated(W, 0.7)[1](1.0)[0], fd_grad(lambda w, x: primal(m, w, x), (W, 0.7), 0))
    assert m.decorated is m.decorated  # one transform per object


def test_a_captured_variable_is_checked_on_each_call():
    fn, set_c = make_settable(2.0)
    g = astad.grad(fn)
    close(g(W, 0.7), 2.0 * 2 * W * 0.7)
    set_c(-3.0)
    close(g(W, 0.7), -3.0 * 2 * W * 0.7)
    _, pushforward = astad.forward(fn)(W, 0.7)
    set_c(5.0)
    with pytest.raises(astad.AstadError) as info:  # the tangent would be another function's
        pushforward(W, 0.0)
    assert "global c " in str(info.value)


def test_closures_of_one_code():
    for c in (2.0, -1.0, 2.0):
        fn = make(c)
        close(astad.grad(fn)(W, 0.7), fd_grad(fn, (W, 0.7), 0))


@pytest.mark.parametrize("method, words", [("uses_property", "property"), ("uses_method", "method")])
def test_methods_and_properties_of_self_are_refused(method, words):
    with pytest.raises(astad.UnsupportedFunctionError) as info:
        astad.grad(getattr(MODEL, method))(W, 0.7)
    assert words in str(info.value) and f"self.{'doubled' if method == 'uses_property' else 'loss'}" in str(
        info.value)
    assert info.value.loc is not None and info.value.hint


def test_a_lambda_error_points_at_its_text():
    bad = lambda w: w.nope  # noqa: E731
    with pytest.raises(astad.AstadError) as info:
        astad.grad(bad)(W)
    assert info.value.loc is not None and info.value.loc.text.strip().startswith("bad = lambda w: w.nope")
    assert info.value.loc.text[info.value.loc.col - 1:].startswith("w.nope")


# --------------------------------------------------------------------------- wrong calls


WRONG_CALLS = [
    ((), {}),  # missing
    ((W,), {}),  # missing one
    ((W, 0.7, 1.0, 2.0, 3.0), {}),  # too many
    ((W, 0.7), {"nope": 1.0}),  # unknown keyword
    ((W, 0.7), {"w": W}),  # twice
]


@pytest.mark.parametrize("fn", [with_default, with_kwonly, MODEL.loss, functools.partial(three, 0.5), square_sum,
                                make(1.0)], ids=["function", "keyword-only", "method", "partial", "lambda", "closure"])
@pytest.mark.parametrize("args, kwargs", WRONG_CALLS)
def test_a_wrong_call_raises_pythons_type_error(fn, args, kwargs):
    with pytest.raises(TypeError) as primal:
        fn(*args, **kwargs)
    for call in (astad.grad(fn), astad.reverse(fn), astad.forward(fn), astad.jacfwd(fn), astad.hessian(fn)):
        with pytest.raises(TypeError) as info:
            call(*args, **kwargs)
        assert isinstance(info.value, astad.AstadTypeError)
        assert info.value.message == str(primal.value)


def test_an_unbound_method_says_so():
    with pytest.raises(TypeError) as info:
        astad.grad(Model.loss)(W, 0.7)
    assert "missing 1 required positional argument: 'x'" in str(info.value)
    assert "astad.grad(obj.loss)" in str(info.value)


def test_argnums_index_the_arguments_passed_by_position():
    """As in JAX: arguments passed by keyword or left to their defaults are not differentiated."""
    with pytest.raises(astad.AstadTypeError) as info:
        astad.grad(with_default, argnums=1)(W, x=0.7)
    assert "by position" in str(info.value)
    with pytest.raises(astad.AstadTypeError) as info:
        astad.hessian(with_default, argnums=1)(W, x=0.7)
    assert "by position" in str(info.value)
    _, pushforward = astad.forward(with_default)(W, x=0.7)
    with pytest.raises(astad.AstadTypeError) as info:
        pushforward(W, 1.0)
    assert "by position" in str(info.value)
    close(pushforward(W), np.sum(fd_grad(with_default, (W, 0.7), 0) * W))
