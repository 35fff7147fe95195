"""Functions of numpy's other modules named like numpy functions (``np.ma.log``, ``np.emath.sqrt``,
``np.matlib.zeros``, also reached as ``import numpy.ma as np``) compute other values: masked entries,
complex results, matrices.  astad took them for the numpy function of their name (``np.ma.log`` of a
negative entry: numpy masks it and ``np.sum`` skips it, astad's ``np.log`` gave nan): they are refused,
naming the function.  ``np.core.umath.sin`` (made by a module ``__getattr__`` on each read) crashed with a
KeyError when astad built the checks of the names the code read; it is refused.  numpy's own functions,
however reached (``from numpy import sin as cos``, ``np.char.add``, which is ``np.add``), are checked against
Python and central differences."""

import warnings

import numpy
import numpy as np
import pytest
from numpy import sin as cos

import astad
from conftest import central_differences

x = np.array([0.5, -1.5, 2.0])


def masked_log(x):
    return numpy.sum(np.ma.log(x) * x)


def scimath_sqrt(x):
    return numpy.sum(np.emath.sqrt(x))


def matlib_zeros(x):
    return np.sum(np.matlib.zeros((3,)) + x)


def masked_sum(x):
    return np.ma.sum(x * x)


def deprecated_alias(x):
    return np.sum(np.core.umath.sin(x))


@pytest.mark.parametrize("fn, name", [(masked_log, "np.ma.log"), (scimath_sqrt, "np.lib.sqrt"),
                                      (matlib_zeros, "np.matlib.zeros"), (masked_sum, "np.ma.sum"),
                                      (deprecated_alias, "`numpy.core.umath` is made by the module's __getattr__")])
def test_a_function_of_another_numpy_module_is_refused(fn, name):
    pytest.importorskip("numpy.matlib")
    for make in (astad.grad, astad.jacfwd):
        with pytest.raises(astad.AstadError) as e:
            with warnings.catch_warnings():  # (numpy warns of np.core)
                warnings.simplefilter("ignore")
                make(fn)(x)
        message = str(e.value)
        assert not isinstance(e.value, astad.InternalError), message
        assert name in message.splitlines()[0] and "test_numpy_lookalikes.py:" in message.splitlines()[0], message
        assert "^" in message


def renamed_numpy(x):
    return np.sum(cos(x) * np.char.add(x, x))


def test_numpy_functions_however_reached_are_read_as_python():
    value, grad = astad.value_and_grad(renamed_numpy)(x)
    assert value == pytest.approx(renamed_numpy(x), rel=1e-12)
    np.testing.assert_allclose(grad, central_differences(renamed_numpy, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(astad.jacfwd(renamed_numpy)(x), central_differences(renamed_numpy, x),
                               rtol=1e-6, atol=1e-6)
