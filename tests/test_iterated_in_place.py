"""A ``for`` loop over an array (or ``enumerate``/``zip`` of it) reads each element from the array
as it goes, so an update of that array in place in the body changes the elements later iterations
get.  astad read them from the array as it was when the loop started: value and derivatives wrong
(``over_updated_array(x)``: astad 1.83, Python 4.35).  Such an update is refused now, as an update of
any other value that can still be read (astad/aliases.py); rebinding the name (``y = y + ...``) and
updating arrays the loop does not run over are accepted, checked against central differences."""

import numpy as np
import pytest

import astad
from conftest import central_differences


def over_updated_array(x):
    y = x * 1.0
    s = 0.0
    for i, a in enumerate(y):
        s = s + a * a
        y[(i + 1) % 4] += a
    return s


def whole_array_update(x):
    y = x * 1.0
    s = 0.0
    for a in y:
        s = s + np.sin(a)
        y += 0.5 * a
    return s


def zipped_with_a_view(x):
    y = x * 1.0
    s = 0.0
    for a, b in zip(y, y[1:]):
        s = s + a * b
        y[1:] *= 0.5 + a
    return s


def rebinding_to_a_view(x):
    y = x * 1.0
    s = 0.0
    for a in y:
        y = y[::-1]  # a view of the array the loop runs over: the update below changes it
        y[0] += a
        s = s + a * a
    return s


def rebinding(x):
    y = x * 1.0
    s = 0.0
    for a in y:  # runs over the first array: the body makes new ones
        s = s + np.sin(a) * y[0]
        y = y + 0.5 * a
        y[1] *= a
    return s + np.sum(y * y)


def updating_another_array(x):
    y = x * 1.0
    z = np.zeros(4)
    for i, (a, b) in enumerate(zip(y, x)):
        z[(i + 1) % 4] += a * b
        z *= 0.9
    return np.sum(z * y)


X = np.array([0.5, 1.0, -0.7, 0.3])


@pytest.mark.parametrize("fn", [over_updated_array, whole_array_update, zipped_with_a_view, rebinding_to_a_view],
                         ids=lambda f: f.__name__)
def test_an_update_of_the_array_a_loop_runs_over_is_refused(fn):
    with pytest.raises(astad.UnsupportedSyntaxError, match="reads its next elements from it") as info:
        astad.grad(fn)(X)
    assert info.value.loc.line > 0 and "for i in range(len(...))" in str(info.value)
    with pytest.raises(astad.UnsupportedSyntaxError, match="reads its next elements from it"):
        astad.jvp(fn, (X,), (np.ones(4),))  # forward mode too


@pytest.mark.parametrize("fn", [rebinding, updating_another_array], ids=lambda f: f.__name__)
def test_rebinding_it_or_updating_another_array_is_differentiated(fn):
    value, pullback = astad.reverse(fn)(X.copy())
    assert value == pytest.approx(fn(X.copy()), rel=1e-12)
    gradient = pullback(1.0)[0]
    np.testing.assert_allclose(gradient, central_differences(fn, X), rtol=1e-6, atol=1e-8)
    v = np.array([0.3, -1.0, 0.5, 2.0])
    _, tangent = astad.jvp(fn, (X,), (v,))
    assert tangent == pytest.approx(np.dot(gradient, v), rel=1e-10, abs=1e-12)  # <1, J v> == <J^T 1, v>


def appending_to_the_list_it_runs_over(x):
    lst = [x[0] * 1.0]
    s = 0.0
    for a in lst:  # Python runs over the elements appended too (astad ran over the one there at the start)
        s = s + a * a
        if len(lst) < 3:
            lst.append(a * 2.0)
    return s


def test_an_append_to_the_list_a_loop_runs_over_is_refused():
    with pytest.raises(astad.UnsupportedSyntaxError, match="reads its next elements from it") as info:
        astad.grad(appending_to_the_list_it_runs_over)(X)
    assert info.value.loc.line > 0
