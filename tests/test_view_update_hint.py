"""An update in place through a view (``v = y[1:]; v[0] *= 2``, ``for row in Y: row *= 2``) is refused
(``y`` shares its memory); the hint said "update a copy: `v = v.copy()` first", which would leave ``y``
unchanged. It says now to update ``y`` itself through an index, and that form is accepted (checked
against central differences)."""

import numpy as np
import pytest

import astad
from conftest import check_correct_or_refused


def through_a_slice(x):
    y = 1.0 * x
    v = y[1:]
    v[0] *= 2.0
    return np.sum(y * y)


def through_a_transposed_slice(x):
    y = 1.0 * x
    v = y[1:].T
    v += 2.0
    return np.sum(y * y)


def through_the_rows(x):
    y = 1.0 * x
    for row in y:
        row[0] += np.sin(row[1])
    return np.sum(y * y)


def through_an_alias(x):
    y = 1.0 * x
    z = y
    z[0] *= 2.0
    return np.sum(y * y)


@pytest.mark.parametrize("fn, symbol, rows", [(through_a_slice, "*", False), (through_a_transposed_slice, "+", False),
                                              (through_the_rows, "+", True)])
def test_the_hint_says_to_update_the_base_array(fn, symbol, rows):
    with pytest.raises(astad.UnsupportedSyntaxError, match="`y` shares its memory") as info:
        astad.grad(fn)(np.ones((3, 2)))
    hint = info.value.hint
    assert f"update `y` itself through an index: `y[...] {symbol}= ...`" in hint and ".copy()" not in hint, hint
    assert ("for i in range(len(y))" in hint) == rows, hint
    assert info.value.loc.line > 0 and "^" in str(info.value)


def test_the_same_object_under_two_names_keeps_the_generic_hint():
    with pytest.raises(astad.UnsupportedSyntaxError, match="`y` shares its memory") as info:
        astad.grad(through_an_alias)(np.ones(3))
    assert "z = z.copy()" in info.value.hint


def by_index(x):
    y = 1.0 * x
    y[1 + 0] *= 2.0
    for i in range(len(y)):
        y[i, 0] += np.sin(y[i, 1])
    return np.sum(y * y)


def test_the_form_suggested_is_accepted():
    x = np.random.default_rng(0).standard_normal((3, 2))
    check_correct_or_refused(by_index, [x])
