"""Adversarial numpy semantics, round 9 (helper advB): ordinary numpy code where astad crashed with an
internal error, computed a value where Python raises, or returned a value of another type or dtype than
the plain call.  The oracle is numpy itself (its value, type, dtype, or the exception it raises) and
central finite differences in float64 (``conftest.check_correct_or_refused``); never astad's own output.
Each section names what astad did before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from conftest import check_correct_or_refused

X = np.arange(12.0).reshape(3, 4) / 7 + 0.3


def _refused_like_numpy(fn, args):
    """Python raises; astad refuses with its own error (not an InternalError) in both modes."""
    with pytest.raises(Exception) as plain:
        fn(*args)
    assert not isinstance(plain.value, astad.AstadError)
    for run in (lambda: astad.reverse(fn)(*args), lambda: astad.jvp(fn, tuple(args), tuple(np.ones_like(a) for a in args))):
        with pytest.raises(astad.AstadError) as caught:
            run()
        assert not isinstance(caught.value, astad.InternalError), caught.value
        assert caught.value.loc is not None and caught.value.loc.line > 0


# -- axes out of range ---------------------------------------------------------------------------------
# np.transpose(x, (1, 2)) of a matrix, x.swapaxes(0, 0) of a 0-d array and x[..., ..., 0] raised
# astad's InternalError (an IndexError inside the shape rules); np.moveaxis with a repeated axis gave a
# value where numpy raises ValueError.

def transpose_axis_too_large(x):
    return np.transpose(x, (1, 2))


def transpose_method_axis_too_large(x):
    return x.transpose(2, 0)


def swapaxes_of_a_number(x):
    return np.sum(x) * np.sum(x).swapaxes(0, 0)


def two_ellipses(x):
    return x[..., ..., 0]


def moveaxis_repeated_destination(x):
    return np.moveaxis(x, [0, 1], [1, 1])


def moveaxis_repeated_source(x):
    return np.moveaxis(x, [1, 1], [0, 1])


@pytest.mark.parametrize("fn", [transpose_axis_too_large, transpose_method_axis_too_large, swapaxes_of_a_number,
                                two_ellipses, moveaxis_repeated_destination, moveaxis_repeated_source])
def test_axes_numpy_refuses_are_refused(fn):
    _refused_like_numpy(fn, [X.copy()])


def transpose_negative_axes(x):
    return np.sum(np.transpose(x, (-1, 0)) * np.arange(12.0).reshape(4, 3))


def moveaxis_negative(x):
    return np.sum(np.moveaxis(x[None], -1, 0) ** 2)


@pytest.mark.parametrize("fn", [transpose_negative_axes, moveaxis_negative])
def test_axes_numpy_accepts_still_work(fn):
    check_correct_or_refused(fn, [X.copy()])
