"""``self.attr`` read as a constant is what Python reads: a property (a data descriptor) of the
class comes before a value of the same name in the object's own ``__dict__`` (astad read the
``__dict__`` value: a silently wrong value and gradient); it is refused as any property is.  An
attribute of the object that shadows a plain class attribute is still read (central differences)."""

import numpy as np
import pytest

import astad
from conftest import central_differences

X = np.array([0.3, -0.7, 1.1])


class ShadowedByProperty:
    def __init__(self):
        self.__dict__["w"] = 3.0  # (what a property with a setter may keep under its own name)

    @property
    def w(self):
        return self.__dict__["w"] * 10.0

    def f(self, x):
        return np.sum(x * self.w)


class ShadowsClassAttribute:
    w = 1.0

    def __init__(self):
        self.w = 3.0

    def f(self, x):
        return np.sum(np.sin(x) * self.w)


def test_property_before_the_objects_own_value_is_refused():
    obj = ShadowedByProperty()
    assert obj.f(X) == pytest.approx(np.sum(X) * 30.0)  # (Python reads the property)
    with pytest.raises(astad.AstadError, match=r"`self\.w` is a method or property of ShadowedByProperty") as e:
        astad.grad(obj.f)(X)
    assert "return np.sum(x * self.w)" in str(e.value) and "^" in str(e.value)


def test_objects_own_value_before_a_plain_class_attribute():
    obj = ShadowsClassAttribute()
    value, grad = astad.value_and_grad(obj.f)(X)
    assert value == obj.f(X)
    np.testing.assert_allclose(grad, central_differences(obj.f, X), rtol=1e-6, atol=1e-9)
