"""Adversarial cases found by attacking the fast paths and passes that landed last (second round).

Each derivative is checked against central finite differences in float64 and each value against
the plain function, by every entry point (``grad``, ``value_and_grad``, ``jvp``, ``vjp``), on the
first call and on the later calls that the checked fast paths answer."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from conftest import load_program

MODES = ["grad", "value_and_grad", "jvp", "vjp"]


def _fd(fn, args, i, eps=1e-6):
    plus, minus = list(args), list(args)
    plus[i], minus[i] = args[i] + eps, args[i] - eps
    return (fn(*plus) - fn(*minus)) / (2 * eps)


def _derivative(mode, fn, args, i):
    """``(value or None, derivative in argument i)`` of ``fn`` at scalar ``args`` by ``mode``."""
    if mode == "grad":
        return None, astad.grad(fn, argnums=i)(*args)
    if mode == "value_and_grad":
        return astad.value_and_grad(fn, argnums=i)(*args)
    if mode == "jvp":
        return astad.jvp(fn, args, tuple(1.0 if j == i else None for j in range(len(args))))
    value, pullback = astad.vjp(fn, *args)
    return value, pullback(1.0)[i]


def _check(mode, fn, args, calls=3):
    """The first call and the later ones (the checked fast paths), in each argument."""
    for i in range(len(args)):
        for _ in range(calls):
            value, d = _derivative(mode, fn, args, i)
            if value is not None:
                assert value == pytest.approx(fn(*args), rel=1e-14)
            assert d == pytest.approx(_fd(fn, args, i), rel=1e-6)


# --------------------------------------------------------------------------- names of builtins

NAMES = '''
import numpy as np


def param_type(x, type):
    return x * type + np.sin(x)


def param_tuple(x, tuple):
    return x * tuple + np.sin(x)


def local_type(x, y):
    type = x * y
    s = 0.0
    for i in range(3):
        s = s + type * x
    return s * type


def local_tuple(x, y):
    tuple = x * y
    return tuple * x + np.cos(tuple)
'''


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["param_type", "param_tuple", "local_type", "local_tuple"])
def test_a_scalar_function_naming_a_builtin_the_checked_calls_use(tmp_path, mode, name):
    """A parameter or local named ``type`` or ``tuple``: the checked fast calls (astad.guards,
    astad.scalar_grad) tested ``type(x) is not float`` in the generated function's own scope,
    where ``type`` was the user's float (TypeError) or a local not yet bound (UnboundLocalError)."""
    fn = getattr(load_program(NAMES, tmp_path, "names"), name)
    _check(mode, fn, (0.7, 1.1))


# --------------------------------------------------------------------------- numpy's and math's functions replaced

PATCHED = '''
import math

import numpy as np


def f(x):
    return np.sin(x) * x + np.exp(x * 0.5)


def g(x):
    return math.sin(x) * x


def h(x):
    return np.sum(np.sin(x) * x)


def rows(x):
    return np.linalg.norm(x) * np.sum(np.tanh(x))


def k(x):
    return x * math.pi + x * x * np.e
'''


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, module, attr, by", [
    ("f", np, "sin", np.cos),          # a function the code reads, after fast calls
    ("f", np, "cos", np.tan),          # one its derivative calls (d sin = cos), which the code does not read
    ("g", "math", "sin", "cos"),
    ("g", "math", "cos", "tan"),
    ("k", "math", "pi", 3.0),          # a constant: generated code reads math as astad imported it
    ("k", np, "e", 2.0),
])
def test_a_numpy_or_math_function_replaced_after_fast_calls(tmp_path, monkeypatch, mode, name, module, attr, by):
    """``np.sin = np.cos`` (a mock) after calls: astad kept the derivative made for numpy's sin, whose
    code now called the replacement (the value of cos with the derivative of sin); the derivative of
    sin calls ``np.cos``, so replacing ``np.cos`` changed it too."""
    import math
    if module == "math":
        module, by = math, getattr(math, by) if isinstance(by, str) else by
    fn = getattr(load_program(PATCHED, tmp_path, "patched"), name)
    _check(mode, fn, (0.7,))
    monkeypatch.setattr(module, attr, by)
    _check(mode, fn, (0.7,))
    monkeypatch.undo()
    _check(mode, fn, (0.7,))


def test_a_numpy_function_replaced_before_the_first_call(tmp_path, monkeypatch):
    """Arrays, reverse and forward mode, a linalg function: the derivative of what the names mean now."""
    mod = load_program(PATCHED, tmp_path, "patched")
    monkeypatch.setattr(np, "tanh", np.sin)
    monkeypatch.setattr(np.linalg, "norm", lambda x: np.sqrt(np.sum(x * x * x * x)))
    monkeypatch.setattr(np, "cos", np.exp)
    x = np.array([0.3, -0.4, 0.8])
    want = np.array([(mod.rows(x + e) - mod.rows(x - e)) / 2e-6 for e in np.eye(3) * 1e-6])
    assert astad.grad(mod.rows)(x) == pytest.approx(want, rel=1e-6)
    value, tangent = astad.jvp(mod.rows, (x,), (np.ones(3),))
    assert value == pytest.approx(mod.rows(x), rel=1e-14)
    assert tangent == pytest.approx(want.sum(), rel=1e-6)


# --------------------------------------------------------------------------- a partial's keywords

TWO = '''
def two(x, y):
    return x * y * y
'''


@pytest.mark.parametrize("mode", MODES)
def test_a_keyword_added_to_a_partial_after_fast_calls(tmp_path, mode):
    """``functools.partial(two)`` called by position, then ``p.keywords["y"] = 5.0``: Python refuses
    ``p(2.0, 3.0)`` (two values for ``y``); astad's fast calls, remembered for a partial without
    keywords, went on returning the value and derivative at ``y = 3.0``."""
    import functools
    p = functools.partial(load_program(TWO, tmp_path, "two").two)
    grad = astad.grad(p)
    for _ in range(3):
        value, d = _derivative(mode, p, (2.0, 3.0), 0) if mode != "grad" else (None, grad(2.0, 3.0))
        assert d == pytest.approx(9.0)
    p.keywords["y"] = 5.0
    with pytest.raises(TypeError, match="multiple values"):
        p(2.0, 3.0)
    for _ in range(2):
        with pytest.raises(TypeError, match="multiple values"):
            if mode == "grad":
                grad(2.0, 3.0)
            else:
                _derivative(mode, p, (2.0, 3.0), 0)
    assert astad.grad(p)(2.0) == pytest.approx(25.0)
    del p.keywords["y"]  # no keywords again: the fast calls by position again
    for _ in range(2):
        value, d = _derivative(mode, p, (2.0, 3.0), 0) if mode != "grad" else (None, grad(2.0, 3.0))
        assert d == pytest.approx(9.0)


# --------------------------------------------------------------------------- attributes of self from its class

CLASSES = '''
class Base:
    scale = 2.0

    def loss(self, x):
        return self.scale * x * x


class Child(Base):
    pass


class Other(Base):
    scale = 5.0
'''


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("change", ["subclass_gains_it", "class_assigned"])
def test_an_attribute_self_reads_from_its_class_after_fast_calls(tmp_path, mode, change):
    """``self.scale`` found in ``Base`` when the object is a ``Child``: ``Child.scale = 5.0``, or the
    object's ``__class__`` assigned, makes Python read another value; astad checked only that
    ``Base.__dict__`` still held the old one, and kept the derivative at ``scale = 2.0``."""
    mod = load_program(CLASSES, tmp_path, "classes")
    obj = mod.Child()
    loss = obj.loss
    _check(mode, loss, (0.7,))
    if change == "subclass_gains_it":
        mod.Child.scale = 5.0
    else:
        obj.__class__ = mod.Other
    assert loss(0.7) == pytest.approx(5.0 * 0.49)
    _check(mode, loss, (0.7,))


# --------------------------------------------------------------------------- a function of no parameters

NO_PARAMETERS = '''
K = 2.0


def f():
    return K * 3.0
'''


def test_reverse_mode_of_a_function_of_no_parameters(tmp_path):
    """Its backward pass returns the empty tuple, which codegen printed without parentheses (an
    InternalError, "a bug in astad"); forward mode gave the value and a zero tangent."""
    f = load_program(NO_PARAMETERS, tmp_path, "noparams").f
    for _ in range(2):  # the first call, then the remembered entry
        value, pullback = astad.reverse(f)()
        assert value == f() and pullback(1.0) == ()
        value, pullback = astad.vjp(f)
        assert value == f() and pullback(1.0) == ()
        assert astad.jvp(f, (), ()) == (f(), 0.0)


# --------------------------------------------------------------------------- a decorated method of objects equal by value

EQUAL_OBJECTS = '''
import astad


class Model:
    def __init__(self, name, c):
        self.name, self.c = name, c

    def __eq__(self, other):
        return isinstance(other, Model) and self.name == other.name

    def __hash__(self):
        return hash(self.name)

    @astad.reverse
    def loss(self, x):
        return self.c * x * x

    @astad.forward
    def step(self, x):
        return self.c * x * x
'''


@pytest.mark.parametrize("mode", ["reverse", "forward", "grad", "vjp", "jvp"])
def test_a_decorated_method_of_two_objects_that_compare_equal(tmp_path, mode):
    """``Model("a", 2.0) == Model("a", 5.0)``: the transform bound to the first object was found (by
    equality) for the second, which got the first's value and derivative (``self.c == 2.0``)."""
    mod = load_program(EQUAL_OBJECTS, tmp_path, "equal")
    for obj in (mod.Model("a", 2.0), mod.Model("a", 5.0), mod.Model("a", 2.0)):
        for _ in range(2):
            if mode == "reverse":
                value, pullback = obj.loss(0.7)
                d = pullback(1.0)[0]
            elif mode == "forward":
                value, pushforward = obj.step(0.7)
                d = pushforward(1.0)
            elif mode == "grad":
                value, d = obj.c * 0.49, astad.grad(obj.loss)(0.7)
            elif mode == "vjp":
                value, pullback = astad.vjp(obj.loss, 0.7)
                d = pullback(1.0)[0]
            else:
                value, d = astad.jvp(obj.step, (0.7,), (1.0,))
            assert value == pytest.approx(obj.c * 0.49, rel=1e-14)
            assert d == pytest.approx(obj.c * 1.4, rel=1e-12)


# --------------------------------------------------------------------------- a constant array's shape assigned in place

GLOBAL_ARRAY = '''
import numpy as np

A = np.array([1.0, 2.0, 3.0])


def f(x):
    return np.sum(A * x)


class Model:
    def __init__(self):
        self.w = np.array([1.0, 2.0, 3.0])

    def loss(self, x):
        return np.sum(self.w * x)


def scaled(w, x):
    return np.sum(w * x)
'''


def _grad_fd(fn, x, eps=1e-6):
    return np.array([(fn(x + e) - fn(x - e)) / (2 * eps) for e in np.eye(x.size).reshape((x.size,) + x.shape) * eps])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("owner", ["global", "self", "partial"])
def test_a_constant_arrays_shape_assigned_in_place_after_calls(tmp_path, mode, owner):
    """``A.shape = (3, 1)`` keeps the object (the derivative's check by identity passes), but ``A * x``
    broadcasts to (3, 3) now: astad returned the gradient of the old function, of shape (3, 1)."""
    import functools
    mod = load_program(GLOBAL_ARRAY, tmp_path, "global_array")
    if owner == "global":
        fn, array = mod.f, mod.A
    elif owner == "self":
        obj = mod.Model()
        fn, array = obj.loss, obj.w
    else:
        array = np.array([1.0, 2.0, 3.0])
        fn = functools.partial(mod.scaled, array)
    x = np.array([0.5, -0.2, 0.1])
    for reshaped in (False, True):
        if reshaped:
            array.shape = (3, 1)
        for _ in range(2):
            if mode == "grad":
                value, d = fn(x), astad.grad(fn)(x)
            elif mode == "value_and_grad":
                value, d = astad.value_and_grad(fn)(x)
            elif mode == "jvp":
                value, d = astad.jvp(fn, (x,), (np.ones(3),))
            else:
                value, pullback = astad.vjp(fn, x)
                d = pullback(1.0)[0]
            want = _grad_fd(fn, x)
            assert value == pytest.approx(fn(x), rel=1e-14)
            assert np.shape(d) == (() if mode == "jvp" else (3,))
            assert d == pytest.approx(want.sum() if mode == "jvp" else want, rel=1e-6)


# --------------------------------------------------------------------------- cotangents that are not numbers

COTANGENTS = '''
import numpy as np


def f(x, y):
    return x * y + np.sin(x)


def v(x):
    return np.sin(x) * 2.0


def s(x):
    return np.sum(v(x))
'''


@pytest.mark.parametrize("ct", ["x", None, True, [1.0, 2.0], {"a": 1.0}, 1 + 2j, np.array(["a", "b"]),
                                np.ones(2, dtype=bool), (np.ones(2), None), np.matrix([[1.0, 2.0]]),
                                np.ma.masked_array([1.0, 2.0], mask=[0, 1])], ids=repr)
@pytest.mark.parametrize("which", ["scalar", "array", "grad"])
def test_a_pullback_given_something_that_is_not_a_cotangent(tmp_path, ct, which):
    """A string, None, a list, a complex number, ... as the cotangent: TypeError and ValueError from
    inside the generated code (and from a derivative's pullback, ``vjp(grad(f), ...)``, which checked
    nothing, a cotangent of another shape broadcast silently); an ``np.matrix`` of the output's shape
    gave a wrong cotangent silently (its ``*`` is a matrix product)."""
    mod = load_program(COTANGENTS, tmp_path, "cotangents")
    x = np.array([0.3, 0.4])
    if which == "scalar":
        _, pullback = astad.vjp(mod.f, 0.7, 1.1)
    elif which == "array":
        _, pullback = astad.vjp(mod.v, x)
    else:
        _, pullback = astad.vjp(astad.grad(mod.s), x)
    with pytest.raises(astad.AstadTypeError, match="cotangent"):
        pullback(ct)


def test_a_derivatives_pullback_refuses_a_cotangent_of_another_shape(tmp_path):
    mod = load_program(COTANGENTS, tmp_path, "cotangents")
    x = np.array([0.3, 0.4])
    _, pullback = astad.vjp(astad.grad(mod.s), x)
    with pytest.raises(astad.AstadTypeError, match="shape"):
        pullback(1.0)
    u = np.array([0.5, -1.0])
    h = np.diag(-2.0 * np.sin(x))  # the Hessian of sum(2 sin x)
    assert pullback(u)[0] == pytest.approx(h @ u)


def test_a_matrix_as_the_cotangent_of_a_matrix_output(tmp_path):
    """``np.matrix`` of the output's shape: the backward pass's ``ct * 2 cos x`` was a matrix product."""
    mod = load_program(COTANGENTS, tmp_path, "cotangents")
    x = np.array([[0.3, 0.4], [0.1, -0.2]])
    _, pullback = astad.vjp(mod.v, x)
    with pytest.raises(astad.AstadTypeError, match="subclass"):
        pullback(np.matrix([[1.0, 2.0], [3.0, 4.0]]))
    ct = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert pullback(ct)[0] == pytest.approx(ct * 2.0 * np.cos(x))
