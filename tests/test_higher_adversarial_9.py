"""Adversarial cases for forward mode, derivatives of derivatives and the API surface (session 9,
helper "advC").  Oracles: central finite differences in float64 and forward against reverse mode,
never astad's own output of the same order.  Each section names what astad did before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from conftest import central_differences


# -- an empty tuple in the output -----------------------------------------------------------------
# ``return ()`` or ``return x, ()`` crashed every transform with "InternalError: codegen: cannot
# materialise a zero of type ()": the simplifier folds an empty tuple (all of whose items are zero)
# to the zero of its type, which codegen could not print.


def returns_empty(x):
    return ()


def returns_pair_with_empty(x):
    return np.sin(x), ()


def returns_nested_empty(x, n):
    return x * x, (n, ())


def test_an_empty_tuple_in_the_output_is_a_value():
    x = 0.7
    assert astad.jvp(returns_empty, (x,), (1.0,))[0] == ()
    assert astad.jacfwd(returns_empty)(x) == ()
    assert astad.jacrev(returns_empty)(x) == ()
    value, tangent = astad.jvp(returns_pair_with_empty, (x,), (1.0,))
    assert value == (np.sin(x), ()) and tangent[0] == pytest.approx(np.cos(x), rel=1e-12)
    assert astad.jacfwd(returns_pair_with_empty)(x)[0] == pytest.approx(np.cos(x), rel=1e-12)
    assert astad.jacrev(returns_pair_with_empty)(x)[0] == pytest.approx(np.cos(x), rel=1e-12)
    assert astad.vjp(returns_pair_with_empty, x)[1]((1.0, ()))[0] == pytest.approx(np.cos(x), rel=1e-12)
    value, tangent = astad.jvp(returns_nested_empty, (x, 3), (1.0, None))
    assert value == (x * x, (3, ())) and tangent[0] == pytest.approx(2 * x, rel=1e-12)
    assert astad.reverse(returns_nested_empty)(x, 3)[1]((1.0, (0, ())))[0] == pytest.approx(2 * x, rel=1e-12)


# -- the command line: modules with side effects, files that are not Python --------------------------
# A module that called sys.exit(3) when imported ended ``astad show-derivative`` with exit status 3 and
# no message (SystemExit is no Exception); what a module printed when imported went to stdout, into
# the code shown; a target file without ``.py`` failed with "cannot import ...: AssertionError: ".


def test_a_module_that_exits_or_prints_when_imported(tmp_path):
    from test_cli import run

    (tmp_path / "exits.py").write_text("print('imported')\nimport sys\ndef f(x: float):\n    return x\nsys.exit(3)\n")
    (tmp_path / "prints.py").write_text("print('imported')\ndef f(x: float):\n    return x * x\n")
    (tmp_path / "noext").write_text("def f(x: float):\n    return x\n")
    proc = run(tmp_path, "show-derivative", "exits:f")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "astad: cannot import exits:f: the module called sys.exit(3) when imported"
    proc = run(tmp_path, "show-derivative", "prints:f")
    assert proc.returncode == 0 and "imported" not in proc.stdout and "def f_backward" in proc.stdout
    proc = run(tmp_path, "show-derivative", f"{tmp_path / 'noext'}:f")
    assert proc.returncode == 2 and proc.stderr.startswith("astad: not a Python file:")
