"""Adversarial tests, session 10 (forward mode, higher order, the public API): found by probing, each
failed before its fix."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

import astad


def defaults_and_keyword_only(x, y=2.0, *, z=3.0):
    return np.sum(x * x * x) * y * z + np.sum(x) * z * z


def _hessian_in_x(x, y=2.0, z=3.0):
    return np.diag(6.0 * x * y * z)


_OUTER = {"jacfwd": astad.jacfwd, "jacrev": astad.jacrev, "jacobian": astad.jacobian}
_INNER = {"grad": astad.grad, "jacfwd": astad.jacfwd, "jacrev": astad.jacrev, "jacobian": astad.jacobian}


@pytest.mark.parametrize("outer, inner", list(itertools.product(_OUTER, _INNER)))
def test_derivatives_of_jacobians_bind_defaults_and_keywords(outer, inner):
    """``jacobian`` inside a derivative bound its arguments as if the function had no defaults (refused:
    'f takes 3 arguments (x, y, z), got 1') and refused keywords; a derivative of ``grad`` called
    ``grad`` again with the keyword-only parameter by position (CallError)."""
    x = np.array([1.0, 2.0])
    h = _OUTER[outer](_INNER[inner](defaults_and_keyword_only))
    np.testing.assert_allclose(h(x), _hessian_in_x(x))
    np.testing.assert_allclose(h(x, 1.5), _hessian_in_x(x, 1.5))
    np.testing.assert_allclose(h(x, 1.5, z=0.7), _hessian_in_x(x, 1.5, 0.7))
    np.testing.assert_allclose(h(x, z=0.7), _hessian_in_x(x, z=0.7))


def test_jvp_and_vjp_of_a_jacobian_with_defaults():
    x = np.array([1.0, 2.0])
    value, tangent = astad.jvp(astad.jacobian(defaults_and_keyword_only), (x,), (np.ones(2),))
    np.testing.assert_allclose(value, 3.0 * x * x * 6.0 + 9.0)
    np.testing.assert_allclose(tangent, _hessian_in_x(x) @ np.ones(2))
    (ct,) = astad.vjp(astad.jacobian(defaults_and_keyword_only), x)[1](np.ones(2))
    np.testing.assert_allclose(ct, _hessian_in_x(x) @ np.ones(2))


@pytest.mark.parametrize("make", [astad.reverse, astad.forward, astad.jacobian, astad.jacfwd, astad.jacrev,
                                  astad.hessian, astad.grad])
def test_source_for_and_ir_bind_defaults(make):
    """``.source_for(x)`` and ``.ir(stage, x)`` of a function with defaults: what a call ``(x)`` runs
    (refused by reverse, forward and jacobian: 'f takes 3 arguments (x, y, z), got 1')."""
    x = np.array([1.0, 2.0])
    d = make(defaults_and_keyword_only)
    assert "def " in d.source_for(x)
    assert "def " in d.source_for(x, 1.5)
    assert d.ir("core", x)
    assert d.ir("optimised", x, 1.5)


@pytest.mark.parametrize("stem", ["ast", "json"])
def test_show_derivative_of_a_file_named_like_a_module_astad_uses(tmp_path, stem):
    """``astad show-derivative dir/ast.py:loss`` put the user's module in sys.modules['ast'], in place of
    the standard library's: astad then failed with a traceback (module 'ast' has no attribute 'parse')."""
    import os
    import subprocess
    import sys

    d = tmp_path / "user"
    d.mkdir()
    (d / f"{stem}.py").write_text("def loss(x: float):\n    return x * x\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, ASTAD_DISK_CACHE="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "astad", "show-derivative", f"{d / stem}.py:loss"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "def loss_backward" in proc.stdout and "Traceback" not in proc.stderr


def _cubed(x):
    return x * x * x


@pytest.mark.parametrize("x", [np.float32(2.0), np.float16(2.0), np.array(2.0, np.float32)])
def test_a_zero_tangent_of_a_numpy_scalar_is_a_numpy_scalar(x):
    """The tangent along None of a numpy float32 scalar value was a 0-d array, where the tangent
    along 1.0 is a numpy scalar of the value's type."""
    value, tangent = astad.jvp(_cubed, (x,), (None,))
    value_1, tangent_1 = astad.jvp(_cubed, (x,), (1.0,))
    assert type(tangent) is type(tangent_1) is type(value) and tangent == 0.0 and tangent_1 == 12.0
    _, pushforward = astad.forward(_cubed)(x)
    assert type(pushforward(None)) is type(value)


def _mixed(x, y):
    return np.sum(np.sin(x) * y) * np.sum(x * x)


@pytest.mark.parametrize("make", [lambda f: astad.jacrev(astad.jacfwd(f)), lambda f: astad.jacrev(astad.jacrev(f)),
                                  lambda f: astad.jacrev(astad.jacobian(f)), lambda f: astad.jacrev(astad.grad(f))])
def test_jacrev_of_a_derivative_has_the_arguments_dtype(make):
    """README: jacrev's blocks have the arguments' dtypes. jacrev(jacfwd(f)) of a float32 argument (float64
    output) gave float64 blocks (its rows made by forward mode had the outputs' dtype)."""
    x, y = np.array([0.3, 0.6], np.float32), np.array([1.5, -0.5])
    h = make(_mixed)(x, y)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, astad.hessian(_mixed)(x.astype(np.float64), y), rtol=1e-5)


def test_an_entry_written_under_another_numpy_is_not_read(tmp_path, monkeypatch):
    """One cache directory may serve environments with other numpys, whose promotion rules type the
    code otherwise: an entry written under another numpy version was read and run."""
    import importlib.util
    import sys

    from astad import pipeline

    monkeypatch.setenv("ASTAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ASTAD_DISK_CACHE", raising=False)
    monkeypatch.setattr(astad.config, "disk_cache", True)
    path = tmp_path / "numpy_version_case.py"
    path.write_text("import numpy as np\n\n\ndef loss(x):\n    return np.sum(np.sin(x) * x)\n")
    spec = importlib.util.spec_from_file_location("numpy_version_case", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "numpy_version_case", mod)
    spec.loader.exec_module(mod)
    made = []
    original = pipeline.transform
    monkeypatch.setattr(pipeline, "transform", lambda *a, **k: made.append(1) or original(*a, **k))
    x = np.array([0.3, 0.5])
    monkeypatch.setattr(np, "__version__", "1.26.4")
    astad.grad(mod.loss)(x)
    assert len(made) == 1
    astad.clear_caches(memory=True, disk=False)
    monkeypatch.setattr(np, "__version__", "2.0.0")
    np.testing.assert_allclose(astad.grad(mod.loss)(x), np.sin(x) + x * np.cos(x))
    assert len(made) == 2  # transformed again, not read from the entry of numpy 1.26.4
    astad.clear_caches(memory=True, disk=False)
    astad.grad(mod.loss)(x)
    assert len(made) == 2  # (the disk cache is on: its own numpy's entry is read)
    astad.clear_caches(memory=True, disk=False)


def _cubes_n_times(x, n):
    s = 0.0
    for _ in range(n):
        s = s + np.sum(x ** 3)
    return s


def test_hvp_takes_a_zero_tangent_of_an_int_argument():
    """README: integer and boolean parameters take None or a zero of their shape. hvp asked for the
    gradient with respect to an int whose tangent was 0 ('argument 1 of f is int, which has no gradient')."""
    x = np.array([1.0, 2.0])
    hv, none = astad.hvp(_cubes_n_times, (x, 2), (np.ones(2), 0))
    np.testing.assert_allclose(hv, 12.0 * x)
    assert none is None
    assert astad.hvp(_cubes_n_times, (x, 2), (None, 0)) == (None, None)
    with pytest.raises(astad.AstadTypeError, match="discrete"):
        astad.hvp(_cubes_n_times, (x, 2), (np.ones(2), 1))
    with pytest.raises(astad.AstadTypeError, match="discrete"):
        astad.hvp(_cubes_n_times, (x, 2), (None, 1))


def _sin_product(x, y):
    return np.sin(x * y) * x


@pytest.mark.parametrize("make", [lambda f: functools.partial(astad.grad(f, argnums=1), 0.7),
                                  lambda f: functools.partial(np.multiply, 2.0)])
def test_a_partial_of_a_callable_without_source_is_refused_for_that(make):
    """A partial of grad(f) was refused with a wrong reason: 'binds 1 positional arguments, but f has 0
    positional parameters left'."""
    with pytest.raises(astad.SourceUnavailableError, match="no source|not a Python function"):
        astad.grad(make(_sin_product))(1.3)


def test_show_derivative_of_something_not_a_function_says_so_in_one_line(tmp_path):
    """``astad show-derivative mod.py:__builtins__`` printed the repr of the whole dict (dozens of lines)."""
    import os
    import subprocess
    import sys

    (tmp_path / "holder.py").write_text("value = 3\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, ASTAD_DISK_CACHE="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    for name in ("__builtins__", "value"):
        proc = subprocess.run([sys.executable, "-m", "astad", "show-derivative", f"{tmp_path / 'holder.py'}:{name}"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 1
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 2 and "not a function" in lines[0] and lines[1].startswith("supported instead"), lines


def _float32_square(x):
    return np.float32(x) * np.float32(2.0) * np.float32(x)


def test_jacfwd_by_a_python_float_of_a_float32_output_is_a_number():
    """The block of a Python float argument is a number: jacfwd gave a 0-d float32 array where the
    output is float32 (jacrev gives a float; by a numpy float64 argument, jacfwd gives np.float32)."""
    j = astad.jacfwd(_float32_square)(1.5)
    assert type(j) is np.float32 and j == 6.0
    assert type(astad.jacfwd(_float32_square)(np.float64(1.5))) is np.float32


@pytest.mark.parametrize("make", [lambda f: astad.jacobian(astad.grad(f)), lambda f: astad.jacobian(astad.jacobian(f)),
                                  lambda f: astad.jacfwd(astad.jacobian(f))])
def test_derivatives_of_a_partial_with_keywords_inside_a_jacobian(make):
    """jacobian(grad(partial(f, y=1.3)))(x) called grad again with y by position as well as by the
    partial's keyword: CallError 'f() got multiple values for argument y'."""
    x = np.array([0.7, 0.2])
    h = make(functools.partial(_sin_product_sum, y=1.3))(x)
    np.testing.assert_allclose(h, np.diag(2 * 1.3 * np.cos(1.3 * x) - 1.3 ** 2 * x * np.sin(1.3 * x)))


def _sin_product_sum(x, y):
    return np.sum(np.sin(x * y) * x)
