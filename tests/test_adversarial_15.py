"""Adversarial numpy semantics, session 10 (advN).  Each section names what astad did before its fix.
Oracles: the plain call (value, type, dtype), central finite differences in float64, and forward
mode against reverse mode; never astad's own output."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from conftest import check_correct_or_refused


def _refused_at_its_line(fn, args, line_text):
    """astad refuses ``fn`` with its own error (not an InternalError), naming the line that holds ``line_text``."""
    for run in (lambda: astad.reverse(fn)(*args), lambda: astad.jvp(fn, tuple(args), tuple(np.ones_like(a) for a in args))):
        with pytest.raises(astad.AstadError) as caught:
            run()
        assert not isinstance(caught.value, astad.InternalError), caught.value
        assert caught.value.loc is not None and line_text in str(caught.value), caught.value


# -- abstract numpy types ------------------------------------------------------------------------------
# `isinstance(v, np.floating)` (np.integer, np.generic, np.number, np.inexact) raised astad's
# InternalError: reading `np.floating` converted it to a dtype, which numpy does not allow.

def isinstance_np_floating(x):
    e = x[0] * 2.0
    return x[0] * float(isinstance(e, np.floating))


def isinstance_np_integer(x):
    return x[0] * float(isinstance(len(x), np.integer))


def isinstance_np_generic(x):
    return x[0] * float(isinstance(x, (float, np.generic)))


def np_number_as_a_value(x):
    kind = np.number
    return x * 2.0, kind


@pytest.mark.parametrize("fn", [isinstance_np_floating, isinstance_np_integer, isinstance_np_generic,
                                np_number_as_a_value])
def test_abstract_numpy_types_are_refused(fn):
    _refused_at_its_line(fn, [np.array([0.3, -0.2, 1.1])], "np.")
