"""``self.k`` (and ``obj.k`` of a module-level object) is read when transforming from the object's
``__dict__`` and its class, and checked on each call: a class that defines ``__getattribute__`` answers
``self.k`` with its own code, so astad refuses it (it read ``__dict__``: a wrong value).  Methods read the
module's globals, never their class body's names (Python's rule), checked against Python and central
differences."""

import numpy as np
import pytest

import astad
from conftest import central_differences

P = 5.0


class Computed:
    P = 2.0  # a class body's name: a method's `P` is the module's

    def __init__(self):
        self.k = 2.0

    def __getattribute__(self, name):
        if name == "k":
            return 10.0
        return object.__getattribute__(self, name)

    def loss(self, x):
        return np.sum(x * self.k)

    def global_p(self, x):
        return np.sum(x * P)


computed = Computed()


def reads_an_object(x):
    return np.sum(x * computed.k)


@pytest.mark.parametrize("fn", [computed.loss, reads_an_object])
def test_an_attribute_computed_by_getattribute_is_refused(fn):
    x = np.array([0.5, -1.5])
    for make in (astad.grad, astad.jacfwd):
        with pytest.raises(astad.AstadError) as e:
            make(fn)(x)
        assert not isinstance(e.value, astad.InternalError)
        message = str(e.value)
        assert "defines __getattribute__" in message and "test_attribute_reads.py:" in message.splitlines()[0]
        assert "^" in message and "pass it as an argument" in message.splitlines()[-1]


class Plain:
    P = 2.0
    k = 3.0

    def loss(self, x):
        return np.sum(x * self.k) * P  # the instance's k (class attribute), the module's P


@pytest.mark.parametrize("x0", [0.5, -1.25])
def test_a_method_reads_the_module_not_its_class_body(x0):
    x = np.array([x0, 2.0])
    obj = Plain()
    value, grad = astad.value_and_grad(obj.loss)(x)
    assert value == pytest.approx(obj.loss(x), rel=1e-12)
    np.testing.assert_allclose(grad, central_differences(obj.loss, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(astad.jacfwd(computed.global_p)(x), central_differences(computed.global_p, x),
                               rtol=1e-6, atol=1e-6)
