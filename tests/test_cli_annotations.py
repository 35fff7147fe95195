"""``astad show-derivative`` without ceremony: types from annotations (float,
jaxtyping arrays as objects or as text, tuples, NamedTuples, defaults), run-time
sizes named by letters (the code then runs at any size, with gradients equal to
central finite differences), dicts, tuples and lists described by ``--arg``,
keyword-only parameters, usage errors (exit 2, one line, no traceback), colours
on a terminal only."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from astad import cli
from astad.cli_types import CliError, read_type
from astad.ir import BOOL, FLOAT, INT, Num, StructT
from conftest import central_differences

ROOT = Path(__file__).resolve().parent.parent

TEXT = '''\
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, TypedDict

import numpy as np

if TYPE_CHECKING:  # read from the annotations' text: jaxtyping is not imported
    from jaxtyping import Float, Float64


def layer(x: Float64[np.ndarray, "n 4"], W: Float[np.ndarray, "4 k"], b: Float64[np.ndarray, "k"], scale: float):
    h = np.tanh(x @ W + b)
    return scale * np.sum(h * h) + np.sum(x * x)


def kw(x: float, y, *, scale: float, eps=1e-3):
    return scale * np.sum(x * y * y) + eps


def nested(p, xs, t):
    s = 0.0
    for x in xs:
        s = s + np.sum(np.tanh(x @ p["W"] + p["b"]))
    return s * t[0] + np.sum(t[1] * t[1])


class Pair(NamedTuple):
    w: Float64[np.ndarray, "3"]
    c: float


def pair(p: Pair, z: tuple[float, Float64[np.ndarray, "m 3"]]):
    return np.sum(np.sin(z[1] @ p.w)) * p.c * z[0]


class Params(TypedDict):
    W: Float64[np.ndarray, "3 4"]
    b: Float64[np.ndarray, "4"]


class Model:
    @staticmethod
    def typed(p: Params, x: Float64[np.ndarray, "n 3"], *, gain: np.float64):
        return gain * np.sum(np.tanh(x @ p["W"] + p["b"]))


def plain(x: np.ndarray):
    return np.sum(x)


def variadic(x: Float64[np.ndarray, "*batch 3"]):
    return np.sum(x)


def tensor(x: Float[torch.Tensor, "n"]):
    return x
'''

OBJECTS = '''\
import numpy as np
from jaxtyping import Float, Float64

Batch = Float64[np.ndarray, "n 4"]  # an alias: only the annotation object tells its shape


def layer(x: Batch, W: Float[np.ndarray, "4 k"], b: Float64[np.ndarray, "k"], scale: float):
    h = np.tanh(x @ W + b)
    return scale * np.sum(h * h) + np.sum(x * x)
'''


@pytest.fixture(scope="module")
def mods(tmp_path_factory):
    where = tmp_path_factory.mktemp("cli_annotations")
    (where / "ann_text.py").write_text(TEXT)
    (where / "ann_objects.py").write_text(OBJECTS)
    spec = importlib.util.spec_from_file_location("ann_text_for_tests", where / "ann_text.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["ann_text_for_tests"] = module  # (a NamedTuple's module must be importable)
    spec.loader.exec_module(module)
    yield where, module
    del sys.modules["ann_text_for_tests"]


@pytest.fixture
def main(monkeypatch, capsys):
    """``astad.cli.main`` in this process: (exit status, stdout, stderr); the modules it loads are forgotten after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "ann_text", None)

    def call(*argv):
        sys.modules.pop("ann_text", None)
        status = cli.main(["show-derivative", *map(str, argv)])
        out, err = capsys.readouterr()
        return status, out, err

    return call


def run(where, *args, **popen):
    env = dict(os.environ, ASTAD_DISK_CACHE="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("NO_COLOR", None)
    env.update(popen.pop("env", {}))
    return subprocess.run([sys.executable, "-m", "astad", "show-derivative", *args], cwd=where, env=env,
                          capture_output=not popen, text=True, timeout=120, check=False, **popen)


_SHOWN = {}


def shown(where, *args):
    """``run``, once per arguments (two tests read the same output)."""
    key = (where, args)
    if key not in _SHOWN:
        _SHOWN[key] = run(where, *args)
    return _SHOWN[key]


def generated(source):
    ns = {}
    exec(compile(source, "<generated>", "exec"), ns)  # noqa: S102 - the generated functions
    return ns


def differences_in(f, args, i):
    """The gradient of ``f`` in argument ``i`` (an array or a float) by central differences."""
    return central_differences(lambda xi: f(*args[:i], xi, *args[i + 1:]), args[i])


def check_reverse(source, name, f, args):
    ns = generated(source)
    value, residuals = ns[f"{name}_forward"](*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    cts = ns[f"{name}_backward"](residuals, 1.0)
    for i, ct in enumerate(cts):
        np.testing.assert_allclose(ct, differences_in(f, args, i), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------- through the command line


def test_run_time_sizes_from_annotation_text(mods):
    where, mod = mods
    proc = shown(where, "ann_text.py:layer")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "layer(x: f64[?,4], W: f64[4,?], b: f64[?], scale: float)" in out
    assert "(n: x.shape[0]; k: W.shape[1], b.shape[0])" in out and "\x1b[" not in out  # piped: plain
    rng = np.random.default_rng(0)
    for n, k in ((3, 5), (7, 2), (1, 1)):  # one code, three sizes
        args = [rng.standard_normal((n, 4)), rng.standard_normal((4, k)), rng.standard_normal(k), 0.7]
        check_reverse(out, "layer", mod.layer, args)
    fwd = run(where, "ann_text.py:layer", "--mode", "forward")
    assert fwd.returncode == 0, fwd.stderr
    jvp = generated(fwd.stdout)["layer_jvp"]
    for n, k in ((2, 3), (5, 4)):
        args = [rng.standard_normal((n, 4)), rng.standard_normal((4, k)), rng.standard_normal(k), 1.3]
        tangents = [rng.standard_normal(np.shape(a)) if np.ndim(a) else 0.4 for a in args]
        value, tangent = jvp(*args, *tangents)
        eps = 1e-6
        plus = mod.layer(*[a + eps * t for a, t in zip(args, tangents)])
        minus = mod.layer(*[a - eps * t for a, t in zip(args, tangents)])
        assert value == pytest.approx(mod.layer(*args), rel=1e-12)
        assert tangent == pytest.approx((plus - minus) / (2 * eps), rel=1e-6)


def test_annotation_objects_give_the_same_code(mods):
    pytest.importorskip("jaxtyping")
    where, _ = mods
    by_objects, by_text = run(where, "ann_objects.py:layer"), shown(where, "ann_text.py:layer")
    assert by_objects.returncode == 0, by_objects.stderr

    def types(out):  # the signature in the header, and the run-time sizes
        return [line for line in out.splitlines() if line.startswith(("# Generated", "# Sizes"))]
    assert types(by_objects.stdout) == types(by_text.stdout) and len(types(by_text.stdout)) == 2


def test_structures_on_the_command_line_and_keyword_only_parameters(mods):
    where, mod = mods
    proc = run(where, "ann_text.py:nested", "--arg", "{W: f64[3,4], 'b': f64[4]}", "--arg", "t=tuple(float, f64[n])",
               "--arg", "xs=[f64[2,3]]*2")  # by position, then by name in any order
    assert proc.returncode == 0, proc.stderr
    assert "nested(p: {'W': f64[3,4], 'b': f64[4]}, xs: [f64[2,3], f64[2,3]], t: (float, f64[?]))" in proc.stdout
    ns = generated(proc.stdout)
    rng = np.random.default_rng(1)
    W, b, x0, x1, t0, t1 = (rng.standard_normal(s) for s in ((3, 4), (4,), (2, 3), (2, 3), (), (5,)))
    leaves = [W, b, x0, x1, float(t0), t1]
    value, residuals = ns["nested_forward"](*leaves)

    def f(W, b, x0, x1, t0, t1):
        return mod.nested({"W": W, "b": b}, [x0, x1], (t0, t1))
    assert value == pytest.approx(f(*leaves), rel=1e-12)
    for i, ct in enumerate(ns["nested_backward"](residuals, 1.0)):
        np.testing.assert_allclose(ct, differences_in(f, leaves, i), rtol=1e-6, atol=1e-7)
    # keyword-only parameters: scale by its annotation, eps by its default, y by --arg
    proc = run(where, "ann_text.py:kw", "--arg", "y=f64[3]")
    assert proc.returncode == 0, proc.stderr
    assert "kw(x: float, y: f64[3], scale: float, eps: float)" in proc.stdout
    check_reverse(proc.stdout, "kw", lambda x, y, scale, eps: mod.kw(x, y, scale=scale, eps=eps),
                  [0.3, rng.standard_normal(3), 1.7, 1e-3])


def test_named_tuple_and_tuple_annotations(mods):
    where, mod = mods
    proc = run(where, "ann_text.py:pair")
    assert proc.returncode == 0, proc.stderr
    assert "pair(p: Pair(w: f64[3], c: float), z: (float, f64[?,3]))" in proc.stdout
    rng = np.random.default_rng(2)
    for m in (1, 4):
        leaves = [rng.standard_normal(3), 0.8, 1.1, rng.standard_normal((m, 3))]
        check_reverse(proc.stdout, "pair", lambda w, c, z0, z1: mod.pair(mod.Pair(w, c), (z0, z1)), leaves)


def test_usage_errors_exit_2_with_one_line(mods):
    where, _ = mods
    proc = run(where, "ann_text.py:kw", "--arg", "y=f64[3,,4]")  # (more cases in process below)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith("astad: ") and "expected a size" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_colour_on_a_terminal_only(mods):
    pty = pytest.importorskip("pty")
    pytest.importorskip("pygments")
    where, _ = mods
    env = dict(os.environ, ASTAD_DISK_CACHE="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("NO_COLOR", None)
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "astad", "show-derivative", "ann_text.py:kw", "--arg", "y=f64[3]"],
                            cwd=where, env=env, stdout=secondary, stderr=subprocess.PIPE)
    os.close(secondary)
    chunks = []
    try:
        while True:  # read while it writes (a terminal holds little)
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(primary)
        status = proc.wait(timeout=120)
        err = proc.stderr.read()
        proc.stderr.close()
    assert status == 0, err
    assert b"\x1b[" in b"".join(chunks) and b"kw_forward" in b"".join(chunks)
    forced = run(where, "ann_text.py:kw", "--arg", "y=f64[3]", "--color", "always")
    assert "\x1b[" in forced.stdout  # (piped and not forced: plain, see test_run_time_sizes_from_annotation_text)


# --------------------------------------------------------------------------- in process


def test_help_documents_the_syntax(capsys):
    with pytest.raises(SystemExit):
        cli.main(["show-derivative", "--help"])
    text = capsys.readouterr().out
    for piece in ("NAME=TYPE", "{W: f64[3,4], b: f64[4]}", "[f64[3]]*5", "tuple(f64, f64[3])", "Float64[np.ndarray",
                  "--color", "exit status"):
        assert piece in text


@pytest.mark.parametrize("spec, want, sizes", [
    ("float", FLOAT, {}), ("int", INT, {}), ("bool", BOOL, {}), ("i32", Num((), "int32"), {}),
    ("f64[n, 64]", Num((None, 64), "float64"), {"n": ["x.shape[0]"]}),
    ("f32[?,_,3]", Num((None, None, 3), "float32"), {}),
    ("{W: f64[3,n], 'b c': f64[n], 2: int}",
     StructT("dict", ("W", "b c", 2), (Num((3, None), "float64"), Num((None,), "float64"), INT)),
     {"n": ["x['W'].shape[1]", "x['b c'].shape[0]"]}),
    ("(f64, f64[3])", StructT("tuple", (), (Num((), "float64"), Num((3,), "float64"))), {}),
    ("tuple(float)", StructT("tuple", (), (FLOAT,)), {}),
    ("[f64[2]]*3", StructT("list", (), (Num((2,), "float64"),) * 3), {}),
    ("list(float, [int])", StructT("list", (), (FLOAT, StructT("list", (), (INT,)))), {}),
    ("()", StructT("tuple", (), ()), {}),
])
def test_read_type(spec, want, sizes):
    found = read_type(spec, "x")
    assert found.type == want and found.sizes == sizes


@pytest.mark.parametrize("spec", ["matrix", "f64[3", "f64[3,,4]", "{W f64}", "[f64]*n", "(f64", "f64[3]$", "{a: int, a: int}",
                                  "f64[-1]", "", "tuple(", "f64 f64"])
def test_unreadable_types_are_refused(spec):
    with pytest.raises(CliError, match="cannot read the type"):
        read_type(spec)


def test_annotation_errors_name_the_parameter(mods, main):
    where, _ = mods
    for name, says in [("variadic", "'*batch' stands for any number of dimensions"), ("plain", "does not say"),
                       ("tensor", "astad differentiates numpy arrays, not Tensor")]:
        status, _, err = main(f"{where / 'ann_text.py'}:{name}")
        assert status == 2 and f"parameter `x` of {name}" in err and says in err, err
    for args, says in [(["--arg", "z=float"], "kw has no parameter 'z'"),
                       (["--arg", "y=float", "--arg", "y=float"], "given twice"),
                       (["--arg", "float"] * 5, "kw takes 4 arguments (x, y, scale, eps), got 5 --arg")]:
        status, _, err = main(f"{where / 'ann_text.py'}:kw", *args)
        assert status == 2 and says in err, err
    status, _, err = main(f"{where / 'ann_text.py'}:Model.nothing")
    assert status == 2 and "has no attribute 'Model.nothing'" in err


def test_typed_dict_keyword_only_numpy_scalar_and_a_dotted_target(mods, main):
    where, mod = mods
    status, out, err = main(f"{where / 'ann_text.py'}:Model.typed")
    assert status == 0, err
    assert "typed(p: {'W': f64[3,4], 'b': f64[4]}, x: f64[?,3], gain: f64)" in out
    rng = np.random.default_rng(3)
    for n in (2, 5):
        leaves = [rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((n, 3)), np.float64(0.9)]
        check_reverse(out, "typed", lambda W, b, x, gain: mod.Model.typed({"W": W, "b": b}, x, gain=gain), leaves)


def test_plain_text_without_pygments(mods, main, monkeypatch):
    where, _ = mods
    monkeypatch.setitem(sys.modules, "pygments", None)
    status, out, err = main(f"{where / 'ann_text.py'}:kw", "--arg", "y=f64[3]", "--color", "always")
    assert status == 0 and "def kw_forward(" in out and "\x1b[" not in out and "needs pygments" in err


def _values():
    from hypothesis import strategies as st

    shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)
    arrays = st.one_of(
        st.tuples(shapes, st.sampled_from(["float64", "float32"])).map(lambda s: np.ones(s[0], s[1])),
        st.tuples(shapes.filter(bool), st.sampled_from(["int64", "int32", "bool"])).map(lambda s: np.ones(s[0], s[1])))
    leaves = st.one_of(st.just(0.5), st.just(3), st.just(True), arrays)
    keys = st.one_of(st.sampled_from(["W", "b", "bias_1", "x y"]), st.integers(0, 9))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=3)), max_leaves=6)


def test_the_type_of_a_value_read_back_from_its_text():
    """``--arg`` with a type as astad prints it (the header of the generated code)
    describes that type: the one the API takes from a value (frontend.abstract)."""
    from hypothesis import given, settings

    from astad import frontend

    @settings(max_examples=25, deadline=None)
    @given(_values())
    def check(value):
        t = frontend.abstract(value, "x")
        assert read_type(str(t)).type == t

    check()
